#!/usr/bin/env python3
"""The VM lab: small TCG guests under libvirt for prefcpu's end-to-end
tests, benchmarks and demo.

An image is Debian's 6.12 cloud kernel (tests/lab/fetch-kernel) and an
initramfs (tests/lab/mkinitramfs) holding busybox-static, prefcpu-guestd,
the lab workloads (lab-burn, lab-spin, lab-hostile), tests/lab/guest-run
as /lab/run and tests/lab/guest-bench as /lab/bench.  An image may also
hold package sets (PKGSETS): real benchmarks from Debian packages with
their libraries (tests/lab/fetch-debs), run in a loop by /lab/bench.  It
is built once per set of inputs and cached under tests/lab/cache/ (or
$LAB_CACHE).  Domains are libvirt domains with direct kernel boot,
ACPI/APIC, the org.prefcpu.0 channel, the lab's own control channel
(org.prefcpu.lab: VM.ctl pins the workload by hand, as an operator would)
and the serial console written to a file the caller reads.  They run
under KVM when /dev/kvm exists and a test guest really boots with it
within KVM_PROBE_S seconds (LAB_ACCEL=tcg|kvm decides instead), under
QEMU TCG otherwise; Lab.accel says which.  A Lab removes every
domain it defined, and stops the libvirtd it started, when it is closed,
also after an exception, SIGINT or SIGTERM.

As a module:
    lab = Lab(prefix="prefcpu-e2e-", agent=..., workloads=...)
    with lab:
        lab.ensure_libvirtd()
        vm = lab.start("a", workload="burn")
        vm.wait_console(r"lab-mon")
As a command:
    lab.py image --agent PATH --workloads DIR
    lab.py clean PREFIX        destroy and undefine every domain PREFIX*
    lab.py demo --hostd H --ctl C --agent A --workloads DIR [--seconds N]
"""

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

URI = "qemu:///system"
HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
WORKLOADS = ("burn", "spin", "hostile")
CTL_PORT = "org.prefcpu.lab"
KVM_PROBE_S = 30

# Real benchmarks from Debian packages (tests/lab/fetch-debs): name ->
# (packages, paths dropped from the tree).  The libraries a program needs
# that this host has are taken from the host (the same release).
PKGSETS = {
    # rt-tests: only hackbench (the others need libnuma).
    "hackbench": (["rt-tests"], ["usr/bin/[!h]*", "usr/sbin"]),
    "sysbench": (["sysbench", "libaio1", "libluajit-5.1-2", "libmariadb3",
                  "libpq5"], []),
    # PostgreSQL 15's server and pgbench: a guest serves its own database
    # and loads it (tests/lab/guest-bench pgbench).  The JIT (LLVM) and
    # its bitcode are dropped: the server runs with jit=off.
    "pgbench": (["postgresql-15", "postgresql-client-15", "libpq5",
                 "libicu72", "libxslt1.1", "tzdata"],
                ["usr/lib/postgresql/15/lib/bitcode",
                 "usr/lib/postgresql/15/lib/llvmjit*",
                 "usr/share/locale", "usr/share/postgresql/15/man"]),
    # gcc, binutils, make and the C library: a guest builds prefcpu's
    # common and protocol libraries from their sources (kernbench's make
    # -j, at the size a TCG guest builds in seconds; json-c's headers).  LTO, gold, the sanitizers' runtimes
    # and the static C library are dropped: nothing here links them.
    "build": (["make", "gcc-12", "cpp-12", "binutils",
               "binutils-x86-64-linux-gnu", "libbinutils", "libctf0",
               "libctf-nobfd0", "libjansson4", "libgcc-12-dev", "libc6-dev",
               "libc6", "linux-libc-dev", "libcrypt-dev", "libisl23", "libmpc3",
               "libmpfr6", "libgmp10", "libjson-c-dev", "libjson-c5"],
              ["usr/lib/gcc/x86_64-linux-gnu/12/lto1",
               "usr/bin/x86_64-linux-gnu-lto-dump-12",
               "usr/bin/x86_64-linux-gnu-ld.gold", "usr/bin/*gold",
               "usr/bin/x86_64-linux-gnu-dwp",
               "usr/lib/gcc/x86_64-linux-gnu/12/lib[alt]san*",
               "usr/lib/gcc/x86_64-linux-gnu/12/libubsan*",
               "usr/lib/x86_64-linux-gnu/lib[alt]san*",
               "usr/lib/x86_64-linux-gnu/libubsan*",
               "usr/lib/x86_64-linux-gnu/libc.a",
               "usr/lib/x86_64-linux-gnu/libm-2.36.a",
               "usr/lib/x86_64-linux-gnu/libmvec.a",
               "usr/lib/gprofng", "usr/lib/x86_64-linux-gnu/libgprofng*",
               "usr/bin/*gprofng*",
               "usr/lib/x86_64-linux-gnu/gconv"]),
}
# The C project the "build" set compiles in the guest (guest-build.mk).
BUILD_SRC = ("common", "proto")


