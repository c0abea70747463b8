/* The config file's schema, each key once: section, name, type, default, choices, bounds, help.
 * X-macro lists, one per section, expanded by conf.h into the typed per-section structs
 * (conf_job_t ...) and by conf_schema.c into the table that validates the file, --help-config and
 * docs/config.md. A new key is one line here; its field is c-><section>.<key>. */
#ifndef GPL_LAUNCHER_CONF_KEYS_H
#define GPL_LAUNCHER_CONF_KEYS_H

#include "common/util.h" /* UTIL_DURATION_MAX */

/* X(section, key, TYPE, default, choices, min, max, help); TYPE is a conf_type_t without CONF_.
 * min == max: no bounds. */

/* [job]: what to run and how to supervise it. */
#define CONF_KEYS_JOB(X) \
  X(job, command, COMMAND, "", NULL, 0, 0, \
    "program and arguments, split like a POSIX shell splits words (no shell is run)") \
  X(job, builtin, ENUM, "", "mlp", 0, 0, \
    "a built-in job instead of a command: mlp = data-parallel demo trainer") \
  X(job, restarts, INT, "0", NULL, 0, 1000, \
    "times all ranks' programs are restarted together after a failure (not after a hang, nor a " \
    "GPU out-of-memory error unless restart_on_oom)") \
  X(job, restart_on_oom, BOOL, "false", NULL, 0, 0, \
    "restart after a CUDA out-of-memory error too: it usually repeats at the same step, so by " \
    "default the job ends at once with the peak memory and the remedies") \
  X(job, grace, DURATION, "10s", NULL, 0, 0, \
    "after SIGTERM/SIGINT (or the preempt signal), time before SIGKILL; keep it below " \
    "Slurm's KillWait/GraceTime") \
  X(job, stop_timeout, DURATION, "1s", NULL, 0, 0, \
    "when another rank failed, time between SIGTERM and SIGKILL of this rank's program") \
  X(job, preempt_signal, SIGNAL, "SIGTERM", NULL, 0, 0, \
    "signal every program gets when the job receives SIGTERM (to write a checkpoint); a " \
    "SIGTERM Slurm sends a step reaches the program itself instead") \
  X(job, checkpoint_signal, SIGNAL, "SIGUSR1", NULL, 0, 0, \
    "signal every program gets, at one moment and without stopping, when the job is asked for a " \
    "checkpoint (an AWS rebalance recommendation with [preempt] rebalance = checkpoint)") \
  X(job, prefix, ENUM, "host:rank", "host:rank|rank|none", 0, 0, \
    "prefix of each output line of the program") \
  X(job, output, ENUM, "rank0", "rank0|local", 0, 0, \
    "rank0: rank 0 writes every rank's program output (whole lines even through mpirun); " \
    "local: each rank writes its own") \
  X(job, log_dir, STR, "", NULL, 0, 0, \
    "folder for one log file per rank (rank-N.log, mode 0600; yours or root's, not writable by " \
    "others unless sticky)") \
  X(job, tail_lines, INT, "10", NULL, 0, 1000, \
    "last stderr lines of a failed rank quoted in the root-cause report") \
  X(job, checkpoint_dir, STR, "", NULL, 0, 0, \
    "passed to the program as GPULAUNCH_CHECKPOINT_DIR (restarts resume from there)") \
  X(job, timeout, DURATION, "60s", NULL, 0, 0, "deadline of every start-up wait on other ranks") \
  X(job, liveness_timeout, DURATION, "10s", NULL, 0, 0, \
    "while the program runs, a rank whose supervisor is silent this long (host lost, network cut, " \
    "gpulaunch killed or hung) ends the whole job with exit 68, naming it (0: off)") \
  X(job, hang_timeout, DURATION, "0", NULL, 0, 0, \
    "hang watchdog: a rank whose program shows no progress this long (no output line, no gpl_* " \
    "call or gpl_progress(), no touch of heartbeat_file) is a hang: every rank's stacks are " \
    "collected into a hang report naming the odd rank (0: off; needs liveness_timeout > 0)") \
  X(job, hang_action, ENUM, "abort", "abort|report", 0, 0, \
    "after a hang report: abort = end the job with exit 77; report = keep it running") \
  X(job, heartbeat_file, STR, "", NULL, 0, 0, \
    "a file the program touches to show progress (its mtime; {rank} is replaced by the rank; " \
    "passed to the program as GPULAUNCH_HEARTBEAT_FILE)") \
  X(job, step_regex, STR, "", NULL, 0, 0, \
    "extended regex on the program's output lines whose first group is the step number, e.g. " \
    "step (\\d+); with gpl_progress(comm, step) it feeds the straggler view") \
  X(job, straggler, ENUM, "sample", "sample|steps|off", 0, 0, \
    "the straggler view: sample = samples each rank's program stack (py-spy for Python, eu-stack " \
    "for native code, about every 1.25 s) and names the rank that waits least in collectives while " \
    "the others wait most, and the function its time goes to, plus the step view; steps = the step " \
    "view only (step times from step_regex or gpl_progress); off = none. Without a tool that reads " \
    "the program's stacks, sample is steps") \
  X(job, straggler_fraction, DOUBLE, "0.2", NULL, 0, 1000, \
    "the straggler view names the slowest rank when it reports its steps later than the median " \
    "rank by more than this fraction of the median step time") \
  X(job, workdir, STR, "", NULL, 0, 0, "working directory of the program") \
  X(job, master_port, INT, "0", NULL, 0, 65535, \
    "MASTER_PORT for the program (0: a free port chosen on rank 0's node)") \
  X(job, omp_num_threads, INT, "0", NULL, 0, 4096, \
    "OMP_NUM_THREADS (0: the cores bound to the rank divided by the node's ranks sharing them, at least 1; never overrides the environment)")

