#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tail profiles (docs/tail.md) against the tailreq workload's own truth: one thread serves
requests between req_begin and req_end, 1.5 % of them 10 ms of CPU in slow_path beside the
1 ms common part every request does; the program counts its slow requests, times each
request and each part, and says its own p99 and how many requests took at least a
duration. The tail above p99 must be mostly the slow path, the body mostly not; a duration
threshold must pick the requests the program says took that long; with --unwind dwarf,
whose samples reach the engine before the events that say which instances they belong to,
no sample may go unmatched."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, cgroup2_root, first_json_line, pcmon, pcmon_json, procs, run_tests, share_tolerance_pp, workload

NODES = ["--node", "tailreq.req_begin", "--node", "tailreq.req_end", "--leg", "1:2"]


def share(listing, proc):
    p = procs(listing).get(proc)
    n = listing["summary"]["counted"]
    return (p["shallow"] if p else 0) / n if n else 0.0, n


def run(d, *opts, reqs=5000, at_ms=5, extra=()):
    listing, p = pcmon_json("run", "--name", "tr", "--interval", "1000", *NODES, *opts, "--",
                            workload("tailreq"), str(reqs), str(at_ms), *extra, sock=d.sock)
    return listing, first_json_line(p.stdout)


def tail_listing(d, tid, *part):
    listing, _ = pcmon_json("list", tid, "--tail", "1", *part, sock=d.sock)
    return listing


def check_filed(tail, own):
    # every request is an instance, filed once (with "abandon": two abandoned, and the one
    # that abandoned the first); nothing held back, lost or unmatched
    assert tail["instances"] == own["requests"] + (3 if own["abandoned"] else 0), (tail, own)
    assert tail["abandoned_instances"] == own["abandoned"], tail
    assert tail["held_groups"] == 0 and tail["overflow_samples"] == 0, tail
    assert tail["unmatched_samples"] == 0 and tail["lost_events"] == 0, tail


def test_p99_tail_is_the_slow_path():
    d = Daemon().start()
    try:
        whole, own = run(d, "--tail", "1")
        tid = str(whole["target"]["id"])
        t = tail_listing(d, tid)
        body = tail_listing(d, tid, "--body")
        tail = t["tail"]
        check_filed(tail, own)
        assert tail["threshold"] == "p99" and tail["decided_early"] == 1000, tail
        # the slow instances: about 1 % (the 0.5 to 2 %), and the estimate near the
        # program's own p99 (its clock includes the probes' cost; the log-linear buckets
        # are within 3 %)
        frac = tail["slow_instances"] / tail["instances"]
        assert 0.005 <= frac <= 0.02, tail
        assert 0.7 * own["p99_ns"] <= tail["threshold_ns"] <= 1.3 * own["p99_ns"], (tail, own)
        # the tail is the slow path (10 ms of each slow request's 11), the body is not
        slow_in_tail, n_tail = share(t, "tailreq.slow_path")
        slow_in_body, n_body = share(body, "tailreq.slow_path")
        assert n_tail >= 200, t["summary"]
        assert slow_in_tail >= 0.80, (slow_in_tail, procs(t))
        assert slow_in_body <= slow_in_tail / 4, (slow_in_body, slow_in_tail)
        # ... and the whole profile has it at the program's own share (about 13 %)
        want = own["slow_ns"] / (own["slow_ns"] + own["common_ns"])
        got, n = share(whole, "tailreq.slow_path")
        assert abs(got - want) * 100 <= share_tolerance_pp(want, n) + 2, (got, want, n)
        # tail and body together: the samples of the requests, none twice
        assert tail["tail_samples"] == t["summary"]["counted"], (tail, t["summary"])
        assert tail["body_samples"] == body["summary"]["counted"], (tail, body["summary"])
        assert tail["tail_samples"] + tail["body_samples"] <= whole["summary"]["interrupts"]
        handle = procs(whole)["tailreq.handle"]["deep"]
        assert tail["tail_samples"] + tail["body_samples"] >= 0.95 * handle, (tail, handle)
        # the listing of the whole carries each tail, rows as its own
        tails = whole["tails"]
        assert len(tails) == 1 and tails[0]["leg"] == 1, tails
        assert tails[0]["summary"]["counted"] >= tail["tail_samples"] - 50, (tails[0], tail)
        assert procs(tails[0])["tailreq.slow_path"]["shallow_pct"] >= 80, procs(tails[0])
        # diff --tail: the slow instances do the slow path more, beyond noise
        diff, _ = pcmon_json("diff", tid, "--tail", "1", sock=d.sock)
        rows = {r["procedure"]: r for r in diff["procedures"]}
        sp = rows["slow_path"]
        assert sp["significant"] and sp["change"] == "grew" and sp["shallow_pp"] >= 60, sp
        assert rows["common_part"]["change"] == "shrank", rows["common_part"]
        assert diff["b"]["samples"] == tail["tail_samples"], (diff["b"], tail)
        # the exports: the tail's folded stacks hold its samples, the slow path's among them
        p = pcmon("export", tid, "--tail", "1", "--format", "folded", sock=d.sock, check=0)
        folded = [l.rsplit(" ", 1) for l in p.stdout.splitlines() if l.strip()]
        assert sum(int(n) for _, n in folded) == tail["tail_samples"], p.stdout[:500]
        in_slow = sum(int(n) for s, n in folded if s.endswith(";slow_path"))
        assert in_slow == procs(t)["tailreq.slow_path"]["shallow"], (in_slow, procs(t))
    finally:
        d.stop()


