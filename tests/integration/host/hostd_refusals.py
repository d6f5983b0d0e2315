#!/usr/bin/env python3
"""--check-config refuses every configuration prefcpu-hostd refuses at start.

For each refusal path of the daemon's start (the option table's parse
errors, the cross-option checks, and every [http] setting http_start()
would refuse), the real binary is run twice on the same file: with
--check-config, which must exit non-zero naming the cause, and as the
daemon in the foreground, which must refuse to start with the same cause.
A good file passes both, and the daemon then logs where it listens at the
default log level (notice).  Only bind-time conditions of the running
system (a port taken, a daemon already on the socket) are outside what a
check can know; they are not in the list.

usage: hostd_refusals.py HOSTD
"""
import grp
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

LONG = "/tmp/" + "s" * 120 + "/hostd.sock"


def cases(tmp):
    """(what, [section] text, expected cause) for each refusal path."""
    notsock = os.path.join(tmp, "plain-file")
    with open(notsock, "w") as f:
        f.write("x\n")
    nogroup = "prefcpu-no-such-group"
    while True:
        try:
            grp.getgrnam(nogroup)
            nogroup += "x"
        except KeyError:
            break
    return [
        ("a line that is not key = value", "[hostd]\nperiod-ms\n",
         r"\.conf:\d+: "),
        ("an unknown option", "[hostd]\nperiod = 200\n",
         r"\.conf:\d+: unknown option 'period'"),
        ("an unknown section", "[bogus]\nx = 1\n",
         r"\.conf:1: unknown section"),
        ("a number out of range", "[hostd]\nperiod-ms = 5\n",
         r"\.conf:\d+: period-ms"),
        ("not a number", "[hostd]\nperiod-ms = soon\n", r"\.conf:\d+: period-ms"),
        ("not a boolean", "[hostd]\nobserve = perhaps\n", r"\.conf:\d+: observe"),
        ("not a choice", "[hostd]\nlog-level = loud\n", r"\.conf:\d+: log-level"),
        ("reconnect-min-ms above reconnect-max-ms",
         "[hostd]\nreconnect-min-ms = 9000\nreconnect-max-ms = 1000\n",
         r"reconnect-min-ms 9000 is above"),
        ("an empty uri", "[hostd]\nuri = \"\"\n", r"uri"),
        ("channel backoff-min above backoff-max",
         "[channel]\nbackoff-min-ms = 90000\nbackoff-max-ms = 1000\n",
         r"backoff-min-ms"),
        ("a public address without listen-public",
         "[http]\nlisten = 0.0.0.0:9471\n",
         r"listen 0\.0\.0\.0:9471: not a loopback address; set "
         r"listen-public = yes"),
        ("a listen address without a port", "[http]\nlisten = 127.0.0.1\n",
         r"listen 127\.0\.0\.1: expected ADDRESS:PORT"),
        ("a host name where an address is expected",
         "[http]\nlisten = localhost:9471\n", r"listen localhost:9471: "),
        ("a port that is not a number", "[http]\nlisten = 127.0.0.1:http\n",
         r"listen 127\.0\.0\.1:http: "),
        ("neither listen nor socket",
         "[http]\nlisten = \"\"\nsocket = \"\"\n",
         r"neither listen nor socket"),
        ("a socket path too long", "[http]\nsocket = %s\n" % LONG,
         r"path too long"),
        ("a relative socket path", "[http]\nsocket = run/hostd.sock\n",
         r"not an absolute path"),
        ("a socket path that is a regular file",
         "[http]\nsocket = %s\n" % notsock, r"exists and is not a socket"),
        ("a socket group that does not exist",
         "[http]\nsocket-group = %s\n" % nogroup,
         r"socket-group %s: no such group" % nogroup),
    ]


def base(tmp, port):
    """A good file on a synthetic tree and libvirt's test driver."""
    root = os.path.join(tmp, "host")
    for rel, text in (("sys/devices/system/cpu/online", "0-3\n"),
                      ("proc/stat", "cpu0 1 0 0 1 0 0 0 0 0 0\n"),
                      ("proc/pressure/cpu", "some avg10=0 avg60=0 avg300=0"
                       " total=0\n")):
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return ("[hostd]\nuri = test:///default\nperiod-ms = 200\n"
            "proc-root = {r}/proc\nsys-root = {r}/sys\n"
            "cgroup-root = {r}/cgroup\nrun-root = {r}/run\n"
            "qmp-fallback = no\n"
            "[http]\nlisten = 127.0.0.1:{p}\nsocket = {t}/api.sock\n"
            ).format(r=root, t=tmp, p=port)


def merge(good, extra):
    """The good file with the sections of extra appended: a later key wins
    in the config parser, and a section may appear twice."""
    return good + "\n" + extra


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    hostd = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="prefcpu-refusals.")
    failed = passed = 0

    def check(cond, what):
        nonlocal failed, passed
        if cond:
            passed += 1
        else:
            failed += 1
            print("FAIL: " + what, flush=True)

    try:
        port = free_port()
        good = base(tmp, port)
        conf = os.path.join(tmp, "hostd.conf")
        for what, extra, cause in cases(tmp):
            text = merge(good, extra) if not extra.startswith(
                ("[hostd]\nperiod-ms\n", "[bogus]")) else extra
            with open(conf, "w") as f:
                f.write(text)
            chk = subprocess.run([hostd, "--config", conf, "--check-config"],
                                 capture_output=True, text=True, timeout=30)
            check(chk.returncode != 0 and re.search(cause, chk.stderr),
                  "--check-config refuses %s: rc %d, %r" % (
                      what, chk.returncode, chk.stderr.strip()))
            run = subprocess.run([hostd, "--config", conf, "--foreground"],
                                 capture_output=True, text=True, timeout=30)
            check(run.returncode != 0 and re.search(cause, run.stderr),
                  "the daemon refuses %s: rc %d, %r" % (
                      what, run.returncode, run.stderr.strip()[-300:]))
            print("refused by both: %s (%s)" % (
                what, chk.stderr.strip().splitlines()[-1:]), flush=True)

        # The good file: the check passes, the daemon starts and says
        # where it listens at the default level (notice).
        with open(conf, "w") as f:
            f.write(good)
        chk = subprocess.run([hostd, "--config", conf, "--check-config"],
                             capture_output=True, text=True, timeout=30)
        check(chk.returncode == 0, "the good file passes: %r" % chk.stderr)
        logf = open(os.path.join(tmp, "hostd.log"), "w+")
        proc = subprocess.Popen([hostd, "--config", conf, "--foreground"],
                                stdout=logf, stderr=subprocess.STDOUT)
        try:
            want = [r"http: read-only API, dashboard and metrics"
                    r" on 127\.0\.0\.1:%d" % port,
                    r"http: API on unix socket %s/api\.sock" % re.escape(tmp)]
            deadline = time.monotonic() + 10
            text = ""
            while time.monotonic() < deadline and proc.poll() is None:
                with open(logf.name) as f:
                    text = f.read()
                if all(re.search(w, text) for w in want):
                    break
                time.sleep(0.1)
            for w in want:
                check(re.search(w, text), "logged at notice: %r in %r" % (
                    w, text))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            logf.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("hostd_refusals: %d checks passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
