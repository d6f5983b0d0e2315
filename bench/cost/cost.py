#!/usr/bin/env python3
"""What prefcpu-hostd costs as the host grows.

usage: cost.py HOSTD OUTDIR [SCENARIO...]

Runs the real daemon on synthetic hosts (a temp tree of /proc, /sys and
libvirt's status files, and libvirt's test driver with N domains), while
a writer advances every vCPU thread's schedstat once per period so that
the sampler sees change.  Per scenario it measures, over a fixed number
of periods, the daemon's CPU time per period (all its threads, from
/proc/PID/task/*/schedstat, ns; utime+stime from /proc/PID/stat agree
within their 10 ms ticks), then the same while a client scrapes /metrics
and /api/v1/domains once per period (the difference is the rendering),
the split the daemon logs at exit (sampling / policy and history), and
its memory (VmRSS, VmHWM).  The history scenario runs a full hour's
worth of periods with the default history settings.

The daemon runs with a soft limit of 1024 open files, the default for
systemd services: it keeps one file open per vCPU thread.

Writes OUTDIR/cost.json (one object per scenario) and prints a Markdown
table.  Exit 77 (skip) when the daemon or libvirt's test driver is
missing.
"""
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SKIP = 77
HZ = 100
NCPUS = 64          # host CPUs of the synthetic host
RUN, DELAY = 0.6, 0.3   # CPUs per vCPU thread: run and run-queue delay

