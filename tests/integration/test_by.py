#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Who burns the CPU (docs/sampling.md, list --by): the samples of a target with many processes
by process, command name, thread and cgroup, against the CPU time each child of
tests/workloads/comms.c measured itself; the groups as the exports' root frames and pprof
labels; the names kept across a restart of pcmond."""
import gzip
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import (PCMON, Daemon, cgroup2_root, pcmon, pcmon_json, run_tests, share_tolerance_pp,
                 workload)

CHILDREN = ("burn-a", "burn-b", "burn-c")


def children_of(stdout):
    """The children's own lines: {comm: {"pid", "cpu_s"}}, and the parent's pid."""
    kids, parent = {}, None
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{\"c"):
            continue
        o = json.loads(line)
        if "comm" in o:
            kids[o["comm"]] = o
        else:
            assert o["children"] == len(CHILDREN), o
            parent = o["pid"]
    assert set(kids) == set(CHILDREN), stdout[-2000:]
    return kids, parent


def by_name(groups):
    return {g["name"]: g for g in groups}


def check_shares(groups, kids, key="name", names=None):
    """Each child's share of the children's samples is its share of their CPU time."""
    names = names or {c: c for c in CHILDREN}
    got = {c: groups[names[c]]["counted"] for c in CHILDREN}
    n = sum(got.values())
    cpu = sum(k["cpu_s"] for k in kids.values())
    assert n >= 300, (got, "too few samples to compare")
    for c in CHILDREN:
        want = kids[c]["cpu_s"] / cpu
        tol = share_tolerance_pp(want, n) / 100
        assert abs(got[c] / n - want) <= tol, (c, got, {k: v["cpu_s"] for k, v in kids.items()},
                                              tol)


def check_sums(listing):
    """The groups' counted samples add up to the listing's, each with its procedures'."""
    groups = listing["groups"]
    counted = listing["summary"]["counted"]
    assert sum(g["counted"] for g in groups) == counted, (groups, counted)
    assert [g["counted"] for g in groups] == sorted((g["counted"] for g in groups), reverse=True)
    for g in groups:
        assert abs(g["percent"] - 100.0 * g["counted"] / counted) < 1e-6, g
        shallow = sum(p["shallow"] for p in g["procedures"])
        assert shallow + g["foreign"] <= g["counted"], g
        for p in g["procedures"]:
            assert p["deep"] <= g["counted"], (g["name"], p)
            assert abs(p["deep_pct_all"] - 100.0 * p["deep"] / counted) < 1e-6, p
        assert sorted(g["deep_order"]) == list(range(len(g["procedures"]))), g


def run_comms(d, *opts, secs=2, env=None):
    """pcmon run comms through pcmond @d: (listing, children, parent pid)."""
    listing, p = pcmon_json("run", "--interval", 1000, *opts, "--", workload("comms"), secs,
                            sock=d.sock, env=env)
    kids, parent = children_of(p.stdout)
    return listing, kids, parent


def test_by_comm_and_process_shares():
    d = Daemon().start()
    try:
        listing, kids, parent = run_comms(d, "--by", "comm")
        check_sums(listing)
        groups = by_name(listing["groups"])
        assert all(g["by"] == "comm" for g in listing["groups"])
        assert set(CHILDREN) | {"comms"} <= set(groups), groups.keys()
        check_shares(groups, kids)
        for c in CHILDREN:
            g = groups[c]
            assert g["processes"] == 1, g
            top = {p["name"]: p for p in g["procedures"]}["burn"]
            assert top["deep_pct"] >= 90, (c, g["procedures"][:3])
        tid = str(listing["target"]["id"])

        # one group per process: the children by pid, named by their command
        by_proc = pcmon_json("list", tid, "--by", "process", sock=d.sock)[0]
        check_sums(by_proc)
        pids = {g["pid"]: g for g in by_proc["groups"]}
        assert all(g["by"] == "process" for g in by_proc["groups"])
        for c in CHILDREN:
            g = pids[kids[c]["pid"]]
            assert g["name"] == c and g["counted"] == groups[c]["counted"], (g, groups[c])
        assert pids[parent]["name"] == "comms", pids[parent]
        assert set(pids) == {parent} | {k["pid"] for k in kids.values()}, pids.keys()

        # by thread: single-threaded processes, each thread its process
        by_thread = pcmon_json("list", tid, "--by", "thread", sock=d.sock)[0]
        check_sums(by_thread)
        for g in by_thread["groups"]:
            assert g["tid"] == g["pid"] and g["name"] == pids[g["pid"]]["name"], g

        # the text: a heading per group, busiest first, its procedures under it
        text = pcmon("list", tid, "--by", "comm", "--top", 2, sock=d.sock, check=0).stdout
        heads = re.findall(r"^comm (\S+): (\d+) counted \(([\d.]+)%\), 1 process$", text, re.M)
        assert [h[0] for h in heads] == [g["name"] for g in listing["groups"][:2]], text
        assert int(heads[0][1]) == listing["groups"][0]["counted"], text
        assert " shallow      %   %all     deep      %   %all  procedure" in text, text
        assert re.search(r"^\(2 groups more, left out by --top\)$", text, re.M), text
        # without --by, the listing is as it was
        plain = pcmon("list", tid, sock=d.sock, check=0).stdout
        assert "%all" not in plain and not re.search(r"^comm ", plain, re.M), plain
        assert "groups" not in pcmon_json("list", tid, sock=d.sock)[0]
    finally:
        d.stop()


