#!/usr/bin/env python3
"""A torchrun-style elastic DDP training script (gloo or nccl), the same under gpulaunch-run
--nodes and torchrun --nnodes=MIN:MAX: it resumes from its own checkpoint, saves one every
--every steps (rank 0) and on SIGTERM (every rank, at the same step), and says when it starts and
each step it takes, with wall-clock times, so that the time from a host's loss or a notice to the
first step at the new size can be measured from outside.

  --ckpt-dir D       where the checkpoint lives (shared by the hosts): D/ckpt.pt (rank 0's, the
                     one resumed from) and D/saved-<rank> (each rank's, on SIGTERM)
  --steps N          steps in all (counting those before a restart)
  --step-seconds S   sleep S seconds per step (a long-running job)
  --every K          rank 0 saves D/ckpt.pt every K steps (0: only on SIGTERM)
  --timeout S        the process group's timeout (a lost peer ends a collective after S s)
D/saved-<rank> holds the step saved and the wall-clock time the rank's SIGTERM came.

Lines (stdout, flushed): `start rank R world W restart C run ID step S at T`, rank 0's
`step S world W at T`, `saved rank R step S`, `done rank R step S world W`.
"""
import argparse
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def say(*words):
    print(*words, flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt-dir", required=True)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--step-seconds", type=float, default=0.1)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--backend", default=None)
    a = p.parse_args()
    stop = {"sig": 0}
    signal.signal(signal.SIGTERM, lambda s, f: stop.update(sig=s, at=time.time()))
    backend = a.backend or ("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, init_method="env://", timeout=datetime.timedelta(seconds=a.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", "?")

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).to(device)
    step = 0
    ckpt = os.path.join(a.ckpt_dir, "ckpt.pt")
    if os.path.exists(ckpt):
        state = torch.load(ckpt, map_location=device)
        model.load_state_dict(state["model"])
        step = state["step"]
    ddp = DDP(model, device_ids=[local_rank] if backend == "nccl" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    say(f"start rank {rank} world {world} restart {restart} run {run_id} step {step} at {time.time():.6f}")

    def save(path):
        torch.save({"step": step, "model": model.state_dict()}, path + ".tmp")
        os.replace(path + ".tmp", path)

    g = torch.Generator().manual_seed(1234)
    x = torch.randn(512, 16, generator=g)
    y = (x[:, :4].sum(1, keepdim=True) - x[:, 4:8].prod(1, keepdim=True)).tanh()
    batch = 64
    while step < a.steps:
        # Every rank stops at the same step: one that stopped alone would leave the others waiting.
        flag = torch.tensor([1.0 if stop["sig"] else 0.0], device=device)
        dist.all_reduce(flag)
        if flag.item() > 0:
            if rank == 0:
                save(ckpt)
            with open(os.path.join(a.ckpt_dir, f"saved-{rank}"), "w") as f:
                f.write(f"{step} {stop.get('at', 0):.6f}\n")  # the step, when SIGTERM came
            say(f"saved rank {rank} step {step}")
            sys.exit(0)
        time.sleep(a.step_seconds)
        lo = (step * batch) % x.shape[0]
        xb = x[lo:lo + batch][rank::world].to(device)
        yb = y[lo:lo + batch][rank::world].to(device)
        opt.zero_grad()
        ((ddp(xb) - yb) ** 2).mean().backward()
        opt.step()
        step += 1
        if rank == 0:
            say(f"step {step} world {world} at {time.time():.6f}")
            if a.every and step % a.every == 0:
                save(ckpt)
    say(f"done rank {rank} step {step} world {world}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
