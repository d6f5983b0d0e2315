#!/usr/bin/env python3
"""A real Prometheus scrapes prefcpu-hostd's /metrics; its query API must
return the same figures as /api/v1, and the scrape must be error-free.
The Grafana dashboard's and the alert rule's run delay share, evaluated
by that Prometheus, must be the API's run_delay_pct of the same VM, and
the per-vCPU counters (libvirt exporters' names) must add up to the
per-domain ones."""
import json
import re
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402


DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                      '..', 'deploy')


def grafana_expr(title_start):
    """The query of the dashboard panel whose title starts so, with the
    variables as Grafana fills them for one domain of every instance."""
    with open(os.path.join(DEPLOY, 'grafana', 'prefcpu-dashboard.json')) as f:
        panels = json.load(f)['panels']
    for p in panels:
        if p.get('title', '').startswith(title_start):
            return p['targets'][0]['expr']
    raise AssertionError('no panel %r in the dashboard' % title_start)


def alert_expr(name):
    """The expression of an alert rule, read as plain text (no yaml module
    in the standard library): the folded block after its 'expr: >-'."""
    with open(os.path.join(DEPLOY, 'prometheus', 'prefcpu-alerts.yml')) as f:
        text = f.read()
    m = re.search(r'- alert: %s\n\s+expr: >-\n((?:\s{10}.*\n)+)' % name,
                  text)
    if m is None:
        raise AssertionError('no alert %s' % name)
    return ' '.join(x.strip() for x in m.group(1).splitlines())


def check_figures(t, d, q):
    """Run delay share: API = Grafana = alert, for the same VM."""
    # rate() over a window the series does not fill yet underestimates:
    # wait until 10 s windows lie wholly inside the scraped time.
    d.wait_for('a full rate window', lambda: q(
        'count_over_time(prefcpu_domain_vcpu_run_delay_seconds_total'
        '{domain="db"}[20s]) >= 15'), timeout=40)
    # The API's figure is one period's, Prometheus's a 10 s rate: compare
    # the rate with the API's figures averaged over the same 10 s (one
    # period alone moves with the machine's load).
    sums = {}
    for _ in range(10):
        for x in d.get('/api/v1/domains')['domains']:
            sums.setdefault(x['name'], []).append(
                x['usage']['run_delay_pct'])
        time.sleep(1)
    apis = {k: sum(v) / len(v) for k, v in sums.items()}
    api = apis['db']
    # The synthetic db: 8 vCPUs, each waiting 0.3 s per second.
    t.check(abs(api - 30) < 5, 'API run delay share of db near 30%%: %.1f'
            % api)
    graf = grafana_expr('Run delay share by domain')
    graf = graf.replace('$instance', '.*').replace('$domain', 'db') \
        .replace('$__rate_interval', '10s')
    res = q(graf)
    t.eq(len(res), 1, 'the Grafana query gives one series for db')
    if res:
        g = float(res[0]['value'][1])
        t.check(abs(g - api) < max(3, 0.1 * api),
                'Grafana run delay share of db %.1f = API %.1f' % (g, api))
    rule = alert_expr('PrefcpuHighRunDelay')
    lhs, thr = rule.rsplit(' > ', 1)
    res = q(lhs.replace('[10m]', '[10s]'))
    vals = {r['metric']['domain']: float(r['value'][1]) for r in res}
    t.check('db' in vals and abs(vals['db'] - api) < max(3, 0.1 * api),
            'alert rule run delay share of db %r = API %.1f' % (
                vals.get('db'), api))
    for name, a in sorted(apis.items()):
        if name in vals:
            t.check(abs(vals[name] - a) < max(3, 0.1 * a),
                    'alert figure of %r %.1f = API %.1f' % (
                        name, vals[name], a))
    t.check(float(thr) == 10, 'alert threshold %s%% of vCPU time' % thr)
    # Per vCPU: one series per vCPU, labelled as libvirt's exporters do,
    # adding up to the per-domain counter.
    per = q('prefcpu_domain_vcpu_delay_seconds_total{domain="db"}')
    t.eq(sorted(int(r['metric']['vcpu']) for r in per), list(range(8)),
         'one delay series per vCPU of db, vcpu="0".."7"')
    tot = q('sum by (domain) (prefcpu_domain_vcpu_delay_seconds_total'
            '{domain="db"}) - on (domain) '
            'prefcpu_domain_vcpu_run_delay_seconds_total{domain="db"}')
    t.check(tot and abs(float(tot[0]['value'][1])) < 1e-6,
            'per-vCPU delay counters add up to the domain\'s: %r' % tot)
    per = q('prefcpu_domain_vcpu_time_seconds_total{domain="web"}')
    t.eq(len(per), 4, 'one run time series per vCPU of web')


