#!/usr/bin/env python3
"""A fabric attacker for tests/netns/test_attack.sh: a host on the job's bridge that is not in the job.

Subcommands (every destination must lie in --allow, the namespaces' subnet, or be loopback inside
this namespace: the sender checks before it sends anything):
  sniff IFACE OUT SECONDS          capture every TCP segment seen on IFACE (AF_PACKET) into OUT (JSON)
  analyze CAP --key-file F --run-id ID --old-run-id ID2 --skip-ports LO-HI,...
                                   the capture holds no job key, no token (this job's or an earlier
                                   one's), no readable control frame; every gpulaunch stream is TLS
  listeners CAP                    the listeners seen (ip:port), one a line
  replay CAP                       every client's captured bytes again, to the same listener
  forge IP:PORT --run-id ID ...    HELLO/LOST/ABORT frames, `tell TOKEN`/`lost h2`, `hello TOKEN`/`exit 0`
  flood IP:PORT N HOLD             N idle connections held HOLD s; how long the listener kept them
  fakefront LO HI SECONDS          listen on 127.0.0.1:LO..HI; report any connection
"""
import argparse
import hashlib
import hmac
import ipaddress
import json
import os
import select
import socket
import struct
import sys
import time

ALLOW = ipaddress.ip_network("10.77.0.0/24")


def check_dst(ip):
    a = ipaddress.ip_address(ip)
    if a.is_loopback or a in ALLOW:
        return
    sys.exit(f"attacker: refusing to send to {ip}: not inside the test's namespaces ({ALLOW})")


def hkdf(ikm, salt, info, n):
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


def job_secrets(key_file, run_id):
    ikm = open(key_file, "rb").read()
    job = hkdf(ikm, b"gpulaunch key_file v1", b"job key " + run_id.encode(), 32)
    live = hkdf(job, b"gpulaunch use v1", b"live token", 8)
    front = hkdf(job, b"gpulaunch use v1", b"front token", 16).hex()
    pre = hkdf(job, b"gpulaunch use v1", b"preflight token", 32)
    return {"job key": job, "job key (hex)": job.hex().encode(), "live token": live,
            "front token": front.encode(), "preflight token half": pre[:16], "key_file": ikm}, live, front


