#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""System-wide cost: the work pcmond does for processes that come and go follows the samples,
not the process events. A process never sampled costs its fork, exec and exit events and no
read of its address map; a sampled one is symbolized however short its life; the maps of
processes that left are let go once their samples are read."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import (Daemon, first_json_line, pcmon_json, procs, run_tests, share_tolerance_pp,
                 status, workload)


def test_short_lived_processes_all_symbolized_and_sleepers_cost_no_map_read():
    """60 workers of 30 ms each, one after another, and 200 sleepers between them (2 ms
    asleep: a CPU-time sampler at 100 Hz catches one only in the millisecond of its exec).
    Every worker's samples are named churn_work; the address maps read are about one per
    worker, where reading them at every fork and exec took at least two per process (520),
    and reading a map again for a pc outside it two per worker."""
    d = Daemon().start()
    try:
        before_probes = status(d)
        before = before_probes["symbols"]["maps_reads"]
        listing, p = pcmon_json("run", "--interval", 10000, "--by", "process", "--",
                                workload("churn"), 60, 30, 200, sock=d.sock)
        st = status(d)
    finally:
        d.stop()
    own = first_json_line(p.stdout)
    s, pp = listing["summary"], procs(listing)
    work = pp.get("churn.churn_work", {"deep": 0})["deep"]
    want = own["workers"] * 30 / 10  # samples in the workers' loops: 30 ms each at 10 ms
    # every worker symbolized: its loop's samples are churn_work's (each sample is 1 in 10
    # ms: a binomial count, 4 sigma of it)
    assert work >= want - 4 * want ** 0.5 - 2, (work, want, s)
    reads = st["symbols"]["maps_reads"] - before
    # one read a sampled image: the workers', the parent's, and those of the sleepers that
    # were sampled (in their exec: a tenth of them on a quiet machine, a third on a busy one,
    # whose execs take longer), each of those perhaps twice, the image it exec'd from and
    # the new one; a worker first sampled in its exec, before the dynamic linker mapped its
    # libraries, has its later pcs looked up one by one (maps_queries), and a sample named
    # before its first-sample event came took the map once for both. Not one a fork and one
    # an exec of each of the 261 processes (520), nor two a worker
    sampled = len(listing["groups"])  # processes with samples
    others = sampled - own["workers"]
    assert others >= 0, (sampled, own)
    # what is left unnamed (foreign: in no object pcmond knows) is only what a sleeper, gone
    # 2 ms after its exec, ran before its map could be read (a busy machine reads it later):
    # a sample or two of each sampled sleeper at most, none of a worker's
    assert s["foreign"] <= 0.02 * s["counted"] + 2 * others + 1, (s, others)
    assert reads <= own["workers"] + 2 * others + 10, (reads, sampled, st["symbols"])
    # in a worker's map, its program, libc and the loader are files pcmond holds open: the
    # kernel is asked for none of their names or build-ids (each read's first of them all)
    pinned = st["symbols"]["maps_pinned"] - before_probes["symbols"]["maps_pinned"]
    assert pinned >= 2 * own["workers"], (pinned, st["symbols"])
    # critical-section probes are looked for per file, not per process: BPF lets through
    # only the execs and dynamic-linker calls that bring a file not looked into yet (the
    # first churn, its libc and loader), not two of each of the 261 processes
    execs = own["workers"] + own["sleepers"]
    assert st["probe_events"] - before_probes["probe_events"] <= 10, st
    assert st["probe_events_spared"] - before_probes["probe_events_spared"] >= execs, (st, execs)


