#!/usr/bin/env python3
"""The host-guest channel of the real prefcpu-hostd, end to end, no root.

The daemon runs on libvirt's test driver (domains from an XML file, each
with an org.prefcpu.0 unix channel whose socket this test listens on, as
QEMU would) and on a synthetic /proc, /sys and cgroup tree whose vCPU
counters a thread advances like a loaded host.  On the guest end:

  loop     the real prefcpu-guestd on its own temp trees, joined to the
           daemon's channel by a relay (both programs connect as clients;
           the relay plays QEMU): hello, targets acked and applied to the
           guest's cgroups, a refresh every period, release on SIGTERM.
  restart  the same, with the daemon killed and restarted within the
           lease (the guest's set is adopted, it never widens), then the
           agent killed and restarted (the daemon hears "no session" and
           says hello again).
  hostile  a hostile peer (garbage, a 10 MB line, a flood of 10000 lines)
           is counted and disconnected, retried after a growing pause, the
           daemon's memory stays bounded, and a good peer next to it still
           gets a target every period, as does a mute one (never reads).
  refuse   a hostile agent that refuses every target (alternating error
           texts), acks each seq again and again, and answers targets with
           "no session" after every hello, for a minute: each pattern is
           counted as violations and ends in the back-off, and the
           daemon's log lines about it stay within 16 a minute.
  observe  --observe: nobody is even connected to; nothing sent on SIGTERM.

usage: chan_test.py HOSTD GUESTD SCENARIO
"""

import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from xml.sax.saxutils import quoteattr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "lib"))
from synthost import SynthHost, put                     # noqa: E402

SKIP = 77
NCPUS = 4           # host CPUs
PERIOD_MS = 200
STOP = []           # things to stop at the end


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)
    print("chan: ok: " + what, flush=True)


def wait_for(cond, what, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise Fail("timed out waiting for " + what)


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


# ------------------------------------------------------------ the host
class Host:
    """A synthetic host (tests/lib/synthost.py) and the daemon on it.

    domains: (name, vcpus, cores, threads, run, delay, channel) where run
    and delay are CPUs per vCPU and channel says whether the domain has an
    org.prefcpu.0 channel (its socket: DIR/NAME.sock).
    """

    def __init__(self, tmp, hostd, domains):
        self.tmp = tmp
        self.hostd = hostd
        self.root = os.path.join(tmp, "host")
        self.api_sock = os.path.join(tmp, "api.sock")
        self.log = os.path.join(tmp, "hostd.log")
        self.proc = None
        self.sockets = {}
        self.synth = SynthHost(self.root, NCPUS)
        for name, vcpus, cores, threads, run, delay, chan in domains:
            dev = ""
            if chan:
                path = os.path.join(tmp, name + ".sock")
                self.sockets[name] = path
                dev = ('<devices><channel type="unix"><source mode="bind" '
                       'path=%s/><target type="virtio" '
                       'name="org.prefcpu.0"/></channel></devices>'
                       % quoteattr(path))
            self.synth.add_domain(
                name, vcpus, run, delay,
                '<cpu><topology sockets="1" dies="1" cores="%d" '
                'threads="%d"/></cpu>%s' % (cores, threads, dev))
        self.driver = self.synth.finish()

    def start(self, observe=False):
        r = self.root
        self.conf = conf = os.path.join(self.tmp, "hostd.conf")
        put(conf,
            "[hostd]\nuri = test://%s\nperiod-ms = %d\nlog-level = info\n"
            "observe = %s\nproc-root = %s/proc\nsys-root = %s/sys\n"
            "cgroup-root = %s/cgroup\nrun-root = %s/run\n"
            "qmp-fallback = no\n\n"
            "[http]\nlisten = \"\"\nsocket = %s\n\n"
            "[channel]\nbackoff-min-ms = 500\nbackoff-max-ms = 4000\n"
            % (self.driver, PERIOD_MS, "yes" if observe else "no",
               r, r, r, r, self.api_sock))
        self.synth.start_load()
        STOP.append(self)
        self.spawn()

    def spawn(self):
        """Start the daemon (again): its log is appended to."""
        self.logf = open(self.log, "a")
        self.proc = subprocess.Popen(
            [self.hostd, "--foreground", "--config", self.conf],
            stdout=self.logf, stderr=subprocess.STDOUT)
        wait_for(lambda: os.path.exists(self.api_sock) or
                 self.proc.poll() is not None, "the API socket")
        if self.proc.poll() is not None:
            raise Fail("prefcpu-hostd exited: " + self.log_text()[-2000:])

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def api(self, path):
        """GET a JSON document; 503 (no period yet) is retried."""
        end = time.monotonic() + 10
        while True:
            c = UnixHTTP(self.api_sock)
            try:
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
            finally:
                c.close()
            if r.status == 200:
                return json.loads(body)
            if r.status != 503 or time.monotonic() > end:
                raise Fail("GET %s: %d" % (path, r.status))
            time.sleep(0.1)

    def domain(self, name):
        return self.api("/api/v1/domains/" + name)

    def rss_kb(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1))

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.logf.close()

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(15)
        self.logf.close()
        return rc

    def close(self):
        self.synth.stop_load()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------- the guest end(s)