def test_duration_threshold_with_dwarf():
    d = Daemon().start()
    try:
        whole, own = run(d, "--unwind", "dwarf", "--tail", "1:5ms", reqs=3000, at_ms=5)
        tid = str(whole["target"]["id"])
        t = tail_listing(d, tid)
        tail = t["tail"]
        # samples travel on the dwarf ring, the instances' events on their own: every
        # sample still finds its instance
        check_filed(tail, own)
        assert tail["threshold_ns"] == 5000000 and "threshold" not in tail, tail
        # the requests at 5 ms or more: every slow one (at least 5.5 ms of CPU), and no more
        # than the program timed so; fewer on a loaded machine, where a common request may
        # pass 5 ms by the program's clock, as a leg's time is net of the probes' cost and
        # of the time the thread was preempted at them
        assert own["slow"] <= tail["slow_instances"] <= own["above_at"] + 2, (tail, own)
        # so the tail holds every sample of the slow path, the body none
        body = tail_listing(d, tid, "--body")
        in_tail = procs(t).get("tailreq.slow_path", {}).get("shallow", 0)
        assert "tailreq.slow_path" not in procs(body), (procs(body)["tailreq.slow_path"], tail,
                                                         body["tail"], own)
        assert in_tail == procs(whole)["tailreq.slow_path"]["shallow"], (in_tail, procs(whole))
    finally:
        d.stop()


def test_abandoned_apart():
    d = Daemon().start()
    try:
        whole, own = run(d, "--tail", "1:5ms", reqs=300, extra=("abandon",))
        tid = str(whole["target"]["id"])
        ab = tail_listing(d, tid, "--abandoned")
        tail = ab["tail"]
        check_filed(tail, own)
        assert tail["part"] == "abandoned", tail
        # the two abandoned requests ran slow_path (about 20 ms of it): their samples
        assert procs(ab)["tailreq.slow_path"]["shallow"] >= 5, procs(ab)
        assert procs(ab)["tailreq.slow_path"]["shallow_pct"] >= 80, procs(ab)
        # the results file keeps the tails: the same after a restart
        before = {part: tail_listing(d, tid, *part) for part in ((), ("--body",), ("--abandoned",))}
        d.stop()
        d2 = Daemon(state_dir=d.state).start()
        try:
            for part, was in before.items():
                now, _ = pcmon_json("list", tid, "--tail", "1", *part, sock=d2.sock)
                assert now["tail"] == was["tail"], (part, now["tail"], was["tail"])
                assert procs(now) == procs(was), part
        finally:
            d2.stop()
    finally:
        d.stop()


