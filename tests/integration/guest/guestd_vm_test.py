#!/usr/bin/env python3
"""prefcpu-guestd in a real guest kernel, under QEMU TCG.

Boots a Debian cloud kernel (6.12 or 6.1, fetched and cached by
tests/lab/fetch-kernel) with 4 vCPUs (2 cores x 2 threads) and an
initramfs holding busybox and the agent.  Inside, /lab/run makes a
cgroup "workload" with a busy task and a busy task the user pinned to
CPU 3, starts the agent with its defaults (port found in sysfs, backend
auto, every top-level cgroup that holds tasks), and prints what it sees
on the serial console every 0.3 s.  The test plays the host on the
virtio-serial socket and checks, from those console lines:
- a target of 0-1 narrows workload's cpuset.cpus to 0-1 and both tasks
  run only on CPUs 0-1;
- release widens it again, and the pinned task runs on CPU 3 again (on
  6.1 because the agent puts its affinity back, on 6.12 because the
  kernel does);
- while narrowed, the CPUs outside the set are held in an isolated cpuset
  partition (cgroup prefcpu-idle), which release and the lease's end
  dissolve;
- a second target, left to expire, is undone by the lease.

usage: guestd_vm_test.py AGENT 6.12|6.1 MKINITRAMFS FETCH_KERNEL
Exits 77 (skip) when QEMU, busybox-static or the kernel package are not
available.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "lab"))
from lab import panicked_in_boot                        # noqa: E402

SESSION = "00000000000000c3"
MODULES_61 = ("virtio_ring,virtio,virtio_pci_legacy_dev,"
              "virtio_pci_modern_dev,virtio_pci,virtio_console")

GUEST_RUN = r"""#!/bin/sh
cg=/sys/fs/cgroup
mkdir $cg/workload
# The user's pin comes first; both tasks then join the cgroup.
(while :; do :; done) & busy=$!
(while :; do :; done) & pinned=$!
taskset -p 8 $pinned >/dev/null
echo $busy >$cg/workload/cgroup.procs
echo $pinned >$cg/workload/cgroup.procs
prefcpu-guestd --log-level debug --report-interval 1000 &
agent=$!
field() { cut -d' ' -f"$2" /proc/$1/stat; }
aff() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$1/status; }
rss() { sed -n 's/^VmRSS:[[:space:]]*//p' /proc/$1/status | tr -d ' '; }
n=0
while :; do
	n=$((n + 1))
	echo "mon $n cpus=[$(cat $cg/workload/cpuset.cpus 2>/dev/null)]" \
	    "busy_cpu=$(field $busy 39) busy_aff=$(aff $busy)" \
	    "pinned_cpu=$(field $pinned 39) pinned_aff=$(aff $pinned)" \
	    "agent_rss=$(rss $agent) agent_ticks=$(($(field $agent 14) + $(field $agent 15)))" \
	    "idle=[$(cat $cg/prefcpu-idle/cpuset.cpus 2>/dev/null)]" \
	    "part=[$(cat $cg/prefcpu-idle/cpuset.cpus.partition 2>/dev/null)]" \
	    "root=[$(cat $cg/cpuset.cpus.effective)]"
	sleep 0.3
done
"""

MON = re.compile(r"^mon (\d+) cpus=\[([^\]]*)\] busy_cpu=(\d+) "
                 r"busy_aff=(\S+) pinned_cpu=(\d+) pinned_aff=(\S+) "
                 r"agent_rss=(\S*) agent_ticks=(\d+) idle=\[([^\]]*)\] "
                 r"part=\[([^\]]*)\] root=\[([^\]]*)\]")


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def cpus(text):
    out = set()
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.update(range(int(lo), int(hi) + 1))
        elif part:
            out.add(int(part))
    return out


class Console:
    """The guest's serial console, a file QEMU appends to."""

    def __init__(self, path):
        self.path = path
        self.pos = 0
        self.partial = ""

    def lines(self):
        try:
            with open(self.path, errors="replace") as f:
                f.seek(self.pos)
                data = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return []
        data = (self.partial + data).replace("\r", "")
        *done, self.partial = data.split("\n")
        return done

    def text(self):
        with open(self.path, errors="replace") as f:
            return f.read()