def test_by_cgroup_of_a_cgroup_target():
    """A --cgroup target whose children move to cgroups of their own: each cgroup by its path
    under the cgroup2 mount, with its child's share; the paths stay after the cgroups are
    removed and pcmond restarted."""
    mount = cgroup2_root()
    top = os.path.join(mount, f"pcmon-by-{os.getpid()}")
    subs = [os.path.join(top, c) for c in ("a", "b", "c")]
    for dname in [top, *subs]:
        os.mkdir(dname)
    d = Daemon().start()
    try:
        tid = pcmon("start", "--cgroup", top, "--interval", 1000, sock=d.sock,
                    check=0).stdout.strip()
        env = dict(os.environ, PCMON_TEST_CGROUPS=":".join(subs))
        # the parent joins the target in its cgroup, its children as its children
        w = subprocess.run(["sh", "-c", f"echo 0 > {top}/cgroup.procs && exec \"$0\" 2",
                            workload("comms")], env=env, capture_output=True, text=True,
                           timeout=300)
        assert w.returncode == 0, w.stderr
        kids, parent = children_of(w.stdout)
        pcmon("stop", tid, sock=d.sock, check=0)
        listing = pcmon_json("list", tid, "--by", "cgroup", sock=d.sock)[0]
        check_sums(listing)
        groups = by_name(listing["groups"])
        rel = "/" + os.path.relpath(top, mount)
        names = {c: f"{rel}/{s}" for c, s in zip(CHILDREN, "abc")}
        assert set(names.values()) | {rel} <= set(groups), groups.keys()
        check_shares(groups, kids, names=names)
        for c, sub in zip(CHILDREN, subs):
            g = groups[names[c]]
            assert g["processes"] == 1 and g["id"] == os.stat(sub).st_ino, g
        assert groups[rel]["processes"] >= 1, groups[rel]
        text = pcmon("list", tid, "--by", "cgroup", "--shallow", sock=d.sock, check=0).stdout
        head = rf"^cgroup {re.escape(names['burn-c'])}: \d+ counted \([\d.]+%\), 1 process$"
        assert re.search(head, text, re.M), text
        before = [(g["name"], g["counted"]) for g in listing["groups"]]

        # gone, and pcmond restarted: the results keep the paths
        for dname in [*subs, top]:
            os.rmdir(dname)
        d.stop()
        d.start()
        again = pcmon_json("list", tid, "--by", "cgroup", sock=d.sock)[0]
        assert [(g["name"], g["counted"]) for g in again["groups"]] == before, again["groups"]
        again = pcmon_json("list", tid, "--by", "comm", sock=d.sock)[0]
        assert set(CHILDREN) <= {g["name"] for g in again["groups"]}, again["groups"]
    finally:
        d.stop()
        for dname in [*subs, top]:
            if os.path.isdir(dname):
                try:
                    os.rmdir(dname)
                except OSError:
                    pass


def test_off_cpu_time_in_its_cgroup():
    """REAL: a thread's time off CPU is charged to the cgroup it blocked in, as its time on
    CPU is, whichever way its stacks are walked."""
    mount = cgroup2_root()
    cg = os.path.join(mount, f"pcmon-by-real-{os.getpid()}")
    os.mkdir(cg)
    try:
        for mode in ("fp", "dwarf"):
            listing, _ = pcmon_json("run", "--real", "--unwind", mode, "--interval", 1000,
                                    "--by", "cgroup", "--", "sh", "-c",
                                    f"echo 0 > {cg}/cgroup.procs && exec \"$0\" 1",
                                    workload("spinsleep"), sock="/nonexistent/pcmond.sock")
            s = listing["summary"]
            groups = by_name(listing["groups"])
            mine = groups.get("/" + os.path.relpath(cg, mount))
            assert mine and s["off_blocked"] >= 200, (mode, s, groups.keys())
            # all but the shell's first moments, before it moved (longer on a busy machine:
            # 3.7 % once on a fresh clone): the program itself only in its cgroup
            assert mine["counted"] >= 0.85 * s["counted"], (mode, mine, s)
            outside = [p["procedure"] for g in listing["groups"] if g is not mine
                       for p in g["procedures"] if p["procedure"].startswith("spinsleep.")]
            assert not outside, (mode, outside)
            assert mine["id"] == os.stat(cg).st_ino, mine
    finally:
        os.rmdir(cg)


