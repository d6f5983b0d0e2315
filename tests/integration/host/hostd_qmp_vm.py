#!/usr/bin/env python3
"""prefcpu-hostd steering plain QEMU guests through QMP, no libvirtd.

Two small TCG guests of the lab (tests/lab: 2 vCPUs, busy workload,
prefcpu-guestd inside) are started by this test as plain
`qemu-system-x86_64` processes, each with a dedicated monitor
(-qmp unix:DIR/NAME.sock,server=on,wait=off) and the org.prefcpu.0
channel (-chardev socket,...,server=on,wait=off -device virtserialport,
name=org.prefcpu.0).  The daemon runs with source = qmp.  Checks:
  - each VM is tracked within one period of its monitor socket appearing;
  - under contention (4 busy vCPUs on this 2-CPU host) each guest's
    workload is confined to vCPU 0, seen from inside the guest (the lab's
    monitor lines on the serial console);
  - SIGTERM: both guests restore their original CPU settings at once;
  - SIGKILL of a restarted daemon: the guests restore when the lease ends;
  - a QEMU process that exits is forgotten within a second or two.
Every QEMU it started is killed and every file removed at the end.

usage: hostd_qmp_vm.py HOSTD AGENT WORKLOADS_DIR
Exit 0 pass, 1 fail, 77 skip (no QEMU, no guest kernel).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lab"))
sys.path.insert(0, HERE)
import lab as labmod                                    # noqa: E402
from hostd_qmp import Api, Fail, check, put, wait      # noqa: E402, F401

import http.client                                      # noqa: E402
import json                                             # noqa: E402
import tempfile                                         # noqa: E402

PERIOD_MS = 1000
LEASE_MS = 6000


class Guest:
    def __init__(self, tmp, name, kernel, initrd, uuid):
        self.name = name
        self.mon = os.path.join(tmp, "qmp", name + ".sock")
        self.chan = os.path.join(tmp, name + ".chan")
        self.console = os.path.join(tmp, name + ".console")
        self.kernel, self.initrd, self.uuid = kernel, initrd, uuid
        self.restarted = False
        self.start()

    def start(self):
        cmdline = ("console=ttyS0 quiet panic=-1 no_timer_check "
                   "lab.workload=burn lab.threads=2 lab.agent=guestd")
        name, kernel, initrd, uuid = (self.name, self.kernel, self.initrd,
                                      self.uuid)
        self.proc = subprocess.Popen([
            "qemu-system-x86_64", "-accel", "tcg,thread=multi",
            "-machine", "pc", "-smp", "2,sockets=1,cores=2,threads=1",
            "-m", "160", "-name", name + ",debug-threads=on",
            "-uuid", uuid, "-display", "none", "-no-reboot",
            "-kernel", kernel, "-initrd", initrd, "-append", cmdline,
            "-serial", "file:" + self.console,
            "-qmp", "unix:%s,server=on,wait=off" % self.mon,
            "-chardev", "socket,id=pc0,path=%s,server=on,wait=off"
            % self.chan,
            "-device", "virtio-serial",
            "-device", "virtserialport,chardev=pc0,name=org.prefcpu.0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)

    def text(self):
        try:
            with open(self.console, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def line(self, pattern, since=0, timeout=60):
        rx = re.compile(pattern, re.M)

        def pred():
            if self.proc.poll() is not None:
                if self.panicked_in_boot():
                    return None
                raise Fail("%s: QEMU exited (%d)" % (self.name,
                                                     self.proc.returncode))
            return rx.search(self.text(), since)
        return wait("%s console: %s" % (self.name, pattern), pred, timeout,
                    0.1)

    def panicked_in_boot(self):
        """QEMU exited because the guest reset before /init printed
        anything (-no-reboot and panic=-1 turn a boot-time panic or a
        triple fault into exit 0): started once more, as the lab does
        for its libvirt guests.  Says so; True if started again."""
        text = self.text()
        if self.restarted or self.proc.returncode != 0 or \
                labmod.init_ran(text):
            return False
        self.restarted = True
        tail = (text.strip().splitlines() or [""])[-1][-200:]
        print("note: %s: the guest reset during boot, before /init ran "
              "(console ends: %s); starting it once more" % (self.name, tail),
              flush=True)
        self.start()
        return True

    def cpus(self, since):
        return re.findall(r"^lab-mon \d+ \S+ cpus=(\S*) ",
                          self.text()[since:], re.M)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Daemon:
    def __init__(self, hostd, tmp):
        self.hostd, self.tmp = hostd, tmp
        self.logf = os.path.join(tmp, "hostd.log")
        self.sock = os.path.join(tmp, "api.sock")
        self.conf = put(tmp, "hostd.conf", (
            "[hostd]\nsource = qmp\nperiod-ms = %d\nlog-level = info\n"
            "qmp-monitors = %s/qmp/*.sock\nqmp-shared =\n"
            "policy-dir = %s/vms\nstate-dir = %s/state\n"
            "\n[policy]\nshrink-after = 1\ndwell-ms = 1000\n"
            "\n[channel]\nlease-ms = %d\nbackoff-min-ms = 500\n"
            "backoff-max-ms = 2000\n"
            "\n[http]\nlisten = \"\"\nsocket = %s\n")
            % (PERIOD_MS, tmp, tmp, tmp, LEASE_MS, self.sock))
        self.proc = None

    def start(self):
        self.fp = open(self.logf, "a")
        self.proc = subprocess.Popen([self.hostd, "--foreground", "--config",
                                      self.conf], stdout=self.fp,
                                     stderr=subprocess.STDOUT)
        wait("the API", lambda: self.domains() is not None, 20)

    def domains(self):
        if self.proc.poll() is not None:
            raise Fail("prefcpu-hostd exited (%d)" % self.proc.returncode)
        c = Api(self.sock)
        try:
            c.request("GET", "/api/v1/domains")
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                return None
            return {d["name"]: d for d in json.loads(body)["domains"]}
        except (OSError, http.client.HTTPException, ValueError):
            return None
        finally:
            c.close()

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return None


def run(hostd, agent, workloads, tmp):
    kernel, initrd = labmod.build_image(agent, workloads)
    os.makedirs(os.path.join(tmp, "qmp"))
    d = Daemon(hostd, tmp)
    d.start()
    guests = []
    try:
        for i, n in enumerate(("qa", "qb")):
            g = Guest(tmp, "prefcpu-qmp-" + n, kernel, initrd,
                      "7e57%04d-0000-4000-8000-000000000001" % i)
            guests.append(g)
            wait("%s monitor socket" % g.name,
                 lambda: os.path.exists(g.mon), 20, 0.01)
            t0 = time.monotonic()
            wait("%s tracked" % g.name, lambda: g.name in (d.domains() or {}),
                 10, 0.05)
            dt = time.monotonic() - t0
            print("figure: %s tracked %.0f ms after its monitor socket "
                  "appeared" % (g.name, dt * 1000), flush=True)
            check(dt * 1000 <= PERIOD_MS, "%s discovered within one period"
                  % g.name)
        for g in guests:
            g.line(r"^lab-workload: started", 0, 240)
        t0 = time.monotonic()
        for g in guests:
            g.line(r"^prefcpu-guestd: preferring CPUs 0 \(", 0, 90)
        print("figure: both guests confined %.1f s after both booted"
              % (time.monotonic() - t0), flush=True)
        marks = [len(g.text()) for g in guests]
        wait("three monitor lines with cpus=0 in both guests", lambda: all(
            g.cpus(m)[-3:] == ["0"] * 3 for g, m in zip(guests, marks)), 60,
            0.5)
        check(True, "under contention both guests' workloads run on vCPU 0 "
              "(seen in the guests)")
        doms = d.domains()
        check(all(doms[g.name]["target"]["preferred"] == "0" for g in guests),
              "the API shows both targets (preferred 0)")

        # SIGTERM: released at once.
        marks = [len(g.text()) for g in guests]
        t0 = time.monotonic()
        rc = d.stop()
        check(rc == 0, "SIGTERM: the daemon exits with 0")
        for g, m in zip(guests, marks):
            g.line(r"^prefcpu-guestd: restored the original CPU settings "
                   r"\(released by the host\)", m, 10)
        print("figure: both guests released %.1f s after SIGTERM"
              % (time.monotonic() - t0), flush=True)
        check(True, "SIGTERM releases both guests")

        # Again, then SIGKILL: released when the lease ends.
        marks = [len(g.text()) for g in guests]
        d.start()
        for g, m in zip(guests, marks):
            g.line(r"^prefcpu-guestd: preferring CPUs 0 \(", m, 60)
        marks = [len(g.text()) for g in guests]
        t0 = time.monotonic()
        d.stop(signal.SIGKILL)
        for g, m in zip(guests, marks):
            g.line(r"^prefcpu-guestd: restored the original CPU settings "
                   r"\(lease ended\)", m, LEASE_MS / 1000 + 10)
        dt = time.monotonic() - t0
        print("figure: both guests released %.1f s after SIGKILL (lease "
              "%d ms)" % (dt, LEASE_MS), flush=True)
        check(dt < LEASE_MS / 1000 + 5, "SIGKILL: released after the lease")

        # QEMU exits: forgotten.
        d.start()
        wait("both tracked again", lambda: all(
            g.name in (d.domains() or {}) for g in guests), 10)
        guests[1].proc.send_signal(signal.SIGTERM)
        guests[1].proc.wait(20)
        t0 = time.monotonic()
        wait("%s forgotten" % guests[1].name, lambda: guests[1].name not in
             (d.domains() or {guests[1].name: 1}), 10, 0.05)
        print("figure: %s forgotten %.0f ms after its QEMU exited"
              % (guests[1].name, (time.monotonic() - t0) * 1000), flush=True)
        check(guests[0].name in d.domains(), "the other VM stays tracked")
        check(True, "a QEMU that exits is forgotten")
        check(d.stop() == 0, "the daemon exits cleanly")
    finally:
        d.stop()
        for g in guests:
            g.stop()


def main():
    hostd, agent, workloads = sys.argv[1:4]
    if shutil.which("qemu-system-x86_64") is None:
        print("skip: no qemu-system-x86_64")
        return 77
    held = labmod.vm_lock("another lab user runs VMs: waiting for it")
    tmp = tempfile.mkdtemp(prefix="prefcpu-qmpvm.")
    try:
        run(hostd, agent, workloads, tmp)
        return 0
    except labmod.Skip as e:
        print("skip: %s" % e)
        return 77
    except (Fail, labmod.LabError) as e:
        print("FAIL: %s" % e)
        try:
            with open(os.path.join(tmp, "hostd.log")) as f:
                print(f.read()[-3000:])
        except OSError:
            pass
        return 1
    finally:
        held.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