def sniff(iface, out, seconds):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    s.bind((iface, 0))
    s.settimeout(0.2)
    segs, end = [], time.time() + seconds
    while time.time() < end:
        try:
            f = s.recv(65535)
        except socket.timeout:
            continue
        if len(f) < 14 + 20 or struct.unpack("!H", f[12:14])[0] != 0x0800:
            continue
        ip = f[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6:
            continue
        tot = struct.unpack("!H", ip[2:4])[0]
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        tcp = ip[ihl:tot]
        sp, dp, seq = struct.unpack("!HHI", tcp[:8])
        flags = tcp[13]
        off = (tcp[12] >> 4) * 4
        segs.append({"t": time.time(), "src": src, "sp": sp, "dst": dst, "dp": dp, "seq": seq,
                     "syn": bool(flags & 2) and not flags & 16, "data": tcp[off:].hex()})
    json.dump(segs, open(out, "w"))
    print(f"captured {len(segs)} TCP segments")


def streams(cap, skip):
    """Each connection's bytes per direction (ordered by sequence, duplicates dropped), with the
    listener: the side that received the SYN."""
    conns = {}
    for s in cap:
        a, b = (s["src"], s["sp"]), (s["dst"], s["dp"])
        k = tuple(sorted([a, b]))
        c = conns.setdefault(k, {"server": None, "dirs": {}, "first": None})
        if s["syn"]:
            c["server"] = b
        data = bytes.fromhex(s["data"])
        if data:
            c["dirs"].setdefault(a, {})[s["seq"]] = data
            if c["first"] is None:
                c["first"] = a
    out = []
    for k, c in conns.items():
        server = c["server"]
        if server is None and c["first"] is not None:  # TLS: the client speaks first
            server = k[0] if c["first"] == k[1] else k[1]
        if server is None or any(lo <= server[1] <= hi for lo, hi in skip):
            continue
        d = {side: b"".join(v for _, v in sorted(segs.items())) for side, segs in c["dirs"].items()}
        client = k[0] if server == k[1] else k[1]
        out.append({"server": server, "client": client, "c2s": d.get(client, b""), "s2c": d.get(server, b"")})
    return out


def tls_records_only(data):
    """All of data is TLS records (type 20-23, version 0x0301/0x0303), the last possibly cut."""
    i = 0
    while i + 5 <= len(data):
        t, v, n = data[i], struct.unpack("!H", data[i + 1:i + 3])[0], struct.unpack("!H", data[i + 3:i + 5])[0]
        if t not in (20, 21, 22, 23) or v not in (0x0301, 0x0303) or n > 16384 + 256:
            return False
        i += 5 + n
    return True


def parse_skip(text):
    r = []
    for part in (text or "").split(","):
        if part:
            lo, _, hi = part.partition("-")
            r.append((int(lo), int(hi or lo)))
    return r


def analyze(a):
    cap = json.load(open(a.cap))
    secrets, _, _ = job_secrets(a.key_file, a.run_id)
    old, _, _ = job_secrets(a.key_file, a.old_run_id)
    needles = dict(secrets)
    needles.update({"earlier job's " + k: v for k, v in old.items() if k != "key_file"})
    frames = {"liveness frame magic": struct.pack("<I", 0x3254484C), "preflight HELLO": b"GPLPRB01",
              "preflight ACK": b"GPLACK01", "front hello": b"hello ", "front tell": b"tell ",
              "front exit": b"exit ", "front lost": b"lost ", "front stop": b"stop TERM"}
    allbytes = b"".join(bytes.fromhex(s["data"]) for s in cap)
    bad = 0
    for name, v in needles.items():
        if v and v in allbytes:
            print(f"FOUND in the capture: {name}")
            bad += 1
    ss = streams(cap, parse_skip(a.skip_ports))
    tls = 0
    for st in ss:
        both = st["c2s"] + st["s2c"]
        for name, v in frames.items():
            if v in both:
                print(f"FOUND a readable control frame ({name}) on {st['client']} -> {st['server']}")
                bad += 1
        ok = (not st["c2s"] or tls_records_only(st["c2s"])) and (not st["s2c"] or tls_records_only(st["s2c"]))
        if not ok:
            print(f"NOT TLS records: {st['client']} -> {st['server']}: {st['c2s'][:16].hex()}")
            bad += 1
        elif st["c2s"]:
            tls += 1
    print(f"{len(cap)} segments, {len(ss)} gpulaunch connections, {tls} of them TLS from the first byte, "
          f"{bad} findings")
    return 1 if bad or tls == 0 else 0


def listeners(a):
    for st in streams(json.load(open(a.cap)), parse_skip(a.skip_ports)):
        print(f"{st['server'][0]}:{st['server'][1]}")


def connect(ip, port, timeout=2.0):
    check_dst(ip)
    s = socket.create_connection((ip, port), timeout=timeout)
    return s


def drain(s, wait):
    """What the peer sends within wait s, and whether it closed."""
    s.settimeout(0.1)
    got, end = b"", time.time() + wait
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return got, True
        if not d:
            return got, True
        got += d
    return got, False


def replay(a):
    ss = streams(json.load(open(a.cap)), parse_skip(a.skip_ports))
    n = 0
    for st in ss:
        if not st["c2s"]:
            continue
        ip, port = st["server"]
        try:
            s = connect(ip, port)
            s.sendall(st["c2s"])
            got, closed = drain(s, 2.5)
            s.close()
        except OSError as e:
            print(f"replay to {ip}:{port}: {e}")
            continue
        n += 1
        # A ServerHello may come back; an application record (type 23) carrying ok would not.
        print(f"replayed {len(st['c2s'])} bytes to {ip}:{port}: answered {len(got)} bytes, "
              f"{'closed' if closed else 'open'}")
    print(f"replayed {n} connections")


def forge(a):
    ip, _, port = a.target.rpartition(":")
    port = int(port)
    _, live_now, front_now = job_secrets(a.key_file, a.old_run_id) if a.key_file else (None, os.urandom(8), os.urandom(16).hex())
    guessed = os.urandom(8)
    msgs = []
    for tok, what in ((guessed, "guessed"), (live_now, "earlier job's")):
        t = struct.unpack("<Q", tok)[0]
        for typ, name in ((1, "HELLO"), (4, "ABORT"), (5, "LOST")):
            hdr = struct.pack("<IHHiiQ", 0x3254484C, typ, 1 if typ == 5 else 0, 2, 0, t)
            ent = struct.pack("<ii", 3, 9000) if typ == 5 else b""
            msgs.append((f"{name} with a {what} token", hdr + ent))
    for tok, what in ((os.urandom(16).hex(), "guessed"), (front_now, "earlier job's")):
        msgs.append((f"`tell` + `lost h2` with a {what} token", f"tell {tok}\nlost h2\n".encode()))
        msgs.append((f"`hello` + `exit 0` with a {what} token", f"hello {tok}\nexit 0\n".encode()))
    refused = 0
    for name, m in msgs:
        try:
            s = connect(ip, port)
            s.sendall(m)
            got, closed = drain(s, 2.5)
            s.close()
        except OSError:
            got, closed = b"", True
        ok = closed and b"ok" not in got
        refused += ok
        print(f"{name} to {ip}:{port}: {'refused' if ok else 'NOT refused'} ({len(got)} bytes back)")
    print(f"{refused}/{len(msgs)} forgeries refused")
    return 0 if refused == len(msgs) else 1


def flood(a):
    ip, _, port = a.target.rpartition(":")
    port, n, hold = int(port), a.n, a.hold
    check_dst(ip)
    socks, t0 = [], time.time()
    for _ in range(n):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((ip, port))
            socks.append(s)
        except OSError:
            break
    closed_at = {}
    ep = select.epoll()
    for s in socks:
        ep.register(s.fileno(), select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLHUP)
    by_fd = {s.fileno(): s for s in socks}
    while time.time() - t0 < hold and len(closed_at) < len(socks):
        for fd, ev in ep.poll(0.1):
            if fd in closed_at:
                continue
            try:
                d = by_fd[fd].recv(1024)
            except BlockingIOError:
                continue
            except OSError:
                d = b""
            if not d:
                closed_at[fd] = time.time() - t0
                ep.unregister(fd)
    for s in socks:
        s.close()
    held = sorted(closed_at.values())
    worst = held[-1] if held else None
    print(f"{len(socks)} idle connections to {ip}:{port}: {len(held)} closed by the listener within {hold} s"
          + (f", the last after {worst:.2f} s" if worst is not None else ""))
    return 0


def fakefront(a):
    socks = []
    for p in range(a.lo, a.hi + 1):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", p))
            s.listen(8)
            s.setblocking(False)
            socks.append(s)
        except OSError:
            s.close()
    print(f"fake gpulaunch-run listening on {len(socks)} loopback ports {a.lo}-{a.hi}", flush=True)
    end, hits = time.time() + a.seconds, 0
    while time.time() < end:
        r, _, _ = select.select(socks, [], [], 0.2)
        for s in r:
            try:
                c, peer = s.accept()
                hits += 1
                print(f"CONNECTION from {peer} on {s.getsockname()}", flush=True)
                c.close()
            except OSError:
                pass
    print(f"{hits} connections to the fake gpulaunch-run")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("sniff")
    p.add_argument("iface"), p.add_argument("out"), p.add_argument("seconds", type=float)
    for name in ("analyze", "listeners", "replay"):
        p = sub.add_parser(name)
        p.add_argument("cap")
        p.add_argument("--skip-ports", default="41000-42999,22-22")
        if name == "analyze":
            p.add_argument("--key-file", required=True)
            p.add_argument("--run-id", required=True)
            p.add_argument("--old-run-id", required=True)
    p = sub.add_parser("forge")
    p.add_argument("target"), p.add_argument("--key-file"), p.add_argument("--old-run-id", default="old")
    p = sub.add_parser("flood")
    p.add_argument("target"), p.add_argument("n", type=int), p.add_argument("hold", type=float)
    p = sub.add_parser("fakefront")
    p.add_argument("lo", type=int), p.add_argument("hi", type=int), p.add_argument("seconds", type=float)
    a = ap.parse_args()
    if a.cmd == "sniff":
        return sniff(a.iface, a.out, a.seconds)
    return {"analyze": analyze, "listeners": listeners, "replay": replay, "forge": forge, "flood": flood,
            "fakefront": fakefront}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main() or 0)
