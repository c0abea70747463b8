#!/usr/bin/env python3
"""A mock instance metadata service for the notice watcher's tests, on 127.0.0.1 only.

Each scenario is a path prefix (the watcher's endpoint is http://127.0.0.1:PORT/<scenario>):
  aws, gcp, azure   nothing pending for the first PENDING polls of the notice path, then a notice
                    (AWS: IMDSv2 token flow, a GET without the token gets 401; GCP: FALSE then
                    TRUE, Metadata-Flavor checked; Azure: first an event for another VM, then a
                    Preempt for this one, Metadata checked; a POST is an ack, recorded)
  alibaba           ECS: instance/spot/termination-time 404 for PENDING polls, then an ISO 8601
                    UTC time (the hardened mode's token flow: PUT /latest/api/token with
                    X-aliyun-ecs-metadata-token-ttl-seconds; a GET with a wrong token gets 403)
  alibaba-normal    ECS in normal mode: the token PUT gets 403, GETs need no token
  aws-rebalance     AWS: no interruption; events/recommendations/rebalance 404 for PENDING polls,
                    then {"noticeTime": ...} (with MOCK_NOTICE_FILE: pending until it exists)
  slow              every answer comes after SLOW seconds (beyond the watcher's bound)
  garbage           bytes that are not HTTP, then the connection closed
  reset             the connection reset (RST) before any answer
  aws-bad, gcp-bad, azure-bad, alibaba-bad, aws-rebalance-bad   malformed answers
Writes the port it listens on and a refusing port to PORTFILE; every request to LOG as
"scenario method path status"; every ack body to ACKS. Ends by itself after LIFETIME seconds.
With MOCK_NOTICE_FILE set, the notice is pending until that file exists instead (a benchmark's
trigger), and AWS's "time" is then 2 minutes after it appeared, as AWS gives.
  mock_metadata.py PORTFILE LOG ACKS [PENDING=2] [SLOW=10] [LIFETIME=110]
"""
import json
import os
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

portfile, logpath, ackpath = sys.argv[1:4]
PENDING = int(sys.argv[4]) if len(sys.argv) > 4 else 2
SLOW = float(sys.argv[5]) if len(sys.argv) > 5 else 10
LIFETIME = float(sys.argv[6]) if len(sys.argv) > 6 else 110

TOKEN = "AQAEAMockToken-aws_v2=="
VM = "vm-test-1"
EVENT_ID = "602d9444-d2cd-49c7-8624-8643e7171297"
AWS_NOTICE = {"action": "terminate", "time": "2026-12-06T08:22:00Z"}
ALI_TOKEN = "AlibabaMockToken-1234=="
ALI_TIME = "2026-12-06T08:22:00Z"
REBALANCE = {"noticeTime": "2026-12-06T08:17:00Z"}
TRIGGER = os.environ.get("MOCK_NOTICE_FILE")


def pending(scenario):
    """Is the notice still pending? (counts the poll)"""
    n = count(scenario)
    if TRIGGER:
        return not os.path.exists(TRIGGER)
    return n <= PENDING


