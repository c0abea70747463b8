"""GPU workloads for the GPU monitor's check on a real device (scripts/gpu-check.sh).

  fed      back-to-back bf16 matrix products: every SM at work all the time
  starved  the same product once per step, then a wait as a slow data loader makes one
           (time.sleep): the SMs idle most of the time

usage: python3 gpu_load.py fed|starved [--seconds S] [--sleep S] [--n N]
Prints one line: mode=... steps=... seconds=... tflops=...
"""
import argparse
import sys
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["fed", "starved"])
    ap.add_argument("--seconds", type=float, default=30.0, help="how long to run")
    ap.add_argument("--sleep", type=float, default=0.2, help="starved: the loader's wait per step")
    ap.add_argument("--n", type=int, default=8192, help="matrix size")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_load: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")  # the GPU gpulaunch gave this rank (CUDA_VISIBLE_DEVICES)
    x = torch.randn(a.n, a.n, device=dev, dtype=torch.bfloat16)
    y = torch.randn(a.n, a.n, device=dev, dtype=torch.bfloat16)
    per_step = 10 if a.mode == "fed" else 1
    t0 = time.time()
    end = t0 + a.seconds
    steps = 0
    while time.time() < end:
        if a.mode == "starved":
            time.sleep(a.sleep)  # waiting for the next batch
        for _ in range(per_step):
            x = (x @ y) * (1.0 / a.n)  # scaled: the values stay finite
        torch.cuda.synchronize()
        steps += 1
    took = time.time() - t0
    flops = 2.0 * a.n ** 3 * per_step * steps
    print(f"mode={a.mode} steps={steps} seconds={took:.1f} tflops={flops / took / 1e12:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
