#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""WHEN at probes (docs/when.md, "At probes"): `pcmon count --when`, and nodes and legs
under --when, against the whenleaf workload, which calls one leaf on three paths in known
numbers and times each call itself. Counts exact, times within 5 % or 2 ms, the calls that
do not match counted apart so that totals add up; the shadow-stack case (every name a
probed procedure) and the stack-walk case (a direct call, a ':', a running process); list
--when on stored call tables; the tables through a restart."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, first_json_line, pcmon, pcmon_json, run_tests, workload

NODAEMON = "/nonexistent/pcmond.sock"
LEAF = "whenleaf.leaf"


def near(got, want, what, err=0, stolen=0):
    """Within 5 % or 2 ms, and the error pcmon states (the probes' spread times the hits,
    and the hypervisor's steal it could not place: docs/count.md)."""
    assert abs(got - want) <= max(0.05 * want, 2e6) + err, \
        f"{what}: pcmon {got:.0f} +- {err:.0f} ns, program {want} ns " \
        f"(the machine's steal during the run: {stolen:.0f} ns)"


def stolen_ns():
    """The time the hypervisor has stolen from all CPUs so far (/proc/stat, in ns): said
    when a check fails, never allowed for."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    return int(cpu[8]) * 1e9 / os.sysconf("SC_CLK_TCK")


def count(pattern, *extra):
    """`pcmon count --virtual whenleaf.leaf --when PATTERN`: the leaf's row and the workload's
    truth. CPU time: the program's clock and the probes' are not read at the same instant,
    and on a loaded machine a preemption in between would count in wall time alone."""
    s0 = stolen_ns()
    listing, p = pcmon_json("count", "--virtual", LEAF, "--when", pattern, *extra, "--",
                            workload("whenleaf"), sock=NODAEMON)
    assert p.returncode == 0, p.stderr
    own = first_json_line(p.stdout)
    own["stolen_ns"] = stolen_ns() - s0
    rows = listing["calls"]["procedures"]
    # context procedures (probed for the pattern alone) stay out of the table
    assert [r["procedure"] for r in rows] == [LEAF], rows
    return listing["calls"], rows[0], own


def check_split(row, own, matching, what):
    """@matching: the paths ("a", "b", "c") whose calls match; the others apart."""
    others = [k for k in "abc" if k not in matching]
    want = sum(own[k] for k in matching)
    assert row["calls"] == want, (what, row, own)
    assert row["not_matching"]["calls"] == sum(own[k] for k in others), (what, row, own)
    assert row["unknown"]["calls"] == 0, (what, row)
    assert row["calls"] + row["not_matching"]["calls"] == own["a"] + own["b"] + own["c"]
    near(row["total_ns"], sum(own[f"leaf_{k}_cpu_ns"] for k in matching), f"{what} matching",
         row["total_err_ns"], own["stolen_ns"])
    near(row["not_matching"]["total_ns"], sum(own[f"leaf_{k}_cpu_ns"] for k in others),
         f"{what} not matching", row["not_matching"]["total_err_ns"], own["stolen_ns"])
    for r in (row, row["not_matching"]):
        assert r["open"] == 0 and r["unwound"] == 0 and r["exited"] == 0, r


def test_count_shadow_stack():
    """Every name a probed procedure: answered from the shadow stack, exact."""
    for pattern, paths in (("whenleaf.via_b->*", "b"), ("whenleaf.mid->*", "b"),
                           ("whenleaf.via_a->*|whenleaf.via_b->*", "ab"),
                           ("whenleaf.main->*->whenleaf.leaf", "abc"),
                           ("whenleaf.via_a->*->whenleaf.mid->*", "")):
        c, row, own = count(pattern)
        assert c["when"]["method"] == "shadow stack", (pattern, c["when"])
        assert c["when"]["unknown_calls"] == 0 and not c["when"]["context_late"], c["when"]
        check_split(row, own, paths, pattern)


def test_count_stack_walk():
    """A direct call and a ':' need the stack: walked at each entry, matched by the engine."""
    for pattern, paths in (("whenleaf.via_a->whenleaf.leaf", "a"),
                           ("whenleaf.main->whenleaf.leaf", "c"),
                           ("whenleaf.mid->whenleaf.leaf", "b"),
                           (":whenleaf.mid->*", "b"), ("whenleaf.leaf:", "abc")):
        c, row, own = count(pattern)
        assert c["when"]["method"] == "stack walk", (pattern, c["when"])
        assert c["when"]["why_walk"], c["when"]
        check_split(row, own, paths, pattern)


def test_count_colon_charges_a_frame():
    """With a ':', a procedure's matching calls are split by the frame charged, as samples
    would be: ':leaf' lists the leaf's calls by caller; they add up to the row."""
    c, row, own = count(":whenleaf.leaf")
    assert c["when"]["method"] == "stack walk", c["when"]
    by = {x["procedure"]: x for x in row["charged_to"]}
    assert {k: v["calls"] for k, v in by.items()} == \
        {"whenleaf.via_a": own["a"], "whenleaf.mid": own["b"], "whenleaf.main": own["c"]}, by
    # within the error pcmon states for each frame's share, as for a whole row (check_split):
    # steal counted at a tick after a probe cannot be placed on one side of it
    for frame, path in (("whenleaf.via_a", "a"), ("whenleaf.mid", "b")):
        near(by[frame]["total_ns"], own[f"leaf_{path}_cpu_ns"], f"charged to {frame}",
             by[frame]["total_err_ns"], own["stolen_ns"])
    assert [x["procedure"] for x in row["charged_to"]] == ["whenleaf.via_a", "whenleaf.mid",
                                                          "whenleaf.main"]  # most calls first
    c, row, own = count(":whenleaf.mid->*|whenleaf.via_a:->*")
    by = {x["procedure"]: x["calls"] for x in row["charged_to"]}
    assert by == {"whenleaf.via_a": own["a"], "whenleaf.via_b": own["b"]}, by
    assert row["calls"] == own["a"] + own["b"] and row["not_matching"]["calls"] == own["c"], row


