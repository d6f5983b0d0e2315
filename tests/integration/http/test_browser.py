#!/usr/bin/env python3
"""Headless Chromium loads the dashboard from the real prefcpu-hostd: the
VM rows must match /api/v1/domains, a domain name holding markup must
show as text, and a screenshot is kept under the build directory."""
import html.parser
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402

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

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == 'body' and a.get('data-ready') == '1':
            self.ready = True
        if tag == 'tbody':
            self.in_tbody = True
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
    with F.Hostd() as d:
        d.start(wait_periods=8)
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
        for r in dom.rows:
            x = api.get(r['uuid'])
            if x is None:
                continue
            t.eq(r.get('name'), x['name'], 'row name')
            t.eq(r.get('vcpus'), str(x['vcpus']), 'vCPUs of %r' % x['name'])
            t.eq(r.get('weight'), str(x['policy']['weight']),
                 'weight of %r' % x['name'])
            t.eq(r.get('reason'), x['decision']['reason'],
                 'decision of %r' % x['name'])
            t.check(r.get('preferred', '').endswith(
                '(%d)' % x['decision']['vcpus']),
                'preferred of %r: %r vs %d' % (x['name'], r.get('preferred'),
                                               x['decision']['vcpus']))
            t.check(abs(float(r.get('delay', 'nan')) -
                        x['usage']['run_delay_pct']) < 10,
                    'run delay of %r' % x['name'])
        evil = F.DEFAULT_DOMAINS[3][0]
        t.check(any(r.get('name') == evil for r in dom.rows),
                'the name with markup shows as text')
        t.eq([tag for tag, _ in dom.tags if tag in ('img', 'b')], [],
             'no element was made from a domain name')
        t.eq(dom.title, 'prefcpu', 'no script from a domain name ran')

        p = subprocess.run([chromium] + FLAGS + [
            '--user-data-dir=' + profile, '--window-size=1400,1800',
            '--screenshot=' + shot, d.url + '/'],
            capture_output=True, text=True, timeout=120)
        t.check(p.returncode == 0 and os.path.getsize(shot) > 10000,
                'screenshot saved')
        print('screenshot: ' + shot)
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')
    t.done()


if __name__ == '__main__':
    main()
