#!/usr/bin/env python3
"""Headless Chromium loads the dashboard from the real prefcpu-hostd: the
VM rows must match /api/v1/domains, a domain name and a guest agent's
texts holding markup must show as text, and a screenshot is kept under
the build directory.  One VM has a (fake) guest agent on its channel, so
targets are sent and acked as on a real host."""
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402

AGENT = "<script>document.title='pwned'</script>agent"
KERNEL = '6.12<img src=x onerror="document.title=2">'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
         '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync',
         # Let the page's fetches and timers run before the dump.
         '--virtual-time-budget=6000']


class Dom(html.parser.HTMLParser):
    """Rows of #vms, every element's tag, and the title."""

    def __init__(self):
        super().__init__()
        self.rows = []
        self.tags = []
        self.title = ''
        self.cell = None
        self.in_tbody = False
        self.in_title = False
        self.ready = False
        self.period = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == 'body' and a.get('data-ready') == '1':
            self.ready = True
        if tag == 'tbody':
            self.in_tbody = True
            self.period = int(a.get('data-period', 0))
        elif tag == 'tr' and self.in_tbody:
            self.rows.append({'uuid': a.get('data-uuid')})
        elif tag == 'td' and self.in_tbody:
            self.cell = a.get('class', '').split()[-1]
            self.rows[-1][self.cell] = ''
        elif tag == 'title':
            self.in_title = True

    def handle_endtag(self, tag):
        if tag == 'tbody':
            self.in_tbody = False
        elif tag == 'td':
            self.cell = None
        elif tag == 'title':
            self.in_title = False

    def handle_data(self, data):
        if self.cell is not None:
            self.rows[-1][self.cell] += data
        if self.in_title:
            self.title += data


def main():
    chromium = shutil.which('chromium')
    if chromium is None:
        print('chromium is not installed (Debian package chromium)')
        sys.exit(F.SKIP)
    t = F.Checker('test_browser')
    out_dir = os.path.join(os.environ.get('PREFCPU_BUILD_DIR', '.'),
                           'tests', 'integration', 'http')
    os.makedirs(out_dir, exist_ok=True)
    shot = os.path.join(out_dir, 'dashboard.png')
    with F.Hostd(observe=False, agents={'web': (AGENT, KERNEL)}) as d:
        d.start(wait_periods=8)
        web = d.wait_for('the agent of web to follow', lambda: (
            lambda x: x if x['agent']['state'] == 'following' and
            x['applied']['vcpus'] == x['decision']['vcpus'] else None)(
                d.get('/api/v1/domains/web')))
        t.eq(web['agent']['agent'], AGENT, 'guest text kept verbatim')
        t.eq(web['agent']['kernel'], KERNEL, 'guest kernel text verbatim')
        t.eq(web['applied']['cpus'], web['target']['preferred'],
             'applied = target')
        t.eq(web['agent']['report']['steal_pct'], 12.5, 'guest report')
        profile = tempfile.mkdtemp(prefix='prefcpu-chromium-', dir=d.dir)
        p = subprocess.run([chromium] + FLAGS + [
            '--user-data-dir=' + profile, '--dump-dom', d.url + '/'],
            capture_output=True, text=True, timeout=120)
        t.eq(p.returncode, 0, 'chromium --dump-dom')
        api = {x['uuid']: x for x in d.get('/api/v1/domains')['domains']}
        dom = Dom()
        dom.feed(p.stdout)
        t.check(dom.ready, 'the page rendered data (body data-ready)')
        t.eq({r['uuid'] for r in dom.rows}, set(api), 'one row per VM')
        # The figures of the period the table shows, from the history.
        hist = {p['seq']: p for p in d.get('/api/v1/history')['periods']}
        shown = hist.get(dom.period)
        t.check(shown is not None, 'the period shown (%r) is in the history'
                % dom.period)
        at = {x['uuid']: x for x in (shown or {'domains': []})['domains']}
        for r in dom.rows:
            x = api.get(r['uuid'])
            if x is None:
                continue
            t.eq(r.get('name'), x['name'], 'row name')
            t.eq(r.get('vcpus'), str(x['vcpus']), 'vCPUs of %r' % x['name'])
            t.eq(r.get('weight'), str(x['policy']['weight']),
                 'weight of %r' % x['name'])
            h = at.get(r['uuid'])
            if h is None:
                t.check(False, '%r in the period shown' % x['name'])
                continue
            t.eq(r.get('reason'), h['reason'], 'decision of %r' % x['name'])
            t.check(r.get('preferred', '').endswith(
                '(%d)' % h['preferred_vcpus']),
                'preferred of %r: %r vs %d' % (x['name'], r.get('preferred'),
                                               h['preferred_vcpus']))
            t.eq(r.get('delay'), '%.1f' % h['run_delay_pct'],
                 'run delay %% of %r' % x['name'])
            if x['applied']['cpus'] is None:
                t.eq(r.get('applied'), '–', 'applied of %r' % x['name'])
        webrow = [r for r in dom.rows if r.get('name') == 'web']
        t.check(webrow and re.match(r'^[0-9,-]+ \(\d+\)$',
                                    webrow[0].get('applied', '')),
                'what the guest of web applied: %r' % webrow)
        evil = F.DEFAULT_DOMAINS[3][0]
        t.check(any(r.get('name') == evil for r in dom.rows),
                'the name with markup shows as text')
        t.check(any(r.get('agent-following') == 'following · ' + AGENT
                    for r in dom.rows),
                'the guest agent text shows as text: %r' % [
                    r.get('agent-following') for r in dom.rows])
        t.eq([tag for tag, _ in dom.tags if tag in ('img', 'b')], [],
             'no element was made from a domain name or guest text')
        t.eq([a.get('src') for tag, a in dom.tags if tag == 'script'],
             ['/static/app.js'], 'the only script is the dashboard')
        t.eq(dom.title, 'prefcpu', 'no script from a name or a guest ran')

        p = subprocess.run([chromium] + FLAGS + [
            '--user-data-dir=' + profile, '--window-size=1400,1800',
            '--screenshot=' + shot, d.url + '/'],
            capture_output=True, text=True, timeout=120)
        t.check(p.returncode == 0 and os.path.getsize(shot) > 10000,
                'screenshot saved')
        print('screenshot: ' + shot)
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')

    # Many VMs: every one in the table, no per-VM charts.
    many = [('vm%02d' % i, 2, 1024, {}, 0.5, 0.2) for i in range(30)]
    with F.Hostd(domains=many) as d:
        d.start(wait_periods=4)
        profile = tempfile.mkdtemp(prefix='prefcpu-chromium-', dir=d.dir)
        p = subprocess.run([chromium] + FLAGS + [
            '--user-data-dir=' + profile, '--dump-dom', d.url + '/'],
            capture_output=True, text=True, timeout=120)
        dom = Dom()
        dom.feed(p.stdout)
        t.eq(sorted(r.get('name') for r in dom.rows),
             sorted(x[0] for x in many), '30 VMs, 30 rows')
        t.check('30 VMs: too many to chart' in p.stdout,
                'per-VM charts give way to a note')
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')
    t.done()


if __name__ == '__main__':
    main()