def aws_notice():
    if not TRIGGER:
        return AWS_NOTICE
    at = time.gmtime(os.stat(TRIGGER).st_mtime + 120)
    return {"action": "terminate", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", at)}


def azure_doc(vm, incarnation):
    return {"DocumentIncarnation": incarnation, "Events": [{
        "EventId": EVENT_ID if vm == VM else "0000-other", "EventType": "Preempt",
        "ResourceType": "VirtualMachine", "Resources": [vm], "EventStatus": "Scheduled",
        "NotBefore": "Sun, 06 Dec 2026 08:22:00 GMT", "Description": "Spot eviction",
        "EventSource": "Platform", "DurationInSeconds": -1}]}


lock = threading.Lock()
counts = {}


def count(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1
        return counts[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet; LOG has what matters
        pass

    def answer(self, status, body, ctype="text/plain"):
        data = body.encode() if isinstance(body, str) else body
        scenario = self.path.split("/")[1]
        with lock, open(logpath, "a") as f:
            f.write(f"{scenario} {self.command} {self.path} {status}\n")
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the watcher gave up on a slow answer, as it should

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode(errors="replace") if n else ""

    def do_PUT(self):
        self.route("PUT")

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def route(self, method):
        parts = self.path.split("/", 2)
        scenario, rest = parts[1], "/" + (parts[2] if len(parts) > 2 else "")
        got = self.body()
        if scenario == "slow":
            time.sleep(SLOW)
            return self.answer(404, "")
        if scenario in ("garbage", "reset"):
            with lock, open(logpath, "a") as f:
                f.write(f"{scenario} {method} {self.path} -\n")
            if scenario == "garbage":
                self.wfile.write(b"\x00\xffSSH-2.0-not-http\r\n\x13\x37")
            else:  # SO_LINGER 0: close sends RST
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return None
        cloud = scenario.split("-")[0]
        bad = scenario.endswith("-bad")
        if scenario.startswith("aws-rebalance"):
            if method == "PUT" and rest == "/latest/api/token":
                return self.answer(200, TOKEN)
            if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                return self.answer(401, "")
            if method == "GET" and rest == "/latest/meta-data/spot/instance-action":
                return self.answer(404, "<html>404 - Not Found</html>", "text/html")
            if method == "GET" and rest == "/latest/meta-data/events/recommendations/rebalance":
                if bad:
                    return self.answer(200, '{"noticeTime": "soon"}')
                if pending(scenario):
                    return self.answer(404, "<html>404 - Not Found</html>", "text/html")
                return self.answer(200, json.dumps(REBALANCE), "text/plain")
        if cloud == "alibaba":
            normal = scenario == "alibaba-normal"
            if method == "PUT" and rest == "/latest/api/token":
                if normal:
                    return self.answer(403, "")
                if not self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds"):
                    return self.answer(400, "missing ttl")
                return self.answer(200, ALI_TOKEN)
            if method == "GET" and rest == "/latest/meta-data/instance/spot/termination-time":
                if not normal and self.headers.get("X-aliyun-ecs-metadata-token") != ALI_TOKEN:
                    return self.answer(403, "")
                if bad:
                    return self.answer(200, "2026-12-06 08:22:00 maybe")
                if pending(scenario):
                    return self.answer(404, "<html>404 Not Found</html>", "text/html")
                return self.answer(200, ALI_TIME)
        if cloud == "aws":
            if method == "PUT" and rest == "/latest/api/token":
                if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                    return self.answer(400, "missing ttl")
                return self.answer(200, TOKEN)
            if method == "GET" and rest == "/latest/meta-data/spot/instance-action":
                if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                    return self.answer(401, "")
                if bad:
                    return self.answer(200, '{"action": "terminate", "time": ')
                if pending(scenario):
                    return self.answer(404, "<html>404 - Not Found</html>", "text/html")
                return self.answer(200, json.dumps(aws_notice()), "text/plain")
        if cloud == "gcp" and method == "GET" and rest == "/computeMetadata/v1/instance/preempted":
            if self.headers.get("Metadata-Flavor") != "Google":
                return self.answer(403, "Missing Metadata-Flavor:Google header.")
            if bad:
                return self.answer(200, "MAYBE")
            return self.answer(200, "FALSE" if pending(scenario) else "TRUE")
        if cloud == "azure":
            if self.headers.get("Metadata") != "true":
                return self.answer(400, '{"error": "Bad request. Required metadata header not specified"}')
            if method == "GET" and rest == "/metadata/instance/compute/name?api-version=2021-02-01&format=text":
                return self.answer(200, VM)
            if rest == "/metadata/scheduledevents?api-version=2020-07-01":
                if method == "POST":
                    with lock, open(ackpath, "a") as f:
                        f.write(f"{scenario} {self.headers.get('Content-Type')} {got}\n")
                    return self.answer(200, "")
                if bad:
                    return self.answer(200, '{"DocumentIncarnation": 1, "Events": 5}', "application/json")
                doc = azure_doc("vm-other-7", 1) if pending(scenario) else azure_doc(VM, 2)
                return self.answer(200, json.dumps(doc), "application/json")
        return self.answer(404, "no such path")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
# bound but never listening: connections to it are refused, and no other program can take it
closed = socket.socket()
closed.bind(("127.0.0.1", 0))
closed_port = closed.getsockname()[1]
with open(portfile + ".tmp", "w") as f:
    f.write(f"{server.server_address[1]} {closed_port}\n")
os.rename(portfile + ".tmp", portfile)  # the file appears whole
stopper = threading.Timer(LIFETIME, server.shutdown)
stopper.daemon = True
stopper.start()
server.serve_forever()
