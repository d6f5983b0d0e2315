#!/usr/bin/env python3
"""prefcpu-hostd against a real libvirtd with real TCG domains.

Checks what an operator would: the daemon finds a running domain, follows
lifecycle events (start, suspend, resume, stop), picks up policy metadata
changes within a period (and reports a bad value once, by domain and
attribute), its sampler sees a busy guest vCPU above 0.8 CPU, and it keeps
its domains while libvirtd is killed and restarted.

Starts libvirtd (virtlogd -d; libvirtd -d) when none runs and stops only
what it started; if libvirtd was already running, the restart part is
skipped.  Every domain it defines is named prefcpu-test-PID-* and removed
at the end, also on failure.

usage: hostd_libvirt.py HOSTD LABDIR
Exit 0 pass, 1 fail, 77 skip.
"""

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import hostd_cost

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "lab"))
from lab import libvirtd_up, pidfile                    # noqa: E402

SKIP = 77
URI = "qemu:///system"
NS = "http://prefcpu.org/xmlns/policy/1"
PERIOD_MS = 500
PREFIX = "prefcpu-test-%d-" % os.getpid()


def log(msg):
    print("hostd_libvirt: " + msg, flush=True)


def skip(msg):
    log("SKIP: " + msg)
    sys.exit(SKIP)


class Fail(Exception):
    pass


def run(*args, check=True, timeout=60):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise Fail("%s: exit %d: %s" % (" ".join(args), p.returncode,
                                         p.stderr.strip()))
    return p


def virsh(*args, check=True):
    return run("virsh", "-q", "-c", URI, *args, check=check)


