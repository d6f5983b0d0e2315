#!/usr/bin/env python3
"""prefcpu-hostd with VMs found through QMP (source = qmp, both), on temp
trees and test QMP servers (qmp_server.py: one process per VM, serving
one client at a time as QEMU does, its own threads as vCPU threads).  No
root and no QEMU needed; tests/integration/host/hostd_qmp_vm.py runs
real QEMU guests.

  proxmox  a Proxmox VE layout: qemu-server/VMID.qmp sockets (shared
           monitors), cpuunits as cpu.weight under qemu.slice/VMID.scope
           in a cgroup tree, /proc/PID/cgroup in a proc tree whose task
           directories are the real ones.  Checks: both VMs tracked with
           their weights read from cpu.weight and their channel found;
           prefcpu never holds a monitor longer than one query round and
           never while another client holds it (a held monitor is busy:
           it lets go and comes back); a drop-in policy file is applied
           on change and a bad one is refused with file:line; a VM whose
           process exits is forgotten.
  bad      dedicated monitors answering with an oversized reply, a
           malformed one and none at all, next to a good one: each is
           refused and logged, the daemon's periods go on and the good
           VM is tracked.
  mixed    source = both: libvirt's test driver domain and a QMP VM are
           decided together in one contention domain.

usage: hostd_qmp.py HOSTD
"""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "qmp_server.py")


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)
    print("ok: " + what, flush=True)


def put(root, rel, text):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    return p


def wait(what, pred, timeout=10, step=0.05):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise Fail("timed out waiting for " + what)
        time.sleep(step)


class Api(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=5)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(5)
        self.sock.connect(self.path)