def test_count_text_table():
    p = pcmon("count", LEAF, "--when", "whenleaf.via_b->*", "--", workload("whenleaf"),
              sock=NODAEMON)
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)  # (the table is on stderr)
    assert "when whenleaf.via_b->*, from the shadow stack" in p.stderr, p.stderr
    rows = [l.split() for l in p.stderr.splitlines()]
    assert ["30"] == [r[0] for r in rows if r and r[-1] == LEAF], p.stderr
    assert ["70"] == [r[0] for r in rows if r[-2:] == ["(not", "matching)"]], p.stderr


def test_count_walk_cut_short_is_flagged():
    """Without frame pointers the walk stops early: a call whose walked frames do not match
    may match above them, and is counted as not told (cut_short), never as not matching.
    The shadow stack does not walk: exact there all the same."""
    nofp = "whenleaf_nofp"
    listing, p = pcmon_json("count", f"{nofp}.leaf", "--when", f"{nofp}.via_a->{nofp}.leaf",
                            "--", workload(nofp), sock=NODAEMON)
    assert p.returncode == 0, p.stderr
    own, c = first_json_line(p.stdout), listing["calls"]
    row = c["procedures"][0]
    assert row["not_matching"]["calls"] == 0, row
    assert row["calls"] <= own["a"] and row["calls"] + row["unknown"]["calls"] == 100, row
    assert c["when"]["unknown_by_reason"]["cut_short"] == row["unknown"]["calls"] > 0, c["when"]
    listing, p = pcmon_json("count", f"{nofp}.leaf", "--when", f"{nofp}.via_b->*", "--",
                            workload(nofp), sock=NODAEMON)
    row = listing["calls"]["procedures"][0]
    assert row["calls"] == own["b"] and row["not_matching"]["calls"] == own["a"] + own["c"], row


def test_count_running_process_walks():
    """In a running process the shadow stack misses what was entered before: walked."""
    sp = subprocess.Popen([workload("spinner"), "10"], stdout=subprocess.PIPE)
    try:
        sp.stdout.readline()
        listing, p = pcmon_json("count", "--pid", sp.pid, "--duration", 0.5, "spinner.spin_here",
                                "--when", "spinner.main->*", sock=NODAEMON)
        assert p.returncode == 0, p.stderr
        c = listing["calls"]
        assert c["when"]["method"] == "stack walk" and "running" in c["when"]["why_walk"], c
        row = c["procedures"][0]
        # main was entered long before the probes: the walk sees it all the same
        assert row["calls"] > 0 and row["not_matching"]["calls"] == 0, row
        assert row["unknown"]["calls"] == 0, row
    finally:
        sp.kill()
        sp.wait()


def test_count_bad_pattern():
    p = pcmon("count", LEAF, "--when", "whenleaf.via_a->", "--", workload("whenleaf"),
              sock=NODAEMON)
    assert p.returncode == 2 and "--when: column 17: expected a name after '->'" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def tables(pattern, *legs, nodes=(LEAF, f"{LEAF}%return")):
    args = [a for n in nodes for a in ("--node", n)]
    listing, p = pcmon_json("run", "--no-sample", *args, *legs, "--when", pattern, "--",
                            workload("whenleaf"), sock=NODAEMON)
    assert p.returncode == 0, p.stderr
    return listing["tables"], first_json_line(p.stdout)


def legs_timed(check, *args, **kw):
    """@check(tables, own) on a run, and on a second one if the first's times (only) were off:
    a leg's time is wall time, which a preemption between the program's clock and the
    probe's, on a loaded machine, puts in one of them alone. Counts must hold every time."""
    try:
        check(*tables(*args, **kw))
    except TimeOff:
        check(*tables(*args, **kw))


class TimeOff(AssertionError):
    pass


