#!/usr/bin/env python3
"""A torchrun-style training loop (gloo, init_method="env://": RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT from the environment as torchrun sets them) for the hang watchdog's tests.

  --steps N            steps (default 20); each prints `step N` then all-reduces a tensor
  --hang-rank R        rank R stops at --hang-step inside stuck_in_data_loader() (a sleep)
  --hang-step S        default 3
  --hang-seconds S     how long it stays there (default 3600)
  --slow-rank R        rank R sleeps --slow-ms more per step (a straggler)
  --slow-ms MS         default 50
  --step-seconds S     every step takes S seconds (a long but healthy step) ...
  --tick-seconds T     ... printing a line every T seconds while it works (0: silent)
  --heartbeat          touch $GPULAUNCH_HEARTBEAT_FILE every tick instead of printing
  --timeout-seconds S  the process group's timeout (gloo's collectives fail after it; default
                       torch's own)
"""
import argparse
import datetime
import os
import sys
import time

print(f"rank {os.environ.get('RANK', '?')} starting", flush=True)  # before the slow imports

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def stuck_in_data_loader(seconds):
    # A data loader that deadlocked: the rank does not reach the collective.
    time.sleep(seconds)


def work(seconds, tick, heartbeat):
    end = time.time() + seconds
    while time.time() < end:
        if tick > 0:
            if heartbeat:
                with open(os.environ["GPULAUNCH_HEARTBEAT_FILE"], "a"):
                    os.utime(os.environ["GPULAUNCH_HEARTBEAT_FILE"])
            else:
                print("working", flush=True)
        time.sleep(min(tick if tick > 0 else seconds, max(end - time.time(), 0)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-step", type=int, default=3)
    p.add_argument("--hang-seconds", type=float, default=3600)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=50)
    p.add_argument("--step-seconds", type=float, default=0.0)
    p.add_argument("--tick-seconds", type=float, default=0.0)
    p.add_argument("--heartbeat", action="store_true")
    p.add_argument("--timeout-seconds", type=float, default=0)
    a = p.parse_args()
    kw = {"timeout": datetime.timedelta(seconds=a.timeout_seconds)} if a.timeout_seconds > 0 else {}
    dist.init_process_group("gloo", init_method="env://", **kw)
    rank = dist.get_rank()
    t = torch.ones(1000)
    for step in range(a.steps):
        if rank == a.hang_rank and step == a.hang_step:
            stuck_in_data_loader(a.hang_seconds)
        if a.step_seconds > 0:
            work(a.step_seconds, a.tick_seconds, a.heartbeat)
        if rank == a.slow_rank:
            time.sleep(a.slow_ms / 1000.0)
        print(f"rank {rank} step {step}", flush=True)
        dist.all_reduce(t)
    dist.destroy_process_group()
    if rank == 0:
        print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