/* [topology]: placement. */
#define CONF_KEYS_TOPOLOGY(X) \
  X(topology, xml, PATH, "", NULL, 0, 0, \
    "hwloc XML file to plan from instead of this machine (tests, dry runs)") \
  X(topology, bind, ENUM, "cores", "cores|numa|none", 0, 0, \
    "CPU binding: the GPU's local cores split among ranks, its whole NUMA node, or none") \
  X(topology, gpus, ENUM, "auto", "auto|none", 0, 0, \
    "none: plan without GPUs (CPU-only jobs; more ranks than GPUs allowed)") \
  X(topology, visible_gpus, ENUM, "node", "node|rank", 0, 0, \
    "CUDA_VISIBLE_DEVICES: node = the node's GPUs on every rank (device LOCAL_RANK is the rank's; " \
    "NVLink P2P and CUDA IPC work); rank = one GPU per process (device 0; no P2P between ranks)") \
  X(topology, probe, ENUM, "ring", "ring|all|off", 0, 0, \
    "preflight TCP reachability test between nodes before the program starts") \
  X(topology, probe_timeout, DURATION, "5s", NULL, 0, 0, "deadline of each preflight connection")

/* [comm]: communication backend. */
#define CONF_KEYS_COMM(X) \
  X(comm, backend, ENUM, "auto", "auto|nccl|cpu", 0, 0, \
    "nccl when CUDA and a GPU are present, cpu (Open MPI) otherwise") \
  X(comm, init_timeout, DURATION, "60s", NULL, 0, 0, "deadline of NCCL communicator init") \
  X(comm, bucket_mb, DOUBLE, "25", NULL, 0.001, 65536, "fused allreduce bucket size (MiB)") \
  X(comm, wire_dtype, ENUM, "bf16", "fp32|bf16|fp16", 0, 0, \
    "dtype of gradients on the wire in the fused allreduce")

/* [train]: the built-in demo trainer (builtin = mlp). */
#define CONF_KEYS_TRAIN(X) \
  X(train, steps, INT, "200", NULL, 1, 100000000, "optimizer steps") \
  X(train, batch, INT, "256", NULL, 1, 100000000, "global batch (split over ranks)") \
  X(train, hidden, INT, "32", NULL, 1, 65536, "hidden units of the MLP") \
  X(train, lr, DOUBLE, "0.05", NULL, 0, 100, "learning rate") \
  X(train, log_every, INT, "20", NULL, 1, 100000000, "print the loss every N steps") \
  X(train, seed, INT, "1", NULL, 0, 2147483647, "seed of the synthetic data") \
  X(train, loss_scale, DOUBLE, "65536", NULL, 1e-30, 1e30, "initial loss scale") \
  X(train, growth_interval, INT, "2000", NULL, 1, 100000000, \
    "clean steps before the loss scale grows")