class Monitor:
    def __init__(self, console):
        self.console = console
        self.last = None

    def samples(self, timeout):
        """Yield monitor samples as they appear, until timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = False
            for line in self.console.lines():
                m = MON.match(line)
                if m:
                    got = True
                    s = {"n": int(m.group(1)), "cpus": m.group(2),
                         "busy_cpu": int(m.group(3)),
                         "busy_aff": m.group(4),
                         "pinned_cpu": int(m.group(5)),
                         "pinned_aff": m.group(6), "rss": m.group(7),
                         "ticks": int(m.group(8)), "idle": m.group(9),
                         "part": m.group(10), "root": m.group(11)}
                    self.last = s
                    yield s
                elif "prefcpu-guestd:" in line or "lab-init" in line:
                    print("guest| " + line)
            if not got:
                time.sleep(0.1)

    def wait(self, cond, what, timeout=60):
        for s in self.samples(timeout):
            if cond(s):
                return s
        raise Fail("timed out waiting for %s (last sample %r)" %
                   (what, self.last))

    def collect(self, count, timeout=60):
        out = []
        for s in self.samples(timeout):
            out.append(s)
            if len(out) == count:
                return out
        raise Fail("only %d of %d samples" % (len(out), count))


class Host:
    """The host end of the virtio-serial port (QEMU listens)."""

    def __init__(self, path, timeout=60):
        end = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                check(time.monotonic() < end, "QEMU's socket never came up")
                time.sleep(0.2)
        self.buf = b""

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except (TimeoutError, socket.timeout):
            raise
        except OSError as e:
            raise Fail("the channel to QEMU failed: %s" % e)

    def send(self, obj):
        msg = {"v": 1}
        msg.update(obj)
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def recv(self, types, timeout):
        end = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buf:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.sock.settimeout(left)
                try:
                    data = self.sock.recv(65536)
                except socket.timeout:
                    return None
                except OSError as e:
                    raise Fail("the channel to QEMU failed: %s" % e)
                check(data, "QEMU closed the channel")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            if not line.strip():
                continue
            msg = json.loads(line)
            if msg.get("type") in types:
                return msg

    def hello(self, timeout):
        """Say hello until the agent (still booting) answers."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                self.send_raw(b"\n")
                self.send({"type": "hello", "session": SESSION,
                           "host": "vm-test", "period_ms": 1000})
            except (TimeoutError, socket.timeout):
                # QEMU stops reading while the guest's port is closed,
                # and the socket's buffer is full of earlier hellos.
                pass
            msg = self.recv(("hello",), 1.0)
            if msg is not None:
                return msg
        raise Fail("no hello from the agent within %d s" % timeout)

    def target(self, seq, preferred, lease_ms):
        t0 = time.monotonic()
        self.send({"type": "target", "session": SESSION, "seq": seq,
                   "preferred": preferred, "lease_ms": lease_ms})
        ack = self.recv(("ack",), 30)
        check(ack is not None, "no ack for target %d" % seq)
        return ack, time.monotonic() - t0


def run(agent, version, mkinitramfs, fetch_kernel, work):
    r = subprocess.run([fetch_kernel, version], capture_output=True,
                       text=True)
    if r.returncode != 0:
        skip("no %s kernel: %s" % (version, r.stderr.strip()[-300:]))
    vmlinuz, moddir = r.stdout.split()[:2]

    run_sh = os.path.join(work, "run.sh")
    with open(run_sh, "w") as f:
        f.write(GUEST_RUN)
    os.chmod(run_sh, 0o755)
    initrd = os.path.join(work, "initrd.cpio.gz")
    argv = [mkinitramfs, initrd, "--agent", agent, "--add",
            run_sh + ":/lab/run"]
    if version == "6.1":
        argv += ["--modules-from", moddir, "--modules", MODULES_61]
    r = subprocess.run(argv, capture_output=True, text=True)
    check(r.returncode == 0, "mkinitramfs: " + r.stderr)

    for attempt in (1, 2):
        rc = boot(version, vmlinuz, initrd, work, attempt)
        if rc is not None:
            return rc
    raise Fail("the guest kernel panicked in its own boot twice")


