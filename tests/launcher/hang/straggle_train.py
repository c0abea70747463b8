#!/usr/bin/env python3
"""Synchronous data-parallel training (gloo, torchrun-style env://) for the straggler view by stack
samples: every step each rank computes --work-ms in forward_backward(), then all-reduces its
gradient; every rank prints `step N`.

  --steps N          default 150
  --slow-rank R      rank R also spends --slow-ms per step in slow_augment() (-1: none)
  --slow-ms MS       default 80
  --work-ms MS       default 14
  --ddp              a DistributedDataParallel model instead (its gradients all-reduced inside
                     backward(): there the others wait)
  --eval-every K     every K steps every rank evaluates for --eval-s seconds and rank 0 saves a
                     checkpoint for --ckpt-s seconds (uneven phases of a balanced job); 0: never
"""
import argparse
import os
import time

import torch
import torch.distributed as dist


def spin(ms):
    end = time.perf_counter() + ms / 1000
    x = torch.ones(64, 64)
    while time.perf_counter() < end:
        x = (x @ x).clamp_(-1, 1)
    return x


def forward_backward(ms):
    return spin(ms)


def slow_augment(ms):
    # A data augmentation that only this rank runs slowly (a slow disk, a bad CPU, a big image).
    time.sleep(ms / 1000)


def evaluate(seconds):
    spin(seconds * 1000)


def save_checkpoint(seconds):
    time.sleep(seconds)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=80)
    p.add_argument("--work-ms", type=float, default=14)
    p.add_argument("--ddp", action="store_true")
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-s", type=float, default=1.0)
    p.add_argument("--ckpt-s", type=float, default=0.3)
    a = p.parse_args()
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    grad = torch.zeros(1024)
    if a.ddp:
        torch.manual_seed(0)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
            torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512)))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        x = torch.randn(64, 512)
    t_first = None
    for step in range(a.steps):
        if step == min(20, a.steps // 4):
            t_first = (time.perf_counter(), step)
        if rank == a.slow_rank:
            slow_augment(a.slow_ms)
        if a.ddp:
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        else:
            forward_backward(a.work_ms)
            dist.all_reduce(grad)
        print(f"step {step}", flush=True)
        if a.eval_every and (step + 1) % a.eval_every == 0:
            evaluate(a.eval_s)
            if rank == 0:
                save_checkpoint(a.ckpt_s)
            dist.barrier()
    if rank == 0 and t_first:
        ms = (time.perf_counter() - t_first[0]) * 1000 / (a.steps - t_first[1])
        print(f"mean step {ms:.3f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