def wait_for(what, pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise Fail("timed out after %.0f s waiting for %s" % (timeout, what))


class Lab:
    def __init__(self, hostd, labdir):
        self.hostd_bin = hostd
        self.labdir = labdir
        self.tmp = tempfile.mkdtemp(prefix="prefcpu-hostd-it.")
        self.started_libvirtd = None
        self.started_virtlogd = None
        self.domains = []
        self.hostd = None
        self.logf = os.path.join(self.tmp, "hostd.log")

    # --- libvirtd -------------------------------------------------------
    def ensure_libvirtd(self):
        if libvirtd_up():
            log("libvirtd already running: not ours, restart part skipped")
            return
        if pidfile("/run/virtlogd.pid") is None:
            run("virtlogd", "-d")
            self.started_virtlogd = wait_for(
                "virtlogd pid", lambda: pidfile("/run/virtlogd.pid"), 10)
        self.start_libvirtd()

    def start_libvirtd(self):
        run("libvirtd", "-d")
        self.started_libvirtd = wait_for(
            "libvirtd pid", lambda: pidfile("/run/libvirtd.pid"), 10)
        wait_for("libvirtd answering", libvirtd_up, 30)

    def kill_libvirtd(self):
        pid = self.started_libvirtd
        os.kill(pid, signal.SIGTERM)
        wait_for("libvirtd exit", lambda: not os.path.exists("/proc/%d" % pid)
                 or open("/proc/%d/stat" % pid).read().split()[2] == "Z", 30)

    # --- domains --------------------------------------------------------
    def image(self):
        p = run(os.path.join(self.labdir, "fetch-kernel"), "6.12",
                check=False, timeout=600)
        if p.returncode != 0:
            skip("no guest kernel (tests/lab/fetch-kernel 6.12): "
                 + p.stderr.strip()[-200:])
        kernel = p.stdout.splitlines()[0].strip()
        script = os.path.join(self.tmp, "busy")
        with open(script, "w") as f:
            # One vCPU spins for ever; the other stays idle.
            f.write("#!/bin/sh\necho lab-busy: spinning\n"
                    "while :; do :; done\n")
        os.chmod(script, 0o755)
        initrd = os.path.join(self.tmp, "initrd.cpio.gz")
        run(os.path.join(self.labdir, "mkinitramfs"), initrd,
            "--add", script + ":/lab/run")
        # qemu runs as an unprivileged user: give it readable copies.
        os.chmod(self.tmp, 0o755)
        k = os.path.join(self.tmp, "vmlinuz")
        shutil.copy(kernel, k)
        os.chmod(k, 0o644)
        os.chmod(initrd, 0o644)
        return k, initrd

    def define(self, suffix, kernel, initrd, metadata=""):
        name = PREFIX + suffix
        xml = """<domain type='qemu'>
  <name>{name}</name>
  <memory unit='MiB'>192</memory>
  <vcpu placement='static'>2</vcpu>
  <metadata>{metadata}</metadata>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>console=ttyS0 quiet</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <cpu><topology sockets='1' dies='1' cores='2' threads='1'/></cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='pty'/>
    <channel type='unix'>
      <source mode='bind'/>
      <target type='virtio' name='org.prefcpu.0'/>
    </channel>
    <memballoon model='none'/>
  </devices>
</domain>
""".format(name=name, kernel=kernel, initrd=initrd, metadata=metadata)
        path = os.path.join(self.tmp, name + ".xml")
        with open(path, "w") as f:
            f.write(xml)
        self.domains.append(name)
        virsh("define", path)
        return name

    def cleanup_domains(self):
        for name in self.domains:
            virsh("destroy", name, check=False)
            virsh("undefine", name, check=False)

    # --- the daemon -----------------------------------------------------
    def write_conf(self, level):
        conf = os.path.join(self.tmp, "hostd.conf")
        with open(conf, "w") as f:
            f.write("[hostd]\nuri = %s\nperiod-ms = %d\nlog-level = %s\n"
                    "keepalive-interval = 2\nkeepalive-count = 3\n"
                    "reconnect-min-ms = 200\nreconnect-max-ms = 1000\n"
                    "\n[http]\nlisten = \"\"\nsocket = %s\n"
                    % (URI, PERIOD_MS, level,
                       os.path.join(self.tmp, "api.sock")))
        return conf

    def start_hostd(self):
        conf = self.write_conf("debug")
        self.log_fp = open(self.logf, "w")
        self.hostd = subprocess.Popen(
            [self.hostd_bin, "--foreground", "--observe", "--config", conf],
            stdout=self.log_fp, stderr=subprocess.STDOUT)

    def probe(self, run_root, qmp, what, pattern, unwanted=None):
        """Run a second, short-lived daemon with another run-root until
        pattern shows in its log; returns the log."""
        n = len(os.listdir(self.tmp))
        conf = os.path.join(self.tmp, "probe%d.conf" % n)
        logf = os.path.join(self.tmp, "probe%d.log" % n)
        with open(conf, "w") as f:
            f.write("[hostd]\nuri = %s\nperiod-ms = %d\nlog-level = info\n"
                    "run-root = %s\nqmp-fallback = %s\n\n[http]\n"
                    "listen = \"\"\nsocket = %s\n"
                    % (URI, PERIOD_MS, run_root, "yes" if qmp else "no",
                       os.path.join(self.tmp, "probe%d.sock" % n)))
        with open(logf, "w") as out:
            p = subprocess.Popen([self.hostd_bin, "--foreground", "--observe",
                                  "--config", conf], stdout=out,
                                 stderr=subprocess.STDOUT)
        try:
            rx = re.compile(pattern)

            def found():
                if p.poll() is not None:
                    raise Fail("probe daemon exited (%d)" % p.returncode)
                with open(logf, errors="replace") as f:
                    return rx.search(f.read())
            wait_for(what, found, 20)
            time.sleep(PERIOD_MS / 1000 * 2)
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        with open(logf, errors="replace") as f:
            text = f.read()
        if p.returncode != 0:
            raise Fail("probe daemon exited %d:\n%s" % (p.returncode,
                                                         text[-1500:]))
        if unwanted and re.search(unwanted, text):
            raise Fail("%s: unexpected %r in:\n%s" % (what, unwanted,
                                                      text[-1500:]))
        log("ok: " + what)
        return text

    def stop_hostd(self):
        if self.hostd is None or self.hostd.poll() is not None:
            return
        self.hostd.send_signal(signal.SIGTERM)
        try:
            self.hostd.wait(10)
        except subprocess.TimeoutExpired:
            self.hostd.kill()
            self.hostd.wait()

    def text(self):
        with open(self.logf, errors="replace") as f:
            return f.read()

    def mark(self):
        return len(self.text())

    def expect(self, what, pattern, since=0, timeout=20):
        rx = re.compile(pattern, re.M)

        def found():
            if self.hostd.poll() is not None:
                raise Fail("prefcpu-hostd exited (%d) while waiting for %s"
                           % (self.hostd.returncode, what))
            return rx.search(self.text(), since)
        m = wait_for(what, found, timeout)
        log("ok: " + what)
        return m

    def cleanup(self):
        self.stop_hostd()
        try:
            self.cleanup_domains()
        except Exception as e:      # libvirtd may be down: retry below
            log("cleanup: %s" % e)
        others = []
        if self.started_libvirtd is not None:
            if not libvirtd_up():
                self.start_libvirtd()
                self.cleanup_domains()
            others = [n for n in virsh("list", "--name", check=False)
                      .stdout.split() if n not in self.domains]
            pid = pidfile("/run/libvirtd.pid")
            if others:
                log("leaving the libvirtd we started running: other "
                    "domains use it (%s)" % ", ".join(others))
            elif pid is not None and pid == self.started_libvirtd:
                os.kill(pid, signal.SIGTERM)
        if self.started_virtlogd is not None and not others:
            if pidfile("/run/virtlogd.pid") == self.started_virtlogd:
                os.kill(self.started_virtlogd, signal.SIGTERM)
        shutil.rmtree(self.tmp, ignore_errors=True)


def lock():
    """One instance of this test at a time on the machine (they share
    libvirtd, and one may restart it)."""
    d = "/run/lock" if os.path.isdir("/run/lock") else tempfile.gettempdir()
    f = open(os.path.join(d, "prefcpu-hostd-libvirt-test.lock"), "w")
    end = time.monotonic() + 600
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except OSError:
            if time.monotonic() > end:
                skip("another instance of this test holds the lock")
            time.sleep(1)


def periods(lab, name, since):
    """(run + delay of the VM, run + delay of its busiest vCPU) per period
    logged for name after offset since."""
    rx = re.compile(r"domain %s: run ([0-9.]+) delay ([0-9.]+) CPUs, busiest "
                    r"vCPU \d+ run ([0-9.]+) delay ([0-9.]+), (\d+) threads"
                    % re.escape(name))
    return [(float(m.group(1)) + float(m.group(2)),
             float(m.group(3)) + float(m.group(4)))
            for m in rx.finditer(lab.text(), since) if int(m.group(5)) > 0]


def busiest(lab, name, since):
    """Highest busiest-vCPU demand logged for name after offset since."""
    return max([b for _, b in periods(lab, name, since)], default=0.0)


def scenario(lab):
    kernel, initrd = lab.image()
    a = lab.define("a", kernel, initrd)
    b = lab.define("b", kernel, initrd)
    virsh("start", a)

    # Discovery of a domain running before the daemon.
    lab.start_hostd()
    lab.expect("discovery of the running domain",
               r"domain %s: tracking \(2 vCPUs, 2 online, 2 cores, channel "
               r"\S*org\.prefcpu\.0\)" % re.escape(a))
    lab.expect("vCPU threads from libvirt's status XML",
               r"domain %s: 2 vCPU threads from status-xml" % re.escape(a))
    lab.expect("a first decision (observe mode)",
               r"domain %s: preferred none -> 0-1 .*\[observe\]"
               % re.escape(a))

    # The guest spins on one vCPU: the sampler sees it.  The machine is
    # shared with builds and other tests (and cgroup v1 gives the whole
    # machine slice one share against every other task), so the vCPU may
    # get little CPU; busy means it ran or waited to run: run + run-queue
    # delay, which is what the vCPU asks of the host.
    t0 = lab.mark()
    wait_for("a busy vCPU above 0.8 CPU", lambda: busiest(lab, a, t0) > 0.8,
             90)
    log("ok: busiest vCPU of %s at %.3f CPU (run + delay)"
        % (a, busiest(lab, a, t0)))
    # The figure belongs to one thread: the other (idle) vCPU adds little.
    if not any(b > 0.8 and tot - b < 0.5 for tot, b in periods(lab, a, t0)):
        raise Fail("no period with one busy vCPU and one idle one: %s"
                   % periods(lab, a, t0)[-5:])
    log("ok: the other vCPU is idle")

    # Lifecycle events of a domain started later.
    m = lab.mark()
    virsh("start", b)
    lab.expect("start event", r"domain %s: started" % re.escape(b), m)
    lab.expect("tracking after start", r"domain %s: tracking" % re.escape(b),
               m)
    m = lab.mark()
    virsh("suspend", b)
    lab.expect("suspend event", r"domain %s: suspended" % re.escape(b), m)
    m = lab.mark()
    virsh("resume", b)
    lab.expect("resume event", r"domain %s: resumed" % re.escape(b), m)
    m = lab.mark()
    virsh("destroy", b)
    lab.expect("stop event", r"domain %s: stopped" % re.escape(b), m)
    lab.expect("stopped domain forgotten",
               r"domain %s: no longer tracked" % re.escape(b), m)

    # Metadata: picked up within a period.
    m = lab.mark()
    t = time.monotonic()
    virsh("metadata", a, "--uri", NS, "--key", "prefcpu", "--live", "--set",
          '<policy weight="200" min-cores="1" max-cores="2"/>')
    lab.expect("metadata change",
               r'domain %s: policy <policy weight="200" min-cores="1" '
               r'max-cores="2"/>' % re.escape(a), m,
               timeout=PERIOD_MS / 1000 * 4)
    took = time.monotonic() - t
    if took > PERIOD_MS / 1000 + 0.5:
        raise Fail("metadata change took %.2f s, more than a period" % took)
    log("ok: metadata change seen after %.2f s" % took)

    m = lab.mark()
    virsh("metadata", a, "--uri", NS, "--key", "prefcpu", "--live", "--set",
          '<policy weight="0"/>')
    lab.expect("bad metadata named by domain and attribute",
               r"domain %s: policy metadata: weight: '0' is not a number in "
               r"1\.\.10000; using defaults" % re.escape(a), m)
    # Another event for the same bad value is not logged again.
    virsh("metadata", a, "--uri", "http://example.org/other", "--key", "o",
          "--live", "--set", '<o x="1"/>')
    virsh("metadata", a, "--uri", NS, "--key", "prefcpu", "--live", "--set",
          '<policy weight="0"/>')
    time.sleep(PERIOD_MS / 1000 * 2)
    n = len(re.findall(r"domain %s: policy metadata: weight" % re.escape(a),
                       lab.text()[m:]))
    if n != 1:
        raise Fail("bad metadata logged %d times, expected once" % n)
    m = lab.mark()
    virsh("metadata", a, "--uri", NS, "--key", "prefcpu", "--live", "--set",
          '<policy weight="300"/>')
    lab.expect("fixed metadata", r"domain %s: policy metadata is valid again"
               % re.escape(a), m)

    # Without libvirt's status XML: thread names, then QMP (which taints).
    run2 = os.path.join(lab.tmp, "run-names", "libvirt", "qemu")
    os.makedirs(run2)
    shutil.copy("/run/libvirt/qemu/%s.pid" % a, run2)
    lab.probe(os.path.join(lab.tmp, "run-names"), True,
              "vCPU threads from thread names",
              r"domain %s: 2 vCPU threads from thread-names" % re.escape(a))
    run3 = os.path.join(lab.tmp, "run-empty")
    os.makedirs(run3)
    lab.probe(run3, False, "no QMP when qmp-fallback is off",
              r"domain %s: vCPU threads not found yet" % re.escape(a),
              unwanted=r"query-cpus-fast")
    text = lab.probe(run3, True, "vCPU threads from QMP, taint logged",
                     r"domain %s: 2 vCPU threads from qmp" % re.escape(a))
    if not re.search(r"domain %s: vCPU thread ids from QMP query-cpus-fast; "
                     r"libvirt marks the domain tainted" % re.escape(a), text):
        raise Fail("the QMP fallback was not logged as tainting")

    # Cost, at the production log level: SIGHUP re-reads the file.
    m = lab.mark()
    virsh("start", b)
    lab.expect("second domain back", r"domain %s: tracking" % re.escape(b),
               m)
    m = lab.mark()
    lab.write_conf("notice")
    lab.hostd.send_signal(signal.SIGHUP)
    lab.expect("reload on SIGHUP", r"configuration reloaded", m)
    time.sleep(1)
    cost = hostd_cost.measure(lab.hostd.pid, 10, PERIOD_MS)
    log("cost with 2 domains: %.3f ms CPU per %d ms period (%.3f%% of a "
        "CPU), RSS %d KiB, peak %d KiB" % (
            cost["cpu_ms_per_period"], PERIOD_MS, cost["cpu_pct"],
            cost["rss_kib"], cost["hwm_kib"]))
    m = lab.mark()
    lab.write_conf("debug")
    lab.hostd.send_signal(signal.SIGHUP)
    lab.expect("reload on SIGHUP", r"configuration reloaded", m)

    # libvirtd killed and restarted: the daemon keeps its domains.
    if lab.started_libvirtd is None:
        log("SKIP part: libvirtd was not started by this test, not "
            "restarting it")
        return
    m = lab.mark()
    lab.kill_libvirtd()
    lab.expect("connection loss noticed",
               r"libvirt connection \S+ lost \(.*\); keeping \d+ domains", m)
    # Sampling goes on without libvirtd.
    t1 = lab.mark()
    wait_for("sampling while libvirtd is down",
             lambda: busiest(lab, a, t1) > 0.8, 10)
    log("ok: sampling continues without libvirtd")
    lab.start_libvirtd()
    lab.expect("reconnection", r"connected to libvirt", m, timeout=30)
    lab.expect("domains re-listed", r"libvirt %s: \d+ running domains"
               % re.escape(URI), m, timeout=30)
    for name in (a, b):
        if re.search(r"domain %s: (no longer|stopped while)"
                     % re.escape(name), lab.text()[m:]):
            raise Fail("the daemon lost %s over the libvirtd restart" % name)
    # Events work again after the reconnection.
    m = lab.mark()
    virsh("suspend", a)
    lab.expect("events after reconnection", r"domain %s: suspended"
               % re.escape(a), m)
    virsh("resume", a)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    if os.geteuid() != 0:
        skip("needs root to start libvirtd and define domains")
    for tool in ("virsh", "libvirtd", "virtlogd", "qemu-system-x86_64"):
        if shutil.which(tool) is None:
            skip("%s not installed" % tool)
    held = lock()
    lab = Lab(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    rc = 0

    def on_signal(sig, frame):
        raise Fail("signal %d" % sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        lab.ensure_libvirtd()
        scenario(lab)
        log("PASS")
    except Fail as e:
        log("FAIL: %s" % e)
        text = lab.text() if os.path.exists(lab.logf) else ""
        # The per-period lines drown the rest: show events and the last few.
        lines = text.splitlines()
        keep = [ln for ln in lines if not re.search(
            r": (period \d+:|period cost:|domain \S+: run )", ln)]
        print("--- prefcpu-hostd log, events ---\n" + "\n".join(keep[-60:]))
        print("--- prefcpu-hostd log, last lines ---\n" +
              "\n".join(lines[-8:]), flush=True)
        rc = 1
    finally:
        lab.cleanup()
        held.close()
    sys.exit(rc)


if __name__ == "__main__":
    main()