def boot(version, vmlinuz, initrd, work, attempt):
    """Start QEMU and drive the test; None if the guest kernel panicked
    during its own boot, before /init (TCG, rarely) and may start again."""
    sock = os.path.join(work, "prefcpu.sock")
    console_path = os.path.join(work, "console.%d.log" % attempt)
    stderr_path = os.path.join(work, "qemu-stderr.%d.log" % attempt)
    with open(stderr_path, "w") as stderr:
        qemu = subprocess.Popen([
            "qemu-system-x86_64", "-accel", "tcg,thread=multi",
            # With qemu64's AMD vendor, 6.1 sees no SMT siblings (QEMU
            # warns "doesn't support hyperthreading"); as Intel both
            # kernels see cores 0-1 and 2-3.
            "-cpu", "qemu64,vendor=GenuineIntel",
            "-smp", "4,sockets=1,cores=2,threads=2", "-m", "512",
            "-display", "none", "-monitor", "none", "-nic", "none",
            "-no-reboot", "-serial", "file:" + console_path,
            "-kernel", vmlinuz, "-initrd", initrd,
            "-append", "console=ttyS0 panic=-1 quiet",
            "-device", "virtio-serial",
            "-chardev", "socket,id=c0,path=%s,server=on,wait=off" % sock,
            "-device", "virtserialport,chardev=c0,name=org.prefcpu.0"],
            stdout=subprocess.DEVNULL, stderr=stderr)
    console = Console(console_path)
    try:
        return drive(version, qemu, sock, console)
    except Fail:
        text = console.text() if os.path.exists(console_path) else ""
        if panicked_in_boot(text) and qemu.poll() is None:
            # The channel can fail while the panicked guest is still
            # shutting its CPUs down: QEMU exits (-no-reboot) soon after.
            try:
                qemu.wait(15)
            except subprocess.TimeoutExpired:
                pass
            text = console.text()
        if qemu.poll() is not None and panicked_in_boot(text) and \
                attempt == 1:
            print("the guest kernel panicked during its own boot, before "
                  "/init ran; starting it once more\n---- console\n" + text)
            return None
        with open(stderr_path, errors="replace") as f:
            err = f.read()
        print("---- console\n%s\n---- QEMU %s; its stderr\n%s" % (
            text, "still running" if qemu.poll() is None else
            "exited with %d" % qemu.returncode, err))
        raise
    finally:
        if qemu.poll() is None:
            qemu.terminate()
            try:
                qemu.wait(10)
            except subprocess.TimeoutExpired:
                qemu.kill()
                qemu.wait()
        if os.path.exists(sock):
            os.unlink(sock)


