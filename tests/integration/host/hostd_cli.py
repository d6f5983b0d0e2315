#!/usr/bin/env python3
"""prefcpu-hostd's command line, configuration and signals, without root.

Drives the real binary: --version, --dump-config (and that its output loads
back), --check-config with good and bad files (file:line, exit 1, refusal
to start), command-line overrides, every option documented in the man
page, then a run against libvirt's in-process test driver (test:///default)
on a synthetic /proc, /sys and cgroup tree: the test driver's domain is
tracked, SIGHUP reloads (a bad file keeps the running configuration),
SIGTERM exits 0.

usage: hostd_cli.py HOSTD MANPAGE_SCD
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)
    print("hostd_cli: ok: " + what, flush=True)


def run(hostd, *args):
    return subprocess.run([hostd, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=30)


def put(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def wait_log(logf, pattern, since=0, timeout=10, proc=None):
    rx = re.compile(pattern, re.M)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(logf) as f:
            m = rx.search(f.read(), since)
        if m:
            return m
        if proc is not None and proc.poll() is not None:
            raise Fail("prefcpu-hostd exited (%d) waiting for %r"
                       % (proc.returncode, pattern))
        time.sleep(0.05)
    with open(logf) as f:
        tail = f.read()[-2000:]
    raise Fail("no %r in the log within %d s; log tail:\n%s"
               % (pattern, timeout, tail))


def cli(hostd, man, tmp):
    p = run(hostd, "--version")
    check(p.returncode == 0 and re.match(r"prefcpu-hostd \d+\.\d+", p.stdout),
          "--version prints the version")

    p = run(hostd, "--config", os.path.join(tmp, "none.conf"),
            "--dump-config")
    check(p.returncode != 0 and "none.conf" in p.stderr,
          "a missing --config file is an error naming it")

    conf = put(tmp, "good.conf", "[hostd]\nperiod-ms = 250\n"
               "[policy]\nheadroom = 1.25\n")
    p = run(hostd, "--config", conf, "--observe", "--uri", "test:///default",
            "--dump-config")
    check(p.returncode == 0, "--dump-config exits 0")
    dump = p.stdout
    check(re.search(r"^period-ms = 250$", dump, re.M) and
          re.search(r"^headroom = 1\.25$", dump, re.M),
          "--dump-config shows values from the file")
    check(re.search(r"^observe = (yes|true|on|1)$", dump, re.M) and
          re.search(r"^uri = \"?test:///default\"?$", dump, re.M),
          "--dump-config shows command-line overrides")
    again = put(tmp, "dump.conf", dump)
    p = run(hostd, "--config", again, "--check-config")
    check(p.returncode == 0, "the dump loads back (--check-config)")

    # Every option of the table is in the man page.
    with open(man) as f:
        page = f.read()
    names = re.findall(r"^([a-z][a-z0-9-]*) = ", dump, re.M)
    missing = [n for n in names if n not in page]
    check(len(names) > 10 and not missing,
          "every option is documented in %s (missing: %s)"
          % (os.path.basename(man), ", ".join(missing) or "none"))

    bad = put(tmp, "bad.conf", "[hostd]\n# fine\nperiod-ms = 20\n")
    p = run(hostd, "--config", bad, "--check-config")
    check(p.returncode == 1 and "%s:3: period-ms: 20 is below the minimum"
          % bad in p.stderr, "--check-config names file:line of a bad value")
    p = run(hostd, "--config", bad, "--foreground")
    check(p.returncode == 1 and "%s:3:" % bad in p.stderr,
          "the daemon refuses to start on a bad file")
    bad2 = put(tmp, "bad2.conf", "[hostd]\nperiod = 200\n")
    p = run(hostd, "--config", bad2, "--check-config")
    check(p.returncode == 1 and "bad2.conf:2: unknown option 'period'"
          in p.stderr, "an unknown option is named with its line")
    p = run(hostd, "--config", conf, "--period", "5", "--check-config")
    check(p.returncode == 1 and "period-ms" in p.stderr,
          "a bad command-line value is refused")
    p = run(hostd, "--bogus")
    check(p.returncode == 2 and "usage" in p.stderr, "unknown flag: usage")


def tree(tmp):
    root = os.path.join(tmp, "host")
    put(root, "sys/devices/system/cpu/online", "0-3\n")
    put(root, "cgroup/machine.slice/cpuset.cpus.effective", "1-3\n")
    put(root, "proc/stat", "".join(
        "cpu%d 100 0 0 1000 0 0 0 0 0 0\n" % i for i in range(4)))
    put(root, "proc/pressure/cpu",
        "some avg10=1.00 avg60=0 avg300=0 total=0\n")
    return root


def daemon(hostd, tmp):
    root = tree(tmp)
    conf = put(tmp, "run.conf", (
        "[hostd]\nuri = test:///default\nperiod-ms = 200\nlog-level = info\n"
        "proc-root = {r}/proc\nsys-root = {r}/sys\ncgroup-root = {r}/cgroup\n"
        "run-root = {r}/run\n\n[http]\nlisten = \"\"\nsocket = {t}/api.sock\n")
        .format(r=root, t=tmp))
    logf = os.path.join(tmp, "hostd.log")
    log = open(logf, "w")
    proc = subprocess.Popen([hostd, "--foreground", "--config", conf],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_log(logf, r"connected to libvirt test:///default", proc=proc)
        wait_log(logf, r"domain test: tracking \(\d+ vCPUs", proc=proc)
        check(True, "the test driver's running domain is tracked")
        wait_log(logf, r"host CPUs usable by VMs from \S*cgroup/machine\."
                 r"slice/cpuset\.cpus\.effective", proc=proc)
        check(True, "the sampler reads the synthetic cgroup v2 tree")

        with open(logf) as f:
            mark = len(f.read())
        put(tmp, "run.conf", open(conf).read().replace(
            "log-level = info", "log-level = debug"))
        proc.send_signal(signal.SIGHUP)
        wait_log(logf, r"configuration reloaded", mark, proc=proc)
        wait_log(logf, r"period \d+: usable 3 CPUs \(cgroup2\)", mark,
                 proc=proc)
        check(True, "SIGHUP reloads (debug lines appear)")

        with open(logf) as f:
            mark = len(f.read())
        put(tmp, "run.conf", "[hostd]\nperiod-ms = nope\n")
        proc.send_signal(signal.SIGHUP)
        wait_log(logf, r"reload: \S*run\.conf:2: period-ms: .*; keeping "
                 r"the running configuration", mark, proc=proc)
        time.sleep(0.5)
        check(proc.poll() is None, "a bad file on SIGHUP keeps it running")

        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(10)
        check(rc == 0, "SIGTERM exits 0")
        wait_log(logf, r"signal 15: exiting")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    hostd, man = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="prefcpu-hostd-cli.")
    try:
        cli(hostd, man, tmp)
        daemon(hostd, tmp)
        print("hostd_cli: PASS")
        rc = 0
    except Fail as e:
        print("hostd_cli: FAIL: %s" % e)
        rc = 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