def traces(path):
    """go tool pprof -traces as [(labels, count, frames)], frames leaf first."""
    env = dict(os.environ, HOME=os.environ.get("HOME", "/root"), GOFLAGS="-mod=mod")
    p = subprocess.run(["go", "tool", "pprof", "-traces", path], capture_output=True, text=True,
                       timeout=120, env=env)
    assert p.returncode == 0, p.stderr
    out = []
    for block in p.stdout.split("-----------+")[1:]:
        labels, frames, count = {}, [], 0
        for line in block.splitlines()[1:]:
            m = re.match(r"\s+(\w+):\s+(\S.*)$", line)
            if m and not frames:
                labels[m.group(1)] = m.group(2).strip()
            elif line.strip():
                if not frames:  # the sample's value, then its leaf
                    count = int(line.split()[0])
                frames.append(line.split()[-1] if not frames else line.strip())
        if labels or frames:
            out.append((labels, count, frames))
    return out


def test_exports_rooted_at_the_group():
    d = Daemon().start()
    try:
        listing, kids, parent = run_comms(d, "--by", "comm", secs=1)
        tid = str(listing["target"]["id"])
        counted = {g["name"]: g["counted"] for g in listing["groups"]}

        # folded: the group is the first frame, and its lines add up to its count
        text = pcmon("export", tid, "--format", "folded", "--by", "comm", sock=d.sock,
                     check=0).stdout
        roots = {}
        for line in text.splitlines():
            stack, n = line.rsplit(" ", 1)
            m = re.match(r"\[comm ([^\]]+)\](;|$)", stack)
            assert m, line
            roots[m.group(1)] = roots.get(m.group(1), 0) + int(n)
        assert roots == counted, (roots, counted)
        assert any(re.match(r"\[comm burn-b\];.*;burn \d+$", l) for l in text.splitlines()), text
        # by process: the pid and the command
        text = pcmon("export", tid, "--format", "folded", "--by", "process", sock=d.sock,
                     check=0).stdout
        assert any(l.startswith(f"[process {kids['burn-a']['pid']} burn-a];")
                   for l in text.splitlines()), text[:1000]
        # without --by, as before
        text = pcmon("export", tid, "--format", "folded", sock=d.sock, check=0).stdout
        assert not any(l.startswith("[comm") for l in text.splitlines()), text[:500]

        # pprof: a label comm, and the group as the root frame
        out = os.path.join(d.dir, "by.pb.gz")
        pcmon("export", tid, "--format", "pprof", "--by", "comm", "-o", out, sock=d.sock,
              check=0)
        raw = gzip.open(out).read()
        assert b"[comm burn-c]" in raw and b"comm" in raw
        sums = {}
        for labels, count, frames in traces(out):
            assert frames[-1] == f"[comm {labels['comm']}]", (labels, frames)
            sums[labels["comm"]] = sums.get(labels["comm"], 0) + count
            if "burn" in frames:
                assert labels["comm"] in CHILDREN and labels["pid"] != str(parent), labels
        assert sums == counted, (sums, counted)

        # the flame graph: the groups at its root, green
        svg = os.path.join(d.dir, "by.svg")
        pcmon("flamegraph", tid, "--by", "comm", "-o", svg, sock=d.sock, check=0)
        page = open(svg).read()
        for c in CHILDREN:
            assert f'data-t="group" data-name="[comm {c}]"' in page, c
        assert "group (--by): green" in page
    finally:
        d.stop()


def test_top_by_comm():
    """top -b --by comm: each group's heading and its procedures, an engine of its own."""
    # the children come once top shows its first screen: they join its target
    p = subprocess.Popen([workload("comms"), "6", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    top = None
    try:
        top = subprocess.Popen([PCMON, "top", "-b", "-n", "4", "-d", "1.5", "--by", "comm", "--pid",
                                str(p.pid), "--socket", "/nonexistent/pcmond.sock"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = top.stdout.readline()
        assert first.startswith("pcmon top:"), (first, top.stderr.read())
        p.stdin.write("go\n")
        p.stdin.flush()
        out, err = top.communicate(timeout=120)
        assert top.returncode == 0, err
        screens = (first + out).split("\n\n")
        last = [s for s in screens if s.strip()][-1]
        assert "%GROUP" in last and "%ALL" in last, last
        heads = re.findall(r"^comm (\S+): (\d+) counted", last, re.M)
        assert {h[0] for h in heads} >= {"burn-c"}, last
        assert re.search(r"comms\.burn$", last, re.M), last
    finally:
        for proc in (top, p):
            if proc:
                proc.kill()
                proc.wait()


def test_by_refused_where_it_cannot_apply():
    d = Daemon().start()
    try:
        listing, _, _ = run_comms(d, secs=0.5)
        tid = str(listing["target"]["id"])
        r = pcmon("list", tid, "--by", "sym", sock=d.sock)
        # refused as the option is read, naming the choices
        assert r.returncode == 2 and "--by sym" in r.stderr and \
            all(w in r.stderr for w in ("process", "comm", "thread", "cgroup")), r.stderr
        r = pcmon("list", tid, "--by", "comm", "--lines", "burn", sock=d.sock)
        assert r.returncode == 2 and "--by" in r.stderr, r.stderr
    finally:
        d.stop()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