def main():
    prom = shutil.which('prometheus')
    if prom is None:
        print('prometheus is not installed (Debian package prometheus)')
        sys.exit(F.SKIP)
    t = F.Checker('test_prometheus')
    with F.Hostd() as d:
        d.start()
        port = F.free_port()
        cfg = os.path.join(d.dir, 'prometheus.yml')
        with open(cfg, 'w') as f:
            f.write('global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n'
                    'scrape_configs:\n  - job_name: prefcpu\n'
                    '    static_configs:\n'
                    "      - targets: ['127.0.0.1:%d']\n" % d.port)
        log = open(os.path.join(d.dir, 'prometheus.log'), 'w')
        p = subprocess.Popen([prom, '--config.file=' + cfg,
                              '--storage.tsdb.path=' + os.path.join(
                                  d.dir, 'tsdb'),
                              '--web.listen-address=127.0.0.1:%d' % port],
                             stdout=log, stderr=subprocess.STDOUT)
        base = 'http://127.0.0.1:%d' % port

        def q(expr):
            url = base + '/api/v1/query?' + urllib.parse.urlencode(
                {'query': expr})
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.load(r)['data']['result']

        def ready():
            try:
                return q('prefcpu_domain_preferred_vcpus')
            except OSError:
                return None
        try:
            res = d.wait_for('Prometheus to scrape', ready, timeout=60)
            with urllib.request.urlopen(base + '/api/v1/targets',
                                        timeout=5) as r:
                targets = json.load(r)['data']['activeTargets']
            t.eq([x['health'] for x in targets], ['up'], 'target is up')
            t.eq([x['lastError'] for x in targets], [''],
                 'scrape without errors (the text format parses)')

            host = d.get('/api/v1/host')
            t.eq(float(q('prefcpu_host_vcpus')[0]['value'][1]),
                 float(host['vcpus']), 'host vCPUs through Prometheus')
            t.eq(float(q('prefcpu_host_pcpus')[0]['value'][1]),
                 float(host['pcpus']), 'host pCPUs through Prometheus')
            doms = {x['name']: x for x in d.get('/api/v1/domains')[
                'domains']}
            got = {r['metric']['domain']: float(r['value'][1])
                   for r in q('prefcpu_domain_weight')}
            t.eq(got, {n: float(x['policy']['weight'])
                       for n, x in doms.items()},
                 'weights of every domain, a name with markup included')
            res = q('prefcpu_domain_vcpus{domain="web"}')
            t.eq(float(res[0]['value'][1]), 4.0, 'label selector')
            # Prometheus itself is a client of the TCP listener: the
            # scrape being answered is one connection served, and every
            # scrape so far was accepted.
            conns = {r['metric']['listener']: float(r['value'][1])
                     for r in q('prefcpu_http_connections')}
            t.check(1 <= conns.get('tcp', 0) <= 128, 'TCP connections '
                    'served while scraped: %s (max-connections 128)' % conns)
            t.check('unix' in conns, 'the unix listener has its series')
            acc = q('prefcpu_http_connections_accepted_total'
                    '{listener="tcp"}')
            t.check(acc and float(acc[0]['value'][1]) >= 1,
                    'accepted TCP connections counted: %s' % acc)
            d.wait_for('five scrapes', lambda: q(
                'count_over_time(prefcpu_domain_vcpu_run_delay_seconds_total'
                '{domain="db"}[10s]) >= 5'), timeout=30)
            # The slope of the stored samples against the API's rate.
            vals = q('prefcpu_domain_vcpu_run_delay_seconds_total'
                     '{domain="db"}[10s]')[0]['values']
            slope = (float(vals[-1][1]) - float(vals[0][1])) / (
                vals[-1][0] - vals[0][0])
            api = d.get('/api/v1/domains/db')['usage']['run_delay_cpus']
            # The API's figure is one period; the slope averages ten, and
            # the fake host's writer jitters under load: within 35%
            # catches a wrong unit (ns, per vCPU) without flaking.
            t.check(abs(slope - api) < max(0.5, 0.35 * api),
                    'run delay counter grows at the API rate: %.2f vs %.2f'
                    % (slope, api))
            check_figures(t, d, q)
        finally:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            log.close()
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')
    t.done()


if __name__ == '__main__':
    main()