class LabError(Exception):
    pass


class Skip(Exception):
    """The machine cannot run the lab (no root, no QEMU, no kernel)."""


def init_ran(console):
    """Whether the lab's /init printed anything on this console yet."""
    return re.search(r"^lab-", console, re.M) is not None


def panicked_in_boot(console):
    """True if a guest's console shows a kernel panic before our /init
    printed anything: under TCG the 6.12 kernel rarely faults in early
    boot (seen in sched_init_debug, and as an int3 Oops in
    sched_clock_cpu), before any of prefcpu runs, and such a guest is
    worth one more start."""
    return "Kernel panic" in console and not init_ran(console)


def say(msg):
    print("lab: " + msg, file=sys.stderr, flush=True)


def run(*args, check=True, timeout=120, capture=True):
    p = subprocess.run(args, stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None,
                       text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise LabError("%s: exit %d: %s" % (" ".join(args), p.returncode,
                                            (p.stderr or "").strip()[-400:]))
    return p


def virsh(*args, check=True, timeout=120):
    return run("virsh", "-q", "-c", URI, *args, check=check, timeout=timeout)


def wait_for(what, pred, timeout, step=0.2):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= end:
            raise LabError("timed out after %.0f s waiting for %s"
                           % (timeout, what))
        time.sleep(step)


def pidfile(path):
    try:
        with open(path) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def libvirtd_up():
    return virsh("version", check=False, timeout=20).returncode == 0


def check_machine():
    """Raise Skip when this machine cannot run lab VMs."""
    if os.geteuid() != 0:
        raise Skip("needs root to start libvirtd and define domains")
    for tool in ("virsh", "libvirtd", "virtlogd", "qemu-system-x86_64",
                 "busybox", "cpio", "apt-get", "dpkg"):
        if shutil.which(tool) is None:
            raise Skip("%s is not installed" % tool)


def cache_dir():
    d = os.environ.get("LAB_CACHE") or os.path.join(HERE, "cache")
    os.makedirs(d, exist_ok=True)
    return d


def fetch_kernel():
    """Path of the cached 6.12 cloud kernel (downloads it the first time)."""
    env = dict(os.environ, LAB_CACHE=cache_dir())
    p = subprocess.run([os.path.join(HERE, "fetch-kernel"), "6.12"],
                       stdout=subprocess.PIPE, stderr=None, text=True,
                       env=env, timeout=900)
    if p.returncode != 0:
        raise Skip("no guest kernel: tests/lab/fetch-kernel 6.12 failed "
                   "(is the Debian archive reachable?)")
    return p.stdout.splitlines()[0].strip()


def fetch_debs(name):
    """Path of the cached tree of package set name (tests/lab/fetch-debs
    downloads and unpacks it the first time)."""
    pkgs, drops = PKGSETS[name]
    args = [os.path.join(HERE, "fetch-debs"), name]
    for d in drops:
        args += ["--drop", d]
    p = subprocess.run(args + pkgs, stdout=subprocess.PIPE, stderr=None,
                       text=True, env=dict(os.environ, LAB_CACHE=cache_dir()),
                       timeout=900)
    if p.returncode != 0:
        raise Skip("no %s packages: tests/lab/fetch-debs failed (is the "
                   "Debian archive reachable?)" % name)
    return p.stdout.splitlines()[0].strip()


def build_sources():
    """(source, image path) of the C files the "build" set compiles."""
    out = [(os.path.join(HERE, "guest-build.mk"), "/lab/src/Makefile")]
    for d in BUILD_SRC:
        for f in sorted(os.listdir(os.path.join(TOP, d))):
            if f.endswith((".c", ".h")):
                out.append((os.path.join(TOP, d, f),
                            "/lab/src/%s/%s" % (d, f)))
    return out


def build_image(agent, workloads, sets=()):
    """(kernel, initrd) paths in the cache; the initrd is rebuilt only when
    the agent, a workload, guest-run or a package set changed."""
    kernel = fetch_kernel()
    sets = tuple(sorted(sets))
    for s in sets:
        if s not in PKGSETS:
            raise LabError("lab image: no package set %r" % s)
    trees = [fetch_debs(s) for s in sets]
    adds = [(os.path.join(HERE, "guest-run"), "/lab/run"),
            (os.path.join(HERE, "guest-bench"), "/lab/bench")]
    if "build" in sets:
        adds += build_sources()
    inputs = [("agent", agent),
              ("mkinitramfs", os.path.join(HERE, "mkinitramfs"))]
    inputs += [(w, os.path.join(workloads, "lab-" + w)) for w in WORKLOADS]
    inputs += [(dst, src) for src, dst in adds]
    inputs += [("debs", os.path.join(t, ".lab-debs")) for t in trees]
    h = hashlib.sha256()
    for name, path in inputs:
        if not os.path.isfile(path):
            raise LabError("lab image: %s missing: %s" % (name, path))
        with open(path, "rb") as f:
            h.update(name.encode() + b"\0" + hashlib.sha256(f.read())
                     .digest())
    cache = cache_dir()
    tag = "".join(s + "-" for s in sets)
    initrd = os.path.join(cache, "lab-%s%s.cpio.gz"
                          % (tag, h.hexdigest()[:16]))
    with open(os.path.join(cache, ".lab-image.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(initrd):
            say("image %s: cached" % os.path.basename(initrd))
            return kernel, initrd
        say("building image %s (busybox, agent, workloads%s)"
            % (os.path.basename(initrd), "".join(", " + s for s in sets)))
        # Drop stale images of older inputs with the same sets: they are
        # only a cache.
        for old in os.listdir(cache):
            if re.fullmatch(r"lab-%s[0-9a-f]{16}\.cpio\.gz" % re.escape(tag),
                            old):
                os.unlink(os.path.join(cache, old))
        args = [os.path.join(HERE, "mkinitramfs"), initrd + ".new",
                "--agent", agent]
        for t in trees:
            args += ["--tree", t]
        for src, dst in adds:
            args += ["--add", "%s:%s" % (src, dst)]
        for w in WORKLOADS:
            args += ["--add", "%s:/lab/bin/lab-%s"
                     % (os.path.join(workloads, "lab-" + w), w)]
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=None,
                           text=True, timeout=300)
        if p.returncode != 0:
            raise LabError("mkinitramfs failed (exit %d)" % p.returncode)
        os.rename(initrd + ".new", initrd)
    return kernel, initrd


DOMAIN_XML = """<domain type='{dtype}'>
  <name>{name}</name>
  <memory unit='MiB'>{memory}</memory>
  <vcpu placement='static'>{vcpus}</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{kernel}</kernel>
    <initrd>{initrd}</initrd>
    <cmdline>{cmdline}</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <cpu><topology sockets='1' dies='1' cores='{vcpus}' threads='1'/></cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'>
      <source path='{console}'/>
      <target port='0'/>
    </serial>
    <channel type='unix'>
      <source mode='bind'/>
      <target type='virtio' name='org.prefcpu.0'/>
    </channel>
    <channel type='unix'>
      <source mode='bind'/>
      <target type='virtio' name='{ctlport}'/>
    </channel>
    <memballoon model='none'/>
  </devices>
</domain>
"""


class VM:
    """A running lab domain: its name, console file and vCPU threads."""

    def __init__(self, lab, name, console):
        self.lab = lab
        self.name = name
        self.console = console
        self.rebooted = False
        self.ctl_sock = None

    def text(self):
        try:
            with open(self.console, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def mark(self):
        return len(self.text())

    def running(self):
        p = virsh("domstate", self.name, check=False, timeout=20)
        return p.returncode == 0 and p.stdout.strip() == "running"

    def wait_console(self, pattern, since=0, timeout=60):
        """Wait for a console line; fail at once if the guest went away
        (a guest kernel panic ends the domain: on_reboot is destroy)."""
        rx = re.compile(pattern, re.M)
        last = [time.monotonic()]

        def pred():
            m = rx.search(self.text(), since)
            if m:
                return m
            if time.monotonic() - last[0] > 5:
                last[0] = time.monotonic()
                if not self.running():
                    if self.panicked_before_init():
                        return None
                    tail = self.text().strip().splitlines()[-1:] or [""]
                    raise LabError("%s is not running any more (console "
                                   "ends: %s)" % (self.name, tail[0][-200:]))
            return None
        return wait_for("%s console: %s" % (self.name, pattern), pred,
                        timeout)

    def panicked_before_init(self):
        """A guest kernel that panicked during its own boot, before our
        /init printed anything, is started once more: under TCG the 6.12
        kernel rarely faults in early boot (seen once in sched_init_debug),
        before any of prefcpu runs.  Says so; True if started again."""
        if self.rebooted or not panicked_in_boot(self.text()):
            return False
        self.rebooted = True
        say("%s: the guest kernel panicked during boot, before /init ran; "
            "starting it once more (console: %s)"
            % (self.name, self.console))
        virsh("start", self.name)
        return True

    def mons(self, since=0):
        """lab-mon lines after offset since, as dicts: seq, up, cpus,
        busy (list of per-CPU %), threads (last CPU of each thread)."""
        out = []
        for m in re.finditer(r"^lab-mon (\d+) up=([0-9.]+) cpus=(\S*) "
                             r"busy=(\S*) threads=(\S*)\s*$",
                             self.text()[since:], re.M):
            busy = {}
            for kv in m.group(4).split(","):
                if ":" in kv:
                    c, p = kv.split(":")
                    busy[int(c)] = int(p)
            out.append({"seq": int(m.group(1)), "up": float(m.group(2)),
                        "cpus": m.group(3), "busy": busy,
                        "threads": [int(x) for x in m.group(5).split(",")
                                    if x.isdigit()]})
        return out

    def vcpu_tids(self):
        """vCPU thread ids from libvirt's status XML."""
        path = os.path.join("/run/libvirt/qemu", self.name + ".xml")
        with open(path) as f:
            xml = f.read()
        return {int(m.group(1)): int(m.group(2)) for m in re.finditer(
            r"<vcpu id='(\d+)' pid='(\d+)'/>", xml)}

    def schedstat(self):
        """{vcpu: (run_ns, delay_ns)} of the vCPU threads now."""
        qpid = pidfile(os.path.join("/run/libvirt/qemu", self.name + ".pid"))
        out = {}
        for v, tid in self.vcpu_tids().items():
            with open("/proc/%d/task/%d/schedstat" % (qpid, tid)) as f:
                r, d = f.read().split()[:2]
            out[v] = (int(r), int(d))
        return out

    def ctl(self, line):
        """Send a command line to the guest's /lab/run on the lab's control
        channel: "pin CPUS" confines the workload (and the lab's own
        processes) to CPUS by their cgroup cpuset, as an operator would by
        hand; "unpin" gives them every CPU again.  The guest answers on its
        console ("lab-ctl: ...")."""
        import socket
        if self.ctl_sock is None:
            path = os.path.join("/run/libvirt/qemu", self.name + ".xml")
            with open(path) as f:
                xml = f.read()
            m = re.search(r"<source mode='bind' path='([^']+)'/>\s*"
                          r"<target type='virtio' name='%s'"
                          % re.escape(CTL_PORT), xml)
            if not m:
                raise LabError("%s has no %s channel" % (self.name, CTL_PORT))
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(m.group(1))
            self.ctl_sock = s
        self.ctl_sock.sendall(line.encode() + b"\n")

    def close_ctl(self):
        if self.ctl_sock is not None:
            self.ctl_sock.close()
            self.ctl_sock = None

    def destroy(self):
        self.close_ctl()
        virsh("destroy", self.name, check=False)


class Lab:
    def __init__(self, prefix, agent, workloads, tmp_parent=None):
        self.prefix = prefix
        self.agent = os.path.abspath(agent)
        self.workloads = os.path.abspath(workloads)
        self.tmp = tempfile.mkdtemp(prefix="prefcpu-lab.", dir=tmp_parent)
        # QEMU runs as an unprivileged user: it reads the kernel and
        # initrd and writes the console files here.
        os.chmod(self.tmp, 0o777)
        self.kernel = None
        self.initrds = {}
        self.accel = None       # "kvm" or "tcg", once a domain is defined
        self.names = []
        self.vms = {}
        self.started_libvirtd = None
        self.started_virtlogd = None
        self.old_handlers = {}

    # Ctrl-C and SIGTERM unwind through __exit__, which removes everything.
    def __enter__(self):
        def on_signal(sig, frame):
            raise KeyboardInterrupt("signal %d" % sig)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self.old_handlers[s] = signal.signal(s, on_signal)
        return self

    def __exit__(self, *exc):
        # A second Ctrl-C must not cut the teardown short.
        for s in self.old_handlers:
            signal.signal(s, signal.SIG_IGN)
        try:
            self.close()
        finally:
            for s, h in self.old_handlers.items():
                signal.signal(s, h)
        return False

    # --- libvirtd -----------------------------------------------------------
    def ensure_libvirtd(self):
        if libvirtd_up():
            return
        say("starting virtlogd and libvirtd")
        if pidfile("/run/virtlogd.pid") is None:
            run("virtlogd", "-d")
            self.started_virtlogd = wait_for(
                "virtlogd", lambda: pidfile("/run/virtlogd.pid"), 10)
        run("libvirtd", "-d")
        self.started_libvirtd = wait_for(
            "libvirtd", lambda: pidfile("/run/libvirtd.pid"), 10)
        wait_for("libvirtd answering", libvirtd_up, 30)

    # --- image and domains ---------------------------------------------------
    def image(self, sets=()):
        """(kernel, initrd) copies in the lab's directory for the image with
        package sets sets (built or found in the cache)."""
        key = tuple(sorted(sets))
        if key not in self.initrds:
            kernel, initrd = build_image(self.agent, self.workloads, key)
            self.kernel = os.path.join(self.tmp, "vmlinuz")
            dst = os.path.join(self.tmp, "initrd%s.cpio.gz"
                               % "".join("-" + s for s in key))
            for src, d in ((kernel, self.kernel), (initrd, dst)):
                shutil.copyfile(src, d)
                os.chmod(d, 0o644)
            self.initrds[key] = dst
        return self.kernel, self.initrds[key]

    def probe_accel(self):
        """"kvm" when /dev/kvm exists and a test guest boots with it within
        KVM_PROBE_S seconds (on some machines the device is there but a
        guest hangs), "tcg" otherwise.  LAB_ACCEL=tcg|kvm decides."""
        if self.accel is not None:
            return self.accel
        forced = os.environ.get("LAB_ACCEL")
        if forced in ("tcg", "kvm"):
            self.accel = forced
            return forced
        self.accel = "tcg"
        if not os.path.exists("/dev/kvm"):
            return "tcg"
        vm = self._define("kvm-probe", "kvm", workload="idle", agent="none")
        try:
            virsh("start", vm.name)
            vm.wait_console(r"^lab-init: up", 0, KVM_PROBE_S)
            self.accel = "kvm"
        except (LabError, subprocess.TimeoutExpired) as e:
            say("/dev/kvm exists but a guest does not boot with it (%s): "
                "using TCG" % e)
        finally:
            self.remove(vm.name)
            self.names.remove(vm.name)
            del self.vms[vm.name]
        say("accelerator: %s" % self.accel)
        return self.accel

    def define(self, suffix, workload="burn", vcpus=2, memory=160,
               threads=0, agent="guestd", extra="", sets=()):
        dtype = "kvm" if self.probe_accel() == "kvm" else "qemu"
        return self._define(suffix, dtype, workload=workload, vcpus=vcpus,
                            memory=memory, threads=threads, agent=agent,
                            extra=extra, sets=sets)

    def _define(self, suffix, dtype, workload="burn", vcpus=2, memory=160,
                threads=0, agent="guestd", extra="", sets=()):
        kernel, initrd = self.image(sets)
        name = self.prefix + suffix
        console = os.path.join(self.tmp, name + ".console")
        # no_timer_check: on a loaded host a starved TCG vCPU fails the
        # kernel's IO-APIC timer check at boot, which panics.
        cmdline = ("console=ttyS0 quiet panic=-1 no_timer_check "
                   "lab.workload=%s "
                   "lab.threads=%d lab.agent=%s %s"
                   % (workload, threads, agent, extra)).strip()
        xml = DOMAIN_XML.format(dtype=dtype, name=name, memory=memory,
                                vcpus=vcpus, kernel=kernel, initrd=initrd,
                                cmdline=cmdline, console=console,
                                ctlport=CTL_PORT)
        path = os.path.join(self.tmp, name + ".xml")
        with open(path, "w") as f:
            f.write(xml)
        if name not in self.names:
            self.names.append(name)
        virsh("define", path)
        self.vms[name] = VM(self, name, console)
        return self.vms[name]

    def start(self, suffix, **kw):
        vm = self.define(suffix, **kw)
        say("starting %s (%s)" % (vm.name, kw.get("workload", "burn")))
        virsh("start", vm.name)
        return vm

    def remove(self, name):
        if name in self.vms:
            self.vms[name].close_ctl()
        virsh("destroy", name, check=False)
        virsh("undefine", name, check=False)

    def close(self):
        for name in self.names:
            try:
                self.remove(name)
            except Exception as e:        # keep removing the others
                say("cleanup of %s: %s" % (name, e))
        self.names = []
        if self.started_libvirtd is not None:
            others = [n for n in virsh("list", "--all", "--name",
                                       check=False).stdout.split()]
            if others:
                say("leaving libvirtd running: other domains use it")
            elif pidfile("/run/libvirtd.pid") == self.started_libvirtd:
                os.kill(self.started_libvirtd, signal.SIGTERM)
                if (self.started_virtlogd is not None and
                        pidfile("/run/virtlogd.pid") == self.started_virtlogd):
                    os.kill(self.started_virtlogd, signal.SIGTERM)
            self.started_libvirtd = None
        shutil.rmtree(self.tmp, ignore_errors=True)


def clean(prefix):
    """Destroy and undefine every domain whose name starts with prefix (a
    run that was killed with SIGKILL left them)."""
    if not prefix.startswith("prefcpu-"):
        raise LabError("refusing to clean domains outside prefcpu-*")
    if not libvirtd_up():
        return 0
    n = 0
    for name in virsh("list", "--all", "--name").stdout.split():
        if name.startswith(prefix):
            say("removing leftover domain %s" % name)
            virsh("destroy", name, check=False)
            virsh("undefine", name, check=False)
            n += 1
    return n


def vm_lock(wait_msg=None):
    """E2E tests, benchmarks and the demo share the host's CPUs: one at a
    time.  Returns the open lock file (closing it unlocks)."""
    d = "/run/lock" if os.path.isdir("/run/lock") else tempfile.gettempdir()
    f = open(os.path.join(d, "prefcpu-lab-vms.lock"), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        if wait_msg:
            say(wait_msg)
        fcntl.flock(f, fcntl.LOCK_EX)
    return f


def free_port(first, count=20):
    import socket
    for port in range(first, first + count):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise LabError("no free TCP port in %d..%d" % (first, first + count - 1))


# The demo's guests: together 6 vCPUs on a 2-CPU host.  The first two
# loop Debian's hackbench (processes and sockets only, so their times
# compare); the third burns its CPUs.
DEMO_VMS = (("hackbench-1", "hackbench"), ("hackbench-2", "hackbench"),
            ("burn", "burn"))
DEMO_BENCH = "hackbench-proc-sock"
DEMO_INTERVAL = 10


def bench_runs(vm, since, until=None, name=DEMO_BENCH):
    """The values of vm's lab-bench lines of benchmark name between
    console offsets since and until."""
    return [float(x) for x in re.findall(
        r"^lab-bench: %s ([0-9.]+) " % re.escape(name),
        vm.text()[since:until], re.M)]


def demo_line(phase, vms, since):
    """Every guest's applied cpuset and the median hackbench time of its
    runs since console offsets since."""
    parts = []
    for vm in vms:
        ms = vm.mons()
        cpus = ms[-1]["cpus"] if ms else "?"
        v = bench_runs(vm, since[vm.name])
        if v:
            parts.append("%s cpus=%-3s hackbench median %.3f s (%d runs)"
                         % (vm.name, cpus, statistics.median(v), len(v)))
        else:
            parts.append("%s cpus=%s" % (vm.name, cpus))
    return "[%s] %s" % (phase, "; ".join(parts))


def stop_daemon(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def demo(hostd_bin, ctl_bin, agent, workloads, seconds):
    """Boot the demo's guests, measure hackbench for a short window without
    coordination, then run prefcpu-hostd in the foreground (for seconds in
    all, or until Ctrl-C) and print the measured speed-up."""
    check_machine()
    held = vm_lock("another lab user (e2e test or benchmark) runs VMs: "
                   "waiting for it")
    t0 = time.monotonic()
    none_s = 30 if not seconds else max(10, min(30, seconds // 4))
    result = {}
    try:
        with Lab("prefcpu-demo-", agent, workloads) as lab:
            lab.ensure_libvirtd()
            clean("prefcpu-demo-")
            say("building the guest image (first time: downloads the "
                "kernel and rt-tests from the Debian archive)")
            vms = [lab.start(n, workload=w, threads=2, sets=("hackbench",),
                             memory=200,
                             extra="lab.variants=proc-sock"
                             if w == "hackbench" else "")
                   for n, w in DEMO_VMS]
            benches = [vm for vm, (_, w) in zip(vms, DEMO_VMS)
                       if w == "hackbench"]
            for vm in vms:
                # wait_console starts a guest whose kernel panicked in its
                # own boot once more (TCG, rarely).
                vm.wait_console(r"^lab-(mon|bench) ", 0,
                                max(1, 600 - (time.monotonic() - t0)))
                say("%s is up (%.0f s, %s)"
                    % (vm.name, time.monotonic() - t0, lab.accel.upper()))
            port = free_port(9471)
            sock = os.path.join(lab.tmp, "hostd.sock")
            conf = os.path.join(lab.tmp, "hostd.conf")
            with open(conf, "w") as f:
                f.write("[hostd]\nuri = %s\nperiod-ms = 1000\n"
                        "log-level = notice\n\n[http]\n"
                        "listen = 127.0.0.1:%d\nsocket = %s\n"
                        % (URI, port, sock))
            print("\n  %d VMs x 2 vCPUs on %d host CPUs (%s): %s loop "
                  "Debian's hackbench\n  (-g 2 -f 5 -l 100), %s burns its "
                  "CPUs.  First %d s without coordination,\n  then "
                  "prefcpu-hostd.  Every %d s: each guest's applied cpuset "
                  "and the\n  median hackbench time of the last %d s "
                  "(lower is better).\n"
                  % (len(vms), os.cpu_count(), lab.accel.upper(),
                     " and ".join(vm.name for vm in benches),
                     vms[-1].name, none_s, DEMO_INTERVAL, DEMO_INTERVAL),
                  flush=True)
            # Without coordination: no daemon, every guest on its vCPUs.
            start = {vm.name: vm.mark() for vm in vms}
            end = time.monotonic() + none_s
            last = dict(start)
            while time.monotonic() < end:
                time.sleep(min(DEMO_INTERVAL, end - time.monotonic()))
                say(demo_line("none", vms, last))
                last = {vm.name: vm.mark() for vm in vms}
            none_runs = [x for vm in benches
                         for x in bench_runs(vm, start[vm.name])]
            print("\n  prefcpu-hostd starts; its decisions are logged as "
                  "they happen.\n"
                  "  dashboard:  http://127.0.0.1:%d/\n"
                  "  status:     %s --socket %s status\n"
                  "  Ctrl-C stops the daemon, prints the speed-up and "
                  "removes the VMs.\n"
                  % (port, os.path.abspath(ctl_bin), sock), flush=True)
            proc = subprocess.Popen([hostd_bin, "--foreground", "--config",
                                     conf])
            pstart = {vm.name: vm.mark() for vm in vms}
            # The first runs under prefcpu are the transition: they count
            # once every hackbench guest has been narrowed.
            counted = None
            try:
                end = (time.monotonic() + max(10, seconds - none_s)
                       if seconds else None)
                last = dict(pstart)
                while proc.poll() is None:
                    if end is not None and time.monotonic() >= end:
                        break
                    try:
                        proc.wait(DEMO_INTERVAL if end is None else
                                  max(0.1, min(DEMO_INTERVAL,
                                               end - time.monotonic())))
                    except subprocess.TimeoutExpired:
                        pass
                    if counted is None and all(
                            (vm.mons(pstart[vm.name]) or [{}])[-1]
                            .get("cpus", "0-1") not in ("", "0-1")
                            for vm in benches):
                        counted = {vm.name: vm.mark() for vm in benches}
                    say(demo_line("prefcpu", vms, last))
                    last = {vm.name: vm.mark() for vm in vms}
                if proc.poll() is not None:
                    raise LabError("prefcpu-hostd exited with %d"
                                   % proc.returncode)
            except KeyboardInterrupt:
                say("interrupted")
            finally:
                # The daemon goes first, releasing the guests, then the
                # lab removes the VMs.  Ctrl-C on a terminal reached the
                # daemon already; a signal sent to this script alone did
                # not.
                stop_daemon(proc)
            if counted is None:
                counted = pstart
            pre_runs = [x for vm in benches
                        for x in bench_runs(vm, counted[vm.name])]
            result = {"none": none_runs, "prefcpu": pre_runs,
                      "accel": lab.accel}
    except KeyboardInterrupt:
        say("interrupted: stopped")
    finally:
        held.close()
    say("demo finished; its VMs are removed")
    none_runs, pre_runs = result.get("none"), result.get("prefcpu")
    if none_runs and pre_runs:
        a, b = statistics.median(none_runs), statistics.median(pre_runs)
        print("demo: measured speed-up %.2fx: hackbench median %.3f s "
              "without coordination (%d runs), %.3f s with prefcpu (%d "
              "runs), %s"
              % (a / b, a, len(none_runs), b, len(pre_runs),
                 result["accel"].upper()), flush=True)
    else:
        print("demo: no speed-up measured: hackbench finished %d runs "
              "without coordination and %d with prefcpu"
              % (len(none_runs or []), len(pre_runs or [])), flush=True)


def main():
    ap = argparse.ArgumentParser(description="prefcpu VM lab")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("image", help="build (or find) the cached image")
    p.add_argument("--agent", required=True)
    p.add_argument("--workloads", required=True)
    p = sub.add_parser("clean", help="remove leftover domains PREFIX*")
    p.add_argument("prefix")
    p = sub.add_parser("demo", help="three VMs, hackbench, prefcpu-hostd")
    p.add_argument("--hostd", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--workloads", required=True)
    p.add_argument("--seconds", type=int, default=0,
                   help="stop after this long (default: at Ctrl-C)")
    a = ap.parse_args()
    try:
        if a.cmd == "demo":
            demo(a.hostd, a.ctl, a.agent, a.workloads, a.seconds)
        elif a.cmd == "image":
            k, i = build_image(a.agent, a.workloads)
            print(k)
            print(i)
        else:
            clean(a.prefix)
    except Skip as e:
        say("cannot run here: %s" % e)
        return 77
    except LabError as e:
        say(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
