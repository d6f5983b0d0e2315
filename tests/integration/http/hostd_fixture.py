"""Run the real prefcpu-hostd on a synthetic host for the HTTP tests.

The host is a temp tree (tests/lib/synthost.py): sysfs (8 online CPUs),
procfs (stat, CPU pressure, one schedstat file per vCPU thread),
libvirt's status files (vCPU thread ids) and libvirt's test driver with
domains from an XML file.  A thread advances the counters like a loaded host would: every
vCPU runs and waits at a fixed rate, so the daemon sees contention.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import http.client
from xml.sax.saxutils import quoteattr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'lib'))
from synthost import SynthHost                          # noqa: E402

SKIP = 77
NCPUS = 8
POLICY_NS = 'http://prefcpu.org/xmlns/policy/1'

# name, vCPUs, shares, policy attributes, run and delay per vCPU (CPUs)
DEFAULT_DOMAINS = [
    ('web', 4, 2048, {'weight': '300'}, 0.6, 0.3),
    ('db', 8, 1024, {}, 0.7, 0.3),
    ('batch', 8, 1024, {'min-cores': '2'}, 0.8, 0.4),
    # Domain names are not trusted: markup must show as text.
    ('<img src=x onerror="document.title=1">&<b>x', 2, 1024, {}, 0.5, 0.2),
]


def tool(env, default):
    """A built binary, from the environment meson sets."""
    path = os.environ.get(env, default)
    if not path or not os.access(path, os.X_OK):
        print('%s not built (%s)' % (env, path))
        sys.exit(SKIP)
    return path


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(what, pred, timeout=10, interval=0.1):
    """Poll pred until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError('timed out waiting for ' + what)