/* [bench]: gpulaunch bench (nccl-tests options). */
#define CONF_KEYS_BENCH(X) \
  X(bench, op, STR, "allreduce", NULL, 0, 0, \
    "allreduce|allgather|reducescatter|broadcast|alltoall|fused|unfused (comma list allowed)") \
  X(bench, minbytes, SIZE, "32M", NULL, 0, 0, "smallest size (-b)") \
  X(bench, maxbytes, SIZE, "32M", NULL, 0, 0, "largest size (-e)") \
  X(bench, stepfactor, DOUBLE, "2", NULL, 1.0001, 1e9, "size multiplier (-f)") \
  X(bench, dtype, STR, "float", NULL, 0, 0, "element type (-d)") \
  X(bench, redop, STR, "sum", NULL, 0, 0, "reduction (-o): sum|prod|max|min|avg") \
  X(bench, iters, INT, "20", NULL, 1, 100000000, "timed iterations (-n)") \
  X(bench, warmup, INT, "5", NULL, 0, 100000000, "warm-up iterations (-w)") \
  X(bench, check, BOOL, "true", NULL, 0, 0, "check results (-c)") \
  X(bench, root, INT, "0", NULL, 0, 1000000, "root rank of broadcast (-r)") \
  X(bench, min_busbw, STR, "", NULL, 0, 0, \
    "fail when the bus bandwidth is below X GB/s at the largest size, or SIZE:X,... per size") \
  X(bench, json, STR, "", NULL, 0, 0, "write results as JSON (nccl-tests -J shape)") \
  X(bench, csv, STR, "", NULL, 0, 0, "write results as CSV") \
  X(bench, label, STR, "", NULL, 0, 0, "name of this run in the JSON (plot legend)") \
  X(bench, tensor_bytes, SIZE, "0", NULL, 0, 0, \
    "fused/unfused: split the buffer into tensors of this size (0: one tensor)")

/* [accept]: gpulaunch accept. */
#define CONF_KEYS_ACCEPT(X) \
  X(accept, gpus, INT, "-1", NULL, -1, 1024, \
    "expected GPUs per node (-1: any number but none; 0: a run for nodes without GPUs)") \
  X(accept, compare, ENUM, "majority", "majority|off", 0, 0, \
    "nodes against each other: GPU count/model, NICs, PCIe/NVLink links as most nodes have them") \
  X(accept, gpu_model, STR, "", NULL, 0, 0, "expected GPU model (substring, e.g. H100)") \
  X(accept, nics, STR, "", NULL, 0, 0, "NICs expected present and up (comma list)") \
  X(accept, nic_min_speed, DOUBLE, "0", NULL, 0, 1e9, "minimum NIC speed (Gb/s)") \
  X(accept, min_busbw, STR, "auto", NULL, 0, 0, \
    "allreduce bus bandwidth threshold in GB/s, or auto (derived from the hardware)") \
  X(accept, size, SIZE, "0", NULL, 0, 0, "allreduce size (0: 64M on CPU, 1G on GPU)") \
  X(accept, pair_fraction, DOUBLE, "0.93", NULL, 0, 1, \
    "a node pair below this fraction of the median is flagged") \
  X(accept, iters, INT, "10", NULL, 1, 100000, "iterations per bandwidth measurement") \
  X(accept, nic_max_path, ENUM, "PHB", "PIX|PXB|PHB|NODE|SYS", 0, 0, \
    "farthest GPU-to-NIC path class that passes; a GPU whose nearest NIC is farther warns") \
  X(accept, pair_size, SIZE, "0", NULL, 0, 0, \
    "bytes of each node-pair/halving measurement (0: size, at most 64M)") \
  X(accept, search, ENUM, "ring", "ring|halving|off", 0, 0, \
    "bad-node search: ring of node pairs then pairs (halving if needed), halving only, or off") \
  X(accept, budget, DURATION, "10s", NULL, 0, 0, \
    "time one bandwidth measurement may take; slow links get fewer iterations") \
  X(accept, strict, BOOL, "false", NULL, 0, 0, "warnings count as failures (exit 73)") \
  X(accept, max_gpu_temp, DOUBLE, "85", NULL, 0, 200, "GPU temperature limit, C (NVML)") \
  X(accept, max_latency_us, DOUBLE, "0", NULL, 0, 1e9, \
    "absolute bound, in microseconds, on every host pair's round trip (p50, 8 bytes) and the " \
    "8-byte allreduce (p50); 0: none (nodes are still judged against the majority)") \
  X(accept, iface, STR, "", NULL, 0, 0, \
    "interface every rank must use: fails when the start-up agreed on another (default: any)")

/* [monitor]: GPU utilisation monitor of wrapped programs. */
#define CONF_KEYS_MONITOR(X) \
  X(monitor, enabled, BOOL, "true", NULL, 0, 0, "sample the rank's GPU (NVML)") \
  X(monitor, interval, DURATION, "5s", NULL, 0.01, UTIL_DURATION_MAX, \
    "sampling interval (at least 10ms)") \
  X(monitor, sm_threshold, DOUBLE, "80", NULL, 0, 100, \
    "warn when SM activity (GPM, Hopper+), else GPU busy time, stays under this (percent) " \
    "for the window") \
  X(monitor, window, DURATION, "60s", NULL, 0, 0, "how long utilisation must stay low") \
  X(monitor, replay, PATH, "", NULL, 0, 0, "replay recorded samples (JSON lines)") \
  X(monitor, metrics, OUTPATH, "", NULL, 0, 0, "write samples as JSON lines") \
  X(monitor, prom, OUTPATH, "", NULL, 0, 0, "write a Prometheus textfile") \
  X(monitor, prom_mode, ENUM, "0644", "0644|0640|0600", 0, 0, \
    "mode of the Prometheus textfile: 0644 lets node_exporter's own user read it; 0640 only its " \
    "group (the folder's group when it is setgid)") \
  X(monitor, mem_headroom, DOUBLE, "5", NULL, 0, 100, \
    "warn once per rank when free device memory stays under this percent of the GPU's memory " \
    "for window (an out-of-memory error is near; 0: off)")

