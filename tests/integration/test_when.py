#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""WHEN call patterns end to end: the MAINSAIL story of a hot leaf and its callers."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lib import charged, Daemon, first_json_line, pcmon, pcmon_json, procs, run_tests, workload

NODAEMON = "/nonexistent/pcmond.sock"


def callers_run(*opts, sock=NODAEMON):
    listing, p = pcmon_json("run", "--interval", 500, *opts, "--", workload("callers"), 3,
                            sock=sock)
    return listing, first_json_line(p.stdout)


def test_colon_before_leaf_charges_its_caller():
    listing, _ = callers_run("--when", ":callers.leaf")
    s = listing["summary"]
    p = procs(listing)
    # only samples in leaf count, all charged to mid, its only caller (the assertions are
    # exact: any count will do, and a busy machine gives the program less CPU)
    assert s["counted"] >= 500 and s["not_matching"] > 0, s
    assert p["callers.mid"]["shallow"] == charged(listing), p
    assert "callers.leaf" not in p, "the callee of the charged frame gets nothing"
    assert s["interrupts"] == s["counted"] + s["not_matching"]


def test_colon_before_mid_splits_callers_in_true_proportions():
    listing, own = callers_run("--when", ":callers.mid->callers.leaf")
    n = charged(listing)
    p = procs(listing)
    a = p["callers.caller_a"]["shallow"] / n
    b = p["callers.caller_b"]["shallow"] / n
    want_a = own["caller_a"] / (own["caller_a"] + own["caller_b"])
    assert abs(a - want_a) <= 0.03, (a, want_a)
    assert abs(b - (1 - want_a)) <= 0.03, (b, 1 - want_a)
    assert p["callers.main"]["deep"] == n
    assert "callers.mid" not in p and "callers.leaf" not in p


def test_list_reapplies_any_pattern_to_stored_samples():
    d = Daemon().start()
    try:
        plain, own = callers_run(sock=d.sock)
        tid = str(plain["target"]["id"])
        whole = plain["summary"]["counted"]
        a = pcmon_json("list", tid, "--when", ":callers.mid->callers.leaf", sock=d.sock)[0]
        b = pcmon_json("list", tid, "--when", "callers.mid:->*", sock=d.sock)[0]
        again = pcmon_json("list", tid, sock=d.sock)[0]
        assert again["summary"] == plain["summary"], "re-applying must not change the target"
        # the same samples, filtered and charged at list time
        sa = a["summary"]
        assert sa["interrupts"] == whole and sa["counted"] + sa["not_matching"] == whole
        pa = procs(a)
        want_a = own["caller_a"] / (own["caller_a"] + own["caller_b"])
        assert abs(pa["callers.caller_a"]["shallow"] / charged(a) - want_a) <= 0.03
        # mid: with all it calls: every sample in mid or leaf charged to mid
        pb = procs(b)
        pp = procs(plain)
        assert pb["callers.mid"]["shallow"] == pp["callers.mid"]["deep"], (pb, pp)
    finally:
        d.stop()


def test_start_with_when_filters_what_counts():
    d = Daemon().start()
    try:
        listing, _ = callers_run("--when", "caller_b->*", sock=d.sock)
        s = listing["summary"]
        p = procs(listing)
        assert s["not_matching"] > s["counted"] > 0, s  # caller_b is 1 call in 5
        assert p["callers.caller_b"]["deep"] == charged(listing)
        assert "callers.caller_a" not in p
        assert listing["target"]["when"] == "caller_b->*"
        text = pcmon("list", str(listing["target"]["id"]), sock=d.sock, check=0).stdout
        assert "not matching WHEN" in text.splitlines()[1]
    finally:
        d.stop()


def test_when_file_and_icase():
    with tempfile.NamedTemporaryFile("w", suffix=".pat", delete=False) as f:
        f.write("WHEN :CALLERS.MID\n   -> callers.LEAF;\n")
    try:
        r = pcmon("run", "--when-file", f.name, "--", "true", sock=NODAEMON)
        assert r.returncode == 0, r.stderr  # parses; matches nothing without -i
        listing, own = callers_run("--when-file", f.name, "-i")
        p = procs(listing)
        assert set(p) >= {"callers.caller_a", "callers.caller_b", "callers.main"}
        assert "callers.mid" not in p
    finally:
        os.unlink(f.name)


def test_bad_pattern_rejected_before_anything_starts():
    marker = tempfile.mktemp()
    r = pcmon("run", "--when", "callers.mid->", "--", "touch", marker, sock=NODAEMON)
    assert r.returncode == 2, r
    assert r.stderr.strip() == "pcmon: --when: column 14: expected a name after '->'", r.stderr
    assert not os.path.exists(marker), "the command must not have run"
    with tempfile.NamedTemporaryFile("w", suffix=".pat", delete=False) as f:
        f.write("a ->\n  (b | ;\n")
    try:
        r = pcmon("run", "--when-file", f.name, "--", "true", sock=NODAEMON)
        assert r.returncode == 2 and r.stderr.startswith("pcmon: --when-file: line 2, column"), r.stderr
    finally:
        os.unlink(f.name)
    d = Daemon().start()
    try:
        r = pcmon("list", "--when", "(a", sock=d.sock)
        assert r.returncode == 2 and "--when: column" in r.stderr, r.stderr
    finally:
        d.stop()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
