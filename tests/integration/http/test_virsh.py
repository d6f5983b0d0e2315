#!/usr/bin/env python3
"""prefcpuctl policy on a real libvirtd: the metadata it writes is what
`virsh metadata` prints (live and persistent), the daemon decides with it
within a period, and the --dry-run command line does the same thing.

Needs root and libvirtd (started here if absent, and stopped again); the
domain is a TCG guest with no disk, so it runs its firmware only."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostd_fixture as F  # noqa: E402

URI = 'qemu:///system'
NAME = 'prefcpu-http-test-%d' % os.getpid()


def virsh(*args, check=True):
    p = subprocess.run(['virsh', '-c', URI] + list(args),
                       capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise RuntimeError('virsh %s: %s' % (' '.join(args), p.stderr))
    return p


def start_libvirtd():
    """The daemons we started (none if libvirtd already answered).  They
    run in the foreground as our children, so that we reap them."""
    if virsh('version', check=False).returncode == 0:
        return []
    if os.geteuid() != 0 or not shutil.which('libvirtd'):
        print('libvirtd is not running and cannot be started (needs root)')
        sys.exit(F.SKIP)
    started = []
    for daemon in ('virtlogd', 'libvirtd'):
        if subprocess.run(['pgrep', '-x', daemon],
                          capture_output=True).returncode == 0:
            continue
        started.append(subprocess.Popen([daemon], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))
    for _ in range(100):
        if virsh('version', check=False).returncode == 0:
            return started
        time.sleep(0.1)
    print('libvirtd did not answer')
    stop_libvirtd(started)
    sys.exit(F.SKIP)


def stop_libvirtd(procs):
    for p in reversed(procs):
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    ctl = F.tool('PREFCPUCTL', '')
    hostd = F.tool('PREFCPU_HOSTD', '')
    if not shutil.which('virsh') or not shutil.which('qemu-system-x86_64'):
        print('virsh or qemu-system-x86_64 is missing')
        sys.exit(F.SKIP)
    t = F.Checker('test_virsh')
    started = start_libvirtd()
    tmp = tempfile.mkdtemp(prefix='prefcpu-virsh-')
    proc = None
    try:
        xml = os.path.join(tmp, 'dom.xml')
        with open(xml, 'w') as f:
            f.write("<domain type='qemu'><name>%s</name>"
                    "<memory unit='MiB'>64</memory><vcpu>2</vcpu>"
                    "<os><type arch='x86_64' machine='pc'>hvm</type></os>"
                    "<features><acpi/><apic/></features>"
                    "<devices/></domain>"
                    % NAME)
        virsh('define', xml)
        virsh('start', NAME)

        sock = os.path.join(tmp, 'hostd.sock')
        conf = os.path.join(tmp, 'hostd.conf')
        with open(conf, 'w') as f:
            f.write('[hostd]\nuri = %s\nperiod-ms = 300\nobserve = yes\n'
                    '[http]\nlisten = 127.0.0.1:%d\nsocket = %s\n'
                    % (URI, F.free_port(), sock))
        log = open(os.path.join(tmp, 'hostd.log'), 'w')
        proc = subprocess.Popen([hostd, '--config', conf, '--foreground'],
                                stdout=log, stderr=subprocess.STDOUT)

        def explain():
            p = subprocess.run([ctl, '--socket', sock, '--json', 'explain',
                                NAME], capture_output=True, text=True)
            return json.loads(p.stdout) if p.returncode == 0 else None

        def wait(what, pred):
            return F.wait_for(what, pred, timeout=20, interval=0.2)

        x = wait('the daemon to track the domain', lambda: (
            lambda e: e if e and e.get('decision') else None)(explain()))
        t.eq(x['vcpus'], 2, 'the daemon sees 2 vCPUs')

        p = subprocess.run([ctl, '--socket', sock, 'policy', NAME,
                            '--weight', '777', '--min-cores', '1'],
                           capture_output=True, text=True)
        t.eq(p.returncode, 0, 'prefcpuctl policy: %r' % p.stderr)
        for where in ('--live', '--config'):
            out = virsh('metadata', NAME, '--uri', F.POLICY_NS, where).stdout
            t.check('weight="777"' in out and 'min-cores="1"' in out,
                    'virsh metadata %s shows it: %r' % (where, out))
        x = wait('weight 777 in the daemon', lambda: (
            lambda e: e if e and e['policy']['weight'] == 777 else None)(
                explain()))
        t.eq(x['policy']['min_cores'], 1, 'min-cores in the daemon')

        p = subprocess.run([ctl, '--socket', sock, 'policy', NAME,
                            '--weight', '555', '--dry-run'],
                           capture_output=True, text=True)
        t.eq(p.returncode, 0, 'dry-run')
        cmd = p.stdout.strip().replace(
            'virsh metadata', 'virsh -c %s metadata' % URI, 1)
        p = subprocess.run(['sh', '-c', cmd], capture_output=True, text=True)
        t.eq(p.returncode, 0, 'the printed virsh command runs: %r' % p.stderr)
        x = wait('weight 555 from virsh', lambda: (
            lambda e: e if e and e['policy']['weight'] == 555 else None)(
                explain()))
        t.eq(x['policy']['min_cores'], 1, 'dry-run kept min-cores')
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                t.eq(proc.wait(15), 0, 'prefcpu-hostd exit')
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        virsh('destroy', NAME, check=False)
        virsh('undefine', NAME, check=False)
        stop_libvirtd(started)
        shutil.rmtree(tmp, ignore_errors=True)
    t.done()


if __name__ == '__main__':
    main()
