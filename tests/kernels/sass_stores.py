#!/usr/bin/env python3
"""The global stores in the SASS of the fused kernels, per architecture and kernel.

usage: sass_stores.py CUOBJDUMP LIBRARY sm_80,sm_90

Fails (exit 1) unless, for every architecture asked for, there are unpack kernels for each of the
three wire types and every global store in every one of them is a 128-bit store (STG.E.128, with
whatever cache suffix); prints a table of the counts either way. Exit 77 (skipped) when cuobjdump
cannot disassemble here (it needs nvdisasm beside it or on PATH)."""
import re
import subprocess
import sys

# gpl_dtype_t values of the wire types (include/gpulaunch/types.h)
WIRES = {"6": "fp16", "7": "fp32", "9": "bf16"}


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    cuobjdump, lib, archs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    try:
        p = subprocess.run([cuobjdump, "--dump-sass", lib], capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        print(f"skipped: {cuobjdump} not found")
        return 77
    if p.returncode != 0 or "Could not find executable file 'nvdisasm'" in p.stderr:
        print(f"skipped: {cuobjdump} --dump-sass failed: {p.stderr.strip()[:300]}")
        return 77
    arch = None
    kern = None
    stores = {}  # (arch, kernel) -> {opcode: count}
    for line in p.stdout.splitlines():
        m = re.search(r"arch = (sm_\d+)", line)
        if m:
            arch = m.group(1)
        m = re.search(r"Function : (\S+)", line)
        if m:
            kern = (arch, m.group(1))
            stores[kern] = {}
            continue
        m = re.search(r"\b(STG(?:\.[A-Z0-9_]+)*|ST\.E(?:\.[A-Z0-9_]+)*|STL(?:\.[A-Z0-9_]+)*)\b", line)
        if m and kern:
            op = m.group(1)
            stores[kern][op] = stores[kern].get(op, 0) + 1

    def kind(mangled):
        for k in ("unpack_kernel", "pack_kernel", "edge_kernel", "scaler_update_kernel"):
            if re.search(r"\d" + k, mangled):
                return k
        return "?"

    def wire(mangled):
        # the template argument gpl_dtype_t W, mangled as its value: "IL11gpl_dtype_e6E"
        m = re.search(r"IL11gpl_dtype_e(\d+)E", mangled)
        return WIRES.get(m.group(1), m.group(1)) if m else "-"

    bad = []
    print(f"{'arch':6} {'kernel':22} {'wire':4} stores")
    for (a, name), ops in sorted(stores.items(), key=lambda kv: (kv[0][0] or "", kind(kv[0][1]))):
        k = kind(name)
        print(f"{a:6} {k:22} {wire(name):4} {ops}")
        if k == "unpack_kernel":
            narrow = {op: n for op, n in ops.items() if not re.fullmatch(r"STG\.E\.128(\.[A-Z0-9_]+)*", op)}
            if narrow or not ops:
                bad.append(f"{a} {name}: {ops or 'no global store at all'}")
    for a in archs:
        unpacks = {wire(n) for (aa, n) in stores if aa == a and kind(n) == "unpack_kernel"}
        if len(unpacks) < 3:
            bad.append(f"{a}: unpack kernels for {len(unpacks)} wire types (want 3: fp32, bf16, fp16)")
    if bad:
        print("FAIL: unpack kernels with stores other than STG.E.128:")
        for b in bad:
            print("  " + b)
        return 1
    print(f"ok: every unpack kernel of {', '.join(archs)} stores with STG.E.128 only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
