#!/usr/bin/env python3
"""/api/v1 and /metrics of the real prefcpu-hostd on a synthetic host,
including bad requests, the write route and its refusal over TCP."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402

EVIL = F.DEFAULT_DOMAINS[3][0]
NAMES = {d[0] for d in F.DEFAULT_DOMAINS}
VCPUS = {d[0]: d[1] for d in F.DEFAULT_DOMAINS}
CONTENDED = ('fair-share', 'hold-dead-band', 'hold-dwell', 'hold-persist',
             'min-cores', 'max-cores', 'grow', 'hold-grow', 'hold-shrink',
             'overcommit', 'spare')


def consistent(d):
    """host and domains of the same period."""
    for _ in range(20):
        host = d.get('/api/v1/host')
        doms = d.get('/api/v1/domains')
        if host['period_seq'] == doms['period_seq']:
            return host, doms
    raise AssertionError('no consistent host/domains pair')


def parse_metrics(text):
    """{(name, frozenset(labels)): value}; asserts the text format."""
    out = {}
    line_re = re.compile(
        r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if line.startswith('# HELP ') or line.startswith('# TYPE '):
            continue
        m = line_re.match(line)
        assert m, 'bad metrics line: %r' % line
        labels = {}
        if m.group(3):
            for k, v in label_re.findall(m.group(3)):
                labels[k] = v.replace('\\"', '"').replace(
                    '\\n', '\n').replace('\\\\', '\\')
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return out


def main():
    t = F.Checker('test_api')
    with F.Hostd() as d:
        d.start(wait_periods=8, timeout='2')

        # --- host and domains ------------------------------------------
        host, doms = consistent(d)
        t.eq(host['pcpus'], F.NCPUS, 'host pcpus')
        t.eq(host['usable_pcpus'], '0-%d' % (F.NCPUS - 1), 'usable pcpus')
        t.eq(host['vcpus'], sum(VCPUS.values()), 'host vcpus')
        t.eq(host['mode'], 'observe', 'mode')
        t.eq(host['period_ms'], 300, 'period')
        t.eq(host['cpu_pressure_some_avg10'], 42.5, 'CPU pressure')
        t.eq(host['usable_cpus'], F.NCPUS, 'usable CPUs counted')
        t.check(abs(host['overcommit'] - host['vcpus'] / F.NCPUS) < 1e-6,
                'over-commit is vCPUs per usable CPU: %r' % host['overcommit'])
        t.check(abs(host['run_delay_pct'] - 100 * host['run_delay_cpus'] /
                    host['vcpus']) < 0.01,
                'host run delay share is delay over all vCPUs')
        t.check(host['contended'], 'the synthetic load is contended')
        t.check(host['run_delay_s'] > 0, 'host run delay counter moves')
        t.eq({x['name'] for x in doms['domains']}, NAMES, 'domain names')
        t.eq({x['source'] for x in doms['domains']}, {'libvirt'},
             'every domain comes from libvirt')
        t.eq(host['preferred_vcpus'],
             sum(x['decision']['vcpus'] for x in doms['domains']),
             'preferred vCPUs = sum of the decisions')
        # Idle headroom is not counted (prefcpu-hostd(8)): what the
        # preferred vCPUs count fits the capacity, within half a core.
        counted = sum(x['decision']['counted'] for x in doms['domains'])
        t.check(counted < host['capacity'] + 0.5,
                'preferred vCPUs fit the capacity: they count %.2f of %.2f '
                'CPUs' % (counted, host['capacity']))
        t.check(all(x['decision']['counted'] <= x['decision']['vcpus'] +
                    1e-6 and x['decision']['counted'] <=
                    x['decision']['claim'] + 1e-6 for x in doms['domains']),
                'a VM counts at most its preferred vCPUs and its claim')
        by = {x['name']: x for x in doms['domains']}
        hist6 = d.get('/api/v1/history')
        for name, vcpus, shares, pol, run, delay in F.DEFAULT_DOMAINS:
            x = by[name]
            t.eq(x['vcpus'], vcpus, name + ' vcpus')
            t.eq(x['policy']['weight'], int(pol.get('weight', shares)),
                 name + ' weight')
            # One period's figure jitters with the fake host's update
            # steps; the mean over the history does not.
            pcts = [v['run_delay_pct'] for p in hist6['periods'][1:]
                    for v in p['domains']
                    if v['name'] == name and v['run_cpus'] > 0]
            mean = sum(pcts) / max(len(pcts), 1)
            t.check(len(pcts) >= 5 and abs(mean - 100 * delay) < 5,
                    '%s run delay %% %.1f ~ %.1f over %d periods' % (
                        name, mean, 100 * delay, len(pcts)))
            t.check(x['decision']['reason'] in CONTENDED,
                    '%s decided under contention: %s' % (
                        name, x['decision']['reason']))
            t.check(x['decision']['why'], name + ' has a why')
        t.eq(by['batch']['policy']['metadata'].get('min_cores'), 2,
             'batch min-cores from metadata')
        t.eq(by['db']['policy']['metadata'], {},
             'db has no metadata')
        t.eq(by['db']['policy']['mode'], 'auto', 'db in mode auto')
        t.eq(by['db']['policy']['enforce'], 'none', 'db not enforced')
        t.check(by['web']['decision']['share'] <
                by['db']['decision']['share'],
                'weight 300 gets less than weight 1024')

        raw = d.tcp('GET', '/api/v1/domains')[2]
        t.check(b'<' not in raw and b'>' not in raw,
                'no markup characters in a JSON body, even from names')
        one = d.get('/api/v1/domains/web')
        t.eq(one['name'], 'web', 'domain by name')
        t.eq(d.get('/api/v1/domains/' + one['uuid'])['name'], 'web',
             'domain by uuid')
        t.eq(d.get('/api/v1/domains/' + F.quote(EVIL))['name'], EVIL,
             'a name with markup, percent-encoded, comes back verbatim')

        # --- history and decisions --------------------------------------
        hist = d.get('/api/v1/history?seconds=2')
        seqs = [p['seq'] for p in hist['periods']]
        t.check(len(seqs) >= 3, 'history has periods')
        t.eq(seqs, sorted(seqs), 'history oldest first')
        t.eq(hist['more'], False, 'a short history comes in one answer')
        span = hist['periods'][-1]['time_ms'] - hist['periods'][0]['time_ms']
        t.check(span <= 2000, 'seconds=2 spans at most 2 s (%d ms)' % span)
        t.eq({x['name'] for x in hist['periods'][-1]['domains']}, NAMES,
             'history has every VM')
        since = seqs[-2]
        newer = d.get('/api/v1/history?since=%d' % since)['periods']
        t.check(newer and all(p['seq'] > since for p in newer),
                'since= returns only newer periods')
        lean = d.get('/api/v1/history?seconds=2&domains=0')['periods']
        t.check(lean and all('domains' not in p and p['ndomains'] == 4
                             for p in lean), 'domains=0: host figures only')
        full = d.get('/api/v1/history')['periods']
        t.check(len(full) >= len(seqs), 'default history is the longest')
        dec = d.get('/api/v1/decisions?limit=3')['decisions']
        t.check(0 < len(dec) <= 3, 'decisions limited')
        t.check(all(x['name'] in NAMES for x in dec), 'decision names')
        t.check([x['seq'] for x in dec] == sorted(
            [x['seq'] for x in dec], reverse=True), 'decisions newest first')

        # --- metrics ------------------------------------------------------
        status, hdr, body = d.tcp('GET', '/metrics')
        t.eq(status, 200, '/metrics status')
        t.check(hdr.get('Content-Type', '').startswith(
            'text/plain; version=0.0.4'), 'metrics content type')
        m = parse_metrics(body.decode())
        t.eq(m[('prefcpu_host_vcpus', frozenset())], 22.0, 'metric vcpus')
        t.eq(m[('prefcpu_host_pcpus', frozenset())], 8.0, 'metric pcpus')
        for x in doms['domains']:
            lab = frozenset({'domain': x['name'], 'uuid': x['uuid']}.items())
            t.eq(m.get(('prefcpu_domain_vcpus', lab)), float(x['vcpus']),
                 'metric vcpus of %r' % x['name'])
            t.check(m.get(('prefcpu_domain_vcpu_run_delay_seconds_total',
                           lab), 0) > 0, 'run delay counter of %r' %
                    x['name'])
            lab_st = frozenset({'domain': x['name'], 'uuid': x['uuid'],
                                'state': 'none'}.items())
            t.eq(m.get(('prefcpu_domain_agent_state', lab_st)), 1.0,
                 'agent state none of %r' % x['name'])
        r1 = m[('prefcpu_host_vcpu_run_seconds_total', frozenset())]
        time.sleep(0.7)
        m2 = parse_metrics(d.tcp('GET', '/metrics')[2].decode())
        t.check(m2[('prefcpu_host_vcpu_run_seconds_total', frozenset())] >
                r1, 'run seconds counter grows')

        # --- bad requests -------------------------------------------------
        def err(resp, status, what):
            s, h, b = resp
            t.eq(s, status, what)
            if status not in (413,):    # evhttp answers 413 itself
                try:
                    j = json.loads(b)
                    t.eq(j.get('status'), status, what + ' (JSON status)')
                    t.check(j.get('error'), what + ' (JSON error)')
                except ValueError:
                    t.check(False, what + ': body is not JSON: %r' % b[:80])

        err(d.tcp('GET', '/nope'), 404, 'unknown route')
        err(d.tcp('GET', '/api/v1/domains/nope'), 404, 'unknown domain')
        err(d.tcp('GET', '/api/v1/domains/a%00b'), 400, 'NUL in a name')
        err(d.tcp('GET', '/api/v1/domains/a%0d%0aX:%20y'), 400,
            'CR LF in a name')
        err(d.tcp('GET', '/api/v1/domains/%ff'), 400, 'a name not UTF-8')
        err(d.tcp('GET', '/api/v1/domains/' + 'x' * 300), 400,
            'name too long')
        err(d.tcp('GET', '/api/v1/history?seconds=abc'), 400,
            'bad query value')
        err(d.tcp('POST', '/api/v1/host', body=b'{}'), 405, 'POST a read')
        for m in ('DELETE', 'PATCH', 'OPTIONS'):
            r = d.tcp(m, '/api/v1/domains/db/policy')
            err(r, 405, m)
            t.eq(r[1].get('Allow'), 'PUT, POST', m + ': Allow')
        err(d.tcp('PUT', '/api/v1/domains/db/policy', body=b'{"weight":2}'),
            403, 'write over TCP')
        err(d.tcp('GET', '/api/v1/host',
                  headers={'X-H%d' % i: 'v' for i in range(100)}), 431,
            'too many header fields')
        s, _, _ = d.tcp('GET', '/api/v1/host', headers={'X-Big': 'v' * 20000})
        t.check(s in (400, 413, 431), 'oversized headers refused (%d)' % s)
        # The daemon answers as soon as it reads the length, before the
        # body, so send the head only and read the answer.
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.settimeout(10)
        c.connect(d.sock)
        c.sendall(b'PUT /api/v1/domains/db/policy HTTP/1.1\r\nHost: x\r\n'
                  b'Content-Length: 1048576\r\n\r\n{"weight":')
        head = c.recv(200)
        c.close()
        t.check(head.startswith(b'HTTP/1.1 413'), 'huge body: %r' % head)
        for bad in (b'{"weight":0}', b'{"mode":"fixed"}', b'not json',
                    b'{"weight":1}{}', b'{"colour":"red"}', b'[1]',
                    b'{"min_cores":4,"max_cores":2}', b'{"cpus":"0"}',
                    b'{"enforce":"always"}'):
            err(d.unix('PUT', '/api/v1/domains/db/policy', body=bad), 400,
                'bad policy %r' % bad)
        err(d.unix('PUT', '/api/v1/domains/nope/policy',
                   body=b'{"weight":5}'), 404, 'policy of an unknown domain')

        # --- the write route, and the daemon acting on it ----------------
        before = d.get('/api/v1/domains/db')['decision']['share']
        s, _, b = d.unix('PUT', '/api/v1/domains/db/policy',
                         body=b'{"mode":"auto","weight":5000}')
        t.eq(s, 200, 'policy write over the unix socket')
        t.check(b'weight=\\"5000\\"' in b or b'weight="5000"' in b,
                'the answer shows the metadata: %r' % b)
        x = d.wait_for('db weight 5000', lambda: (
            lambda y: y if y['policy']['weight'] == 5000 else None)(
                d.get('/api/v1/domains/db')))
        t.eq(x['policy']['metadata'].get('weight'), 5000, 'metadata weight')
        after = d.wait_for('db share to grow', lambda: (
            lambda y: y if y > before else None)(
                d.get('/api/v1/domains/db')['decision']['share']))
        t.check(after > before, 'db share %.2f -> %.2f' % (before, after))

        # --- slow client ----------------------------------------------------
        c = socket.create_connection(('127.0.0.1', d.port))
        c.sendall(b'GET /api/v1/host HTTP/1.1\r\nHost: x\r\n')
        c.settimeout(8)
        t0 = time.monotonic()
        try:
            data = c.recv(100)
        except socket.timeout:
            data = None
        c.close()
        t.check(data is not None and time.monotonic() - t0 < 6,
                'a slow client is dropped after the timeout')

        # --- SIGHUP with a new period ------------------------------------
        d.period_ms = 500
        with open(d.conf, 'w') as f:
            f.write(d.config(timeout='2'))
        d.proc.send_signal(signal.SIGHUP)
        d.wait_for('the new period in /api/v1/host', lambda:
                   d.get('/api/v1/host')['period_ms'] == 500)
        m = parse_metrics(d.tcp('GET', '/metrics')[2].decode())
        t.eq(m[('prefcpu_period_seconds', frozenset())], 0.5,
             'the new period in /metrics')

        # --- start-up refusals ------------------------------------------
        same = os.path.join(d.dir, 'same-socket.conf')
        with open(same, 'w') as f:
            f.write(d.config(listen='127.0.0.1:%d' % F.free_port()))
        p = subprocess.run([d.binary, '--config', same, '--foreground'],
                           capture_output=True, text=True, timeout=20)
        t.check(p.returncode != 0 and 'already listening' in p.stderr,
                'a second daemon on the same socket refuses: %r' % p.stderr)
        bad = os.path.join(d.dir, 'public.conf')
        with open(bad, 'w') as f:
            f.write(d.config(listen='0.0.0.0:%d' % F.free_port(),
                             socket=os.path.join(d.dir, 'other.sock')))
        p = subprocess.run([d.binary, '--config', bad, '--foreground'],
                           capture_output=True, text=True, timeout=20)
        t.check(p.returncode != 0 and 'listen-public' in p.stderr,
                'a non-loopback address needs listen-public: %r' % p.stderr)
        t.check(os.path.exists(d.sock), 'the running daemon kept its socket')
        t.eq(oct(os.stat(d.sock).st_mode & 0o777), '0o660', 'socket mode')
    t.check(not os.path.exists(d.sock), 'socket removed at exit')
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')
    t.done()


if __name__ == '__main__':
    main()
