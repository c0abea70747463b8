#!/usr/bin/env python3
"""Writes the recorded monitor sample streams used by tests/launcher/ops (JSON lines, the --metrics format).

Deterministic (no randomness): rerun to regenerate after a format change. The first four are in
the format of the first recordings, where GPU busy time was called "sm": they must keep replaying.
  four_ranks_one_low.jsonl  4 ranks, 5 s interval, 150 s; rank 2 held at 35-60% busy, others 93-99%
  all_busy.jsonl            4 ranks, every sample >= 82% busy
  short_dip.jsonl           2 ranks; rank 1 under 80% from t=40 to t=85 (45 s < 60 s window),
                            plus one truncated line that the replay must skip
  throttled.jsonl           4 ranks all ~97% busy; rank 3 power-capped (clock 1410 MHz) half the time,
                            one XID 13 and two new corrected ECC errors on rank 3
  nccl_spin.jsonl           today's format ("busy", GPM "sm_active"/"sm_occupancy"): 2 ranks whose
                            GPUs are 97-99% busy (NCCL kernels spinning) while 18-30% of their SMs
                            work; as NVML records it, each rank's first sample has no GPM reading
  mem_filling.jsonl         today's format, 2 ranks of 80 GiB GPUs, 5 s interval, 150 s: rank 1's
                            memory climbs to 77-78.5 GiB used (under 5% free) from t=35 to the end
                            (115 s: warned at t=95); rank 0 goes under 5% free only from t=60 to t=100
                            (40 s < the 60 s window: not warned) and peaks at 76.5 GiB
"""
import json
import os

GIB = 1024 ** 3
HERE = os.path.dirname(os.path.abspath(__file__))


def sample(t, rank, sm, mem_gib, clock=1980, throttle=0, ecc=(0, 0), xid=None, host=None):
    s = {"t": t, "rank": rank, "host": host or ("h1" if rank < 2 else "h2"), "gpu": rank,
         "sm": sm, "mem_util": round(sm * 0.6), "mem_used": int(mem_gib * GIB),
         "mem_total": 80 * GIB, "power_w": round(250 + sm * 4.5, 1), "temp_c": 40 + sm // 4,
         "sm_clock_mhz": clock, "mem_clock_mhz": 2619, "pcie_rx_kbs": 1200 + 10 * rank,
         "pcie_tx_kbs": 900 + 10 * rank, "throttle": throttle, "ecc_corrected": ecc[0],
         "ecc_uncorrected": ecc[1]}
    if xid is not None:
        s["nxid"] = 1
        s["xid"] = xid
    return s


def write(name, lines):
    with open(os.path.join(HERE, name), "w") as f:
        for s in lines:
            f.write(s if isinstance(s, str) else json.dumps(s, separators=(",", ":")))
            f.write("\n")


def busy(i, rank):
    return 93 + (i * 3 + rank) % 7  # 93..99


def four_ranks_one_low():
    out = []
    for i in range(31):
        for r in range(4):
            sm = 35 + (i * 11 + 5) % 26 if r == 2 else busy(i, r)  # rank 2: 35..60
            out.append(sample(5.0 * i, r, sm, 60 + r + (i % 5) * 0.5))
    return out


def all_busy():
    out = []
    for i in range(31):
        for r in range(4):
            sm = 82 + (i * 5 + r) % 17  # 82..98
            out.append(sample(5.0 * i, r, sm, 50 + r))
    return out


def short_dip():
    out = []
    for i in range(31):
        t = 5.0 * i
        for r in range(2):
            sm = 30 if (r == 1 and 40 <= t <= 85) else busy(i, r)
            out.append(sample(t, r, sm, 40, host="h1"))
        if i == 3:
            out.append('{"t": 17.5, "rank": 1, "sm": 9')  # a line cut short by a kill
    return out


def nccl_spin():
    out = []
    for i in range(31):
        for r in range(2):
            s = sample(5.0 * i, r, 97 + (i + r) % 3, 40, host="h1")
            s["busy"] = s.pop("sm")
            if i > 0:
                s["sm_active"] = 18 + (i * 7 + r) % 13  # 18..30
                s["sm_occupancy"] = s["sm_active"] - 8
            out.append(s)
    return out


def mem_filling():
    out = []
    for i in range(31):
        t = 5.0 * i
        for r in range(2):
            if r == 1:
                mem = 60 + i * 2.5 if t < 40 else 77 + (i % 4) * 0.5  # 77..78.5 GiB from t=40
            else:
                mem = 76.5 if 60 <= t <= 100 else 50
            s = sample(t, r, 97 + (i + r) % 3, mem, host="h1")
            s["busy"] = s.pop("sm")
            out.append(s)
    return out


def throttled():
    out = []
    for i in range(31):
        for r in range(4):
            sm = 96 + (i + r) % 3
            if r == 3 and i % 2 == 0:
                out.append(sample(5.0 * i, r, sm, 70, clock=1410, throttle=0x4,
                                  ecc=(5 + (2 if i > 20 else 0), 0), xid=13 if i == 10 else None))
            elif r == 3:
                out.append(sample(5.0 * i, r, sm, 70, ecc=(5 + (2 if i > 20 else 0), 0)))
            else:
                out.append(sample(5.0 * i, r, sm, 70, throttle=0x1 if i % 9 == 0 else 0))
    return out


if __name__ == "__main__":
    write("four_ranks_one_low.jsonl", four_ranks_one_low())
    write("all_busy.jsonl", all_busy())
    write("short_dip.jsonl", short_dip())
    write("throttled.jsonl", throttled())
    write("nccl_spin.jsonl", nccl_spin())
    write("mem_filling.jsonl", mem_filling())
