#!/usr/bin/env python3
"""A small QMP server for prefcpu's tests: it plays one QEMU monitor on a
unix socket.  Like QEMU it serves one client at a time (the others wait
in the listen backlog without a greeting) and it reports two real
threads of its own as the vCPU threads, so that prefcpu-hostd samples
real schedstat files.  It is a test double for a QEMU (or Proxmox VE)
monitor, used where a real QEMU is not needed.

usage: qmp_server.py SOCKET STATS MODE NAME UUID CHANNEL
MODE: good | oversized | malformed | slow.  STATS is rewritten after each
client: the sessions (accept and close time, commands received).
"""

import json
import os
import signal
import socket
import sys
import threading
import time

path, stats_path, mode, name, uuid, channel = sys.argv[1:7]
sessions = []
stop = threading.Event()


def sleeper():
    while not stop.wait(3600):
        pass


threads = [threading.Thread(target=sleeper, daemon=True) for _ in range(2)]
for t in threads:
    t.start()
tids = [t.native_id for t in threads]


def reply(cmd):
    ex = cmd.get("execute")
    args = cmd.get("arguments", {})
    if ex == "qmp_capabilities":
        return {}
    if ex == "query-name":
        return {"name": name} if name else {}
    if ex == "query-uuid":
        return {"UUID": uuid}
    if ex == "query-status":
        return {"running": True, "singlestep": False, "status": "running"}
    if ex == "query-cpus-fast":
        return [{"cpu-index": i, "thread-id": tid, "target": "x86_64",
                 "qom-path": "/machine/unattached/device[%d]" % i,
                 "props": {"socket-id": 0, "core-id": i, "thread-id": 0}}
                for i, tid in enumerate(tids)]
    if ex == "query-chardev":
        # As QEMU 7.2 says it while no client is connected.
        return [{"label": "ch0",
                 "filename": "disconnected:unix:%s,server=on" % channel,
                 "frontend-open": False},
                {"label": "serial0", "filename": "pty:/dev/pts/9",
                 "frontend-open": True}]
    if ex == "qom-list":
        if args.get("path") == "/machine/peripheral-anon":
            return [{"name": "device[0]", "type": "child<virtio-serial-pci>"},
                    {"name": "device[1]", "type": "child<virtserialport>"}]
        return []
    if ex == "qom-get":
        if args.get("path") == "/machine/peripheral-anon/device[1]":
            return {"name": "org.prefcpu.0", "chardev": "ch0"}.get(
                args.get("property"), "")
    return None


def save():
    tmp = stats_path + ".new"
    with open(tmp, "w") as f:
        json.dump({"sessions": sessions, "pid": os.getpid(), "tids": tids},
                  f)
    os.rename(tmp, stats_path)


def serve(conn):
    s = {"start": time.monotonic(), "end": None, "cmds": []}
    sessions.append(s)
    f = conn.makefile("rwb", buffering=0)
    f.write(b'{"QMP": {"version": {"qemu": {"micro": 0, "minor": 2, '
            b'"major": 7}, "package": ""}, "capabilities": ["oob"]}}\r\n')
    for line in f:
        try:
            cmd = json.loads(line)
        except ValueError:
            break
        ex = cmd.get("execute")
        s["cmds"].append(ex)
        cid = cmd.get("id")
        if mode == "oversized" and ex == "query-name":
            # 2 MiB and no end of line in sight.
            f.write(b'{"return": {"name": "' + b"x" * (2 << 20))
            time.sleep(2)
            break
        if mode == "malformed" and ex == "query-name":
            f.write(b'{"return": {"name": 5}, "id": %d}\r\n' % cid)
            f.write(b'\x00\xff{{{ not json\r\n')
            continue
        if mode == "slow" and ex == "query-cpus-fast":
            continue            # never answered
        r = reply(cmd)
        if r is None:
            out = {"error": {"class": "CommandNotFound",
                             "desc": "The command %s has not been found"
                             % ex}, "id": cid}
        else:
            out = {"return": r, "id": cid}
        f.write(json.dumps(out).encode() + b"\r\n")
    s["end"] = time.monotonic()
    conn.close()
    save()


def on_term(sig, frame):
    try:
        os.unlink(path)
    except OSError:
        pass
    save()
    os._exit(0)


signal.signal(signal.SIGTERM, on_term)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
save()
while True:
    c, _ = srv.accept()
    try:
        serve(c)
    except OSError:             # the client went away first
        sessions[-1]["end"] = time.monotonic()
        c.close()
        save()