# name: (VMs, vCPUs each, period ms, periods measured, history periods)
SCENARIOS = {
    '10x8': (10, 8, 250, 60, 0),
    '100x8': (100, 8, 250, 60, 0),
    '1000x8': (1000, 8, 250, 60, 0),
    '100x64': (100, 64, 250, 60, 0),
    # One hour of history at the default period, filled at 100 ms.
    '1000x8-hour': (1000, 8, 100, 60, 3600),
}


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Host:
    """A synthetic host with nvms VMs of vcpus vCPUs each."""

    def __init__(self, nvms, vcpus):
        # In memory, like procfs: on a disk file system every read of a
        # file written since the last read updates its atime (relatime),
        # a journal write that a real schedstat read does not pay.
        shm = '/dev/shm'
        where = shm if os.access(shm, os.W_OK) else None
        self.dir = tempfile.mkdtemp(prefix='prefcpu-cost-', dir=where)
        self.nvms, self.vcpus = nvms, vcpus
        self.fds = []       # one kept-open schedstat per vCPU thread
        self.stat_fd = None
        self.ns = 0         # every counter moves alike: run, delay in ns
        self.ticks = 0.0

    def path(self, rel):
        p = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def write(self, rel, text):
        with open(self.path(rel), 'w') as f:
            f.write(text)

    def build(self):
        self.write('sys/devices/system/cpu/online', '0-%d\n' % (NCPUS - 1))
        self.write('proc/pressure/cpu',
                   'some avg10=42.50 avg60=40.00 avg300=30.00 total=1000\n'
                   'full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n')
        doms = []
        tid = 100000
        for i in range(self.nvms):
            name = 'vm%04d' % i
            pid = 10000 + i
            doms.append(
                '<domain type="test"><name>%s</name>'
                '<uuid>00000000-0000-4000-8000-%012d</uuid>'
                '<memory>524288</memory><vcpu>%d</vcpu>'
                '<os><type>hvm</type></os>'
                '<cputune><shares>%d</shares></cputune></domain>'
                % (name, i + 1, self.vcpus, 1024 * (1 + i % 3)))
            vc = []
            for v in range(self.vcpus):
                tid += 1
                vc.append('<vcpu id="%d" pid="%d"/>' % (v, tid))
                p = self.path('proc/%d/task/%d/schedstat' % (pid, tid))
                self.fds.append(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
            self.write('run/libvirt/qemu/%s.xml' % name,
                       '<domstatus state="running" pid="%d"><vcpus>%s'
                       '</vcpus></domstatus>\n' % (pid, ''.join(vc)))
            self.write('run/libvirt/qemu/%s.pid' % name, '%d\n' % pid)
        self.driver_xml = self.path('libvirt-test.xml')
        self.write('libvirt-test.xml',
                   '<node><cpu><nodes>1</nodes><sockets>1</sockets>'
                   '<cores>%d</cores><threads>1</threads><active>%d'
                   '</active><mhz>2000</mhz></cpu><memory>16777216'
                   '</memory>%s</node>\n' % (NCPUS, NCPUS, ''.join(doms)))
        self.stat_fd = os.open(self.path('proc/stat'),
                               os.O_WRONLY | os.O_CREAT, 0o644)
        self.advance(0)

    def advance(self, dt):
        """Every vCPU thread runs RUN and waits DELAY CPUs for dt seconds."""
        self.ns += int(dt * 1e9)
        line = ('%d %d %d\n' % (RUN * self.ns, DELAY * self.ns,
                                self.ns // 1000000)).encode()
        for fd in self.fds:
            os.pwrite(fd, line, 0)
        self.ticks += dt * HZ
        busy = min(RUN * self.nvms * self.vcpus / NCPUS, 0.95)
        b = int(self.ticks * busy)
        idle = int(self.ticks) - b
        lines = ['cpu  0 0 0 0 0 0 0 0 0 0']
        lines += ['cpu%d %d 0 0 %d 0 0 0 0 0 0' % (c, b, idle)
                  for c in range(NCPUS)]
        data = ('\n'.join(lines) + '\n').encode()
        os.pwrite(self.stat_fd, data, 0)
        os.ftruncate(self.stat_fd, len(data))

    def close(self):
        for fd in self.fds:
            os.close(fd)
        if self.stat_fd is not None:
            os.close(self.stat_fd)
        shutil.rmtree(self.dir, ignore_errors=True)


class Writer(threading.Thread):
    """Advances the host's counters once per period."""

    def __init__(self, host, period_s):
        super().__init__(daemon=True)
        self.host, self.period_s = host, period_s
        self.stop = threading.Event()

    def run(self):
        last = time.monotonic()
        while not self.stop.wait(self.period_s):
            now = time.monotonic()
            self.host.advance(now - last)
            last = now


def proc_cpu_ns(pid):
    """CPU time of every thread of pid, ns."""
    total = 0
    for t in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/schedstat' % (pid, t)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def proc_ticks(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])     # utime + stime


def proc_status(pid, key):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])      # kB
    return 0


def get(port, path, timeout=60):
    with urllib.request.urlopen('http://127.0.0.1:%d%s' % (port, path),
                                timeout=timeout) as r:
        return r.read()


def host_json(port):
    return json.loads(get(port, '/api/v1/host'))


def wait_periods(port, proc, n, timeout):
    """Wait until period_seq reaches n; return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError('prefcpu-hostd exited %d' % proc.returncode)
        try:
            seq = host_json(port)['period_seq']
            if seq >= n:
                return seq
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise RuntimeError('period %d not reached in %ds' % (n, timeout))


def low_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))


def run(hostd, name, nvms, vcpus, period_ms, periods, history):
    host = Host(nvms, vcpus)
    proc = log = writer = None
    res = {'scenario': name, 'vms': nvms, 'vcpus': vcpus,
           'threads': nvms * vcpus, 'period_ms': period_ms}
    try:
        host.build()
        port = free_port()
        conf = host.path('hostd.conf')
        host.write('hostd.conf',
                   '[hostd]\nuri = test://%s\nperiod-ms = %d\n'
                   'observe = yes\nproc-root = %s/proc\nsys-root = %s/sys\n'
                   'cgroup-root = %s/cgroup\nrun-root = %s/run\n'
                   'qmp-fallback = no\nlog-level = info\n'
                   '[http]\nlisten = 127.0.0.1:%d\nsocket = %s/hostd.sock\n'
                   % (host.driver_xml, period_ms, host.dir, host.dir,
                      host.dir, host.dir, port, host.dir))
        log = open(host.path('hostd.log'), 'w+')
        writer = Writer(host, period_ms / 1000.0)
        writer.start()
        proc = subprocess.Popen([hostd, '--config', conf, '--foreground'],
                                stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=low_nofile)
        # Discovery first: every VM described and sampled twice.
        deadline = time.monotonic() + 300
        while True:
            seq = wait_periods(port, proc, 3, 300)
            h = host_json(port)
            if h['vcpus'] == nvms * vcpus and seq >= 3:
                break
            if time.monotonic() > deadline:
                raise RuntimeError('only %d of %d vCPUs discovered'
                                   % (h['vcpus'], nvms * vcpus))
            time.sleep(period_ms / 1000.0)
        res['rss_start_kib'] = proc_status(proc.pid, 'VmRSS')

        # A: the period alone (nobody polls the daemon meanwhile).
        s0, c0, k0 = host_json(port)['period_seq'], proc_cpu_ns(proc.pid), \
            proc_ticks(proc.pid)
        time.sleep(periods * period_ms / 1000.0)
        c1, k1 = proc_cpu_ns(proc.pid), proc_ticks(proc.pid)
        s1 = host_json(port)['period_seq']
        res['periods'] = s1 - s0
        res['cpu_ms'] = (c1 - c0) / 1e6 / (s1 - s0)
        res['cpu_ms_ticks'] = (k1 - k0) * 1000.0 / HZ / (s1 - s0)

        # B: a scraper reads /metrics and /api/v1/domains once per period;
        # the daemon's CPU time during those requests is the rendering.
        s0 = host_json(port)['period_seq']
        render = nbytes = 0
        for _ in range(periods):
            time.sleep(period_ms / 1000.0)
            r0 = proc_cpu_ns(proc.pid)
            nbytes = len(get(port, '/metrics')) + \
                len(get(port, '/api/v1/domains'))
            render += proc_cpu_ns(proc.pid) - r0
        s1 = host_json(port)['period_seq']
        res['scraped_periods'] = s1 - s0
        res['render_ms'] = render / 1e6 / periods
        res['render_bytes'] = nbytes

        if history:
            # Fill the ring: an hour's worth of periods and a little more.
            wait_periods(port, proc, history + 20,
                         history * period_ms / 1000.0 * 4 + 120)
            # The whole history, page by page as a client would.
            hist, pages, nbytes, biggest = [], 0, 0, 0
            path = '/api/v1/history'
            while True:
                body = get(port, path)
                doc = json.loads(body)
                hist += doc['periods']
                pages += 1
                nbytes += len(body)
                biggest = max(biggest, len(body))
                if not doc['more'] or not doc['periods']:
                    break
                path = '/api/v1/history?since=%d' % doc['periods'][-1]['seq']
            res['history_records'] = len(hist)
            res['history_periods'] = sum(p['periods'] for p in hist)
            res['history_json_bytes'] = nbytes
            res['history_pages'] = pages
            res['history_page_bytes'] = biggest

        res['rss_kib'] = proc_status(proc.pid, 'VmRSS')
        res['hwm_kib'] = proc_status(proc.pid, 'VmHWM')
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        res['exit'] = proc.returncode
        log.flush()
        log.seek(0)
        text = log.read()
        m = re.search(r'(\d+) periods, mean cost ([\d.]+) us CPU '
                      r'\(sampling ([\d.]+), policy and history ([\d.]+)\)',
                      text)
        if m:
            res['sample_ms'] = float(m.group(3)) / 1000.0
            res['policy_ms'] = float(m.group(4)) / 1000.0
        errs = [ln for ln in text.splitlines()
                if re.search(r'(?i)too many open files|error|warn', ln)]
        res['log_problems'] = errs[:5]
        return res
    finally:
        if writer:
            writer.stop.set()
            writer.join()
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        if log:
            log.close()
        host.close()


def table(results):
    out = ['| VMs x vCPUs | threads | period | CPU/period | sampling | '
           'policy+history | rendering | RSS | peak RSS |',
           '|---|---:|---:|---:|---:|---:|---:|---:|---:|']
    for r in results:
        hist = ''
        if 'history_records' in r:
            hist = ', %d periods in history' % r['history_periods']
        out.append('| %d x %d%s | %d | %d ms | %.2f ms | %s | %s | %.2f ms '
                   '(%.0f kB) | %.1f MB | %.1f MB |' % (
                       r['vms'], r['vcpus'], hist, r['threads'],
                       r['period_ms'], r['cpu_ms'],
                       '%.2f ms' % r['sample_ms'] if 'sample_ms' in r
                       else '?',
                       '%.2f ms' % r['policy_ms'] if 'policy_ms' in r
                       else '?',
                       r['render_ms'], r['render_bytes'] / 1000.0,
                       r['rss_kib'] / 1024.0, r['hwm_kib'] / 1024.0))
    return '\n'.join(out)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    hostd, outdir = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(SCENARIOS)
    if not os.access(hostd, os.X_OK):
        print('cost.py: %s not built' % hostd, file=sys.stderr)
        sys.exit(SKIP)
    os.makedirs(outdir, exist_ok=True)
    results = []
    for n in names:
        print('cost.py: %s ...' % n, file=sys.stderr, flush=True)
        r = run(hostd, n, *SCENARIOS[n])
        print('cost.py: %s' % json.dumps(r), file=sys.stderr, flush=True)
        results.append(r)
    with open(os.path.join(outdir, 'cost.json'), 'w') as f:
        json.dump(results, f, indent=1)
    print(table(results))


if __name__ == '__main__':
    main()
