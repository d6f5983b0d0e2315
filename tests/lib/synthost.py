"""A synthetic host for the real prefcpu-hostd on libvirt's test driver.

Under a root directory: sysfs (the online CPUs), procfs (stat, CPU
pressure, one schedstat file per vCPU thread), libvirt's status and pid
files (the vCPU thread ids), and the test driver's XML with the domains.
advance() moves every vCPU thread's run time and run-queue delay on at
fixed rates, as a loaded host would; start_load() does so from a thread.
Files are rewritten in place, in one write: the daemon keeps them open
and re-reads them with pread, as it does with /proc.

Used by tests/integration/chan and tests/integration/http.
"""
import os
import threading
import time
from xml.sax.saxutils import escape

HZ = 100


def put(path, text):
    """Write in place, in one write: the daemon re-reads with pread."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        data = text.encode()
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


class SynthHost:
    def __init__(self, root, ncpus, psi_some=40.0):
        self.root = root
        self.ncpus = ncpus
        self.psi_some = psi_some
        self.counters = {}      # (pid, tid): [run ns, delay ns, run, delay]
        self.domains = []       # domain XML
        self.ticks = 0.0
        self.next_tid = 1000
        self.stop = threading.Event()
        self.thread = None
        self.driver = os.path.join(root, 'libvirt-test.xml')

    def write(self, rel, text):
        put(os.path.join(self.root, rel), text)

    def add_domain(self, name, vcpus, run, delay, inner=''):
        """A running domain whose vCPU threads each run 'run' and wait
        'delay' CPUs; inner is more XML inside <domain> (cputune,
        metadata, cpu topology, devices).  Returns its index."""
        i = len(self.domains)
        pid = 500 + i
        self.domains.append(
            '<domain type="test"><name>%s</name>'
            '<uuid>00000000-0000-4000-8000-%012d</uuid>'
            '<memory>524288</memory><vcpu>%d</vcpu>'
            '<os><type>hvm</type></os>%s</domain>'
            % (escape(name), i + 1, vcpus, inner))
        tids = []
        for _ in range(vcpus):
            self.next_tid += 1
            tids.append(self.next_tid)
            self.counters[(pid, self.next_tid)] = [0, 0, run, delay]
        self.write('run/libvirt/qemu/%s.xml' % name,
                   '<domstatus state="running" pid="%d"><vcpus>%s'
                   '</vcpus></domstatus>\n' % (pid, ''.join(
                       '<vcpu id="%d" pid="%d"/>' % (v, t)
                       for v, t in enumerate(tids))))
        self.write('run/libvirt/qemu/%s.pid' % name, '%d\n' % pid)
        return i

    def finish(self):
        """Write the CPUs and the test driver's XML, and the counters at
        zero.  Returns the driver file (uri test://FILE)."""
        self.write('sys/devices/system/cpu/online',
                   '0-%d\n' % (self.ncpus - 1))
        self.write('libvirt-test.xml',
                   '<node><cpu><nodes>1</nodes><sockets>1</sockets>'
                   '<cores>%d</cores><threads>1</threads><active>%d'
                   '</active><mhz>2000</mhz></cpu><memory>16777216'
                   '</memory>%s</node>\n'
                   % (self.ncpus, self.ncpus, ''.join(self.domains)))
        self.advance(0)
        return self.driver

    def advance(self, dt):
        """Move every counter on by dt seconds of the loaded host."""
        busy = 0.0
        for key, c in self.counters.items():
            c[0] += int(c[2] * dt * 1e9)
            c[1] += int(c[3] * dt * 1e9)
            busy += c[2]
            self.write('proc/%d/task/%d/schedstat' % key,
                       '%d %d %d\n' % (c[0], c[1], c[0] // 1000000))
        self.ticks += dt * HZ
        per_cpu = min(busy / self.ncpus, 1.0)
        lines = ['cpu  0 0 0 0 0 0 0 0 0 0']
        for cpu in range(self.ncpus):
            b = int(self.ticks * per_cpu)
            lines.append('cpu%d %d 0 0 %d 0 0 0 0 0 0'
                         % (cpu, b, int(self.ticks) - b))
        self.write('proc/stat', '\n'.join(lines) + '\n')
        self.write('proc/pressure/cpu',
                   'some avg10=%.2f avg60=40.00 avg300=30.00 total=1000\n'
                   'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n'
                   % self.psi_some)

    def _load(self, interval):
        last = time.monotonic()
        while not self.stop.wait(interval):
            now = time.monotonic()
            self.advance(now - last)
            last = now

    def start_load(self, interval=0.1):
        self.thread = threading.Thread(target=self._load, args=(interval,),
                                       daemon=True)
        self.thread.start()

    def stop_load(self):
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None