def drive(version, qemu, sock, console):
    mon = Monitor(console)
    host = Host(sock)
    t_boot = time.monotonic()
    hello = host.hello(timeout=120)
    print("hello after %.1f s: %s" % (time.monotonic() - t_boot,
                                      json.dumps(hello)))
    check(hello["online"] == "0-3", "online %r" % hello["online"])
    check(hello["cores"] == ["0-1", "2-3"], "cores %r" % hello["cores"])
    check(hello["backend"] == "cpuset", "backend %r" % hello["backend"])
    check(hello["kernel"].startswith(version + "."),
          "kernel %r" % hello["kernel"])
    check(hello.get("keeps_affinity", False) is (version == "6.1"),
          "keeps_affinity on %s: %r" % (version, hello.get("keeps_affinity")))

    s = mon.wait(lambda s: s["pinned_aff"] == "3" and s["cpus"] == "",
                 "the workload running, pinned task on CPU 3")
    check(s["busy_aff"] == "0-3", "busy task may use all CPUs: %r" % s)

    ack, took = host.target(1, "0-1", 60000)
    print("target 0-1 acked in %.1f ms: %s" % (took * 1000, json.dumps(ack)))
    check(ack["ok"] and ack["applied"] == "0-1", "ack %r" % ack)
    mon.wait(lambda s: s["cpus"] == "0-1", "cpuset.cpus 0-1", 60)
    narrowed = mon.collect(8)
    for s in narrowed:
        check(s["cpus"] == "0-1", "still 0-1: %r" % s)
        check(s["busy_cpu"] in (0, 1) and cpus(s["busy_aff"]) <= {0, 1},
              "busy task on CPUs 0-1 only: %r" % s)
        check(s["pinned_cpu"] in (0, 1), "pinned task confined too: %r" % s)
        # The CPUs outside the set leave the scheduler's load balancing.
        check(s["idle"] == "2-3" and s["part"] == "isolated" and
              s["root"] == "0-1", "CPUs 2-3 in an isolated partition: %r"
              % s)
    rss = narrowed[-1]["rss"]

    host.send({"type": "release", "session": SESSION})
    mon.wait(lambda s: s["cpus"] == "", "release restores cpuset.cpus", 60)
    widened = mon.collect(6)
    for s in widened[1:]:
        check(s["pinned_aff"] == "3" and s["pinned_cpu"] == 3,
              "pinned task back on CPU 3: %r" % s)
        check(s["busy_aff"] == "0-3", "busy task may use 0-3 again: %r" % s)
        check(s["part"] == "" and s["root"] == "0-3",
              "the isolated partition is gone: %r" % s)

    # A lease nobody refreshes ends and widens the set again.
    # Long enough for a few monitor lines under TCG (one each 0.3-1 s).
    ack, _ = host.target(2, "2-3", 4000)
    check(ack["ok"] and ack["applied"] == "2-3", "ack %r" % ack)
    s = mon.wait(lambda s: s["cpus"] == "2-3", "cpuset.cpus 2-3", 60)
    if s["part"] != "isolated":
        s = mon.wait(lambda s: s["part"] == "isolated", "CPUs 0-1 isolated",
                     30)
    check(s["idle"] == "0-1" and s["root"] == "2-3",
          "the partition holds CPUs 0-1 now: %r" % s)
    s = mon.wait(lambda s: s["cpus"] == "", "lease expiry", 60)
    check(s["part"] == "" and s["root"] == "0-3",
          "the lease's end dissolves the partition: %r" % s)
    s = mon.wait(lambda s: s["pinned_aff"] == "3", "pin kept after lease", 30)
    check(s["pinned_cpu"] == 3 or mon.collect(2)[-1]["pinned_cpu"] == 3,
          "pinned task runs on CPU 3 after the lease: %r" % s)

    # Idle agent cost inside the guest, host connected, over ~6 s.
    a = mon.collect(1)[0]
    b = mon.collect(20)[-1]
    print("figures: %s guest: agent RSS %s while connected; %d ticks of "
          "CPU over %d samples (0.3 s apart) connected and idle" %
          (version, rss, b["ticks"] - a["ticks"], b["n"] - a["n"]))
    check(qemu.poll() is None, "QEMU still running")
    return 0


def main():
    if len(sys.argv) != 5 or sys.argv[2] not in ("6.12", "6.1"):
        print(__doc__, file=sys.stderr)
        return 2
    agent, version, mkinitramfs, fetch_kernel = sys.argv[1:]
    if shutil.which("qemu-system-x86_64") is None:
        skip("qemu-system-x86_64 is not installed (qemu-system-x86)")
    for tool in ("busybox", "cpio", "gzip"):
        if shutil.which(tool) is None:
            skip("%s is not installed" % tool)
    work = tempfile.mkdtemp(prefix="guestd-vm.")
    try:
        rc = run(os.path.abspath(agent), version, mkinitramfs, fetch_kernel,
                 work)
        print("ok: %s" % version)
        return rc
    except Fail as e:
        print("FAIL: %s: %s" % (version, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
