#!/usr/bin/env python3
"""A torchrun-style DistributedDataParallel training script, unmodified for gpulaunch.

It reads only what torchrun gives a worker (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, TORCHELASTIC_RESTART_COUNT) through init_process_group(init_method="env://") and
torch.cuda.set_device(LOCAL_RANK), trains a small MLP on a fixed-seed synthetic regression set,
and prints on rank 0 one line `final_loss=<value> world=<N> backend=<name>`.

  --backend gloo|nccl   default: nccl when CUDA is available, else gloo
  --steps N             optimizer steps (default 30)
  --crash-rank R        rank R exits with status 7 at step 5 (test of failure reporting) ...
  --crash-attempt A     ... only on restart attempt A (TORCHELASTIC_RESTART_COUNT); default:
                        every attempt
  --checkpoint-dir D    on SIGTERM, every rank saves its model to D/ckpt-<rank>.pt at the same
                        step (the stop flag is all-reduced every step) and exits 0, as a
                        preemptible job does
  --save-seconds S      a checkpoint takes S seconds more to write (a large model's save)
  --step-seconds S      sleep S seconds per step (a job that runs long enough to stop)
"""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default=None)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--crash-rank", type=int, default=-1)
    p.add_argument("--crash-attempt", type=int, default=-1)
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--save-seconds", type=float, default=0.0)
    p.add_argument("--step-seconds", type=float, default=0.0)
    a = p.parse_args()
    stop = {"sig": 0}
    if a.checkpoint_dir:
        signal.signal(signal.SIGTERM, lambda s, f: stop.update(sig=s))
    backend = a.backend or ("nccl" if torch.cuda.is_available() else "gloo")

    local_rank = int(os.environ["LOCAL_RANK"])
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if backend == "nccl":
        # The torchrun convention: device LOCAL_RANK of the devices this process sees.
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # the same initial model on every rank (DDP also broadcasts it)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)).to(device)
    ddp = DDP(model, device_ids=[local_rank] if backend == "nccl" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)

    g = torch.Generator().manual_seed(1234)
    x = torch.randn(512, 16, generator=g)
    y = (x[:, :4].sum(1, keepdim=True) - x[:, 4:8].prod(1, keepdim=True)).tanh()
    # Each rank takes its shard of every global batch of 64 (the global batch is the same for
    # any world size that divides 64).
    batch = 64
    loss = torch.zeros((), device=device)
    for step in range(a.steps):
        if step == 5 and rank == a.crash_rank and a.crash_attempt in (-1, attempt):
            print(f"rank {rank}: crashing on purpose at step {step} (attempt {attempt})", file=sys.stderr, flush=True)
            sys.exit(7)
        if a.checkpoint_dir:
            # Every rank stops at the same step: one that stopped alone would leave the others
            # waiting in the next allreduce.
            flag = torch.tensor([1.0 if stop["sig"] else 0.0], device=device)
            dist.all_reduce(flag)
            if flag.item() > 0:
                t0 = time.time()
                time.sleep(a.save_seconds)
                path = os.path.join(a.checkpoint_dir, f"ckpt-{rank}.pt")
                torch.save({"step": step, "model": model.state_dict()}, path + ".tmp")
                os.replace(path + ".tmp", path)
                print(f"rank {rank}: checkpoint at step {step} saved in {time.time() - t0:.1f}s", file=sys.stderr, flush=True)
                sys.exit(0)
        if a.step_seconds:
            time.sleep(a.step_seconds)
        lo = (step * batch) % x.shape[0]
        xb = x[lo:lo + batch][rank::world].to(device)
        yb = y[lo:lo + batch][rank::world].to(device)
        opt.zero_grad()
        loss = ((ddp(xb) - yb) ** 2).mean()
        loss.backward()
        opt.step()

    # The final loss over the whole last global batch.
    with torch.no_grad():
        xb = x[:batch].to(device)
        yb = y[:batch].to(device)
        final = ((model(xb) - yb) ** 2).mean()
    if rank == 0:
        print(f"final_loss={final.item():.9g} world={world} backend={backend} attempt={attempt}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
