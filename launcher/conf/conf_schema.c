/* The config file's schema: every known section and key, its type, default and meaning. */
#include "launcher/conf/conf.h"

#include "common/util.h"

/* {section, key, type, default, choices, min, max, help} */
static const conf_key_t g_schema[] = {
    /* [job]: what to run and how to supervise it. */
    {"job", "command", CONF_COMMAND, "", NULL, 0, 0,
     "program and arguments, split like a POSIX shell splits words (no shell is run)"},
    {"job", "builtin", CONF_ENUM, "", "mlp", 0, 0,
     "a built-in job instead of a command: mlp = data-parallel demo trainer"},
    {"job", "restarts", CONF_INT, "0", NULL, 0, 1000,
     "times all ranks' programs are restarted together after a failure"},
    {"job", "grace", CONF_DURATION, "10s", NULL, 0, 0,
     "after SIGTERM/SIGINT (or the preempt signal), time before SIGKILL; keep it below "
     "Slurm's KillWait/GraceTime"},
    {"job", "stop_timeout", CONF_DURATION, "1s", NULL, 0, 0,
     "when another rank failed, time between SIGTERM and SIGKILL of this rank's program"},
    {"job", "preempt_signal", CONF_SIGNAL, "SIGTERM", NULL, 0, 0,
     "signal every program gets when the job receives SIGTERM (to write a checkpoint); a "
     "SIGTERM Slurm sends a step reaches the program itself instead"},
    {"job", "prefix", CONF_ENUM, "host:rank", "host:rank|rank|none", 0, 0,
     "prefix of each output line of the program"},
    {"job", "output", CONF_ENUM, "rank0", "rank0|local", 0, 0,
     "rank0: rank 0 writes every rank's program output (whole lines even through mpirun); "
     "local: each rank writes its own"},
    {"job", "log_dir", CONF_STR, "", NULL, 0, 0,
     "folder for one log file per rank (rank-N.log, mode 0600; yours or root's, not writable by "
     "others unless sticky)"},
    {"job", "tail_lines", CONF_INT, "10", NULL, 0, 1000,
     "last stderr lines of a failed rank quoted in the root-cause report"},
    {"job", "checkpoint_dir", CONF_STR, "", NULL, 0, 0,
     "passed to the program as GPULAUNCH_CHECKPOINT_DIR (restarts resume from there)"},
    {"job", "timeout", CONF_DURATION, "60s", NULL, 0, 0,
     "deadline of every start-up wait on other ranks"},
    {"job", "liveness_timeout", CONF_DURATION, "10s", NULL, 0, 0,
     "while the program runs, a rank whose supervisor is silent this long (host lost, network cut, "
     "gpulaunch killed or hung) ends the whole job with exit 68, naming it (0: off)"},
    {"job", "hang_timeout", CONF_DURATION, "0", NULL, 0, 0,
     "hang watchdog: a rank whose program shows no progress this long (no output line, no gpl_* "
     "call or gpl_progress(), no touch of heartbeat_file) is a hang: every rank's stacks are "
     "collected into a hang report naming the odd rank (0: off; needs liveness_timeout > 0)"},
    {"job", "hang_action", CONF_ENUM, "abort", "abort|report", 0, 0,
     "after a hang report: abort = end the job with exit 77; report = keep it running"},
    {"job", "heartbeat_file", CONF_STR, "", NULL, 0, 0,
     "a file the program touches to show progress (its mtime; {rank} is replaced by the rank; "
     "passed to the program as GPULAUNCH_HEARTBEAT_FILE)"},
    {"job", "step_regex", CONF_STR, "", NULL, 0, 0,
     "extended regex on the program's output lines whose first group is the step number, e.g. "
     "step (\\d+); with gpl_progress(comm, step) it feeds the straggler view"},
    {"job", "straggler_fraction", CONF_DOUBLE, "0.2", NULL, 0, 1000,
     "the straggler view names the slowest rank when it reports its steps later than the median "
     "rank by more than this fraction of the median step time"},
    {"job", "workdir", CONF_STR, "", NULL, 0, 0, "working directory of the program"},
    {"job", "master_port", CONF_INT, "0", NULL, 0, 65535,
     "MASTER_PORT for the program (0: a free port chosen on rank 0's node)"},
    {"job", "omp_num_threads", CONF_INT, "0", NULL, 0, 4096,
     "OMP_NUM_THREADS (0: the cores bound to the rank divided by the node's ranks sharing them, at least 1; never overrides the environment)"},
    /* Free sections. */
    {"env", "*", CONF_FREE, "", NULL, 0, 0, "KEY = value lines added to the program's environment"},
    {"nccl", "*", CONF_FREE, "", NULL, 0, 0,
     "NCCL variables (NCCL_ prefix optional: SOCKET_IFNAME = eth0)"},
    /* [topology]: placement. */
    {"topology", "xml", CONF_PATH, "", NULL, 0, 0,
     "hwloc XML file to plan from instead of this machine (tests, dry runs)"},
    {"topology", "bind", CONF_ENUM, "cores", "cores|numa|none", 0, 0,
     "CPU binding: the GPU's local cores split among ranks, its whole NUMA node, or none"},
    {"topology", "gpus", CONF_ENUM, "auto", "auto|none", 0, 0,
     "none: plan without GPUs (CPU-only jobs; more ranks than GPUs allowed)"},
    {"topology", "visible_gpus", CONF_ENUM, "node", "node|rank", 0, 0,
     "CUDA_VISIBLE_DEVICES: node = the node's GPUs on every rank (device LOCAL_RANK is the rank's; "
     "NVLink P2P and CUDA IPC work); rank = one GPU per process (device 0; no P2P between ranks)"},
    {"topology", "probe", CONF_ENUM, "ring", "ring|all|off", 0, 0,
     "preflight TCP reachability test between nodes before the program starts"},
    {"topology", "probe_timeout", CONF_DURATION, "5s", NULL, 0, 0,
     "deadline of each preflight connection"},
    /* [comm]: communication backend. */
    {"comm", "backend", CONF_ENUM, "auto", "auto|nccl|cpu", 0, 0,
     "nccl when CUDA and a GPU are present, cpu (Open MPI) otherwise"},
    {"comm", "init_timeout", CONF_DURATION, "60s", NULL, 0, 0, "deadline of NCCL communicator init"},
    {"comm", "bucket_mb", CONF_DOUBLE, "25", NULL, 0.001, 65536, "fused allreduce bucket size (MiB)"},
    {"comm", "wire_dtype", CONF_ENUM, "bf16", "fp32|bf16|fp16", 0, 0,
     "dtype of gradients on the wire in the fused allreduce"},
    /* [train]: the built-in demo trainer (builtin = mlp). */
    {"train", "steps", CONF_INT, "200", NULL, 1, 100000000, "optimizer steps"},
    {"train", "batch", CONF_INT, "256", NULL, 1, 100000000, "global batch (split over ranks)"},
    {"train", "hidden", CONF_INT, "32", NULL, 1, 65536, "hidden units of the MLP"},
    {"train", "lr", CONF_DOUBLE, "0.05", NULL, 0, 100, "learning rate"},
    {"train", "log_every", CONF_INT, "20", NULL, 1, 100000000, "print the loss every N steps"},
    {"train", "seed", CONF_INT, "1", NULL, 0, 2147483647, "seed of the synthetic data"},
    {"train", "loss_scale", CONF_DOUBLE, "65536", NULL, 1e-30, 1e30, "initial loss scale"},
    {"train", "growth_interval", CONF_INT, "2000", NULL, 1, 100000000,
     "clean steps before the loss scale grows"},
    /* [bench]: gpulaunch bench (nccl-tests options). */
    {"bench", "op", CONF_STR, "allreduce", NULL, 0, 0,
     "allreduce|allgather|reducescatter|broadcast|alltoall|fused|unfused (comma list allowed)"},
    {"bench", "minbytes", CONF_SIZE, "32M", NULL, 0, 0, "smallest size (-b)"},
    {"bench", "maxbytes", CONF_SIZE, "32M", NULL, 0, 0, "largest size (-e)"},
    {"bench", "stepfactor", CONF_DOUBLE, "2", NULL, 1.0001, 1e9, "size multiplier (-f)"},
    {"bench", "dtype", CONF_STR, "float", NULL, 0, 0, "element type (-d)"},
    {"bench", "redop", CONF_STR, "sum", NULL, 0, 0, "reduction (-o): sum|prod|max|min|avg"},
    {"bench", "iters", CONF_INT, "20", NULL, 1, 100000000, "timed iterations (-n)"},
    {"bench", "warmup", CONF_INT, "5", NULL, 0, 100000000, "warm-up iterations (-w)"},
    {"bench", "check", CONF_BOOL, "true", NULL, 0, 0, "check results (-c)"},
    {"bench", "root", CONF_INT, "0", NULL, 0, 1000000, "root rank of broadcast (-r)"},
    {"bench", "min_busbw", CONF_STR, "", NULL, 0, 0,
     "fail when the bus bandwidth is below X GB/s at the largest size, or SIZE:X,... per size"},
    {"bench", "json", CONF_STR, "", NULL, 0, 0, "write results as JSON (nccl-tests -J shape)"},
    {"bench", "csv", CONF_STR, "", NULL, 0, 0, "write results as CSV"},
    {"bench", "label", CONF_STR, "", NULL, 0, 0, "name of this run in the JSON (plot legend)"},
    {"bench", "tensor_bytes", CONF_SIZE, "0", NULL, 0, 0,
     "fused/unfused: split the buffer into tensors of this size (0: one tensor)"},
    /* [accept]: gpulaunch accept. */
    {"accept", "gpus", CONF_INT, "-1", NULL, -1, 1024,
     "expected GPUs per node (-1: any number but none; 0: a run for nodes without GPUs)"},
    {"accept", "compare", CONF_ENUM, "majority", "majority|off", 0, 0,
     "nodes against each other: GPU count/model, NICs, PCIe/NVLink links as most nodes have them"},
    {"accept", "gpu_model", CONF_STR, "", NULL, 0, 0, "expected GPU model (substring, e.g. H100)"},
    {"accept", "nics", CONF_STR, "", NULL, 0, 0, "NICs expected present and up (comma list)"},
    {"accept", "nic_min_speed", CONF_DOUBLE, "0", NULL, 0, 1e9, "minimum NIC speed (Gb/s)"},
    {"accept", "min_busbw", CONF_STR, "auto", NULL, 0, 0,
     "allreduce bus bandwidth threshold in GB/s, or auto (derived from the hardware)"},
    {"accept", "size", CONF_SIZE, "0", NULL, 0, 0,
     "allreduce size (0: 64M on CPU, 1G on GPU)"},
    {"accept", "pair_fraction", CONF_DOUBLE, "0.93", NULL, 0, 1,
     "a node pair below this fraction of the median is flagged"},
    {"accept", "iters", CONF_INT, "10", NULL, 1, 100000, "iterations per bandwidth measurement"},
    {"accept", "nic_max_path", CONF_ENUM, "PHB", "PIX|PXB|PHB|NODE|SYS", 0, 0,
     "farthest GPU-to-NIC path class that passes; a GPU whose nearest NIC is farther warns"},
    {"accept", "pair_size", CONF_SIZE, "0", NULL, 0, 0,
     "bytes of each node-pair/halving measurement (0: size, at most 64M)"},
    {"accept", "search", CONF_ENUM, "ring", "ring|halving|off", 0, 0,
     "bad-node search: ring of node pairs then pairs (halving if needed), halving only, or off"},
    {"accept", "budget", CONF_DURATION, "10s", NULL, 0, 0,
     "time one bandwidth measurement may take; slow links get fewer iterations"},
    {"accept", "strict", CONF_BOOL, "false", NULL, 0, 0, "warnings count as failures (exit 73)"},
    {"accept", "max_gpu_temp", CONF_DOUBLE, "85", NULL, 0, 200, "GPU temperature limit, C (NVML)"},
    {"accept", "iface", CONF_STR, "", NULL, 0, 0,
     "interface every rank must use: fails when the start-up agreed on another (default: any)"},
    /* [monitor]: GPU utilisation monitor of wrapped programs. */
    {"monitor", "enabled", CONF_BOOL, "true", NULL, 0, 0, "sample the rank's GPU (NVML)"},
    {"monitor", "interval", CONF_DURATION, "5s", NULL, 0.01, UTIL_DURATION_MAX, "sampling interval (at least 10ms)"},
    {"monitor", "sm_threshold", CONF_DOUBLE, "80", NULL, 0, 100,
     "warn when SM activity (GPM, Hopper+), else GPU busy time, stays under this (percent) "
     "for the window"},
    {"monitor", "window", CONF_DURATION, "60s", NULL, 0, 0, "how long utilisation must stay low"},
    {"monitor", "replay", CONF_PATH, "", NULL, 0, 0, "replay recorded samples (JSON lines)"},
    {"monitor", "metrics", CONF_OUTPATH, "", NULL, 0, 0, "write samples as JSON lines"},
    {"monitor", "prom", CONF_OUTPATH, "", NULL, 0, 0, "write a Prometheus textfile"},
    /* [audit] */
    {"audit", "log", CONF_OUTPATH, "", NULL, 0, 0,
     "append one JSON line per job start and end (0600); a log that cannot be opened fails the job "
     "at start-up"},
};

const conf_key_t *conf_schema(int *n) {
  *n = (int)GPL_ARRAY_LEN(g_schema);
  return g_schema;
}
