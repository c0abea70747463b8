#!/usr/bin/env python3
"""The layers of ARCHITECTURE.md, checked: one line per broken rule, exit status 1 when any.

    scripts/check_layers.py [--root DIR] [--build DIR | LIBRARY.a ...]

- Who includes whom: each product folder includes only the folders under it; kernels/ and the
  base library (common/ without the MPI helpers) reach no <mpi.h>, <uv.h> or <hwloc.h>, not even
  through a header of ours; no mode of launcher/ includes another mode's headers, and the parts
  under the modes (conf/, job/, sup/, ...) include neither them nor launcher/launcher.h.
- No call circle: in the static libraries given (or every libgpl_*.a under --build), no module
  calls into one that calls back into it, directly or round a longer loop (a module: a .c file,
  or the .c files of one folder that share its internal *_int.h / *_priv.h); and the base
  library and kernels/ call no MPI, libuv or hwloc function.
- No two files share a name (CMakeLists.txt, README.md, data files and tests/fuzz/corpus/ aside);
  names that only files under tests/ share are listed as notes, not failures.
Include circles between modules that only share types through headers are listed as notes.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
from collections import defaultdict

# The product's C folders, lowest first (examples/, benchmarks/ and tests/ use them).
PRODUCT = ["include", "common", "kernels", "topology", "comm", "launcher"]
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
# The MPI helpers are a library of their own (gpl_mpix) in common/; the rest of common/ is the
# libc-only base library (gpl_common).
MPIX = {"common/mpix.h", "common/mpix_int.h", "common/mpix.c", "common/mpix_tree.c",
        "common/mpix_coll.c"}
FOREIGN = ("mpi.h", "uv.h", "hwloc.h")
# The libraries that must not call them either (by their symbols' prefixes).
LIBC_ONLY = {"libgpl_common.a", "libgpl_kernels.a"}
FOREIGN_SYMBOL = re.compile(r"^(P?MPI_|ompi_|uv_|hwloc_)")
# What each part may include besides itself ("base": common/ without the MPI helpers).
ALLOWED = {
    "include": {"include"},
    "base": {"include"},
    "mpix": {"include", "base"},
    "kernels": {"include", "base"},
    "topology": {"include", "base", "mpix"},
    "comm": {"include", "base", "mpix", "kernels"},
    "launcher": {"include", "base", "mpix", "kernels", "topology", "comm"},
}
# launcher/'s folders that are modes of gpulaunch (each a library and its mode).
MODES = {"accept", "bench", "modes", "ops"}
# Known exceptions to "no mode includes another mode's headers", each with its reason (none now:
# the GPU monitor that run starts is a part of its own, launcher/monitor/).
MODE_EXCEPTIONS = set()
# Files whose name may repeat: per-folder files and data.
SAME_NAME_OK = {"CMakeLists.txt", "README.md"}
DATA_EXT = (".xml", ".json", ".jsonl", ".csv", ".txt", ".conf", ".supp", ".png", ".svg", ".log")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def part_of(path):
    if path in MPIX:
        return "mpix"
    top = path.split("/", 1)[0]
    return "base" if top == "common" else top


def scan_includes(root):
    """{product file: [names it includes]}."""
    files = {}
    for top in PRODUCT:
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith(SOURCE_EXT):
                    p = os.path.relpath(os.path.join(d, n), root)
                    with open(os.path.join(root, p), errors="replace") as f:
                        files[p] = INCLUDE_RE.findall(f.read())
    return files


def resolve(src, name, files):
    """The product file an include names, or None (a system or generated header)."""
    for c in (name, os.path.normpath(os.path.join(os.path.dirname(src), name)), "include/" + name):
        if c in files:
            return c
    return None


def module(path):
    """A module: a .c, its .h and its internal _int.h (comm/api.c and comm/api.h are one)."""
    base = os.path.splitext(path)[0]
    return base[:-4] if base.endswith("_int") else base


def circles(edges):
    """The strongly connected components of more than one node (Tarjan's, without recursion)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)

    for start in sorted(edges):
        if start in index:
            continue
        visit(start)
        work = [(start, iter(sorted(edges.get(start, ()))))]
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    visit(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check_includes(root, errors, notes):
    files = scan_includes(root)
    deps = defaultdict(set)  # file -> product files it includes
    foreign = defaultdict(set)  # file -> foreign headers it includes itself
    for src, names in files.items():
        for name in names:
            dst = resolve(src, name, files)
            if dst:
                deps[src].add(dst)
            elif os.path.basename(name) in FOREIGN:
                foreign[src].add(os.path.basename(name))

    for src in sorted(deps):
        ps, a = part_of(src), src.split("/")
        for dst in sorted(deps[src]):
            pd, b = part_of(dst), dst.split("/")
            if pd != ps and pd not in ALLOWED[ps]:
                errors.append(f"{src}: includes {dst} ({ps} is under {pd})")
            if ps != "launcher" or len(a) < 3:
                continue
            if (a[1] in MODES and len(b) > 2 and b[1] in MODES and a[1] != b[1]
                    and (src, dst) not in MODE_EXCEPTIONS):
                errors.append(f"{src}: includes {dst} (the mode {a[1]}/ uses the mode {b[1]}/)")
            if a[1] not in MODES and (dst == "launcher/launcher.h" or len(b) > 2 and b[1] in MODES):
                errors.append(f"{src}: includes {dst} (launcher/{a[1]}/ is under the modes)")

    def reach(f, seen):
        for d in deps.get(f, ()):
            if d not in seen:
                seen.add(d)
                reach(d, seen)
        return seen

    for src in sorted(files):
        if part_of(src) in ("include", "base", "kernels"):
            for f in sorted(reach(src, {src})):
                for h in sorted(foreign.get(f, ())):
                    via = "" if f == src else f" through {f}"
                    errors.append(f"{src}: reaches <{h}>{via}")

    edges = defaultdict(set)
    for src, ds in deps.items():
        for d in ds:
            if module(d) != module(src):
                edges[module(src)].add(module(d))
    for comp in circles(edges):
        notes.append("include circle (modules that share types through headers): " + " - ".join(comp))
    return len(files)


def call_groups(root):
    """{object name: its module}: the .c files of one folder that share an internal header of
    that folder (sup/sup_int.h, conf/conf_priv.h) are one module split by purpose, whose files
    may call each other; any other .c is a module of its own. (Object names are unique: no two
    product files share a name.)"""
    groups = {}
    files = scan_includes(root)
    for path, names in files.items():
        if not path.endswith((".c", ".cu")):
            continue
        obj = os.path.splitext(os.path.basename(path))[0]
        groups[obj] = obj
        for name in names:
            h = resolve(path, name, files)
            if (h and os.path.dirname(h) == os.path.dirname(path)
                    and h.endswith(("_int.h", "_priv.h"))):
                groups[obj] = h
    return groups


def check_calls(libraries, errors, groups=None):
    """Circles among the modules of the libraries: A calls B, B (or B's callees) calls A."""
    groups = groups or {}
    owner, calls = {}, defaultdict(set)
    for lib in libraries:
        out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) < 3:
                continue
            obj = re.sub(r"\.(c|cu)\.o$", "", f[0].split(":")[1])
            node = f"{os.path.basename(lib)}:{groups.get(obj, obj)}"
            if f[-2] in "TDBR":
                owner[f[-1]] = node
            elif f[-2] == "U":
                calls[node].add(f[-1])
                if os.path.basename(lib) in LIBC_ONLY and FOREIGN_SYMBOL.match(f[-1]):
                    errors.append(f"{node}: calls {f[-1]} (MPI, libuv and hwloc are above it)")
    edges = defaultdict(set)
    for node, syms in calls.items():
        for s in syms:
            if s in owner and owner[s] != node:
                edges[node].add(owner[s])
    for comp in circles(edges):
        errors.append("call circle: " + " - ".join(comp))


def tree_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout
        return sorted(set(out.split()))  # a merge in progress lists a file once per stage
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return found


def check_names(root, errors, notes):
    by_name = defaultdict(list)
    for p in tree_files(root):
        n = os.path.basename(p)
        if (n in SAME_NAME_OK or n.endswith(DATA_EXT) or p.startswith("tests/fuzz/corpus/")
                or "/data/" in "/" + p):
            continue
        by_name[n].append(p)
    for n, paths in sorted(by_name.items()):
        if len(paths) < 2:
            continue
        line = f"{n} is the name of {len(paths)} files: " + ", ".join(sorted(paths))
        if all(p.startswith("tests/") for p in paths):
            notes.append(line + " (tests only)")
        else:
            errors.append(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--build", help="a build folder: check every libgpl_*.a in it")
    ap.add_argument("libraries", nargs="*", help="static libraries to check for call circles")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    libs = list(args.libraries)
    if args.build:
        libs += sorted(glob.glob(os.path.join(args.build, "**", "libgpl_*.a"), recursive=True))
    errors, notes = [], []
    nfiles = check_includes(root, errors, notes)
    if libs:
        check_calls(libs, errors, call_groups(root))
    else:
        notes.append("no library given: call circles not checked (--build DIR)")
    check_names(root, errors, notes)
    for n in notes:
        print("note:", n)
    for e in errors:
        print(e)
    print(f"layers: {len(errors)} broken rule(s); {nfiles} source files, {len(libs)} libraries")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