def test_leg_tail_while_running_and_save():
    d = Daemon().start()
    w = subprocess.Popen([workload("tailreq"), "4000", "3"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        tid = pcmon("start", "--pid", w.pid, "--interval", "1000", *NODES, sock=d.sock,
                    check=0).stdout.strip()
        pcmon("leg", "tail", tid, "1", "3ms", sock=d.sock, check=0)
        p = pcmon("leg", "tail", tid, "1", sock=d.sock)
        assert p.returncode != 0 and "tailed already" in p.stderr, p.stderr
        out, _ = w.communicate(timeout=120)
        own = json.loads(out)
        t = tail_listing(d, tid)
        tail = t["tail"]
        # tailed from some time after the start: every slow request after it is in the tail
        assert tail["threshold_ns"] == 3000000, tail
        assert 0 < tail["instances"] <= own["requests"], (tail, own)
        assert tail["slow_instances"] >= own["slow"] * tail["instances"] / own["requests"] * 0.5
        # every slow request takes 5.5 ms at least: its samples all in the tail (a common one
        # may pass 3 ms, preempted on a loaded machine)
        assert procs(t)["tailreq.slow_path"]["shallow"] > 0, procs(t)
        body = tail_listing(d, tid, "--body")
        assert "tailreq.slow_path" not in procs(body), (procs(body)["tailreq.slow_path"], tail,
                                                         body["tail"], own)
        # save --tail: the tail's profile, in a file diff and the exports read
        path = os.path.join(d.dir, "tail.json")
        pcmon("save", tid, path, "--tail", "1", sock=d.sock, check=0)
        saved = json.load(open(path))
        assert saved["tail"]["part"] == "tail" and saved["summary"]["counted"] == \
            t["summary"]["counted"], saved.get("tail")
    finally:
        if w.poll() is None:
            w.kill()
        d.stop()


def in_cgroup(cg, cmd):
    """@cmd, run inside cgroup @cg (it moves there before its exec): its own figures."""
    p = subprocess.run(["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$@"', "sh", *cmd],
                       stdout=subprocess.PIPE, text=True, timeout=120, check=True)
    return first_json_line(p.stdout)


def check_slow_tail(d, tid, own):
    t = tail_listing(d, tid)
    tail = t["tail"]
    check_filed(tail, own)
    assert 0.005 <= tail["slow_instances"] / tail["instances"] <= 0.02, tail
    slow_in_tail, n_tail = share(t, "tailreq.slow_path")
    assert n_tail >= 100 and slow_in_tail >= 0.80, (slow_in_tail, procs(t))


def test_cgroup_target_names_its_program():
    """A --cgroup or --all target's nodes are in the program it names (--program, or program =
    in a [target] section of pcmond's configuration file): every process of the cgroup (of
    the machine) that runs it is probed, joined to the target at its first node hit if
    nothing else saw it first."""
    cg = os.path.join(cgroup2_root(), f"pcmon-tail-{os.getpid()}")
    os.mkdir(cg)
    prog = workload("tailreq")
    conf = os.path.join(tempfile.mkdtemp(prefix="pcmon-tail-"), "pcmond.conf")
    with open(conf, "w") as f:
        f.write(f"[target svc]\ncgroup = {cg}\ninterval = 1000\nprogram = {prog}\n"
                "node = tailreq.req_begin\nnode = tailreq.req_end\nhist-arg = 0\nleg = 1:2\n"
                "tail = 1\n")
    os.chmod(conf, 0o644)
    d = Daemon(args=["--config", conf]).start()
    try:
        deadline = time.time() + 30  # (the file's targets start as pcmond serves)
        while not any(t["name"] == "svc" for t in pcmon_json("targets", sock=d.sock)[0]["targets"]):
            assert time.time() < deadline, "the file's target did not start"
            time.sleep(0.1)
        own = in_cgroup(cg, [prog, "3000"])
        check_slow_tail(d, "svc", own)
        d.stop()
        d = Daemon().start()
        p = pcmon("start", "--cgroup", cg, *NODES, "--tail", "1", sock=d.sock)
        assert p.returncode == 2 and "--program PATH" in p.stderr, p.stderr
        p = pcmon("start", "--pid", os.getpid(), "--program", prog, *NODES, sock=d.sock)
        assert p.returncode == 2 and "drop --program" in p.stderr, p.stderr
        tid = pcmon("start", "--cgroup", cg, "--program", prog, "--interval", "1000", *NODES,
                    "--tail", "1", sock=d.sock, check=0).stdout.strip()
        # a node added later is found in the same file
        p = pcmon("node", "add", tid, "tailreq.common_part", sock=d.sock)
        assert p.returncode == 0, p.stderr
        own = in_cgroup(cg, [prog, "3000"])
        check_slow_tail(d, tid, own)
        nodes = pcmon_json("tables", tid, sock=d.sock)[0]["tables"]["nodes"]
        assert [n["hits"] for n in nodes] == [3000, 3000, 3000], nodes
        # --all: every process that runs it
        tid = pcmon("start", "--all", "--program", prog, "--interval", "1000", *NODES,
                    "--tail", "1", sock=d.sock, check=0).stdout.strip()
        p = subprocess.run([prog, "3000"], stdout=subprocess.PIPE, text=True, check=True)
        check_slow_tail(d, tid, first_json_line(p.stdout))
    finally:
        d.stop()
        os.rmdir(cg)


def test_refused():
    d = Daemon().start()
    try:
        cmd = ["run", *NODES, "--", workload("tailreq"), "10"]
        for extra, words in ((["--tail", "2"], "no leg 2"),
                             (["--tail", "1:5parsecs"], "threshold"),
                             (["--tail", "1:p100"], "percentile"),
                             (["--track", "successor", "--tail", "1"], "--track all"),
                             (["--no-sample", "--tail", "1"], "sampling")):
            p = pcmon(*cmd[:1], *extra, *cmd[1:], sock=d.sock)
            assert p.returncode != 0 and words in p.stderr, (extra, p.stderr)
        whole, _ = pcmon_json("run", "--name", "x", *NODES, "--", workload("tailreq"), "10",
                              sock=d.sock)
        p = pcmon("list", str(whole["target"]["id"]), "--tail", "1", sock=d.sock)
        assert p.returncode != 0 and "tails no leg 1" in p.stderr, p.stderr
    finally:
        d.stop()


if __name__ == "__main__":
    run_tests(globals())
