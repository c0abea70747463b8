/* The control messages between each rank's supervisor and the coordinator (rank 0): their types,
 * flags and fields; plain data, no MPI (the coordinator, sup/coord.c, is tested without it). */
#ifndef GPL_LAUNCHER_CTL_MSG_H
#define GPL_LAUNCHER_CTL_MSG_H

typedef enum ctl_type_e {
  /* rank -> coordinator */
  CTL_EV_EXIT = 1, /* this rank's program ended (status/signal, last stderr lines) */
  CTL_EV_STOPPED,  /* after CTL_STOP: the program is gone and its output drained */
  CTL_EV_SIGNAL,   /* gpulaunch received a terminating signal (SIGTERM: preemption, SIGINT) */
  CTL_EV_SPAWNED,  /* the program of this attempt started (or could not: status = error) */
  /* coordinator -> ranks */
  CTL_STOP,        /* stop the program: SIGTERM, SIGKILL after the stop timeout */
  CTL_START,       /* start attempt `attempt` */
  CTL_EXIT,        /* leave with exit code `status` */
  CTL_HANG,        /* the job hangs: collect the program's stacks and send them (CTL_OUT_STACKS) */
  CTL_SIGNAL       /* send the program signo at wall-clock time `at` (the same moment on every rank),
                    * without stopping it: a checkpoint ([preempt] rebalance, sup/supnotice.c) */
} ctl_type_t;

typedef struct ctl_msg_s {
  int type;
  int rank;
  int attempt;
  int status;   /* exit status of the program (CTL_EXIT: of the failed rank's program) */
  int code;     /* CTL_EXIT: the job's exit code */
  int signo;    /* killed by this signal (0: exited) / received signal for CTL_EV_SIGNAL */
  int flags;    /* CTL_F_* */
  double peak_mem_mib; /* from the GPU monitor when known (-1 otherwise) */
  double mem_total_mib; /* the GPU's memory, from the monitor when known (-1 otherwise) */
  double t_fail; /* CTL_EV_EXIT: when the program failed (wall clock: its last line or its end) */
  double grace;  /* CTL_EV_SIGNAL with CTL_F_NOTICE: the grace the notice leaves; CTL_STOP: the
                  * grace to give (0: [job] grace or stop_timeout) */
  double at;     /* CTL_STOP: deliver the stop at this wall-clock time, the same moment on every
                  * rank (0: at once) */
  char host[64];
  char tail[3072]; /* last stderr lines of the program */
} ctl_msg_t;

enum {
  CTL_F_OOM = 1,           /* the program's last output lines showed a CUDA out-of-memory error */
  CTL_F_AFTER_SIGNAL = 2,  /* it ended after a terminating signal was forwarded */
  CTL_F_SPAWN_FAILED = 4,  /* it could not be started */
  CTL_F_USE_GRACE = 8,     /* CTL_STOP: wait the grace period (preemption), not stop_timeout */
  CTL_F_PREEMPTED = 16,    /* CTL_EXIT: the job was preempted (SIGTERM) */
  CTL_F_INTERRUPTED = 32,  /* CTL_EXIT: the job was interrupted (SIGINT) */
  CTL_F_BY_RM = 64,        /* CTL_EV_SIGNAL, CTL_STOP: Slurm sent the signal to every program */
  CTL_F_CANCELLED = 128,   /* CTL_EXIT: Slurm cancelled the job (scancel): not a preemption */
  CTL_F_HANG = 256,        /* CTL_EXIT: the hang watchdog ended the job (tail: the verdict) */
  CTL_F_NOTICE = 512,      /* CTL_EV_SIGNAL: the cloud announced this host's interruption (tail: the
                            * notice in words, grace: what it leaves) */
  CTL_F_CHECKPOINT = 1024  /* CTL_EV_SIGNAL: the cloud recommends a checkpoint (AWS rebalance): every
                            * program gets signo, nothing stops (tail: the recommendation in words) */
};

/* ctl_send_output's is_err for a rank's stacks after CTL_HANG (not program output). */
#define CTL_OUT_STACKS 2
/* ... and for a rank's stack-sample counts (launcher/hang/sample.h sample_report_t). */
#define CTL_OUT_SAMPLES 3

#endif
