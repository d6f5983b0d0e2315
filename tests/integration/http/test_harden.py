"""Hostile HTTP clients against the real prefcpu-hostd on a synthetic host
of 120 VMs: 40 clients that ask for the whole history and never read,
1000 idle connections, slowloris clients that trickle a header byte at a
time, and requests with a foreign Host header (DNS rebinding).

What a user would check, asserted:
- the daemon's resident memory (peak, VmHWM) stays under RSS_BOUND_MB;
- every period still runs: the period counter moves on at the period's
  pace while the clients hold on (at least 90% of the periods due);
- the unix socket keeps answering, and connections over the limit get a
  503, not a hang;
- the daemon's own connection metrics, read over the unix socket during
  the flood: it serves max-connections TCP connections at once, never
  more, accepted every one the clients opened and refused exactly those
  that saw a 503;
- slowloris connections are closed at the request deadline (timeout),
  slow readers at the answer deadline (answer-timeout);
- a foreign Host header gets 403 over TCP; loopback names, the listen
  address and a configured name get 200.
The figures (RSS before/peak/after, periods, latencies) are printed.
"""
import os
import resource
import socket
import sys
import time

import hostd_fixture as F

NVMS = 120
PERIOD_MS = 250
TIMEOUT_S = 4           # [http] timeout: the request deadline
ANSWER_S = 12           # [http] answer-timeout
MAX_CONNS = 128         # the default of max-connections
SLOW_READERS = 40
IDLE = 1000
SLOWLORIS = 20
RSS_BOUND_MB = 80


def status_kb(pid, field):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return 0


def connect(port):
    s = socket.socket()
    # Small buffers, so that an unread answer stays in the daemon.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(('127.0.0.1', port))
    s.setblocking(False)
    return s


def closed(s):
    """True if the daemon closed s (EOF or reset); reads what is there."""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def got_503(s):
    try:
        return s.recv(100).startswith(b'HTTP/1.1 503')
    except (BlockingIOError, OSError):
        return False


def conn_metrics(d):
    """{(metric, listener): value} of prefcpu_http_connections*."""
    st, _, body = d.unix('GET', '/metrics')
    if st != 200:
        raise ValueError('/metrics over the unix socket: %d' % st)
    out = {}
    for line in body.decode().splitlines():
        if line.startswith('prefcpu_http_connections'):
            name, rest = line.split('{listener="', 1)
            lst, val = rest.split('"} ')
            out[(name, lst)] = float(val)
    return out