class FakeGuest(threading.Thread):
    """A guest agent at the far end of a domain's org.prefcpu.0 channel.

    It listens on the channel's socket as QEMU does, answers the daemon's
    hello with the texts given (a guest may send anything there), acks
    every target with what it asked for, and reports now and then."""

    def __init__(self, path, vcpus, agent, kernel):
        super().__init__(daemon=True)
        self.path = path
        self.vcpus = vcpus
        self.agent = agent
        self.kernel = kernel
        self.stop = threading.Event()
        self.targets = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(1)
        self.sock.settimeout(0.2)

    def _send(self, conn, msg):
        msg['v'] = 1
        conn.sendall(json.dumps(msg).encode() + b'\n')

    def _serve(self, conn):
        conn.settimeout(0.2)
        buf = b''
        last_report = 0
        while not self.stop.is_set():
            try:
                data = conn.recv(4096)
                if not data:
                    return
                buf += data
            except socket.timeout:
                pass
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                if not line.strip():
                    continue
                m = json.loads(line)
                if m['type'] == 'hello':
                    self._send(conn, {
                        'type': 'hello', 'session': m['session'],
                        'agent': self.agent,
                        'online': '0-%d' % (self.vcpus - 1),
                        'cores': [str(i) for i in range(self.vcpus)],
                        'backend': 'cpuset', 'backends': ['cpuset'],
                        'kernel': self.kernel})
                elif m['type'] == 'target':
                    self.targets += 1
                    self._send(conn, {'type': 'ack', 'seq': m['seq'],
                                      'ok': True,
                                      'applied': m['preferred']})
                elif m['type'] == 'ping':
                    self._send(conn, {'type': 'pong', 'seq': m['seq']})
            if time.monotonic() - last_report > 1:
                last_report = time.monotonic()
                self._send(conn, {'type': 'report',
                                  'online': '0-%d' % (self.vcpus - 1),
                                  'steal_pct': 12.5, 'psi_some_avg10': 3.0,
                                  'runnable': 4.6, 'nr_running': 5})

    def run(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            try:
                self._serve(conn)
            except (OSError, ValueError):
                pass
            finally:
                conn.close()

    def close(self):
        self.stop.set()
        self.join()
        self.sock.close()


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__('localhost', timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Hostd:
    def __init__(self, domains=DEFAULT_DOMAINS, period_ms=300, observe=True,
                 agents=None):
        """agents: {domain name: (agent text, kernel text)} for the VMs
        that get a fake guest agent on their channel."""
        self.domains = domains
        self.agents = agents or {}
        self.guests = []
        self.period_ms = period_ms
        self.observe = observe
        self.dir = tempfile.mkdtemp(prefix='prefcpu-http-')
        self.proc = None
        self.port = free_port()
        self.sock = os.path.join(self.dir, 'run', 'prefcpu', 'hostd.sock')
        self.synth = SynthHost(self.dir, NCPUS, psi_some=42.5)
        self.clean_exit = False

    # --- the synthetic host -------------------------------------------
    def _write(self, rel, text):
        self.synth.write(rel, text)

    def _build(self):
        for i, (name, vcpus, shares, pol, run, delay) in enumerate(
                self.domains):
            meta = ''
            if pol:
                attrs = ''.join(' %s=%s' % (k, quoteattr(v))
                                for k, v in pol.items())
                meta = ('<metadata><prefcpu:policy xmlns:prefcpu="%s"%s/>'
                        '</metadata>' % (POLICY_NS, attrs))
            chan = ''
            if name in self.agents:
                path = os.path.join(self.dir, 'chan%d.sock' % i)
                chan = ('<devices><channel type="unix"><source mode="bind" '
                        'path=%s/><target type="virtio" '
                        'name="org.prefcpu.0"/></channel></devices>'
                        % quoteattr(path))
                self.guests.append(FakeGuest(path, vcpus,
                                             *self.agents[name]))
            self.synth.add_domain(
                name, vcpus, run, delay,
                '<cputune><shares>%d</shares></cputune>%s%s'
                % (shares, meta, chan))
        self.driver_xml = self.synth.finish()

    # --- the daemon ----------------------------------------------------
    def config(self, **extra_http):
        http_opts = {'listen': '127.0.0.1:%d' % self.port,
                     'socket': self.sock}
        http_opts.update(extra_http)
        return ('[hostd]\nuri = test://%s\nperiod-ms = %d\nobserve = %s\n'
                'proc-root = %s/proc\nsys-root = %s/sys\n'
                'cgroup-root = %s/cgroup\nrun-root = %s/run\n'
                'qmp-fallback = no\nlog-level = info\n[http]\n%s'
                % (self.driver_xml, self.period_ms,
                   'yes' if self.observe else 'no', self.dir, self.dir,
                   self.dir, self.dir,
                   ''.join('%s = %s\n' % kv for kv in http_opts.items())))

    def start(self, wait_periods=3, need_domains=True, load_interval=0.05,
              **extra_http):
        self.binary = tool('PREFCPU_HOSTD', '')
        self._build()
        self.synth.start_load(load_interval)
        for g in self.guests:
            g.start()
        self.conf = os.path.join(self.dir, 'hostd.conf')
        self._write('hostd.conf', self.config(**extra_http))
        self.log = open(os.path.join(self.dir, 'hostd.log'), 'w+')
        self.proc = subprocess.Popen(
            [self.binary, '--config', self.conf, '--foreground'],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('prefcpu-hostd exited: ' + self.logtext())
            try:
                h = self.get('/api/v1/host')
                if h['period_seq'] >= wait_periods and (
                        not need_domains or self.get(
                            '/api/v1/domains')['domains']):
                    return self
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.1)
        raise RuntimeError('prefcpu-hostd did not serve: ' + self.logtext())

    def logtext(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def close(self):
        self.synth.stop_load()
        for g in self.guests:
            g.close()
        self.exit_code = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.exit_code = self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            # Sanitizer reports (an ASan build) and crashes end up here.
            text = self.logtext()
            self.clean_exit = self.exit_code == 0 and \
                'Sanitizer' not in text and 'runtime error:' not in text
            if not self.clean_exit:
                print('prefcpu-hostd exit %r; log tail:\n%s' % (
                    self.exit_code, text[-4000:]))
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    # --- clients -------------------------------------------------------
    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    def tcp(self, method, path, body=None, headers=None):
        """(status, headers, body bytes) over TCP."""
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=10)
        return self._do(c, method, path, body, headers)

    def unix(self, method, path, body=None, headers=None):
        """(status, headers, body bytes) over the unix socket."""
        return self._do(UnixHTTPConnection(self.sock), method, path, body,
                        headers)

    @staticmethod
    def _do(c, method, path, body, headers):
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def get(self, path):
        status, _, body = self.tcp('GET', path)
        if status != 200:
            raise ValueError('%s: %d %s' % (path, status, body[:200]))
        return json.loads(body)

    def wait_for(self, what, pred, timeout=10):
        return wait_for(what, pred, timeout)


def quote(name):
    return urllib.parse.quote(name, safe='')


class Checker:
    """Collects failures so that one run reports all of them."""

    def __init__(self, name):
        self.name = name
        self.failed = 0
        self.passed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print('FAIL: %s' % what)
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, '%s: got %r, want %r' % (what, got,
                                                                  want))

    def done(self):
        print('%s: %d checks passed, %d failed' % (self.name, self.passed,
                                                  self.failed))
        sys.exit(1 if self.failed else 0)
