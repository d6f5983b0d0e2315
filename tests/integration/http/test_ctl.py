#!/usr/bin/env python3
"""prefcpuctl against the real prefcpu-hostd: every subcommand, --json
parsed back, exit codes, and a policy change the daemon acts on; tables
that fit an 80-column terminal with a 60-character domain name, sorting,
a readable explain, and one-line usage errors."""
import grp
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402

NAMES = {d[0] for d in F.DEFAULT_DOMAINS}


def main():
    t = F.Checker('test_ctl')
    ctl = F.tool('PREFCPUCTL', '')

    def run(*args, sock=None, stdin=subprocess.DEVNULL, timeout=30):
        return subprocess.run([ctl, '--socket', sock] + list(args),
                              capture_output=True, text=True, stdin=stdin,
                              timeout=timeout)

    # Before any daemon: a clear message and exit 3.
    p = run('status', sock='/nonexistent/prefcpu.sock')
    t.eq(p.returncode, 3, 'no daemon: exit 3')
    t.check('not running' in p.stderr, 'no daemon: says so: %r' % p.stderr)

    p = subprocess.run([ctl, '--help'], capture_output=True, text=True)
    t.eq(p.returncode, 0, '--help exit')
    for cmd in ('status', 'top', 'explain', 'policy'):
        t.check('\n  %s ' % cmd in p.stdout, '--help lists ' + cmd)
    t.eq(subprocess.run([ctl, 'frobnicate'], capture_output=True).returncode,
         2, 'unknown command: exit 2')

    with F.Hostd() as d:
        d.start(wait_periods=5, **{'socket-group': 'nogroup'})
        s = d.sock

        # The socket's group decides who may use it (mode 0660).
        st = os.stat(s)
        t.eq(st.st_gid, grp.getgrnam('nogroup').gr_gid, 'socket group')
        as_nobody = ['setpriv', '--reuid=nobody', '--clear-groups']
        if os.geteuid() != 0 or not shutil.which('setpriv') or \
                subprocess.run(as_nobody + ['--regid=nogroup', ctl,
                                            '--version'],
                               capture_output=True).returncode != 0:
            print('socket permission checks skipped: needs root, setpriv'
                  ' and a prefcpuctl that user nobody can run')
        else:
            path = d.dir
            for part in os.path.relpath(os.path.dirname(s), d.dir).split(
                    os.sep):
                os.chmod(path, 0o755)
                path = os.path.join(path, part)
            os.chmod(path, 0o755)
            p = subprocess.run(as_nobody + ['--regid=nogroup', ctl,
                                            '--socket', s, 'status'],
                               capture_output=True, text=True)
            t.eq(p.returncode, 0, 'a member of the socket group may read: '
                 '%r' % p.stderr)
            p = subprocess.run(as_nobody + ['--regid=daemon', ctl,
                                            '--socket', s, 'status'],
                               capture_output=True, text=True)
            t.eq(p.returncode, 3, 'others may not')
            t.check('Permission denied' in p.stderr and 'group' in p.stderr,
                    'and are told why: %r' % p.stderr)

        api = d.get('/api/v1/domains')
        p = run('status', sock=s)
        t.eq(p.returncode, 0, 'status exit')
        lines = p.stdout.splitlines()
        for x in api['domains']:
            row = [ln for ln in lines if ln.startswith(x['name'] + ' ')]
            t.check(row and row[0].split()[-6] == str(x['policy']['weight']),
                    'status row of %r shows its weight: %r' % (x['name'],
                                                                row))
        t.check('vCPUs 22' in p.stdout, 'status shows the vCPU total')

        p = run('--json', 'status', sock=s)
        t.eq(p.returncode, 0, 'status --json exit')
        j = json.loads(p.stdout)
        t.eq({x['name'] for x in j['domains']}, NAMES, '--json domains')
        t.eq(j['host']['vcpus'], 22, '--json host vcpus')

        p = run('top', '--iterations', '2', sock=s)
        t.eq(p.returncode, 0, 'top exit')
        t.eq(p.stdout.count('NAME '), 2, 'top --iterations 2 draws twice')
        p = run('--json', 'top', '--iterations', '3', sock=s)
        frames = [json.loads(ln) for ln in p.stdout.splitlines()]
        t.eq(len(frames), 3, 'top --json prints one object per period')
        t.check(frames[-1]['host']['period_seq'] >
                frames[0]['host']['period_seq'], 'top refreshes')
        top = subprocess.Popen([ctl, '--socket', s, 'top'],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        time.sleep(1)
        top.stdin.write(b'q')
        top.stdin.flush()
        try:
            rc = top.wait(5)
        except subprocess.TimeoutExpired:
            top.kill()
            rc = top.wait()
        top.stdin.close()
        top.stdout.close()
        top.stderr.close()
        t.eq(rc, 0, 'top quits on q')

        p = run('explain', 'web', sock=s)
        t.eq(p.returncode, 0, 'explain exit')
        t.check('weight 300' in p.stdout, 'explain shows the weight')
        t.check('no maximum' in p.stdout and 'max-cores 0' not in
                p.stdout and ' cpus -' not in p.stdout,
                'explain says "no maximum", no empty cpus: %r' % p.stdout)
        w = d.get('/api/v1/domains/web')['decision']
        t.check('why: ' in p.stdout and 'share' in p.stdout,
                'explain shows the reason and inputs: %r' % p.stdout)
        p = run('--json', 'explain', F.DEFAULT_DOMAINS[3][0], sock=s)
        t.eq(json.loads(p.stdout)['name'], F.DEFAULT_DOMAINS[3][0],
             'explain --json of a name with markup')
        p = run('explain', 'nope', sock=s)
        t.eq(p.returncode, 4, 'explain of an unknown domain: exit 4')
        t.check('nope' in p.stderr, 'names the domain: %r' % p.stderr)
        del w

        p = run('policy', 'db', '--weight', '500', '--dry-run', sock=s)
        t.eq(p.returncode, 0, 'dry-run exit')
        t.eq(p.stdout.strip(),
             "virsh metadata 'db' --uri http://prefcpu.org/xmlns/policy/1 "
             "--key prefcpu --set '<policy weight=\"500\"/>'"
             " --live --config", 'dry-run prints the virsh command')
        p = run('policy', 'batch', '--max-cores', '3', '--dry-run', sock=s)
        t.check('min-cores="2" max-cores="3"' in p.stdout,
                'dry-run keeps attributes set before: %r' % p.stdout)
        for bad in (['--weight', '0'], ['--mode', 'fixed'],
                    ['--cpus', '0-1'], ['--min-cores', '4', '--max-cores',
                                        '2'], ['--mode', 'sideways'],
                    ['--enforce', 'always'], ['--weight', '10001']):
            p = run('policy', 'db', *bad, sock=s)
            t.eq(p.returncode, 2, 'policy %r: exit 2' % bad)
        p = subprocess.run([ctl, '--url', d.url, 'policy', 'db', '--weight',
                            '9'], capture_output=True, text=True)
        t.eq(p.returncode, 1, 'policy over TCP: exit 1')
        t.check('read-only' in p.stderr, 'says why: %r' % p.stderr)
        p = run('policy', 'nope', '--weight', '9', sock=s)
        t.eq(p.returncode, 4, 'policy of an unknown domain: exit 4')

        before = d.get('/api/v1/domains/db')['decision']['share']
        p = run('--json', 'policy', 'db', '--weight', '4000', sock=s)
        t.eq(p.returncode, 0, 'policy exit: %r' % p.stderr)
        t.check('weight=\\"4000\\"' in p.stdout or 'weight="4000"' in
                p.stdout, 'policy prints the metadata: %r' % p.stdout)
        x = d.wait_for('db weight 4000 in explain', lambda: (
            lambda y: y if y['policy']['weight'] == 4000 else None)(
                json.loads(run('--json', 'explain', 'db', sock=s).stdout)))
        t.eq(x['policy']['metadata'].get('weight'), 4000, 'metadata weight')
        after = d.wait_for('db share to grow', lambda: (
            lambda y: y if y > before else None)(
                d.get('/api/v1/domains/db')['decision']['share']))
        t.check(after > before, 'the daemon decided on the new weight: '
                'share %.2f -> %.2f' % (before, after))
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')
    narrow(t, ctl)
    t.done()


LONG = 'web-frontend-production-eu-west-1-customer-portal-replica-42'


def narrow(t, ctl):
    """COLUMNS=80 and a 60-character name: no line wider than 80."""
    assert len(LONG) == 60
    doms = F.DEFAULT_DOMAINS + [(LONG, 2, 1024, {}, 0.5, 0.45)]
    env = dict(os.environ, COLUMNS='80', LANG='C.UTF-8', LC_ALL='C.UTF-8')

    def run(*args, **kw):
        return subprocess.run([ctl, '--socket', d.sock] + list(args),
                              capture_output=True, text=True, timeout=30,
                              env=kw.get('env', env),
                              stdin=subprocess.DEVNULL)
    with F.Hostd(domains=doms) as d:
        d.start(wait_periods=4)
        for args in (['status'], ['top', '--iterations', '1'],
                     ['status', '--sort', 'vcpus']):
            p = run(*args)
            t.eq(p.returncode, 0, '%s exit' % args)
            widest = max(len(x) for x in p.stdout.splitlines())
            t.check(widest <= 80, '%s in 80 columns: widest line %d:\n%s'
                    % (args, widest, p.stdout))
            t.check(LONG[:14] in p.stdout and LONG not in p.stdout and
                    '\u2026' in p.stdout,
                    '%s: the long name is cut with an ellipsis' % args)
        p = run('status', '--wide')
        t.check(LONG in p.stdout and max(
            len(x) for x in p.stdout.splitlines()) > 80,
            'status --wide shows the whole name')
        p = run('status', env=dict(env, COLUMNS='200'))
        t.check(LONG in p.stdout, 'COLUMNS=200 shows the whole name')

        # Sorting: rows in the order of the API's figures.
        api = d.get('/api/v1/domains')['domains']

        def order(out):
            names = [x['name'] for x in api]
            rows = []
            for ln in out.splitlines():
                for n in names:
                    if ln.startswith(n[:12]) and n not in rows:
                        rows.append(n)
            return rows
        p = run('status', '--wide', '--sort', 'name')
        t.eq(order(p.stdout), sorted(x['name'] for x in api),
             'status --sort name')
        p = run('status', '--wide', '--sort', 'vcpus')
        vc = [next(x['vcpus'] for x in api if x['name'] == n)
              for n in order(p.stdout)]
        t.eq(vc, sorted(vc, reverse=True), '--sort vcpus: most first')
        p = run('top', '--wide', '--iterations', '1')
        # The figures move between two requests: compare the order the
        # table shows with its own DELAY% column.
        col = None
        delays = []
        for ln in p.stdout.splitlines():
            if ln.startswith('NAME '):
                col = ln.split().index('DELAY%') - len(ln.split())
            elif col is not None and ln.strip():
                delays.append(float(ln.split()[col]))
        t.check(len(delays) == len(api) and delays == sorted(
            delays, reverse=True), 'top sorts by run delay share: %r'
            % delays)

        # explain: no empty fields, yes/no.
        p = run('explain', 'db')
        t.eq(p.returncode, 0, 'explain exit')
        t.check(' , ' not in p.stdout and ', ,' not in p.stdout and
                'backend ,' not in p.stdout, 'explain has no empty field:'
                ' %r' % p.stdout)
        t.check('agent: none (the domain has no org.prefcpu.0 channel)\n'
                in p.stdout, 'explain says what "none" means')
        t.check('contended yes' in p.stdout and 'true' not in p.stdout,
                'explain says yes/no: %r' % p.stdout)
        t.check('run delay share' in p.stdout and '% of its vCPU time'
                in p.stdout, 'explain names the figure')

        # Usage errors: one line, naming the argument (and the range).
        for args, want in (
                (['explain'], 'explain: missing DOMAIN'),
                (['status', '--sort', 'cpu'],
                 "status: --sort 'cpu': expected delay, name or vcpus"),
                (['top', '--iterations', '0'],
                 "top: --iterations '0': expected an integer 1..4294967295"),
                (['status', '--bogus'], 'status: unknown option --bogus'),
                (['status', 'extra'], "status: unexpected argument 'extra'"),
                (['frobnicate'], "unknown command 'frobnicate'"),
                ([], 'missing COMMAND'),
                (['--bogus', 'status'], 'unknown option --bogus')):
            p = run(*args)
            lines = p.stderr.splitlines()
            t.check(p.returncode == 2 and len(lines) == 1 and
                    want in lines[0], 'usage error %r: exit %d, %r' % (
                        args, p.returncode, p.stderr))
        p = run('status', '--json')
        t.eq(p.returncode, 0, 'status --json (after the command) works')
        t.eq(len(json.loads(p.stdout)['domains']), len(doms),
             'status --json parses')
    t.check(d.clean_exit, 'prefcpu-hostd exits cleanly on SIGTERM')


if __name__ == '__main__':
    main()
