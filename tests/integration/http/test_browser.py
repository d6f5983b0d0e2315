#!/usr/bin/env python3
"""Headless Chromium loads the dashboard from the real prefcpu-hostd: the
VM rows must match /api/v1/domains, a domain name and a guest agent's
texts holding markup must show as text, and a screenshot is kept under
the build directory.  One VM has a (fake) guest agent on its channel, so
targets are sent and acked as on a real host."""
import html.parser
import json
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


class Page(html.parser.HTMLParser):
    """What the scale checks read: tiles with their units, VM rows, small
    multiples with their colours, the run delay chart's series, and
    whether the empty state shows."""

    def __init__(self):
        super().__init__()
        self.cards = []         # [attrs, text of .u]
        self.rows = []          # data-uuid of #vms rows
        self.multiples = []     # (uuid, colour, caption text)
        self.series = None
        self.empty_hidden = None
        self.ready = False
        self.stack = []
        self.in_unit = False
        self.in_caption = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get('class') or '').split()
        if tag == 'body' and a.get('data-ready') == '1':
            self.ready = True
        if 'card' in cls:
            self.cards.append([a, ''])
        if tag == 'span' and 'u' in cls and self.cards:
            self.in_unit = True
        if tag == 'tr' and a.get('data-uuid'):
            self.rows.append(a['data-uuid'])
        if tag == 'figure' and 'multiple' in cls:
            self.multiples.append([a.get('data-uuid'), a.get('data-color'),
                                   ''])
        if tag == 'figcaption' and self.multiples and \
                self.multiples[-1][2] == '':
            self.in_caption = self.multiples[-1]
        if a.get('id') == 'fig-delay':
            self.series = json.loads(a.get('data-series') or '[]')
        if a.get('id') == 'empty':
            self.empty_hidden = 'hidden' in a

    def handle_endtag(self, tag):
        if tag == 'span':
            self.in_unit = False
        if tag == 'figcaption':
            self.in_caption = None

    def handle_data(self, data):
        if self.in_unit:
            self.cards[-1][1] += data
        if self.in_caption is not None:
            self.in_caption[2] += data


# Names as operators give them: short, long, with dots and dashes.
def vm_name(i):
    if i % 7 == 3:
        return 'customer-portal-frontend-production-replica-%03d' % i
    return ('db%02d.eu-west' if i % 2 else 'web-%03d') % i


def scale(t, chromium, out_dir, n):
    """n VMs on the synthetic host: screenshot, and in the DOM every VM
    reachable (a row and a small multiple), the first 20 series in 20
    colours, a unit on every tile, and the empty state for none."""
    doms = [(vm_name(i), 2 + 2 * (i % 3), 1024, {}, 0.3 + 0.05 * (i % 8),
             0.02 * (i % 11)) for i in range(n)]
    shot = os.path.join(out_dir, 'dashboard-%03d-vms.png' % n)
    # Many VMs: the synthetic host's writer rewrites fewer times a second.
    with F.Hostd(domains=doms, period_ms=1000) as d:
        d.start(wait_periods=4, need_domains=n > 0,
                load_interval=0.05 if n < 20 else 0.4)
        profile = tempfile.mkdtemp(prefix='prefcpu-chromium-', dir=d.dir)
        p = subprocess.run([chromium] + FLAGS + [
            '--user-data-dir=' + profile, '--window-size=1400,1000',
            '--dump-dom', d.url + '/'],
            capture_output=True, text=True, timeout=240)
        page = Page()
        page.feed(p.stdout)
        api = d.get('/api/v1/domains')['domains']
        t.check(page.ready, '%d VMs: the page rendered data' % n)
        t.eq(len(api), n, '%d VMs in the API' % n)
        uuids = {x['uuid'] for x in api}
        t.eq(set(page.rows), uuids, '%d VMs: one table row per VM' % n)
        t.eq({m[0] for m in page.multiples}, uuids,
             '%d VMs: one small multiple per VM' % n)
        names = {x['uuid']: x['name'] for x in api}
        t.check(all(names.get(m[0], '?') in m[2] for m in page.multiples),
                '%d VMs: each small multiple names its VM' % n)
        first = [m[1] for m in page.multiples[:20]]
        t.eq(len(set(first)), len(first),
             '%d VMs: the first 20 small multiples have distinct colours'
             % n)
        ser = page.series or []
        t.eq(len(ser), min(n, 20), '%d VMs: the run delay chart draws the'
             ' %d most delayed' % (n, min(n, 20)))
        t.eq(len({x['color'] for x in ser}), len(ser),
             '%d VMs: no two run delay series share a colour' % n)
        delays = {x['uuid']: x['usage']['run_delay_pct'] for x in api}
        order = [delays[m[0]] for m in page.multiples if m[0] in delays]
        # Figures move between the page's request and ours: allow a
        # little disorder, but the most delayed come first.
        t.check(not order or (sum(order[:len(order) // 2 or 1]) /
                              (len(order) // 2 or 1) >= sum(order) /
                              len(order) - 1e-9),
                '%d VMs: small multiples sorted by contention' % n)
        t.check(len(page.cards) >= 10, '%d VMs: the tiles' % n)
        nounit = [c[0].get('data-key') for c in page.cards
                  if not c[0].get('data-unit') or not c[1].strip()]
        t.eq(nounit, [], '%d VMs: every tile shows a unit' % n)
        t.eq(page.empty_hidden, n > 0,
             '%d VMs: the empty state shows exactly when there are none'
             % n)
        # On a loaded machine the virtual clock of a page refreshing 100+
        # charts may stall: one more try before failing.
        for attempt in (1, 2):
            try:
                p = subprocess.run([chromium] + FLAGS + [
                    '--user-data-dir=' + profile, '--window-size=1400,2000',
                    '--screenshot=' + shot, d.url + '/'],
                    capture_output=True, text=True, timeout=180)
                break
            except subprocess.TimeoutExpired:
                print('%d VMs: chromium --screenshot timed out (try %d)'
                      % (n, attempt))
                if attempt == 2:
                    raise
        t.check(p.returncode == 0 and os.path.getsize(shot) > 10000,
                '%d VMs: screenshot saved' % n)
        print('screenshot (%d VMs): %s' % (n, shot))
    t.check(d.clean_exit, '%d VMs: prefcpu-hostd exits cleanly' % n)


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
        t.eq((web['agent']['report']['runnable'],
              web['agent']['report']['nr_running']), (4.6, 5),
             'the mean runnable tasks as the guest sent them, and rounded')
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
             ['/static/chart.min.js', '/static/app.js'],
             'the only scripts are Chart.js and the dashboard, both served'
             ' by the daemon')
        t.eq(dom.title, 'prefcpu', 'no script from a name or a guest ran')

        p = subprocess.run([chromium] + FLAGS + [
            '--user-data-dir=' + profile, '--window-size=1400,1800',
            '--screenshot=' + shot, d.url + '/'],
            capture_output=True, text=True, timeout=120)
        t.check(p.returncode == 0 and os.path.getsize(shot) > 10000,
                'screenshot saved')
        print('screenshot: ' + shot)
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')

    for n in (0, 6, 30, 120):
        scale(t, chromium, out_dir, n)
    t.done()


if __name__ == '__main__':
    main()
