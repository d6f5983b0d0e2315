#!/usr/bin/env python3
"""Integration tests of prefcpu-guestd on temp trees.

The test plays the host: it listens on a unix socket, the real agent
connects to it with --port unix:PATH, and the agent's /proc, /sys, cgroupfs
and run directory are temp trees.  Each scenario checks what a user would:
the files the agent writes, its replies, its status output.

usage: guestd_test.py AGENT SCENARIO
"""

import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

AGENT = None
RUNNING = []    # every Agent and Host, for the clean-up
SESSION = "00000000000000a1"
OTHER_SESSION = "00000000000000b2"


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def wait_for(cond, what, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.02)
    raise Fail("timed out waiting for " + what)


def write(path, text, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    if mode is not None:
        os.chmod(path, mode)


def read(path):
    with open(path) as f:
        return f.read().strip()


class Tree:
    """A guest with 8 CPUs in 4 cores of 2 threads, as temp trees."""

    def __init__(self, cgroups=("workload", "other"), empty=("idle",)):
        self.dir = tempfile.mkdtemp(prefix="guestd-test.")
        self.proc = os.path.join(self.dir, "proc")
        self.sys = os.path.join(self.dir, "sys")
        self.cg = os.path.join(self.dir, "cgroup")
        self.run = os.path.join(self.dir, "run")
        self.sock = os.path.join(self.dir, "host.sock")
        # 10% steal: user nice system idle iowait irq softirq steal ...
        write(self.p("stat"), "cpu  300 0 100 500 0 0 0 100 0 0\n"
              "cpu0 1 0 1 1 0 0 0 1 0 0\nintr 0\n")
        write(self.p("pressure/cpu"),
              "some avg10=12.50 avg60=3.00 avg300=1.00 total=12345\n"
              "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        write(self.p("loadavg"), "1.00 0.50 0.25 5/300 4242\n")
        write(self.p("1/comm"), "init\n")
        cpu = os.path.join(self.sys, "devices/system/cpu")
        write(os.path.join(cpu, "online"), "0-7\n")
        for c in range(8):
            first = c - c % 2
            write(os.path.join(cpu, "cpu%d/topology/thread_siblings_list" % c),
                  "%d-%d\n" % (first, first + 1))
        write(self.c("cgroup.controllers"), "cpuset cpu io memory pids\n")
        write(self.c("cgroup.subtree_control"), "cpu memory\n")
        for name in cgroups:
            self.add_cgroup(name, populated=True)
        for name in empty:
            self.add_cgroup(name, populated=False)

    def p(self, rel):
        return os.path.join(self.proc, rel)

    def c(self, rel):
        return os.path.join(self.cg, rel)

    def add_cgroup(self, name, populated=True, cpus="", tids=()):
        write(self.c(name + "/cgroup.events"),
              "populated %d\nfrozen 0\n" % (1 if populated else 0))
        write(self.c(name + "/cgroup.procs"), "")
        write(self.c(name + "/cgroup.threads"),
              "".join("%d\n" % t for t in tids))
        write(self.c(name + "/cgroup.subtree_control"), "")
        write(self.c(name + "/cpuset.cpus"), cpus + "\n" if cpus else "")
        write(self.c(name + "/cpuset.cpus.effective"), cpus or "0-7")

    def cpus(self, name):
        return read(self.c(name + "/cpuset.cpus"))

    def state_file(self):
        return os.path.join(self.run, "prefcpu-guestd.state")

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Agent:
    def __init__(self, tree, *args, env=None, port=None):
        self.tree = tree
        self.log = os.path.join(tree.dir, "agent.log")
        argv = [AGENT, "--port", port or "unix:" + tree.sock,
                "--proc-root", tree.proc, "--sys-root", tree.sys,
                "--cgroup-root", tree.cg, "--run-dir", tree.run,
                "--report-interval", "200", "--log-level", "debug"]
        argv += list(args)
        self.logf = open(self.log, "a")
        self.proc = subprocess.Popen(argv, stdout=self.logf,
                                     stderr=self.logf, env=env)
        RUNNING.append(self)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=10):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Fail("the agent did not exit within %d s" % timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()

    def cpu_ticks(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def text(self):
        with open(self.log) as f:
            return f.read()


class Host:
    """The host end of the channel: JSON lines over a unix socket."""

    def __init__(self, path):
        self.path = path
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        self.lsock.listen(1)
        self.conn = None
        self.buf = b""
        self.pending = []
        self.seq = 0
        RUNNING.append(self)

    def accept(self, timeout=5.0):
        r, _, _ = select.select([self.lsock], [], [], timeout)
        check(r, "the agent did not connect within %.1f s" % timeout)
        self.conn, _ = self.lsock.accept()
        self.buf = b""
        self.pending = []

    def close_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def close(self):
        self.close_conn()
        if self.lsock.fileno() != -1:
            self.lsock.close()
            os.unlink(self.path)

    def stop(self):
        self.close()

    def send_raw(self, data):
        self.conn.sendall(data)

    def send(self, obj):
        msg = {"v": 1}
        msg.update(obj)
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv_any(self, timeout=5.0):
        if self.pending:
            return self.pending.pop(0)
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            check(left > 0, "no message from the agent within %.1f s" %
                  timeout)
            r, _, _ = select.select([self.conn], [], [], left)
            if r:
                data = self.conn.recv(65536)
                check(data, "the agent closed the connection")
                self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        msg = json.loads(line)
        check(msg.get("v") == 1, "message without v=1: %r" % line)
        return msg

    def recv(self, types, timeout=5.0):
        """The next message of one of types; reports are skipped."""
        if isinstance(types, str):
            types = (types,)
        end = time.monotonic() + timeout
        while True:
            msg = self.recv_any(max(0.01, end - time.monotonic()))
            if msg["type"] in types:
                return msg
            check(msg["type"] == "report",
                  "expected %s, got %r" % ("/".join(types), msg))

    def sync(self):
        """Ping and wait for the pong: all earlier replies are in."""
        self.seq += 1000
        self.send({"type": "ping", "seq": self.seq})
        got = []
        while True:
            msg = self.recv_any()
            if msg["type"] == "pong" and msg["seq"] == self.seq:
                return [m for m in got if m["type"] != "report"]
            got.append(msg)

    def hello(self, session=SESSION):
        self.send_raw(b"\n")
        self.send({"type": "hello", "session": session, "host": "test-host",
                   "period_ms": 1000})
        return self.recv("hello")

    def target(self, seq, cpus, lease_ms=15000, session=SESSION):
        self.send({"type": "target", "session": session, "seq": seq,
                   "preferred": cpus, "lease_ms": lease_ms})

    def apply(self, seq, cpus, lease_ms=15000, session=SESSION):
        self.target(seq, cpus, lease_ms, session)
        ack = self.recv("ack")
        check(ack["seq"] == seq, "ack of seq %r for %d" % (ack["seq"], seq))
        return ack


def status(tree, *args):
    r = subprocess.run([AGENT, "status", "--run-dir", tree.run] + list(args),
                       capture_output=True, text=True, timeout=10)
    return r.returncode, r.stdout


def started(tree, *args, **kw):
    host = Host(tree.sock)
    agent = Agent(tree, *args, **kw)
    host.accept()
    return host, agent


# ---------------------------------------------------------------- scenarios

def sc_apply(tree):
    host, agent = started(tree, "--keep-affinity", "no")
    hello = host.hello()
    check(hello["session"] == SESSION, "hello echoes the session")
    check(hello["agent"].startswith("prefcpu-guestd "), "agent name")
    check(hello["online"] == "0-7", "online %r" % hello["online"])
    check(hello["cores"] == ["0-1", "2-3", "4-5", "6-7"],
          "cores %r" % hello["cores"])
    check(hello["backend"] == "cpuset", "backend %r" % hello["backend"])
    check(hello["backends"] == ["cpuset"], "backends %r" % hello["backends"])
    check(hello["kernel"] == os.uname().release, "kernel")
    check(hello.get("keeps_affinity", False) is False, "keeps_affinity")
    check("applied" not in hello, "a new agent holds nothing")

    report = host.recv("report", timeout=3)
    check(report["online"] == "0-7", "report online")
    check(abs(report["steal_pct"] - 10.0) < 0.01,
          "steal %r, /proc/stat says 10%%" % report["steal_pct"])
    check(report["psi_some_avg10"] == 12.5, "psi %r" % report)
    check(report["nr_running"] == 4 and "runnable" not in report,
          "nr_running %r (no schedstat: 5 running less the agent itself)" %
          report)

    ack = host.apply(1, "0-3")
    check(ack["ok"] is True and ack["applied"] == "0-3", "ack %r" % ack)
    check(tree.cpus("workload") == "0-3", "workload narrowed")
    check(tree.cpus("other") == "0-3", "other narrowed")
    check(tree.cpus("idle") == "", "a cgroup without tasks is left alone")
    check(read(tree.c("cgroup.subtree_control")) == "+cpuset",
          "cpuset controller enabled on the root")
    check(os.path.exists(tree.state_file()), "state file written")

    rc, out = status(tree, "--json")
    st = json.loads(out)
    check(rc == 0 and st["running"] is True, "status: running")
    check(st["backend"] == "cpuset" and st["applied"] == "0-3",
          "status json %r" % st)
    check(st["connected"] is True and st["session"] == SESSION,
          "status connected")
    check(0 < st["lease_left_ms"] <= 15000, "lease left %r" %
          st["lease_left_ms"])
    origs = {(o["kind"], o["key"]): o["value"] for o in st["originals"]}
    check(origs.get(("cpuset", "workload")) == "" and
          ("cpuset-enabled", "") in origs, "originals %r" % origs)
    rc, out = status(tree)
    check("applied:     CPUs 0-3 (target 1)" in out and
          "cgroup /workload: cpuset.cpus was \"\"" in out,
          "human status:\n" + out)

    # A set of all CPUs lifts the limit: the originals come back.
    ack = host.apply(2, "0-7")
    check(ack["ok"] and ack["applied"] == "0-7", "ack %r" % ack)
    check(tree.cpus("workload") == "", "workload restored")
    check(read(tree.c("cgroup.subtree_control")) == "-cpuset",
          "cpuset controller disabled again")
    check(not os.path.exists(tree.state_file()), "state file removed")
    agent.signal(signal.SIGTERM)
    check(agent.wait() == 0, "exit status 0")
    rc, out = status(tree)
    check(rc == 3 and "not running" in out, "status after exit: " + out)
    return host, agent


def sc_stale_seq(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(5, "0-3")["ok"], "seq 5 applied")
    host.target(5, "0-1")
    host.target(4, "0-1")
    check(host.sync() == [], "stale targets get no reply")
    check(tree.cpus("workload") == "0-3", "stale targets change nothing")
    check(host.apply(6, "0-1")["applied"] == "0-1", "seq 6 applied")
    check(tree.cpus("workload") == "0-1", "seq 6 written")
    # A new hello is a new session: seq starts again.
    host.hello(OTHER_SESSION)
    host.target(1, "0-5", session=OTHER_SESSION)
    ack = host.recv("ack")
    check(ack["ok"] and ack["seq"] == 1, "new session, seq 1: %r" % ack)
    check(tree.cpus("workload") == "0-5", "new session's target written")
    return host, agent


def sc_wrong_session(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3")["ok"], "applied")
    host.target(2, "0-1", session=OTHER_SESSION)
    host.send({"type": "release", "session": OTHER_SESSION})
    check(host.sync() == [], "another session's messages get no reply")
    check(tree.cpus("workload") == "0-3",
          "another session's target and release change nothing")
    check(host.apply(2, "0-1")["ok"], "seq 2 of the right session applies")
    return host, agent


def sc_lease(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3", lease_ms=600)["ok"], "applied")
    # Pings refresh the lease.
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        host.sync()
        time.sleep(0.15)
    check(tree.cpus("workload") == "0-3", "pings keep the lease")
    t0 = time.monotonic()
    wait_for(lambda: tree.cpus("workload") == "", "lease expiry", 3)
    check(time.monotonic() - t0 >= 0.3, "restored only after the lease")
    # The cgroup is restored first, the state file removed right after.
    wait_for(lambda: not os.path.exists(tree.state_file()),
             "state file removed", 3)
    check("lease ended" in agent.text(), "the log says why")
    return host, agent


def sc_release(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "2-5")["ok"], "applied")
    check(tree.cpus("other") == "2-5", "narrowed")
    host.send({"type": "release", "session": SESSION})
    check(host.sync() == [], "release has no reply")
    check(tree.cpus("workload") == "" and tree.cpus("other") == "",
          "release restores at once")
    check(not os.path.exists(tree.state_file()), "state file removed")
    return host, agent


def sc_sigterm(tree):
    for sig in (signal.SIGTERM, signal.SIGINT):
        host, agent = started(tree)
        host.hello()
        check(host.apply(1, "0-1")["ok"], "applied")
        agent.signal(sig)
        check(agent.wait() == 0, "exit status 0 after %s" % sig.name)
        check(tree.cpus("workload") == "", "%s restores" % sig.name)
        check(not os.path.exists(tree.state_file()), "state file removed")
        check(not os.path.exists(os.path.join(tree.run,
                                              "prefcpu-guestd.status")),
              "status file removed")
        agent.stop()
        host.close()
    return None, None


def crashed_after_apply(tree):
    """An agent killed with -9 after applying 2-3 (another cgroup had
    1-7): its changes and state file are left behind.  Returns the host."""
    write(tree.c("other/cpuset.cpus"), "1-7\n")
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "2-3")["ok"], "applied")
    agent.signal(signal.SIGKILL)
    agent.wait()
    agent.stop()
    return host


def sc_crash(tree):
    host = crashed_after_apply(tree)
    check(tree.cpus("workload") == "2-3", "kill -9 leaves the change")
    rc, out = status(tree)
    check(rc == 3 and "earlier run" in out and
          "cgroup /other: cpuset.cpus was \"1-7\"" in out,
          "status names the originals a crashed run left:\n" + out)
    host.close_conn()
    # The restarted agent restores before it hears from any host.
    agent = Agent(tree)
    # The state file goes right after the writes: wait for both.
    wait_for(lambda: tree.cpus("workload") == "" and
             tree.cpus("other") == "1-7" and
             not os.path.exists(tree.state_file()),
             "restore at start-up, state file removed")
    host.accept()
    # A host that kept its session hears at once that the agent has none.
    host.target(5, "0-3")
    err = host.recv("error")
    check(err.get("error") == "no session: hello first" and
          err.get("seq") == 5,
          "a target before any hello draws a no-session error: %r" % err)
    hello = host.hello()
    check("applied" not in hello, "nothing held after the restore: %r"
          % hello.get("applied"))
    check(host.apply(1, "0-3")["ok"], "the restarted agent works")
    return host, agent


BAD_INPUTS = [
    # (what, raw line, wants a seq in the reply)
    ("garbage", b"hello world", None),
    ("not an object", b"[1,2,3]", None),
    ("bad cpulist", b'{"v":1,"type":"target","session":"%s","seq":7,'
     b'"preferred":"0-","lease_ms":1000}', 7),
    ("offline cpu", b'{"v":1,"type":"target","session":"%s","seq":8,'
     b'"preferred":"0-9","lease_ms":1000}', 8),
    ("empty set", b'{"v":1,"type":"target","session":"%s","seq":9,'
     b'"preferred":"","lease_ms":1000}', 9),
    ("partial core", b'{"v":1,"type":"target","session":"%s","seq":10,'
     b'"preferred":"0","lease_ms":1000}', 10),
    ("partial cores", b'{"v":1,"type":"target","session":"%s","seq":11,'
     b'"preferred":"1-2","lease_ms":1000}', 11),
    ("unknown type", b'{"v":1,"type":"reboot","seq":12}', 12),
    ("huge seq", b'{"v":1,"type":"target","session":"%s",'
     b'"seq":18446744073709551616,"preferred":"0-1","lease_ms":1000}', None),
    ("huge cpu", b'{"v":1,"type":"target","session":"%s","seq":13,'
     b'"preferred":"0-99999999999","lease_ms":1000}', 13),
    ("huge lease", b'{"v":1,"type":"target","session":"%s","seq":14,'
     b'"preferred":"0-1","lease_ms":1e300}', 14),
    ("negative seq", b'{"v":1,"type":"target","session":"%s","seq":-1,'
     b'"preferred":"0-1","lease_ms":1000}', None),
    ("wrong version", b'{"v":2,"type":"ping","seq":15}', 15),
    ("guest message", b'{"v":1,"type":"ack","seq":16,"ok":true,'
     b'"applied":"0-1"}', 16),
    ("NaN", b'{"v":1,"type":"ping","seq":NaN}', None),
    ("overlong line", b'{"v":1,"type":"ping","pad":"' + b"x" * 5000 +
     b'","seq":17}', None),
    ("NUL byte", b'{"v":1,"type":"ping","seq":18}\x00', None),
]


def sc_malformed(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3")["ok"], "applied")
    for what, raw, seq in BAD_INPUTS:
        if b"%s" in raw:
            raw = raw.replace(b"%s", SESSION.encode())
        host.send_raw(raw + b"\n")
        replies = host.sync()
        check(len(replies) == 1, "%s: one reply, got %r" % (what, replies))
        r = replies[0]
        check(r["type"] == "error" or (r["type"] == "ack" and
                                       r["ok"] is False),
              "%s: answered with an error, got %r" % (what, r))
        if seq is not None:
            check(r.get("seq") == seq, "%s: the reply names seq %d: %r" %
                  (what, seq, r))
        check(tree.cpus("workload") == "0-3" and tree.cpus("other") == "0-3",
              "%s changed nothing" % what)
    # The session is still there.
    ack = host.apply(20, "4-7")
    check(ack["ok"] and ack["applied"] == "4-7", "valid target after: %r" %
          ack)
    check(agent.proc.poll() is None, "agent alive")
    return host, agent


def sc_reconnect(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(3, "0-3")["ok"], "applied")
    host.close()
    time.sleep(0.5)
    rc, out = status(tree, "--json")
    check(json.loads(out)["connected"] is False, "status: not connected")
    # Away for a while: no busy loop, the set stays until the lease ends.
    t0 = agent.cpu_ticks()
    time.sleep(3)
    used = agent.cpu_ticks() - t0
    check(used <= 10, "%d ticks of CPU in 3 s with the host away" % used)
    check(tree.cpus("workload") == "0-3", "set kept while the host is away")
    host = Host(tree.sock)
    host.accept(timeout=5)
    # Bytes before the hello are dropped without a reply.
    host.send_raw(b'half a line from before}\n{"v":1,"type":"ping","seq":1}\n')
    hello = host.hello(OTHER_SESSION)
    check(hello["session"] == OTHER_SESSION, "new session")
    # A restarted host may adopt what the guest still holds.
    check(hello.get("applied") == "0-3",
          "the hello tells the set still held: %r" % hello.get("applied"))
    check(host.sync() == [], "nothing answered before the hello")
    ack = host.apply(1, "0-1", session=OTHER_SESSION)
    check(ack["ok"] and ack["applied"] == "0-1", "seq 1 of the new session")
    check(tree.cpus("workload") == "0-1", "applied after reconnect")
    return host, agent


def sc_partial_failure(tree):
    for name in ("a", "a/b", "a/b/c"):
        tree.add_cgroup(name)
    write(tree.c("cgroup.subtree_control"), "cpuset cpu\n")
    write(tree.c("a/cgroup.subtree_control"), "cpuset\n")
    write(tree.c("a/b/cgroup.subtree_control"), "cpuset\n")
    host, agent = started(tree, "--cgroup", "a", "--cgroup", "/a/b/",
                          "--cgroup", "a/b/c")
    host.hello()
    check(host.apply(1, "0-5")["ok"], "applied")
    for name in ("a", "a/b", "a/b/c"):
        check(tree.cpus(name) == "0-5", "%s narrowed" % name)
    check(tree.cpus("workload") == "", "only the given cgroups")
    # Narrowing writes children first, so /a comes last; make it fail.
    os.unlink(tree.c("a/cpuset.cpus"))
    os.mkdir(tree.c("a/cpuset.cpus"))
    ack = host.apply(2, "0-1")
    check(ack["ok"] is False, "ack refuses: %r" % ack)
    check(ack["error"].startswith("cgroup /a:") and "rolled back" in
          ack["error"] and "/a/b/c" in ack["error"] and "/a/b," in
          ack["error"], "error names the failed and rolled back cgroups: %r"
          % ack["error"])
    check(tree.cpus("a/b/c") == "0-5" and tree.cpus("a/b") == "0-5",
          "rolled back")
    # Restoring a cgroup that fails is retried until it works.
    host.send({"type": "release", "session": SESSION})
    host.sync()
    check(tree.cpus("a/b") == "", "release restores what it can")
    os.rmdir(tree.c("a/cpuset.cpus"))
    write(tree.c("a/cpuset.cpus"), "0-5\n")
    wait_for(lambda: tree.cpus("a") == "", "restore retry", 8)
    check(not os.path.exists(tree.state_file()), "state file removed")
    return host, agent


def sc_keep_affinity(tree):
    # A real task pinned by the user to CPU 1; the cgroup is fake.
    pinned = subprocess.Popen(["sleep", "60"])
    try:
        os.sched_setaffinity(pinned.pid, {1})
        tree.add_cgroup("pinned", tids=[pinned.pid])
        host, agent = started(tree, "--keep-affinity", "yes", "--cgroup",
                              "pinned")
        check(host.hello()["keeps_affinity"] is True, "hello says so")
        check(host.apply(1, "0-3")["ok"], "applied")
        with open(tree.state_file()) as f:
            check("affinity %d 1\n" % pinned.pid in f.read(),
                  "the pin is in the state file")
        # What a pre-6.2 kernel does when the cpuset changes.
        os.sched_setaffinity(pinned.pid, {0, 1})
        host.send({"type": "release", "session": SESSION})
        host.sync()
        check(os.sched_getaffinity(pinned.pid) == {1},
              "affinity put back: %r" % os.sched_getaffinity(pinned.pid))
    finally:
        pinned.kill()
        pinned.wait()
    return host, agent


SYSTEMCTL = """#!/bin/sh
# Stand-in for systemctl: logs its calls, keeps AllowedCPUs per slice.
dir=%(dir)s
echo "$*" >>"$dir/calls"
case "$1" in
show)	cat "$dir/$4" 2>/dev/null; exit 0 ;;
set-property)
	[ -e "$dir/fail-$3" ] && { echo "Failed to set $3" >&2; exit 1; }
	printf '%%s\\n' "${4#AllowedCPUs=}" >"$dir/$3"; exit 0 ;;
esac
exit 1
"""


def fake_systemd(tree):
    bindir = os.path.join(tree.dir, "bin")
    sd = os.path.join(tree.dir, "systemd")
    os.makedirs(sd)
    write(os.path.join(bindir, "systemctl"), SYSTEMCTL % {"dir": sd}, 0o755)
    write(tree.p("1/comm"), "systemd\n")
    write(os.path.join(sd, "system.slice"), "0-7\n")
    os.makedirs(tree.c("system.slice"))
    os.makedirs(tree.c("user.slice"))
    env = dict(os.environ)
    env["PATH"] = bindir + ":" + env.get("PATH", "/usr/bin:/bin")
    return sd, env


def sc_systemd(tree):
    sd, env = fake_systemd(tree)
    host, agent = started(tree, env=env)
    hello = host.hello()
    check(hello["backend"] == "systemd" and
          hello["backends"] == ["systemd", "cpuset"],
          "auto picks systemd when it is PID 1: %r" % hello)
    check(host.apply(1, "0-3")["ok"], "applied")
    calls = read(os.path.join(sd, "calls")).splitlines()
    check(calls == [
        "show --property=AllowedCPUs --value system.slice",
        "show --property=AllowedCPUs --value user.slice",
        "set-property --runtime system.slice AllowedCPUs=0-3",
        "set-property --runtime user.slice AllowedCPUs=0-3"],
        "systemctl calls %r" % calls)
    check(tree.cpus("workload") == "", "cgroupfs is not touched")
    # A failure on the second slice rolls the first back.
    write(os.path.join(sd, "fail-user.slice"), "")
    ack = host.apply(2, "0-1")
    check(not ack["ok"] and "user.slice" in ack["error"] and
          "rolled back system.slice" in ack["error"], "ack %r" % ack)
    check(read(os.path.join(sd, "system.slice")) == "0-3", "rolled back")
    os.unlink(os.path.join(sd, "fail-user.slice"))
    host.send({"type": "release", "session": SESSION})
    host.sync()
    check(read(os.path.join(sd, "system.slice")) == "0-7" and
          read(os.path.join(sd, "user.slice")) == "",
          "originals restored: %r" % read(os.path.join(sd, "calls")))
    calls = read(os.path.join(sd, "calls")).splitlines()
    # An empty AllowedCPUs= cannot empty a populated cgroup's cpuset.cpus:
    # every CPU first, then the reset.
    check(calls[-2:] == ["set-property --runtime user.slice AllowedCPUs=0-7",
                         "set-property --runtime user.slice AllowedCPUs="],
          "an empty original: all CPUs, then the reset: %r" % calls[-2:])
    return host, agent


def sc_kernel(tree):
    pref = os.path.join(tree.sys, "devices/system/cpu/preferred")
    write(pref, "0-7\n", 0o444)
    host, agent = started(tree)
    hello = host.hello()
    check(hello["backend"] == "cpuset" and hello["governor"] == "steal",
          "a read-only preferred file: governor reported, not used: %r" %
          hello)
    agent.signal(signal.SIGTERM)
    agent.wait()
    agent.stop()
    host.close()

    os.chmod(pref, 0o644)
    host, agent = started(tree)
    hello = host.hello()
    check(hello["backend"] == "kernel" and hello.get("governor", "") == "",
          "a writable preferred file is the kernel backend: %r" % hello)
    check(host.apply(1, "2-5")["ok"], "applied")
    check(read(pref) == "2-5", "written to preferred")
    check(tree.cpus("workload") == "", "no cpuset change")
    host.send({"type": "release", "session": SESSION})
    host.sync()
    check(read(pref) == "0-7", "restored")
    return host, agent


def sc_options(tree):
    r = subprocess.run([AGENT, "--backend", "bogus"], capture_output=True,
                       text=True)
    check(r.returncode == 2 and "bogus" in r.stderr, "bad backend refused")
    r = subprocess.run([AGENT, "--cgroup", "../etc"], capture_output=True,
                       text=True)
    check(r.returncode == 2, "a cgroup outside the root is refused")
    r = subprocess.run([AGENT, "--backend", "kernel", "--port",
                        "unix:" + tree.sock, "--sys-root", tree.sys,
                        "--run-dir", tree.run], capture_output=True,
                       text=True, timeout=10)
    check(r.returncode == 1 and "kernel does not work here" in r.stderr,
          "an unusable backend asked for is fatal: %r" % r.stderr)
    # One agent per run directory.
    host, agent = started(tree)
    r = subprocess.run([AGENT, "--port", "unix:" + tree.sock, "--run-dir",
                        tree.run, "--cgroup-root", tree.cg],
                       capture_output=True, text=True, timeout=10)
    check(r.returncode == 1 and "another" in r.stderr,
          "a second agent is refused: %r" % r.stderr)
    return host, agent


class PtyHost(Host):
    """The host at the master side of a pty: --port takes a char device."""

    def __init__(self):
        import tty
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.slave_path = os.ttyname(self.slave)
        # Held open so that reading the master before the agent opens
        # the slave is not an I/O error.
        self.buf = b""
        self.pending = []
        self.seq = 0
        RUNNING.append(self)

    def send_raw(self, data):
        os.write(self.master, data)

    def recv_any(self, timeout=5.0):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = end - time.monotonic()
            check(left > 0, "no message from the agent within %.1f s" %
                  timeout)
            r, _, _ = select.select([self.master], [], [], left)
            if r:
                self.buf += os.read(self.master, 65536)
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def stop(self):
        if self.master is not None:
            os.close(self.master)
            os.close(self.slave)
            self.master = None


def sc_chardev(tree):
    host = PtyHost()
    agent = Agent(tree, port=host.slave_path)
    hello = host.hello()
    check(hello["session"] == SESSION and hello["online"] == "0-7",
          "hello over a character device: %r" % hello)
    check(host.apply(1, "0-3")["ok"], "applied")
    check(tree.cpus("workload") == "0-3", "narrowed")
    agent.signal(signal.SIGTERM)
    check(agent.wait() == 0 and tree.cpus("workload") == "",
          "SIGTERM restores")
    return host, agent


def sc_figures(tree):
    """Not a test: prints the figures of the agent's cost (measured)."""
    host, agent = started(tree, "--report-interval", "5000",
                          "--log-level", "notice")
    host.hello()
    lat = []
    for seq in range(1, 201):
        t0 = time.monotonic()
        host.apply(seq, "0-3" if seq % 2 else "0-5")
        lat.append((time.monotonic() - t0) * 1000)
    lat.sort()
    with open("/proc/%d/status" % agent.proc.pid) as f:
        rss = [ln.split(":")[1].strip() for ln in f
               if ln.startswith("VmRSS")][0]
    print("target to ack over a unix socket, 200 targets alternating "
          "0-3/0-5 on 2 cgroups: median %.2f ms, p90 %.2f ms, max %.2f ms" %
          (lat[100], lat[180], lat[-1]))
    print("RSS while connected: %s" % rss)
    host.close()
    time.sleep(1)
    t0, w0 = agent.cpu_ticks(), time.monotonic()
    time.sleep(30)
    used, wall = agent.cpu_ticks() - t0, time.monotonic() - w0
    print("CPU while idle with the host absent: %d ticks (1/%d s) in %.0f s"
          " = %.3f%% of a CPU" % (used, os.sysconf("SC_CLK_TCK"), wall,
                                  100.0 * used / os.sysconf("SC_CLK_TCK") /
                                  wall))
    return None, agent


def break_file(path):
    """Make a cgroup file unwritable: a directory in its place."""
    os.unlink(path)
    os.mkdir(path)


def mend_file(path, text):
    os.rmdir(path)
    write(path, text)


class Drain:
    """Reads the agent's replies in a thread while the test floods."""

    def __init__(self, host):
        import threading
        self.host = host
        self.msgs = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                self.msgs.append(self.host.recv_any(0.2))
            except Fail:
                pass

    def join(self):
        self.stop = True
        self.thread.join()
        return self.msgs


def sc_flood(tree):
    """A host that floods targets and pings: applies and writes bounded."""
    host, agent = started(tree, "--log-level", "notice")
    host.hello()
    hz = os.sysconf("SC_CLK_TCK")
    status_path = os.path.join(tree.run, "prefcpu-guestd.status")
    drain = Drain(host)
    t0, w0 = agent.cpu_ticks(), time.monotonic()
    seq = pings = 0
    lines = []
    while time.monotonic() - w0 < 5:
        # The audit's hostile host: 400 targets/s and 900 pings/s.
        for i in range(9):
            if i < 4:
                seq += 1
                cpus = ("0-3", "0-5", "2-7")[seq % 3]
                lines.append(json.dumps({
                    "v": 1, "type": "target", "session": SESSION,
                    "seq": seq, "preferred": cpus,
                    "lease_ms": 15000}).encode() + b"\n")
            pings += 1
            lines.append(json.dumps({"v": 1, "type": "ping",
                                     "seq": pings}).encode() + b"\n")
        host.send_raw(b"".join(lines))
        lines = []
        time.sleep(0.01)
    wall = time.monotonic() - w0
    used = agent.cpu_ticks() - t0
    last = ("0-3", "0-5", "2-7")[seq % 3]
    time.sleep(0.6)     # the last pending target is decided
    msgs = drain.join()
    acks = [m for m in msgs if m["type"] == "ack"]
    pongs = [m for m in msgs if m["type"] == "pong"]
    applied = [a for a in acks if a["ok"]]
    superseded = [a for a in acks if not a["ok"] and
                  "superseded by target" in a.get("error", "")]
    print("flood: %d targets and %d pings in %.1f s (%.0f messages/s): "
          "agent CPU %d ticks = %.1f%% of a CPU; %d targets decided, "
          "%d acked as superseded, %d pongs" %
          (seq, pings, wall, (seq + pings) / wall, used,
           100.0 * used / hz / wall, len(applied), len(superseded),
           len(pongs)))
    check(len(pongs) == pings, "every ping answered")
    check(sorted(a["seq"] for a in acks) == list(range(1, seq + 1)),
          "every target is acked once: %d acks for %d targets" %
          (len(acks), seq))
    other = [a for a in acks if not a["ok"] and
             "superseded by target" not in a.get("error", "")]
    check(not other, "each ack says applied or superseded: %r" % other[:3])
    check(len(applied) <= 4 + 4 * (wall + 0.6) + 1,
          "%d targets decided in %.1f s: at most 4 at once, then 4/s" %
          (len(applied), wall))
    check(acks[-1]["seq"] == seq and acks[-1]["ok"] and
          tree.cpus("workload") == last,
          "the newest target is the one in force: %r, workload %s" %
          (acks[-1], tree.cpus("workload")))
    # Pings alone: the status file is rewritten once a second at most.
    inodes = set()
    drain = Drain(host)
    w0 = time.monotonic()
    t0 = agent.cpu_ticks()
    n = 0
    while time.monotonic() - w0 < 3:
        host.send_raw(b"".join(json.dumps({"v": 1, "type": "ping",
                                           "seq": 100000 + n + i}).encode() +
                               b"\n" for i in range(9)))
        n += 9
        try:
            inodes.add(os.stat(status_path).st_ino)
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    wall = time.monotonic() - w0
    used = agent.cpu_ticks() - t0
    drain.join()
    print("ping flood: %d pings in %.1f s: agent CPU %.1f%% of a CPU, "
          "%d status file versions seen" %
          (n, wall, 100.0 * used / hz / wall, len(inodes)))
    check(len(inodes) <= wall + 2, "%d status writes in %.1f s of pings" %
          (len(inodes), wall))
    return host, agent


def sc_lease_cap(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3", lease_ms=3600000)["ok"], "applied")
    rc, out = status(tree, "--json")
    left = json.loads(out)["lease_left_ms"]
    check(0 < left <= 60000, "a one-hour lease cut to 60 s: %r ms" % left)
    check("lease of 3600000 ms cut to 60000 ms" in agent.text(),
          "the log says so")
    print("one-hour lease: %d ms left right after the target" % left)
    agent.signal(signal.SIGTERM)
    agent.wait()
    agent.stop()
    host.close()
    # A guest that allows up to 2 min: a hello asking 90 s gets 90 s.
    host, agent = started(tree, "--max-lease", "120000")
    host.send_raw(b"\n")
    host.send({"type": "hello", "session": SESSION, "host": "test-host",
               "period_ms": 1000, "max_lease_ms": 90000})
    host.recv("hello")
    check(host.apply(1, "0-3", lease_ms=3600000)["ok"], "applied")
    left = json.loads(status(tree, "--json")[1])["lease_left_ms"]
    check(60000 < left <= 90000, "the hello raised the cap to 90 s: %r" %
          left)
    agent.signal(signal.SIGTERM)
    agent.wait()
    agent.stop()
    host.close()
    # The cut is enforced: a 1 s bound ends a one-hour lease in 1 s.
    host, agent = started(tree, "--max-lease", "1000")
    host.send_raw(b"\n")
    host.send({"type": "hello", "session": SESSION, "host": "test-host",
               "period_ms": 1000, "max_lease_ms": 3600000})
    host.recv("hello")
    check(host.apply(1, "0-3", lease_ms=3600000)["ok"], "applied")
    check(tree.cpus("workload") == "0-3", "narrowed")
    wait_for(lambda: tree.cpus("workload") == "", "the capped lease ends",
             3)
    return host, agent


def sc_restore_retry(tree):
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3", lease_ms=800)["ok"], "applied")
    break_file(tree.c("workload/cpuset.cpus"))
    host.close()        # the port is gone: the socket is removed
    wait_for(lambda: "restoring the originals (lease ended)" in agent.text(),
             "a failed restore", 3)
    check(json.loads(status(tree, "--json")[1])["restore_pending"],
          "status: restore pending")
    time.sleep(1)
    check(agent.proc.poll() is None and
          os.path.exists(tree.state_file()), "still running, state kept")
    mend_file(tree.c("workload/cpuset.cpus"), "0-3\n")
    wait_for(lambda: tree.cpus("workload") == "" and
             not os.path.exists(tree.state_file()),
             "the restore retried without the port", 8)
    # A stop whose restore fails retries until it works.
    host = Host(tree.sock)
    host.accept()
    host.hello()
    check(host.apply(1, "0-3")["ok"], "applied again")
    break_file(tree.c("workload/cpuset.cpus"))
    host.close()
    agent.signal(signal.SIGTERM)
    time.sleep(1)
    check(agent.proc.poll() is None, "the stop waits for the restore")
    mend_file(tree.c("workload/cpuset.cpus"), "0-3\n")
    check(agent.wait(10) == 0, "exit 0 once restored")
    check(tree.cpus("workload") == "" and
          not os.path.exists(tree.state_file()), "restored at stop")
    return None, agent


def put_schedstat(tree, busy_ns):
    """/proc/schedstat of 2 CPUs whose run + wait times sum to busy_ns."""
    run0, rest = busy_ns // 4, busy_ns - busy_ns // 4
    write(tree.p("schedstat"), "version 15\ntimestamp 4295000000\n"
          "cpu0 0 0 9 9 9 9 %d %d 5\ndomain0 3 1 2 3 4 5 6 7 8 9\n"
          "cpu1 0 0 9 9 9 9 %d %d 5\ndomain0 3 1 2 3 4 5 6 7 8 9\n" %
          (run0, 0, rest // 2, rest - rest // 2))


def sc_runnable(tree):
    """Reports carry the mean runnable tasks from schedstat, else a count."""
    busy = 10 ** 12
    put_schedstat(tree, busy)
    write(tree.p("self/schedstat"), "5000000 1000000 12\n")
    host, agent = started(tree, "--report-interval", "300")
    host.hello()
    first = host.recv("report", timeout=3)
    t1 = time.monotonic()
    check(first.get("runnable") == 0 and first["nr_running"] == 0,
          "nothing ran in the first interval: %r" % first)
    # 1.5 s of run + wait between two reports about 0.3 s apart: a mean
    # of about 5 tasks, while loadavg's instant says 4.
    busy += 1500000000
    put_schedstat(tree, busy)
    second = host.recv("report", timeout=3)
    t2 = time.monotonic()
    want = 1.5 / (t2 - t1)
    check(abs(second.get("runnable", -1) - want) <= 0.3 * want and
          second["nr_running"] == int(second["runnable"] + 0.5),
          "mean %r, about %.2f over %.3f s" % (second, want, t2 - t1))
    third = host.recv("report", timeout=3)
    check(third.get("runnable") == 0, "idle again: %r" % third)
    rc, out = status(tree)
    check("runnable:    mean over each report (schedstat)" in out,
          "status:\n" + out)

    # Without schedstat (CONFIG_SCHEDSTATS off): loadavg's count, said once.
    os.unlink(tree.p("schedstat"))
    for _ in range(3):
        r = host.recv("report", timeout=3)
        check("runnable" not in r and r["nr_running"] == 4,
              "fallback report %r" % r)
    said = agent.text().count("reporting the instantaneous count")
    check(said == 1, "the fallback logged %d times, once wanted" % said)
    rc, out = status(tree)
    check("runnable:    instantaneous count of loadavg, not a mean: " in out
          and "schedstat: No such file" in out, "status:\n" + out)
    st = json.loads(status(tree, "--json")[1])
    check(st["runnable_source"] == "loadavg" and
          "No such file" in st["runnable_fallback"], "status json %r" % st)

    # Back: a report without an earlier sample, then means again.
    put_schedstat(tree, busy)
    wait_for(lambda: "schedstat is usable again" in agent.text(),
             "schedstat used again", 3)
    for _ in range(2):
        r = host.recv("report", timeout=3)
    check(r.get("runnable") == 0, "means again: %r" % r)
    check(json.loads(status(tree, "--json")[1])["runnable_source"] ==
          "schedstat", "status: schedstat again")
    return host, agent


def sc_recover_retry(tree):
    """kill -9, then a recovery that cannot write: reported, retried."""
    host = crashed_after_apply(tree)
    host.close_conn()
    break_file(tree.c("workload/cpuset.cpus"))
    agent = Agent(tree)
    wait_for(lambda: "cannot restore what an earlier run changed" in
             agent.text(), "the failed recovery logged", 3)
    text = agent.text()
    check("restored the originals an earlier run left" not in text and
          "workload" in text.split("cannot restore", 1)[1].split("\n")[0],
          "no success claimed, the cgroup named:\n" + text)
    check(agent.proc.poll() is None and os.path.exists(tree.state_file()),
          "still running, the originals kept in the state file")
    check(tree.cpus("other") == "1-7", "what could be restored was")
    rc, out = status(tree)
    check("originals:" in out and "cgroup /workload" in out,
          "status lists the originals still held:\n" + out)
    # Targets are refused while the originals wait.
    host.accept()
    host.hello()
    ack = host.apply(1, "0-3")
    check(ack["ok"] is False, "a target is refused meanwhile: %r" % ack)
    # The file back (as the crashed run left it): the retry restores it.
    mend_file(tree.c("workload/cpuset.cpus"), "2-3\n")
    wait_for(lambda: tree.cpus("workload") == "" and
             not os.path.exists(tree.state_file()),
             "the recovery retried", 8)
    wait_for(lambda: "restored the originals an earlier run left" in
             agent.text(), "the success logged", 2)
    check(tree.cpus("other") == "1-7", "other keeps its original")
    check(host.apply(2, "0-3")["ok"], "targets work after the recovery")
    check(tree.cpus("workload") == "0-3", "narrowed")
    return host, agent

def sc_isolate(tree):
    """The CPUs outside the set held in an isolated cpuset partition, the
    cgroup prefcpu-idle.  A temp tree is not cgroupfs: a new directory has
    no files, so the first agent meets a kernel that refuses (as one
    without isolated partitions would); the tree then plays a kernel that
    accepts by holding the files a new cgroup has.  Those files cannot
    vanish as cgroupfs's do, so rmdir fails here: the partition is checked
    dissolved by its "member", and the real guest kernels of guestd-vm-*
    check the cgroup gone."""
    idle = tree.c("prefcpu-idle")
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3")["ok"], "applied although no partition")
    check(tree.cpus("workload") == "0-3", "workload narrowed")
    check(not os.path.exists(idle), "a refused partition leaves no cgroup")
    check(host.apply(2, "0-1")["ok"], "narrowed again")
    refusals = agent.text().count("stay in the scheduler's load balancing")
    check(refusals == 1, "the refusal logged once, not %d times:\n%s"
          % (refusals, agent.text()))
    agent.signal(signal.SIGTERM)
    check(agent.wait() == 0 and tree.cpus("workload") == "", "restored")
    agent.stop()
    host.close()

    # A kernel that accepts: the cgroup's files are there once it is.
    write(idle + "/cpuset.cpus", "")
    write(idle + "/cpuset.cpus.partition", "member\n")
    host, agent = started(tree)
    host.hello()
    check(host.apply(1, "0-3")["ok"], "applied")
    check(read(idle + "/cpuset.cpus") == "4-7" and
          read(idle + "/cpuset.cpus.partition") == "isolated",
          "CPUs 4-7 in an isolated partition")
    check("CPUs 4-7 isolated from load balancing" in agent.text(),
          "the partition logged")
    rc, out = status(tree, "--json")
    origs = {(o["kind"], o["key"]) for o in json.loads(out)["originals"]}
    check(("cpuset-idle", "prefcpu-idle") in origs,
          "the state file records the partition: %r" % origs)
    rc, out = status(tree)
    check("cgroup /prefcpu-idle: isolated partition of the idle CPUs" in out,
          "human status names the partition:\n" + out)
    # Widening: dissolved before the siblings widen, made again after.
    check(host.apply(2, "0-5")["ok"], "widened to 0-5")
    check(tree.cpus("workload") == "0-5" and
          read(idle + "/cpuset.cpus") == "6-7" and
          read(idle + "/cpuset.cpus.partition") == "isolated",
          "the partition holds 6-7 now")
    # Killed, the restarted agent dissolves it with the rest.
    agent.signal(signal.SIGKILL)
    agent.wait()
    agent.stop()
    host.close_conn()
    agent = Agent(tree)
    wait_for(lambda: tree.cpus("workload") == "" and
             read(idle + "/cpuset.cpus.partition") == "member" and
             not os.path.exists(tree.state_file()),
             "the recovery dissolved the partition")
    agent.signal(signal.SIGTERM)
    check(agent.wait() == 0, "exit 0")
    agent.stop()
    host.close()

    # Not with --isolate-idle no, nor when only named cgroups are confined
    # (the others keep every CPU).
    write(idle + "/cpuset.cpus", "")
    for args in (("--isolate-idle", "no"), ("--cgroup", "workload")):
        host, agent = started(tree, *args)
        host.hello()
        check(host.apply(1, "0-3")["ok"], "applied with %s" % " ".join(args))
        check(tree.cpus("workload") == "0-3" and
              read(idle + "/cpuset.cpus") == "" and
              read(idle + "/cpuset.cpus.partition") == "member",
              "no partition with %s" % " ".join(args))
        agent.signal(signal.SIGTERM)
        check(agent.wait() == 0, "exit 0")
        agent.stop()
        host.close()
    return None, None


SCENARIOS = {name[3:]: fn for name, fn in globals().items()
             if name.startswith("sc_")}


def main():
    global AGENT
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print("usage: %s AGENT {%s}" % (sys.argv[0], "|".join(SCENARIOS)),
              file=sys.stderr)
        return 2
    AGENT = os.path.abspath(sys.argv[1])
    tree = Tree()
    try:
        host, agent = SCENARIOS[sys.argv[2]](tree)
        if agent is not None:
            check(agent.proc.poll() in (None, 0),
                  "agent exited with %r" % agent.proc.poll())
        print("ok: %s" % sys.argv[2])
        return 0
    except Fail as e:
        print("FAIL: %s: %s" % (sys.argv[2], e))
        log = os.path.join(tree.dir, "agent.log")
        if os.path.exists(log):
            print("---- agent log\n" + open(log).read())
        return 1
    finally:
        for thing in RUNNING:
            try:
                thing.stop()
            except OSError:
                pass
        tree.cleanup()


if __name__ == "__main__":
    sys.exit(main())