def test_processes_sampled_only_as_they_exit_are_counted():
    """150 children that live only to exit, each tearing down 256 MiB of page tables it got
    from its parent: most of their samples come after their exit began, with no user stack
    left to read. They are counted all the same, as unwalkable (fault): with the few taken
    before (their return from fork), one a millisecond of the CPU time the kernel accounted to
    them. The entry of an exited process stays until the process is freed, and a --pid
    target's process exiting is still its own."""
    d = Daemon().start()
    try:
        listing, p = pcmon_json("run", "--interval", 1000, "--", workload("exitmap"), 150, 256,
                                sock=d.sock)
        by_proc = pcmon_json("list", str(listing["target"]["id"]), "--by", "process",
                             sock=d.sock)[0]
    finally:
        d.stop()
    own = first_json_line(p.stdout)
    s = listing["summary"]
    kids = [g for g in by_proc["groups"] if g["pid"] != own["pid"]]
    got = sum(g["counted"] for g in kids)
    want = own["children_cpu_s"] * 1000  # one sample a ms of their CPU time
    assert abs(got - want) <= 4 * want ** 0.5 + 0.05 * want + 5, (got, want, len(kids), s)
    # the exits: most of it, and not one more than the children's and the parent's own
    fault = {c["name"]: c for c in s["critical"]}["unwalkable"]["reasons"]["fault"]
    parent = sum(g["counted"] for g in by_proc["groups"] if g["pid"] == own["pid"])
    print(f"  children: {got} samples, {want:.0f} ms of CPU; fault {fault}, the parent {parent}")
    assert 0.5 * got <= fault <= got + parent, (fault, got, parent, s)
    assert s["foreign"] <= 0.01 * s["counted"] + 2, s


def test_maps_of_exited_processes_are_let_go():
    """After their samples are drained, the maps of 300 exited processes are not kept: the
    daemon holds the maps of the processes that live, and says how many it let go."""
    d = Daemon().start()
    try:
        pcmon_json("run", "--interval", 1000, "--", workload("churn"), 150, 5, 150, sock=d.sock)
        st = status(d)["symbols"]
    finally:
        d.stop()
    assert st["processes_forgotten"] >= 100, st
    assert st["processes"] <= 100, st


def test_idle_objects_are_let_go_and_opened_again():
    """An object no sample needed for --object-idle seconds is let go (its names stay with
    the results); a new process of the same program opens it again and is named as well."""
    d = Daemon(args=["--object-idle", 1]).start()
    try:
        first, p1 = pcmon_json("run", "--interval", 1000, "--", workload("churn"), 10, 30, 0,
                               sock=d.sock)
        time.sleep(2.5)
        # a listing drains, and a drain lets go of what idled (and names stay)
        again = pcmon_json("list", "--json", str(first["target"]["id"]), sock=d.sock)[0]
        closed = status(d)["symbols"]
        second, p2 = pcmon_json("run", "--interval", 1000, "--", workload("churn"), 10, 30, 0,
                                sock=d.sock)
        st = status(d)["symbols"]
    finally:
        d.stop()
    assert closed["objects_closed"] >= 1, closed
    assert procs(again) == procs(first), "names changed when their object was let go"
    assert st["objects_reopened"] >= 1, st
    for listing, p in ((first, p1), (second, p2)):
        # the workers' loops (10 x 30 ms of their own clocks), a sample a ms, named: at most
        # all the workers' CPU time as the kernel accounted it (their exec and exit too)
        own = first_json_line(p.stdout)
        loop_ms, cpu_ms = own["worker_loop_cpu_s"] * 1000, own["worker_cpu_s"] * 1000
        work = procs(listing).get("churn.churn_work", {"deep": 0})["deep"]
        tol = 4 * loop_ms ** 0.5 + 0.05 * loop_ms
        assert loop_ms - tol <= work <= cpu_ms + tol, (work, loop_ms, cpu_ms, listing["summary"])


def test_file_pages_let_go_and_names_still_right():
    """The pages of open objects' files are let go (every second here: half --object-idle);
    what is named and unwound after, from pages read back from the page cache, is right: a
    program's second phase, whose work_c nothing named before, holds its share."""
    d = Daemon(args=["--object-idle", 2]).start()
    try:
        listing, p = pcmon_json("run", "--interval", 1000, "--", workload("phases"), 3,
                                sock=d.sock)
        st = status(d)["symbols"]
    finally:
        d.stop()
    assert st["file_pages_given"] > 0, st
    ph = first_json_line(p.stdout)["phases"]
    got = procs(listing)
    n = listing["summary"]["counted"]
    for fn in ("work_a", "work_b", "work_c"):
        # each phase's share weighed by its CPU time (on a busy machine, not the same)
        want = sum(x[fn] * x["cpu_s"] for x in ph) / sum(x["cpu_s"] for x in ph)
        share = got.get(f"phases.{fn}", {"shallow": 0})["shallow"] / n
        assert abs(share - want) * 100 <= share_tolerance_pp(want, n, 3.0), (fn, share, want)


if __name__ == "__main__":
    run_tests(globals())