class Listener:
    """A unix socket where QEMU would listen; one connection at a time."""

    def __init__(self, path):
        self.path = path
        self.stopping = threading.Event()
        self.accepts = []           # monotonic times
        self.closed_by_daemon = []  # monotonic times
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(path)
        self.srv.listen(1)
        self.srv.settimeout(0.1)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        STOP.append(self)

    def _run(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.srv.accept()
            except socket.timeout:
                continue
            self.accepts.append(time.monotonic())
            try:
                self.serve(conn, len(self.accepts))
            except OSError:
                self.closed_by_daemon.append(time.monotonic())
            finally:
                conn.close()

    def lines(self, conn, buf):
        """Yield lines as they come; at EOF record it and stop."""
        conn.settimeout(0.1)
        while not self.stopping.is_set():
            while b"\n" in buf[0]:
                line, buf[0] = buf[0].split(b"\n", 1)
                yield line
            try:
                data = conn.recv(65536)
            except socket.timeout:
                continue
            if not data:
                self.closed_by_daemon.append(time.monotonic())
                return
            buf[0] += data

    def close(self):
        self.stopping.set()
        self.thread.join(5)
        self.srv.close()


def hello_reply(session, vcpus):
    return (json.dumps({
        "v": 1, "type": "hello", "session": session,
        "agent": "fake-guest 1", "online": "0-%d" % (vcpus - 1),
        "cores": [str(i) for i in range(vcpus)], "backend": "cpuset",
        "backends": ["cpuset"], "kernel": "6.1.0-test"}) + "\n").encode()


class GoodGuest(Listener):
    """Answers hello, acks every target, answers pings."""

    def __init__(self, path, vcpus):
        self.vcpus = vcpus
        self.targets = []       # (monotonic, seq, preferred)
        self.received = []      # every message, decoded
        super().__init__(path)

    def serve(self, conn, n):
        buf = [b""]
        for line in self.lines(conn, buf):
            if not line:
                continue
            m = json.loads(line)
            self.received.append(m)
            if m["type"] == "hello":
                conn.sendall(hello_reply(m["session"], self.vcpus))
            elif m["type"] == "target":
                self.targets.append((time.monotonic(), m["seq"],
                                     m["preferred"]))
                conn.sendall((json.dumps({
                    "v": 1, "type": "ack", "seq": m["seq"], "ok": True,
                    "applied": m["preferred"]}) + "\n").encode())
            elif m["type"] == "ping":
                conn.sendall(('{"v":1,"type":"pong","seq":%d}\n'
                              % m["seq"]).encode())


GARBAGE = [b"not json", b"{'v':1,'type':'ping','seq':1}",
           b'{"v":1,"type":"bogus"}', b'{"v":2,"type":"ping","seq":1}',
           b'{"v":1,"type":"ack","seq":-1,"ok":true}', b"\x00\xff\xfe",
           b"[1,2,3]", b'{"v":1,"type":"target","seq":1}', b"{", b"}"] * 2


class HostilePeer(Listener):
    """Each connection: hello, then an attack (garbage, a 10 MB line, a
    flood of 10000 lines, garbage again ...), until the daemon hangs up."""

    ATTACKS = ["garbage", "long", "flood", "garbage", "garbage"]

    def __init__(self, path, go):
        self.go = go
        self.sent = {}
        super().__init__(path)

    def serve(self, conn, n):
        buf = [b""]
        for line in self.lines(conn, buf):
            if line:
                m = json.loads(line)
                if m["type"] == "hello":
                    conn.sendall(hello_reply(m["session"], 2))
                    break
        else:
            return
        if n > len(self.ATTACKS):
            # Enough: behave, so the test can see it is still retried.
            for _ in self.lines(conn, buf):
                pass
            return
        self.go.wait()
        attack = self.ATTACKS[n - 1]
        if attack == "garbage":
            data = b"\n".join(GARBAGE) + b"\n"
        elif attack == "long":
            data = b"x" * (10 << 20) + b"\n"
        else:
            data = b"".join(b'{"v":1,"type":"ping","seq":%d}\n' % (i + 1)
                            for i in range(10000))
        conn.settimeout(10)
        sent = 0
        try:
            while sent < len(data):
                sent += conn.send(data[sent:sent + 65536])
        except OSError:
            pass
        self.sent[n] = sent
        for _ in self.lines(conn, buf):
            pass


class RefusingPeer(Listener):
    """An agent that never follows, one pattern per connection: refuses
    every target with alternating error texts, acks each seq five times,
    or answers every target with "no session" (and every hello)."""

    PATTERNS = ["refuse", "reack", "nosession"]

    def __init__(self, path):
        self.patterns = []      # per connection
        super().__init__(path)

    def serve(self, conn, n):
        buf = [b""]
        pattern = self.PATTERNS[(n - 1) % len(self.PATTERNS)]
        self.patterns.append(pattern)
        for line in self.lines(conn, buf):
            if not line:
                continue
            m = json.loads(line)
            if m["type"] == "hello":
                conn.sendall(hello_reply(m["session"], 2))
            elif m["type"] == "target" and pattern == "nosession":
                conn.sendall((json.dumps({
                    "v": 1, "type": "error", "seq": m["seq"],
                    "error": "no session: hello first"}) + "\n").encode())
            elif m["type"] == "target":
                ack = (json.dumps({
                    "v": 1, "type": "ack", "seq": m["seq"], "ok": False,
                    "error": "refused %s" % "AB"[m["seq"] % 2]}) +
                    "\n").encode()
                conn.sendall(ack * (5 if pattern == "reack" else 1))


class MutePeer(Listener):
    """Accepts and then neither reads nor writes: a hung guest."""

    def serve(self, conn, n):
        p = select.poll()
        p.register(conn, select.POLLRDHUP)
        while not self.stopping.is_set():
            # Hang-up seen without reading a byte of what was sent.
            if p.poll(100):
                self.closed_by_daemon.append(time.monotonic())
                return


class Relay(Listener):
    """QEMU's part for the real agent: the daemon connects to one socket,
    the agent (--port unix:PATH) to another; bytes are passed both ways."""

    def __init__(self, path, guest_path):
        self.gsrv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.gsrv.bind(guest_path)
        self.gsrv.listen(1)
        self.gsrv.settimeout(0.1)
        self.guest = None
        super().__init__(path)

    def _guest(self):
        while self.guest is None and not self.stopping.is_set():
            try:
                self.guest, _ = self.gsrv.accept()
            except socket.timeout:
                pass
        return self.guest

    def serve(self, conn, n):
        g = self._guest()
        if g is None:
            return
        while not self.stopping.is_set():
            r, _, _ = select.select([conn, g], [], [], 0.1)
            for s in r:
                data = s.recv(65536)
                if not data:
                    if s is g:
                        # The agent went away: keep the daemon's side open,
                        # as QEMU does, and wait for the agent to return.
                        g.close()
                        self.guest = None
                        g = self._guest()
                        if g is None:
                            return
                        break
                    self.closed_by_daemon.append(time.monotonic())
                    return
                (g if s is conn else conn).sendall(data)

    def close(self):
        super().close()
        if self.guest is not None:
            self.guest.close()
        self.gsrv.close()


# ------------------------------------------------------------- scenarios
def real_agent(tmp, guestd, g, gsock):
    """The real agent on the guest tree g, through the relay at gsock;
    its log (appended to) is guestd.log."""
    glog = open(os.path.join(tmp, "guestd.log"), "a")
    agent = subprocess.Popen(
        [guestd, "--port", "unix:" + gsock, "--proc-root", g + "/proc",
         "--sys-root", g + "/sys", "--cgroup-root", g + "/cgroup",
         "--run-dir", g + "/run", "--backend", "cpuset",
         "--keep-affinity", "no",
         "--report-interval", "500", "--log-level", "debug"],
        stdout=glog, stderr=subprocess.STDOUT)
    STOP.append(agent)
    return agent, glog


def narrowed(host, name="real", vcpus=8):
    """The domain's API document once a narrower target is acked."""
    d = host.domain(name)
    t = d["target"]
    if 0 < t["vcpus"] < vcpus and d["applied"]["ok"] and \
            d["applied"]["cpus"] == t["preferred"]:
        return d
    return None


def guest_tree(tmp):
    """The agent's guest: 8 CPUs in 4 cores of 2 threads, two cgroups."""
    d = os.path.join(tmp, "guest")
    put(os.path.join(d, "proc/stat"),
        "cpu  300 0 100 500 0 0 0 100 0 0\ncpu0 1 0 1 1 0 0 0 1 0 0\n")
    put(os.path.join(d, "proc/pressure/cpu"),
        "some avg10=1.00 avg60=0 avg300=0 total=1\n"
        "full avg10=0.00 avg60=0 avg300=0 total=0\n")
    put(os.path.join(d, "proc/loadavg"), "1.00 0.50 0.25 5/300 4242\n")
    put(os.path.join(d, "proc/1/comm"), "init\n")
    cpu = os.path.join(d, "sys/devices/system/cpu")
    put(os.path.join(cpu, "online"), "0-7\n")
    for c in range(8):
        first = c - c % 2
        put(os.path.join(cpu, "cpu%d/topology/thread_siblings_list" % c),
            "%d-%d\n" % (first, first + 1))
    cg = os.path.join(d, "cgroup")
    put(os.path.join(cg, "cgroup.controllers"), "cpuset cpu memory\n")
    put(os.path.join(cg, "cgroup.subtree_control"), "cpu memory\n")
    for name in ("workload", "other"):
        put(os.path.join(cg, name, "cgroup.events"),
            "populated 1\nfrozen 0\n")
        for f in ("cgroup.procs", "cgroup.threads",
                  "cgroup.subtree_control", "cpuset.cpus"):
            put(os.path.join(cg, name, f), "")
        put(os.path.join(cg, name, "cpuset.cpus.effective"), "0-7")
    return d


def read(path):
    with open(path) as f:
        return f.read().strip()


def real_setup(tmp, hostd, guestd):
    """The agent's VM 'real' and a busy VM without one (4 host CPUs, 8
    wanted), the real agent joined through a relay, the daemon started."""
    host = Host(tmp, hostd, [
        ("real", 8, 4, 2, 0.5, 0.3, True),
        ("busy", 4, 4, 1, 0.8, 0.4, False),
    ])
    gsock = os.path.join(tmp, "guest.sock")
    relay = Relay(host.sockets["real"], gsock)
    g = guest_tree(tmp)
    agent, glog = real_agent(tmp, guestd, g, gsock)
    host.start()
    return host, relay, g, gsock, agent, glog


def scenario_loop(tmp, hostd, guestd):
    host, relay, g, _, agent, glog = real_setup(tmp, hostd, guestd)

    d = wait_for(lambda: (lambda d: d if d["agent"]["state"] == "following"
                          else None)(host.domain("real")),
                 "the agent of 'real' to follow")
    check(d["agent"]["agent"].startswith("prefcpu-guestd")
          and d["agent"]["backend"] == "cpuset",
          "hello exchanged: the API shows agent %r, backend %r"
          % (d["agent"]["agent"], d["agent"]["backend"]))
    check(re.search(r"domain real: agent prefcpu-guestd \S+, backend "
                    r"cpuset, kernel .*: session [0-9a-f]{16}",
                    host.log_text()), "the daemon logs the session")

    # Contention: the policy narrows 'real', the agent applies it.
    d = wait_for(lambda: narrowed(host), "a narrower target acked",
                 timeout=30)
    want = d["target"]["preferred"]
    check(True, "target %s (seq %d) acked ok with applied %s"
          % (want, d["target"]["seq"], d["applied"]["cpus"]))
    wl = os.path.join(g, "cgroup/workload/cpuset.cpus")
    wait_for(lambda: read(wl) == want, "the guest cgroup to read " + want)
    check(True, "the guest's cgroup cpuset.cpus is %s" % want)
    check(d["agent"]["steerable"], "the VM is steerable")

    # A refresh every period: seq moves on about once per period.
    s0, t0 = host.domain("real")["target"]["seq"], time.monotonic()
    time.sleep(3)
    d = host.domain("real")
    s1, t1 = d["target"]["seq"], time.monotonic()
    periods = (t1 - t0) * 1000 / PERIOD_MS
    check(0.6 * periods <= s1 - s0 <= 1.3 * periods + 1,
          "%d targets in %.1f periods (a refresh each period)"
          % (s1 - s0, periods))
    check(d["applied"]["ok"] and d["applied"]["seq"] >= s1 - 2,
          "the refreshes are acked (ack %d, target %d)"
          % (d["applied"]["seq"], s1))
    check(d["agent"]["protocol_errors"] == 0, "no protocol errors")

    # SIGTERM: the guest is released at once, not when the lease ends.
    rc = host.terminate()
    check(rc == 0, "prefcpu-hostd exits 0 on SIGTERM")
    check(re.search(r"release sent to 1 of 1 guests", host.log_text()),
          "the daemon sent release to the guest")
    wait_for(lambda: read(wl) == "", "the guest to restore its cgroup",
             timeout=5)
    check(True, "the guest restored cpuset.cpus at once (lease is 15 s)")
    agent.send_signal(signal.SIGTERM)
    agent.wait(10)
    glog.close()
    with open(os.path.join(tmp, "guestd.log")) as f:
        check("released by the host" in f.read(),
              "the agent logs the release")
    relay.close()


class Watch:
    """Every value a file takes, read every 5 ms in a thread."""

    def __init__(self, path):
        self.path = path
        self.seen = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.wait(0.005):
            v = read(self.path)
            if not self.seen or self.seen[-1] != v:
                self.seen.append(v)

    def close(self):
        self.stopping.set()
        self.thread.join(5)
        return self.seen


def scenario_restart(tmp, hostd, guestd):
    host, relay, g, gsock, agent, _ = real_setup(tmp, hostd, guestd)
    d = wait_for(lambda: narrowed(host), "a narrower target acked",
                 timeout=30)
    want = d["target"]["preferred"]
    wl = os.path.join(g, "cgroup/workload/cpuset.cpus")
    wait_for(lambda: read(wl) == want, "the guest cgroup to read " + want)
    glog = os.path.join(tmp, "guestd.log")

    # The daemon killed and restarted within the lease: the guest says
    # what it holds, the new daemon adopts it; the guest never widens.
    host.kill()
    os.unlink(host.api_sock)
    watch = Watch(wl)
    mark = len(host.log_text())
    host.spawn()
    t0 = time.monotonic()
    wait_for(lambda: os.path.exists(host.api_sock), "the new API socket")
    d = wait_for(lambda: narrowed(host),
                 "the restarted daemon's target acked", timeout=30)
    back = time.monotonic() - t0
    check(d["target"]["preferred"] == want,
          "the restarted daemon goes on with %s (target %s)"
          % (want, d["target"]["preferred"]))
    check(re.search(r"domain real: the guest still prefers vCPUs %s from "
                    r"an earlier run: adopted" % re.escape(want),
                    host.log_text()[mark:]),
          "the daemon logs the adoption")
    time.sleep(5 * PERIOD_MS / 1000)
    seen = watch.close()
    check(seen == [want], "the guest's cgroup stayed %s through the restart "
          "(values seen: %r)" % (want, seen))
    with open(glog) as f:
        check("lease ended" not in f.read(), "the lease never ran out")
    print("chan: figure: restarted daemon to its target acked: %.2f s "
          "(%.1f periods)" % (back, back * 1000 / PERIOD_MS))

    # The agent killed and restarted while the daemon keeps its session:
    # the next target draws "no session", the daemon says hello again.
    mark = len(host.log_text())
    agent.kill()
    agent.wait()
    agent, _ = real_agent(tmp, guestd, g, gsock)
    t0 = time.monotonic()
    wait_for(lambda: "the agent has no session (restarted): hello again"
             in host.log_text()[mark:], "the daemon to say hello again")
    d = wait_for(lambda: narrowed(host), "the target acked again",
                 timeout=30)
    wait_for(lambda: read(wl) == want, "the guest cgroup to read " + want)
    again = time.monotonic() - t0
    check("reconnecting" not in host.log_text()[mark:],
          "no reconnect was needed")
    print("chan: figure: restarted agent to the target applied again: "
          "%.2f s (%.1f periods)" % (again, again * 1000 / PERIOD_MS))
    relay.close()


def scenario_hostile(tmp, hostd, guestd):
    host = Host(tmp, hostd, [
        ("good", 2, 2, 1, 0.3, 0.0, True),
        ("bad", 2, 2, 1, 0.3, 0.0, True),
        ("mute", 2, 2, 1, 0.3, 0.0, True),
    ])
    go = threading.Event()
    good = GoodGuest(host.sockets["good"], 2)
    bad = HostilePeer(host.sockets["bad"], go)
    mute = MutePeer(host.sockets["mute"])
    host.start()
    wait_for(lambda: host.domain("good")["agent"]["state"] == "following",
             "the good guest to follow")
    wait_for(lambda: len(bad.accepts) == 1 and
             host.domain("bad")["agent"]["state"] != "waiting",
             "the hostile peer's session")
    time.sleep(1)
    rss0 = host.rss_kb()
    start = time.monotonic()
    go.set()
    wait_for(lambda: len(bad.accepts) >= 6, "six connections of the "
             "hostile peer", timeout=40)
    end = time.monotonic()
    rss1 = host.rss_kb()

    d = host.domain("bad")
    errs = d["agent"]["protocol_errors"]
    check(errs >= 4 * 10, "violations counted: %d protocol errors" % errs)
    # Closed by the daemon each time; its log says so while the guest's
    # log budget lasts (scenario refuse checks the budget).
    check(len(bad.closed_by_daemon) >= 5,
          "each of the 5 attacks closed the channel (%d)"
          % len(bad.closed_by_daemon))
    check(re.search(r"domain bad: channel closed: 10 protocol violations",
                    host.log_text()), "the daemon logs why it closed")
    check(bad.sent.get(2, 0) < (10 << 20),
          "the 10 MB line was cut off after %d bytes" % bad.sent.get(2, 0))
    check(bad.sent.get(3, 0) > 0, "the flood was sent")
    check(not d["agent"]["steerable"], "the hostile VM is not steerable")

    # Retried after a pause that doubles from 0.5 s, up to 4 s.
    gaps = [bad.accepts[i + 1] - bad.closed_by_daemon[i]
            for i in range(5)]
    want = [0.5, 1.0, 2.0, 4.0, 4.0]
    check(all(w - 0.1 <= g <= w + 0.8 for g, w in zip(gaps, want)),
          "pauses before reconnecting %s (want %s)"
          % (", ".join("%.2f" % g for g in gaps), want))

    check(rss1 - rss0 < 8 * 1024,
          "daemon RSS %d kB -> %d kB: bounded" % (rss0, rss1))

    # The good guest got a target every period all along.
    ts = [t for t, _, _ in good.targets if start - 1 <= t <= end]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    check(len(ts) >= 0.7 * (end - start + 1) * 1000 / PERIOD_MS and
          max(gaps) < 3 * PERIOD_MS / 1000,
          "the good guest got %d targets in %.1f s, longest gap %.0f ms"
          % (len(ts), end - start + 1, 1000 * max(gaps)))
    d = host.domain("good")
    check(d["agent"]["state"] == "following" and
          d["agent"]["protocol_errors"] == 0,
          "the good guest still follows, no errors")
    # The hung guest: never steerable, reconnected to when it does not
    # answer the hello (its unread bytes are then dropped with the socket).
    d = host.domain("mute")
    check(not d["agent"]["steerable"] and len(mute.accepts) >= 2,
          "the mute guest is not steerable and was reconnected (%d "
          "connections)" % len(mute.accepts))
    check(re.search(r"domain mute: no agent answers on the channel",
                    host.log_text()), "the daemon logs the mute guest")
    rc = host.terminate()
    check(rc == 0, "prefcpu-hostd exits 0 on SIGTERM")
    check(any(m["type"] == "release" for m in good.received),
          "the good guest got release")


def scenario_refuse(tmp, hostd, guestd):
    host = Host(tmp, hostd, [
        ("good", 2, 2, 1, 0.3, 0.0, True),
        ("bad", 2, 2, 1, 0.3, 0.0, True),
    ])
    good = GoodGuest(host.sockets["good"], 2)
    bad = RefusingPeer(host.sockets["bad"])
    host.start()
    start = time.monotonic()
    minute = 60.0
    while time.monotonic() - start < minute:
        time.sleep(0.5)
        check_alive = host.proc.poll() is None
        if not check_alive:
            raise Fail("prefcpu-hostd died")
    log = host.log_text()
    # The channel's lines: what the guest provokes (not the daemon's own
    # lines on finding the domain and deciding its vCPUs).
    own = re.compile(r"domain bad: (tracking|\d+ vCPU threads from|"
                     r"preferred \S+ -> )")
    lines = [ln for ln in log.splitlines()
             if "domain bad:" in ln and not own.search(ln)]
    print("chan: figure: %d log lines about the hostile guest in %.0f s "
          "(%d connections); the good one: %d lines" % (
              len(lines), time.monotonic() - start, len(bad.accepts),
              sum(1 for ln in log.splitlines() if "domain good:" in ln)))
    for ln in lines:
        print("chan:   " + ln)
    check(len(lines) <= 10 + 6,
          "%d lines about the hostile guest in a minute: at most 16 (10 "
          "at once, then one per 10 s)" % len(lines))
    check(any("suppressed" in ln for ln in lines),
          "the log says lines were suppressed")

    # Every pattern ended in a close by the daemon, then a growing pause.
    n = len(bad.closed_by_daemon)
    check(n >= 6 and set(bad.patterns[:n]) == set(RefusingPeer.PATTERNS),
          "the daemon closed %d connections (patterns %s)"
          % (n, ", ".join(bad.patterns[:n])))
    gaps = [bad.accepts[i + 1] - bad.closed_by_daemon[i]
            for i in range(min(n, len(bad.accepts) - 1))]
    want = [0.5, 1.0, 2.0, 4.0, 4.0]
    check(all(w - 0.1 <= g <= w + 0.8 for g, w in zip(gaps, want)),
          "pauses before reconnecting %s (want %s, then 4 s)"
          % (", ".join("%.2f" % g for g in gaps), want))
    d = host.domain("bad")
    check(d["agent"]["protocol_errors"] >= 10 * n,
          "violations counted: %d protocol errors for %d closes"
          % (d["agent"]["protocol_errors"], n))
    check(not d["agent"]["steerable"], "the hostile VM is not steerable")
    d = host.domain("good")
    check(d["agent"]["state"] == "following" and
          d["agent"]["protocol_errors"] == 0,
          "the good guest still follows, no errors")
    rc = host.terminate()
    check(rc == 0, "prefcpu-hostd exits 0 on SIGTERM")


def scenario_observe(tmp, hostd, guestd):
    host = Host(tmp, hostd, [
        ("quiet", 2, 2, 1, 0.5, 0.2, True),
    ])
    guest = GoodGuest(host.sockets["quiet"], 2)
    host.start(observe=True)
    wait_for(lambda: [d for d in host.api("/api/v1/domains")["domains"]
                      if d["name"] == "quiet"], "the domain in the API")
    time.sleep(10 * PERIOD_MS / 1000)
    check(len(guest.accepts) == 0, "--observe: the channel is not connected")
    rc = host.terminate()
    check(rc == 0, "prefcpu-hostd exits 0 on SIGTERM")
    time.sleep(0.3)
    check(len(guest.accepts) == 0 and not guest.received,
          "nothing was sent to the guest")


SCENARIOS = {
    "loop": scenario_loop,
    "restart": scenario_restart,
    "hostile": scenario_hostile,
    "refuse": scenario_refuse,
    "observe": scenario_observe,
}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    hostd, guestd, name = sys.argv[1:]
    for b in (hostd, guestd):
        if not os.access(b, os.X_OK):
            print("chan: %s not built" % b)
            sys.exit(SKIP)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    tmp = tempfile.mkdtemp(prefix="prefcpu-chan.")
    rc = 1
    try:
        SCENARIOS[name](tmp, hostd, guestd)
        print("chan: %s: PASS" % name)
        rc = 0
    except Fail as e:
        print("chan: %s: FAIL: %s" % (name, e))
        for log in ("hostd.log", "guestd.log"):
            p = os.path.join(tmp, log)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    print("---- %s (tail)\n%s" % (log, f.read()[-4000:]))
    finally:
        for s in reversed(STOP):
            try:
                if isinstance(s, subprocess.Popen):
                    if s.poll() is None:
                        s.kill()
                        s.wait()
                else:
                    s.close()
            except Exception as e:      # clean-up must go on
                print("chan: clean-up: %s" % e)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
