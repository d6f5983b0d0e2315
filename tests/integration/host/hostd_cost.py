#!/usr/bin/env python3
"""Print a running prefcpu-hostd's CPU time per period and its memory.

usage: hostd_cost.py PID SECONDS PERIOD_MS

Reads the process's CPU time (all threads, ns, from /proc/PID/schedstat)
SECONDS apart and its RSS and peak RSS from /proc/PID/status.
"""

import sys
import time


def cpu_ns(pid):
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0])


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])      # kB
    return 0


def measure(pid, seconds, period_ms):
    t0, c0 = time.monotonic(), cpu_ns(pid)
    time.sleep(seconds)
    t1, c1 = time.monotonic(), cpu_ns(pid)
    periods = (t1 - t0) * 1000.0 / period_ms
    per = (c1 - c0) / periods / 1e6
    return {
        "cpu_ms_per_period": per,
        "cpu_pct": (c1 - c0) / ((t1 - t0) * 1e9) * 100.0,
        "periods": periods,
        "rss_kib": status(pid, "VmRSS"),
        "hwm_kib": status(pid, "VmHWM"),
    }


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    pid, secs, period = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    m = measure(pid, secs, period)
    print("prefcpu-hostd pid %d: %.3f ms CPU per period of %d ms (%.3f%% of "
          "one CPU, over %.0f periods), RSS %d KiB, peak %d KiB"
          % (pid, m["cpu_ms_per_period"], period, m["cpu_pct"], m["periods"],
             m["rss_kib"], m["hwm_kib"]))


if __name__ == "__main__":
    main()