class World:
    """A temp tree, the test QMP servers and the daemon; all removed."""

    def __init__(self, hostd):
        self.hostd = hostd
        self.tmp = tempfile.mkdtemp(prefix="prefcpu-qmp.")
        self.proc = os.path.join(self.tmp, "proc")
        self.cg = os.path.join(self.tmp, "cgroup")
        os.makedirs(self.proc)
        os.makedirs(self.cg)
        for f in ("stat", "pressure"):
            os.symlink("/proc/" + f, os.path.join(self.proc, f))
        self.servers = {}
        self.daemon = None
        self.logf = os.path.join(self.tmp, "hostd.log")

    def server(self, sock, mode="good", name="", uuid=None, cgroup=None):
        stats = sock + ".stats"
        uuid = uuid or "00000000-0000-0000-0000-000000000000"
        p = subprocess.Popen([sys.executable, SERVER, sock, stats, mode,
                              name, uuid, sock + ".chan"])
        self.servers[sock] = p
        wait("server " + sock, lambda: os.path.exists(stats))
        # The VM's entry in the proc tree: real tasks, a chosen cgroup.
        d = os.path.join(self.proc, str(p.pid))
        os.makedirs(d)
        for f in ("task", "stat"):
            os.symlink("/proc/%d/%s" % (p.pid, f), os.path.join(d, f))
        put(d, "cgroup", "0::%s\n" % (cgroup or "/"))
        return p

    def stats(self, sock):
        with open(sock + ".stats") as f:
            return json.load(f)

    def start(self, extra):
        conf = put(self.tmp, "hostd.conf", (
            "[hostd]\nperiod-ms = 500\nlog-level = info\n"
            "proc-root = {t}/proc\ncgroup-root = {t}/cgroup\n"
            "state-dir = {t}/state\npolicy-dir = {t}/vms\n"
            "qmp-timeout-ms = 600\nqmp-poll-ms = 700\n"
            "reconnect-min-ms = 100\nreconnect-max-ms = 1000\n{x}\n"
            "[http]\nlisten = \"\"\nsocket = {t}/api.sock\n")
            .format(t=self.tmp, x=extra))
        self.logfp = open(self.logf, "a")
        self.daemon = subprocess.Popen(
            [self.hostd, "--foreground", "--config", conf],
            stdout=self.logfp, stderr=subprocess.STDOUT)
        wait("the API", self.api_ok)

    def api_ok(self):
        if self.daemon.poll() is not None:
            raise Fail("prefcpu-hostd exited: %d\n%s"
                       % (self.daemon.returncode, self.log()[-2000:]))
        try:
            self.api("/api/v1/host")
            return True
        except (OSError, http.client.HTTPException, ValueError, Fail):
            return False

    def api(self, path):
        c = Api(os.path.join(self.tmp, "api.sock"))
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                raise Fail("GET %s: %d" % (path, r.status))
            return json.loads(body)
        finally:
            c.close()

    def domains(self):
        return {d["name"]: d for d in self.api("/api/v1/domains")["domains"]}

    def log(self):
        with open(self.logf, errors="replace") as f:
            return f.read()

    def close(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        for p in self.servers.values():
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def sc_proxmox(w):
    qs = os.path.join(w.tmp, "qemu-server")
    os.makedirs(qs)
    socks = {vmid: os.path.join(qs, "%d.qmp" % vmid) for vmid in (100, 101)}
    for vmid, units in ((100, 100), (101, 300)):
        put(w.cg, "qemu.slice/%d.scope/cpu.weight" % vmid, "%d\n" % units)
        w.server(socks[vmid], name="pve-%d" % vmid,
                 uuid="5a0c%04d-1111-4222-8333-444455556666" % vmid,
                 cgroup="/qemu.slice/%d.scope" % vmid)
    w.start("source = qmp\nqmp-monitors =\nqmp-shared = %s/*.qmp" % qs)
    t0 = time.monotonic()
    doms = wait("both Proxmox VMs", lambda: (lambda d: d if len(d) == 2
                                             else None)(w.domains()))
    print("figure: both VMs tracked %.2f s after the daemon's API came up"
          % (time.monotonic() - t0))
    check(doms["pve-100"]["policy"]["weight"] == 1024 and
          doms["pve-101"]["policy"]["weight"] == 3072,
          "weights from cpu.weight (cpuunits 100, 300 -> %d, %d)"
          % (doms["pve-100"]["policy"]["weight"],
             doms["pve-101"]["policy"]["weight"]))
    check(all(d["source"] == "qmp" for d in doms.values()),
          "the API says the VMs come from QMP (source qmp)")
    check("channel %s.chan" % socks[100] in w.log(),
          "the org.prefcpu.0 channel's socket found through QOM")

    # Proxmox's own tool holds 100.qmp for 3 s meanwhile.
    holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder.connect(socks[100])
    hf = holder.makefile("rwb", buffering=0)
    hf.readline()
    hf.write(b'{"execute": "qmp_capabilities"}\n')
    hf.readline()
    hf.write(b'{"execute": "human-monitor-command", "id": 1}\n')
    hf.readline()
    time.sleep(3)
    hf.close()
    holder.close()
    time.sleep(2.5)
    st = w.stats(socks[100])["sessions"]
    hold = [s for s in st if "human-monitor-command" in s["cmds"]]
    ours = [s for s in st if "human-monitor-command" not in s["cmds"]]
    rounds = [s for s in ours if "query-cpus-fast" in s["cmds"]]
    longest = max(s["end"] - s["start"] for s in ours)
    print("figure: %d prefcpu sessions on 100.qmp, %d full rounds, longest "
          "held %.0f ms; the holder's session %.2f s"
          % (len(ours), len(rounds), longest * 1000,
             hold[0]["end"] - hold[0]["start"]))
    check(len(hold) == 1 and hold[0]["end"] - hold[0]["start"] >= 2.9,
          "the other client kept the monitor for its whole 3 s")
    check(all(s["end"] <= hold[0]["start"] or s["start"] >= hold[0]["end"]
              for s in ours), "prefcpu never held it at the same time")
    check(longest < 0.5, "prefcpu never held it longer than one round "
          "(longest %.0f ms)" % (longest * 1000))
    check(all(s["cmds"].count("query-cpus-fast") <= 1 for s in ours),
          "at most one query round per connection")
    check(any(s["start"] >= hold[0]["end"] for s in rounds),
          "a round again after the holder let go")
    check("busy (no greeting" in w.log(), "the busy monitor was logged")

    # A drop-in policy: applied on change, refused with file:line if bad.
    put(w.tmp, "vms/pve-100.conf", "# test\n[policy]\nweight = 500\n"
        "min-cores = 1\n")
    wait("the drop-in weight", lambda: w.domains()["pve-100"]["policy"]
         ["weight"] == 500, 5)
    check(True, "a drop-in policy file is applied on change")
    put(w.tmp, "vms/pve-100.conf", "weight = 500\nmode = sideways\n")
    wait("the bad drop-in refused", lambda: "vms/pve-100.conf:2:" in w.log()
         and w.domains()["pve-100"]["policy"]["weight"] == 1024, 5)
    check(True, "a bad drop-in is refused with file:line, defaults in force")

    # VM 101's process exits (SIGKILL: its socket file stays).
    w.servers[socks[101]].kill()
    t0 = time.monotonic()
    wait("VM 101 forgotten", lambda: "pve-101" not in w.domains(), 5)
    print("figure: VM 101 forgotten %.2f s after its process was killed"
          % (time.monotonic() - t0))
    check(True, "a VM whose process exits is forgotten")


def sc_bad(w):
    mon = os.path.join(w.tmp, "mon")
    os.makedirs(mon)
    w.server(os.path.join(mon, "good.sock"), name="good",
             uuid="11111111-2222-4333-8444-555555555555")
    for mode in ("oversized", "malformed", "slow"):
        w.server(os.path.join(mon, mode + ".sock"), mode=mode, name=mode)
    w.start("source = qmp\nqmp-shared =\nqmp-max-reply = 65536\n"
            "qmp-monitors = %s/*.sock" % mon)
    p0, t0 = w.api("/api/v1/host")["period_seq"], time.monotonic()
    wait("the three refusals", lambda: all(
        s in w.log() for s in ("reply over 65536 bytes: refused",
                               "bad reply:", "no reply within 600 ms")), 10)
    check(True, "oversized, malformed and unanswered replies refused and "
          "logged")
    time.sleep(2)
    p1, t1 = w.api("/api/v1/host")["period_seq"], time.monotonic()
    # Periods of 500 ms; allow for a loaded machine, not for a stall.
    check(p1 - p0 >= (t1 - t0) / 0.5 * 0.6,
          "the periods went on meanwhile (%d in %.1f s)" % (p1 - p0, t1 - t0))
    check(list(w.domains()) == ["good"], "only the good VM is tracked")
    with open("/proc/%d/status" % w.daemon.pid) as f:
        rss = [int(x.split()[1]) for x in f if x.startswith("VmRSS")][0]
    print("figure: daemon RSS %d KiB after the 2 MiB reply" % rss)
    check(rss < 32768, "the oversized reply was not buffered (RSS %d KiB)"
          % rss)


def sc_mixed(w):
    mon = os.path.join(w.tmp, "mon")
    os.makedirs(mon)
    w.server(os.path.join(mon, "plain.sock"), name="plain",
             uuid="22222222-2222-4333-8444-555555555555")
    w.start("source = both\nuri = test:///default\nqmp-shared =\n"
            "qmp-monitors = %s/*.sock" % mon)
    doms = wait("the libvirt domain and the QMP VM decided", lambda: (
        lambda d: d if {"test", "plain"} <= set(d) and all(
            d[n]["decision"] is not None for n in ("test", "plain"))
        else None)(w.domains()), 10)
    cd = {n: doms[n]["decision"]["contention_domain"] for n in doms}
    host = w.api("/api/v1/host")
    check(cd["test"] == cd["plain"] and host["contention_domains"] == 1,
          "libvirt's domain and the plain QEMU VM share contention domain "
          "%d (host: %d domain)" % (cd["plain"], host["contention_domains"]))


def main():
    hostd = sys.argv[1]
    bad = 0
    for name, fn in (("proxmox", sc_proxmox), ("bad", sc_bad),
                     ("mixed", sc_mixed)):
        w = World(hostd)
        try:
            print("--- " + name, flush=True)
            fn(w)
        except Fail as e:
            print("FAIL: %s: %s" % (name, e), flush=True)
            print(w.log()[-3000:])
            bad = 1
        finally:
            w.close()
    return bad


if __name__ == "__main__":
    sys.exit(main())
