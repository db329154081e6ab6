# SPDX-License-Identifier: GPL-2.0-only
"""A CPython workload that measures itself (tests/integration/test_python.py).

Three threads run random blocks of five functions for SECONDS: two pure-Python loops
(work_a, work_b), a recursion 20 deep (rec), and two that spend their time in C extensions
under a Python frame (parse_json: the json scanner; scan_re: the re engine); the first thread
also runs `lined`, whose two one-line loops are timed apart. Each block is timed with
time.thread_time() (CPU) and time.perf_counter() (wall); a fourth thread sleeps in nap()
when asked (REAL). At the end one JSON line: each function's share of the process's CPU
time (time.process_time()) and of its threads' wall time, and the lines of `lined` with
their share of its CPU time.

usage: pyphases.py SECONDS [--nap] [--wait FILE]
"""
import json
import os
import random
import re
import sys
import threading
import time

CPU = {}
WALL = {}
LINES = {}
LOCK = threading.Lock()
LIFETIMES = []

DOC = json.dumps([{"id": i, "name": "item%d" % i, "tags": ["a", "b", "c"], "v": i * 0.5}
                  for i in range(400)])
TEXT = " ".join("word%d=%d;" % (i, i * 7) for i in range(3000))
PAT = re.compile(r"(\w+)=(\d+);")


def work_a(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def work_b(n):
    s = 1
    for i in range(n):
        s = (s * 31 + i) & 0xffff
    return s


def rec(depth, n):
    if depth:
        return rec(depth - 1, n) + 1
    s = 0
    for i in range(n):
        s ^= i
    return s


def parse_json(n):
    for _ in range(n):
        json.loads(DOC)


def scan_re(n):
    for _ in range(n):
        PAT.findall(TEXT)


def lined(n):
    t0 = time.thread_time()
    s = 0
    for i in range(n): s += i * 3  # LINE_A
    t1 = time.thread_time()
    for i in range(n): s ^= (i << 2) + 1  # LINE_B
    t2 = time.thread_time()
    return s, t1 - t0, t2 - t1


def line_of(tag):
    with open(__file__) as f:
        for no, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + tag):
                return no
    return 0


BLOCKS = [
    (work_a, lambda r: (r.randint(20000, 60000),)),
    (work_b, lambda r: (r.randint(20000, 60000),)),
    (rec, lambda r: (20, r.randint(20000, 60000))),
    (parse_json, lambda r: (r.randint(2, 6),)),
    (scan_re, lambda r: (r.randint(2, 6),)),
]


def add(table, key, v):
    with LOCK:
        table[key] = table.get(key, 0.0) + v


def worker(seconds, seed, with_lines):
    r = random.Random(seed)
    w0 = time.perf_counter()
    end = w0 + seconds
    while time.perf_counter() < end:
        if with_lines and r.random() < 0.2:
            fn, args = lined, (r.randint(20000, 60000),)
        else:
            fn, args = r.choice(BLOCKS)
            args = args(r)
        # (the wall clock inside the CPU clock: thread_time() is a system call, whose return
        # is where a busy machine preempts a thread, and that wait is not fn's)
        c0 = time.thread_time()
        t0 = time.perf_counter()
        res = fn(*args)
        t1 = time.perf_counter()
        c1 = time.thread_time()
        add(CPU, fn.__name__, c1 - c0)
        add(WALL, fn.__name__, t1 - t0)
        if fn is lined:
            add(LINES, "a", res[1])
            add(LINES, "b", res[2])
    with LOCK:
        LIFETIMES.append(time.perf_counter() - w0)


def nap(seconds):
    w0 = time.perf_counter()
    end = w0 + seconds
    while time.perf_counter() < end:
        time.sleep(0.02)
    add(WALL, "nap", time.perf_counter() - w0)
    with LOCK:
        LIFETIMES.append(time.perf_counter() - w0)


def main():
    seconds = float(sys.argv[1])
    if "--wait" in sys.argv:
        path = sys.argv[sys.argv.index("--wait") + 1]
        print(json.dumps({"pid": os.getpid()}), flush=True)
        while not os.path.exists(path):
            time.sleep(0.01)
    m0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(seconds, i, i == 0), name="w%d" % i)
               for i in range(3)]
    if "--nap" in sys.argv:
        threads.append(threading.Thread(target=nap, args=(seconds,), name="napper"))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall_total = sum(LIFETIMES) + (time.perf_counter() - m0)
    cpu_total = time.process_time()
    lt = LINES.get("a", 0) + LINES.get("b", 0)
    print(json.dumps({
        "cpu": {k: v / cpu_total for k, v in CPU.items()},
        "wall": {k: v / wall_total for k, v in WALL.items()},
        "cpu_s": cpu_total,
        "lines": {str(line_of("LINE_A")): LINES.get("a", 0) / lt if lt else 0,
                  str(line_of("LINE_B")): LINES.get("b", 0) / lt if lt else 0},
    }), flush=True)


if __name__ == "__main__":
    main()
