#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Python frames (docs/python.md) against tests/workloads/python/pyphases.py, a CPython 3.11
program that times its own functions: shares per Python function and per line, with either
unwinder, VIRTUAL and REAL, three threads, recursion, C extensions under Python frames, a
process attached after it started, WHEN over Python names, and --no-python."""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import (Daemon, Skip, first_json_line, pcmon, pcmon_json, procs, run_tests,
                 share_tolerance_pp)

PY = "/usr/bin/python3.11"
WORK = os.path.join(os.path.dirname(__file__), "..", "workloads", "python", "pyphases.py")
FNS = ("work_a", "work_b", "rec", "parse_json", "scan_re", "lined")


def need_python():
    if not os.path.exists(PY):
        raise Skip(f"no {PY} (apt-get install python3.11)")


def run(*opts, secs=4, args=(), sock="/nonexistent/pcmond.sock"):
    need_python()
    listing, p = pcmon_json("run", "--interval", 1000, *opts, "--", PY, WORK, secs, *args,
                            sock=sock)
    return listing, first_json_line(p.stdout)


def check_shares(listing, own, what="cpu", fns=FNS, floor_pp=2.0):
    n = listing["summary"]["counted"]
    assert n >= 1000, f"only {n} samples"
    p = procs(listing)
    for fn in fns:
        got = p.get(f"py.pyphases.{fn}", {"deep": 0})["deep"] / n
        want = own[what][fn]
        tol = share_tolerance_pp(want, n, floor_pp)
        assert abs(got - want) * 100 <= tol, \
            f"{fn}: pcmon {got:.4f} vs program {want:.4f} ({what}, tolerance {tol:.2f} pp, {n} samples)"


def test_virtual_dwarf_shares():
    """The default unwinder: each function's deep share within 2 pp of its own CPU share."""
    listing, own = run()
    check_shares(listing, own)
    p = procs(listing)
    # C extensions show under their Python caller
    assert p["py.pyphases.parse_json"]["deep"] > 0 and p["py.pyphases.scan_re"]["deep"] > 0
    # the interpreter's loop is gone from the samples that ran Python (what is left: start-up
    # before the interpreter was found, threads sampled before their state was made)
    ev = p.get("python3.11._PyEval_EvalFrameDefault", {"deep": 0})["deep"]
    assert ev <= 0.05 * listing["summary"]["counted"], ev


def test_virtual_fp_shares():
    """Frame pointers (Debian's python3.11 has none): the Python frames still come whole."""
    listing, own = run("--unwind", "fp")
    check_shares(listing, own)


def test_recursion_counted_once():
    listing, own = run()
    p = procs(listing)
    rec = p["py.pyphases.rec"]
    n = listing["summary"]["counted"]
    assert rec["deep"] <= n, rec
    check_shares(listing, own, fns=("rec",))


def test_real_sleep_charged_to_python():
    """REAL: a thread blocked in time.sleep is charged to nap(), its Python frame."""
    listing, own = run("--real", args=("--nap",))
    n = listing["summary"]["counted"]
    p = procs(listing)
    got = p["py.pyphases.nap"]["deep"] / n
    want = own["wall"]["nap"]
    assert abs(got - want) * 100 <= 3, (got, want)
    check_shares(listing, own, what="wall", fns=("work_a", "work_b", "rec"), floor_pp=3)


def test_when_python_names():
    """WHEN over Python names: only the samples under rec, all of them."""
    listing, own = run("--when", "py.pyphases.rec")
    s = listing["summary"]
    p = procs(listing)
    n = s["counted"]
    assert p["py.pyphases.rec"]["deep"] == n - s.get("not_matching_when", 0) or \
        p["py.pyphases.rec"]["deep"] > 0, s
    for fn in ("work_a", "parse_json"):
        assert p.get(f"py.pyphases.{fn}", {"deep": 0})["deep"] == 0, fn


def test_pid_attach_and_lines():
    """A program started before pcmond, attached by --pid; then --lines on a Python function."""
    need_python()
    d = Daemon().start()
    flag = tempfile.mktemp(prefix="pcmon-py-go-")
    proc = subprocess.Popen([PY, WORK, "5", "--wait", flag], stdout=subprocess.PIPE, text=True)
    try:
        pid = json.loads(proc.stdout.readline())["pid"]
        time.sleep(0.5)
        tid = pcmon("start", "--pid", pid, "--interval", 1000, sock=d.sock,
                    check=0).stdout.strip()
        open(flag, "w").close()
        out, _ = proc.communicate(timeout=60)
        own = first_json_line(out)
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        check_shares(listing, own)
        lines = pcmon_json("list", tid, "--lines", "py.pyphases.lined", sock=d.sock)[0]["lines"]
        n = lines["count"]
        rows = {str(l["line"]): l["count"] for l in lines["lines"]
                if os.path.basename(l["file"]) == "pyphases.py"}
        for line, want in own["lines"].items():
            got = rows.get(line, 0) / n
            assert abs(got - want) * 100 <= max(3, share_tolerance_pp(want, n, 3)), \
                (line, got, want, rows)
    finally:
        if proc.poll() is None:
            proc.kill()
        if os.path.exists(flag):
            os.unlink(flag)
        assert d.stop() == 0, d.logtext()


def test_no_python_lists_as_before():
    listing, _ = run("--no-python", secs=2)
    p = procs(listing)
    assert not [k for k in p if k.startswith("py.")], list(p)[:10]
    assert p["python3.11._PyEval_EvalFrameDefault"]["deep"] > 0.5 * listing["summary"]["counted"]
    assert listing["target"].get("python") is False, listing["target"]


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
