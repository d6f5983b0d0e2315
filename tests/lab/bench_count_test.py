#!/usr/bin/env python3
"""Which benchmark runs bench/vm counts for an arm's window: the guest's
console lines (tests/lab/guest-bench's format) between two offsets.  A
build that began before the window (under the previous arm, or while the
sets changed) must not count for this arm; one that starts in the window
counts when it ends, even after the window, and one that starts after
the window does not; short benchmarks without start lines count when
they end in it.  No VM: the console is a string.

Usage: bench_count_test.py REPORT (bench/vm/report)
"""

import importlib.machinery
import importlib.util
import sys

failures = []


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what))
    if not cond:
        failures.append(what)


class Console:
    def __init__(self, text):
        self._text = text

    def text(self):
        return self._text


def load(path):
    loader = importlib.machinery.SourceFileLoader("bench_vm_report", path)
    spec = importlib.util.spec_from_loader("bench_vm_report", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def main():
    rep = load(sys.argv[1])
    before = ("lab-bench-start: build-libs\n"
              "lab-bench: hackbench-proc-sock 0.120 s\n")
    inside = ("lab-bench: build-libs 19.50 s\n"       # began before
              "lab-bench: hackbench-proc-sock 0.080 s\n"
              "lab-bench-start: build-libs\n"
              "[   12.3] some kernel line\n"
              "lab-bench: build-libs 21.25 s\n"
              "lab-bench-start: build-libs\n"
              "lab-bench: build-libs fail s\n"
              "lab-bench-start: build-libs\n")
    a = len(before)
    b = a + len(inside)
    vm = Console(before + inside)

    runs, fails = rep.runs_between(vm, a, b)
    check(runs.get("build-libs") == [21.25],
          "only the build that started in the window counts: %r" % runs)
    check(runs.get("hackbench-proc-sock") == [0.08],
          "a short run counts when it ends in the window: %r" % runs)
    check(fails == 1, "a failed build that started in it counts as failed "
          "(%d)" % fails)
    check(rep.run_pending(vm, a, b),
          "a build started in the window and not ended is pending")

    later = ("lab-bench: hackbench-proc-sock 0.070 s\n"
             "lab-bench: build-libs 20.00 s\n"
             "lab-bench-start: build-libs\n")
    vm = Console(before + inside + later)
    check(not rep.run_pending(vm, a, b),
          "once it ended, nothing that started in the window is pending "
          "(a build started after it does not count)")
    runs, _ = rep.runs_between(vm, a, b, len(vm.text()))
    check(runs.get("build-libs") == [21.25, 20.0],
          "the build that ended after the window counts: %r" % runs)
    check(runs.get("hackbench-proc-sock") == [0.08],
          "a short run that ended after the window does not: %r" % runs)
    vm = Console(before + inside + later +
                 "lab-bench: build-libs 18.00 s\n")
    runs, _ = rep.runs_between(vm, a, b, len(vm.text()))
    check(runs.get("build-libs") == [21.25, 20.0],
          "a build that started after the window does not count: %r" % runs)

    vm = Console("lab-bench: sysbench-threads 150.0 events/s\n" * 3)
    runs, fails = rep.runs_between(vm, 0, len(vm.text()))
    check(runs == {"sysbench-threads": [150.0] * 3} and fails == 0 and
          not rep.run_pending(vm, 0, len(vm.text())),
          "benchmarks without start lines: every run that ended counts")
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