def main():
    t = F.Checker('test_harden')
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = IDLE + SLOW_READERS + SLOWLORIS + 200
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    doms = [('vm%03d' % i, 2, 1024, {}, 0.5, 0.2) for i in range(NVMS)]
    with F.Hostd(domains=doms, period_ms=PERIOD_MS) as d:
        d.start(wait_periods=3, timeout=str(TIMEOUT_S),
                hosts='prefcpu.example, other.example',
                **{'answer-timeout': str(ANSWER_S)})
        pid = d.proc.pid
        # --- DNS rebinding ------------------------------------------------
        for host, want in [('attacker.example', 403),
                           ('attacker.example:%d' % d.port, 403),
                           ('127.0.0.1.attacker.example', 403),
                           ('localhost:%d' % d.port, 200),
                           ('127.0.0.1:%d' % d.port, 200),
                           ('[::1]:%d' % d.port, 200),
                           ('PREFCPU.example', 200)]:
            st, _, body = d.tcp('GET', '/api/v1/host', headers={'Host': host})
            t.eq(st, want, 'GET /api/v1/host with Host: %s' % host)
        st, _, _ = d.unix('GET', '/api/v1/host',
                          headers={'Host': 'attacker.example'})
        t.eq(st, 200, 'the unix socket does not check Host')

        # A long history: 120 VMs, every period.
        time.sleep(25)
        st, hdr, body = d.unix('GET', '/api/v1/history')
        t.eq(st, 200, 'history over the unix socket')
        hist_mb = len(body) / 1e6
        print('history answer: %.1f MB, %s' % (
            hist_mb, hdr.get('Transfer-Encoding', 'not chunked')))
        rss0 = status_kb(pid, 'VmRSS')
        seq0 = d.get('/api/v1/host')['period_seq']
        m0 = conn_metrics(d)
        t0 = time.monotonic()

        # --- 40 slow readers, 1000 idle, slowloris ------------------------
        readers = []
        for _ in range(SLOW_READERS):
            s = connect(d.port)
            s.sendall(b'GET /api/v1/history HTTP/1.1\r\nHost: localhost'
                      b'\r\n\r\n')
            readers.append(s)
        loris = []
        for _ in range(SLOWLORIS):
            s = connect(d.port)
            s.send(b'GET /api/v1/host HTTP/1.1\r\n')
            loris.append(s)
        idle = []
        for _ in range(IDLE):
            try:
                idle.append(connect(d.port))
            except OSError as e:
                print('connect %d: %s' % (len(idle), e))
                break
        # The unix socket answers while TCP is full.
        lat = []
        served = []
        seen_503 = 0
        deadline = time.monotonic() + TIMEOUT_S + 3
        while time.monotonic() < deadline:
            a = time.monotonic()
            st, _, _ = d.unix('GET', '/api/v1/host')
            lat.append(time.monotonic() - a)
            t.check(st == 200, 'unix socket answers during the flood')
            served.append(conn_metrics(d)[('prefcpu_http_connections',
                                           'tcp')])
            for s in loris:
                try:
                    s.send(b'X')
                except OSError:
                    pass
            time.sleep(0.5)
        peak = status_kb(pid, 'VmHWM')
        rss_flood = status_kb(pid, 'VmRSS')
        loris_closed = sum(closed(s) for s in loris)
        print('slowloris closed after %d s: %d of %d' % (
            TIMEOUT_S + 3, loris_closed, SLOWLORIS))
        t.eq(loris_closed, SLOWLORIS, 'slowloris clients dropped at the '
             'request deadline')
        # Slow readers still hold their answers until the answer deadline.
        time.sleep(max(0, ANSWER_S + 4 - (time.monotonic() - t0)))
        readers_closed = sum(closed(s) for s in readers)
        print('slow readers closed after %d s: %d of %d' % (
            ANSWER_S + 4, readers_closed, SLOW_READERS))
        t.eq(readers_closed, SLOW_READERS, 'slow readers dropped at the '
             'answer deadline')
        # Every idle connection ended: a 503 at once (over the limit) or
        # closed at the request deadline (those that got a place).
        dropped = 0
        for s in idle:
            if got_503(s):
                seen_503 += 1
            elif closed(s):
                dropped += 1
        print('TCP connections: %d idle, %d slow readers, %d slowloris; '
              'idle ones answered 503: %d, closed at the deadline: %d' % (
                  len(idle), SLOW_READERS, SLOWLORIS, seen_503, dropped))
        t.eq(seen_503 + dropped, len(idle), 'every idle connection ended')
        # The limit itself, from the daemon's metrics: not from the
        # count of 503s (a place freed at a deadline goes to a connection
        # still waiting to be accepted, so more than MAX_CONNS idle ones
        # may get a place over the whole flood), nor from its sockets (a
        # refused one is open until its 503 is sent).
        m1 = conn_metrics(d)
        opened = len(idle) + SLOW_READERS + SLOWLORIS

        def delta(name):
            return int(m1[(name, 'tcp')] - m0[(name, 'tcp')])
        print('TCP connections served at once during the flood: %s; '
              'accepted %d, refused %d, expired %d' % (
                  ' '.join('%d' % x for x in served),
                  delta('prefcpu_http_connections_accepted_total'),
                  delta('prefcpu_http_connections_refused_total'),
                  delta('prefcpu_http_connections_expired_total')))
        t.eq(max(served), MAX_CONNS, 'the daemon serves max-connections '
             'TCP connections at once under the flood, never more')
        t.eq(delta('prefcpu_http_connections_accepted_total'), opened,
             'every connection the clients opened was accepted')
        t.eq(delta('prefcpu_http_connections_refused_total'), seen_503,
             'connections refused = those that saw a 503')
        t.check(seen_503 >= len(idle) // 2, 'most idle connections over '
                'max-connections get 503 (%d of %d)' % (seen_503, len(idle)))
        t.check(delta('prefcpu_http_connections_expired_total') >=
                SLOWLORIS, 'slowloris connections counted as expired')
        t.check(m1[('prefcpu_http_connections', 'unix')] >= 1,
                'the unix listener counts apart (the metrics request)')
        elapsed = time.monotonic() - t0
        seq1 = d.get('/api/v1/host')['period_seq']
        due = elapsed * 1000 / PERIOD_MS
        print('periods: %d in %.1f s (%.0f due at %d ms)' % (
            seq1 - seq0, elapsed, due, PERIOD_MS))
        t.check(seq1 - seq0 >= 0.9 * due - 1, 'periods run on time '
                'under the flood')
        for s in idle + readers + loris:
            s.close()
        time.sleep(1)
        st, _, _ = d.tcp('GET', '/api/v1/host')
        t.eq(st, 200, 'TCP serves again after the flood')
        rss1 = status_kb(pid, 'VmRSS')
        print('RSS: %.1f MB before, %.1f MB during, %.1f MB peak (VmHWM), '
              '%.1f MB after; bound %d MB' % (
                  rss0 / 1024, rss_flood / 1024, peak / 1024, rss1 / 1024,
                  RSS_BOUND_MB))
        print('unix socket latency during the flood: max %.0f ms, median '
              '%.0f ms' % (max(lat) * 1000, sorted(lat)[len(lat) // 2] *
                           1000))
        t.check(peak < RSS_BOUND_MB * 1024, 'peak RSS under %d MB'
                % RSS_BOUND_MB)
        t.check(SLOW_READERS * hist_mb > RSS_BOUND_MB,
                'the history is large enough to matter (%.1f MB x %d)'
                % (hist_mb, SLOW_READERS))
    t.check(d.clean_exit, 'clean exit')
    t.done()


if __name__ == '__main__':
    main()
