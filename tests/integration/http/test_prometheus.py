#!/usr/bin/env python3
"""A real Prometheus scrapes prefcpu-hostd's /metrics; its query API must
return the same figures as /api/v1, and the scrape must be error-free."""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402


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