def near_wall(got, want, what, waited=0):
    """A leg's wall time against the program's clock around the calls: within 5 % or 2 ms,
    and the time the thread waited on a run queue around them (@waited, the program's own
    count of it): a preemption after a return probe and before the caller's clock, which a
    loaded machine makes often, is in the program's time and not in the leg."""
    if abs(got - want) > max(0.05 * want, 2e6) + waited:
        raise TimeOff(f"{what}: pcmon {got:.0f} ns, program {want} ns, waited {waited} ns")


def test_nodes_and_legs():
    """A node hit counts, and a leg starts, only where the stack at the hit matches; the
    other hits are counted apart; a leg's to is not filtered."""
    def via_b(t, own):
        assert t["when"] == "whenleaf.via_b->*", t
        for n in t["nodes"]:
            assert n["hits"] == own["b"], n
            assert n["not_matching"] == own["a"] + own["c"] and n["unknown"] == 0, n
        leg = t["legs"][0]
        assert leg["count"] == own["b"] and leg["abandoned"] == 0 and leg["untracked"] == 0, leg
        # every hit costs: the overhead counts them all
        assert t["overhead"]["hits"] == 2 * (own["a"] + own["b"] + own["c"]), t["overhead"]
        near_wall(leg["total_ns"], own["leaf_b_ns"], "leg 1:2", own["leaf_b_wait_ns"])

    def via_a(t, own):
        assert t["nodes"][0]["hits"] == own["a"] and t["legs"][0]["count"] == own["a"], t
        near_wall(t["legs"][0]["total_ns"], own["leaf_a_ns"], "leg 1:2 via_a", own["leaf_a_wait_ns"])

    def to_unmatched(t, own):
        # via_b's return does not match 'mid->*' (mid has returned), and ends every leg
        # that started at the leaf under mid all the same
        assert t["nodes"][1]["hits"] == 0 and t["nodes"][1]["not_matching"] == own["b"], t
        leg = t["legs"][0]
        assert leg["count"] == own["b"] and leg["abandoned"] == 0, leg
        near_wall(leg["total_ns"], own["leaf_b_ns"], "leg 1:2 to an unmatched node",
                  own["leaf_b_wait_ns"])

    legs_timed(via_b, "whenleaf.via_b->*", "--leg", "1:2")
    legs_timed(via_a, "whenleaf.via_a->*->whenleaf.leaf", "--leg", "1:2")
    legs_timed(to_unmatched, "whenleaf.mid->*", "--leg", "1:2",
               nodes=(LEAF, "whenleaf.via_b%return"))


def test_nodes_refuse_what_they_cannot_answer():
    for pattern, words in (("whenleaf.via_a->whenleaf.leaf", "names a direct call"),
                           ("libc.malloc->*", "names no procedure of the program")):
        p = pcmon("run", "--no-sample", "--node", LEAF, "--when", pattern, "--",
                  workload("whenleaf"), sock=NODAEMON)
        assert p.returncode in (1, 2) and words in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_list_when_on_stored_tables():
    """The calls are classed at start: `list --when` with another pattern is refused in
    one line for the call table alone, flagged beside sampling; the start's own pattern
    lists; the classes survive a restart."""
    d = Daemon().start()
    d2 = None
    try:
        listing, p = pcmon_json("run", "--count", LEAF, "--node", LEAF, "--when",
                                "whenleaf.via_b->*", "--", workload("whenleaf"), sock=d.sock)
        assert p.returncode == 0, p.stderr
        own = first_json_line(p.stdout)
        tid = listing["target"]["id"]
        p = pcmon("list", tid, "--calls", "--when", "whenleaf.via_a->*", sock=d.sock)
        assert p.returncode == 2 and "calls are classed at start" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        # beside sampling, which applies it, the call table says it did not
        both, p = pcmon_json("list", tid, "--when", "whenleaf.via_a->*", sock=d.sock)
        assert p.returncode == 0 and "not applied" in both["calls"]["list_when"], both["calls"]
        assert "not applied" in both["tables"]["list_when"], both["tables"]
        assert both["tables"]["nodes"][0]["hits"] == own["b"], both["tables"]
        same, p = pcmon_json("list", tid, "--calls", "--when", "whenleaf.via_b->*", sock=d.sock)
        assert p.returncode == 0, p.stderr
        row = same["calls"]["procedures"][0]
        assert row["calls"] == own["b"] and row["not_matching"]["calls"] == own["a"] + own["c"]
        d.stop()
        d2 = Daemon(state_dir=d.state).start()
        again, _ = pcmon_json("list", tid, "--calls", sock=d2.sock)
        assert again["calls"]["when"]["pattern"] == "whenleaf.via_b->*", again["calls"]
        assert again["calls"]["procedures"][0] == row, (again["calls"]["procedures"][0], row)
        nodes = pcmon_json("tables", tid, sock=d2.sock)[0]["tables"]["nodes"]
        assert nodes[0]["hits"] == own["b"] and nodes[0]["not_matching"] == own["a"] + own["c"]
    finally:
        (d2 or d).stop()


if __name__ == "__main__":
    run_tests(globals())