/* [audit] */
#define CONF_KEYS_AUDIT(X) \
  X(audit, log, OUTPATH, "", NULL, 0, 0, \
    "append one JSON line per job start and end and per control event (a stop, lost hosts, a " \
    "notice, an elastic restart, failed authentication), each with the SHA-256 of the line before " \
    "it (gpulaunch audit verify); 0600; a log that cannot be opened fails the job at start-up") \
  X(audit, syslog, BOOL, "false", NULL, 0, 0, \
    "also send each line of log, as chained, to syslog (facility authpriv, priority notice, ident " \
    "gpulaunch): a copy the job's user cannot rewrite once it is forwarded; needs log")

/* [security]: the control channels (docs/security.md). */
#define CONF_KEYS_SECURITY(X) \
  X(security, tls, ENUM, "on", "on|off", 0, 0, \
    "TLS 1.3 on every control channel (liveness tree, gpulaunch-run's channel, preflight), " \
    "mutually authenticated; off = plain TCP (one warning line; anyone on the fabric can read " \
    "and forge control messages)") \
  X(security, key_file, PATH, "", NULL, 0, 0, \
    "a site or user key, mode 0600 and yours, the same file on every host and gpulaunch-run's: " \
    "the job key is derived from it and the run id and never crosses the network (default: " \
    "MUNGE where munged answers, else a key made for the job and handed over MPI/the " \
    "environment, with a warning)") \
  X(security, munge, ENUM, "auto", "auto|off", 0, 0, \
    "auto: without key_file, where munged answers (GPULAUNCH_MUNGE_SOCKET or libmunge's socket), " \
    "the job key travels in a MUNGE credential only the job's uid can decode; off: never") \
  X(security, require, ENUM, "any", "any|strict", 0, 0, \
    "strict: refuse to start (exit 79) unless the job key came from key_file or MUNGE, or " \
    "every rank and gpulaunch-run are on one host") \
  X(security, tls_cert, PATH, "", NULL, 0, 0, \
    "a site's PKI instead of the job key: this host's certificate chain (PEM; with tls_key and " \
    "tls_ca, mutual TLS)") \
  X(security, tls_key, PATH, "", NULL, 0, 0, "the private key of tls_cert (PEM)") \
  X(security, tls_ca, PATH, "", NULL, 0, 0, \
    "the CA certificates every peer's certificate must chain to (PEM)")

/* [preempt]: the cloud's interruption notice (spot / preemptible machines). */
#define CONF_KEYS_PREEMPT(X) \
  X(preempt, notice, ENUM, "auto", "auto|aws|gcp|azure|alibaba|off", 0, 0, \
    "poll this node's interruption notice (each node's first rank, every 5 s): auto picks the " \
    "cloud from the machine's DMI ids (no network probe) and is off elsewhere; a notice stops " \
    "the job with the grace, ending before the machine goes (exit 75)") \
  X(preempt, notice_endpoint, STR, "", NULL, 0, 0, \
    "base URL instead of the cloud's metadata address (tests, proxies), e.g. " \
    "http://127.0.0.1:8080") \
  X(preempt, notice_margin, DURATION, "5s", NULL, 0, 0, \
    "the grace after a notice ends this long before the notice's deadline") \
  X(preempt, rebalance, ENUM, "off", "off|checkpoint", 0, 0, \
    "AWS's rebalance recommendation (often minutes before an interruption notice): checkpoint = " \
    "send [job] checkpoint_signal once to every program at one moment, the job going on; needs " \
    "notice = aws, or auto on AWS")

/* [net]: gpulaunch's own listeners. */
#define CONF_KEYS_NET(X) \
  X(net, port_range, PORTS, "", NULL, 0, 0, \
    "LO-HI: every gpulaunch listener (liveness tree, preflight, the MASTER_PORT choice) takes a " \
    "port in this range, for a security group that opens only it (docs/security.md); " \
    "GPULAUNCH_PORT_RANGE (gpulaunch-run --port-range) wins; default: ports the kernel picks")

/* The free sections: KEY = value lines kept in file order. F(section, help) */
#define CONF_FREE_SECTIONS(F) \
  F(env, "KEY = value lines added to the program's environment") \
  F(nccl, "NCCL variables (NCCL_ prefix optional: SOCKET_IFNAME = eth0)")

#endif
