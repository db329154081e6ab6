# SPDX-License-Identifier: GPL-2.0-only
"""A fixed amount of pure-Python work, for the Python section of the benchmark (bench.py, 11).

usage: pywork.py UNITS [MAX_WALL_S]

Runs UNITS units of arithmetic, each through a chain of eight Python calls (so every sample
has Python frames to read), and prints the CPU and wall time the work took, measured by the
program itself (time.thread_time, time.perf_counter):
  {"units": N, "cpu_s": ..., "wall_s": ..., "proc_cpu_s": ...}
A unit is a fixed number of iterations, never calibrated, so any change in time is the
profiler's doing. With MAX_WALL_S it stops after that much wall time and "units" says how
many it did (a rate is still a slowdown measure). It prints "ready PID" first, for sessions
that attach to it by pid.
"""
import os
import sys
import time

UNIT_ITERS = 400


def leaf():
    s = 0
    for i in range(UNIT_ITERS):
        s += i * i % 7
    return s


def level1():
    return leaf() + 1


def level2():
    return level1() + 1


def level3():
    return level2() + 1


def level4():
    return level3() + 1


def level5():
    return level4() + 1


def level6():
    return level5() + 1


def level7():
    return level6() + 1


def main():
    units = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    max_wall = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    print(f"ready {os.getpid()}", flush=True)
    c0, w0 = time.thread_time(), time.perf_counter()
    deadline = w0 + max_wall
    u = 0
    while u < units:
        if max_wall > 0 and (u & 15) == 0 and time.perf_counter() > deadline:
            break
        level7()
        u += 1
    c1, w1 = time.thread_time(), time.perf_counter()
    print(f'{{"units": {u}, "cpu_s": {c1 - c0:.6f}, "wall_s": {w1 - w0:.6f}, '
          f'"proc_cpu_s": {time.process_time():.6f}}}', flush=True)


if __name__ == "__main__":
    main()
