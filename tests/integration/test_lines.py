#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Per-line listing and profil (docs/lines.md) against tests/workloads/lines.c, which measures
the time of each of work()'s lines itself."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import (PCMON, ROOT, Daemon, first_json_line, pcmon, pcmon_json, procs, run_tests,
                 share_tolerance_pp, workload)

SRC = os.path.join(os.path.dirname(__file__), "..", "workloads", "lines.c")


def marker_line(marker):
    return next(i for i, l in enumerate(open(SRC), 1) if f"/* {marker} */" in l)


def profiled(*opts, secs=2):
    d = Daemon().start()
    try:
        listing, p = pcmon_json("run", "--interval", 250, *opts, "--", workload("lines"), secs,
                                sock=d.sock)
    except BaseException:
        d.stop()
        raise
    return d, str(listing["target"]["id"]), listing, first_json_line(p.stdout)


def lines_of(tid, proc, sock, *opts):
    return pcmon_json("list", tid, "--lines", proc, *opts, sock=sock)[0]["lines"]


def text_from(cwd, sock, *args):
    """pcmon's text output, run from directory @cwd."""
    p = subprocess.run([PCMON, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       env=dict(os.environ, PCMON_SOCKET=sock), timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def by_line(lines):
    return {(os.path.basename(l["file"]), l["line"]): l for l in lines["lines"]}


def within_call_h(part, lines):
    """The helper's samples in @part (its own lines, or work's under --when) are the CALL_H
    line's of @lines address by address, and nearly all of it: the line also holds one
    instruction of work's own, outside the inlined helper."""
    call_h = by_line(lines)[("lines.c", marker_line("CALL_H"))]
    at = {a["address"]: a["count"] for a in call_h["addresses"]}
    part_at = {a["address"]: a["count"] for l in part["lines"] for a in l["addresses"]}
    assert all(at.get(a) == c for a, c in part_at.items()), (part_at, at)
    assert sum(part_at.values()) == part["count"] >= 0.95 * call_h["count"], (part, call_h)


def check_shares(lines, own, tid, sock):
    rows = by_line(lines)
    n = lines["count"]
    # (the tolerance follows n: 2 s of lines at 4 kHz gave 8,000 here, 1,516 beside a build)
    assert n >= 1000, lines
    assert sum(l["count"] for l in lines["lines"]) == n
    for marker, key in (("LOOP_A", "a"), ("LOOP_B", "b"), ("CALL_H", "h")):
        row = rows[("lines.c", marker_line(marker))]
        got = row["count"] / n
        tol = share_tolerance_pp(own[key], n, floor_pp=3.0)
        assert abs(got - own[key]) * 100 <= tol, (marker, got, own, tol)
        assert sum(a["count"] for a in row["addresses"]) == row["count"]
    # every sample whose pc lies in work's code: its own and its inlined callees'
    flat = procs(pcmon_json("list", tid, "--no-inline", sock=sock)[0])
    assert n == flat["lines.work"]["shallow"], (n, flat["lines.work"])


def test_line_shares_fp_and_dwarf():
    for unwind in ("fp", "dwarf"):
        d, tid, listing, own = profiled("--unwind", unwind)
        try:
            lines = lines_of(tid, "work", d.sock)
            assert lines["procedure"] == "lines.work" and lines["line_tables"]
            check_shares(lines, own, tid, d.sock)
            # the inlined callee's samples also under its own lines
            # (the CALL_H line also holds one instruction of work's own, outside the inlined
            # helper: address by address, the helper's are the line's)
            h = lines_of(tid, "lines.helper", d.sock)
            within_call_h(h, lines)
            assert by_line(h)[("lines.c", marker_line("HELPER_LOOP"))]["count"] == h["count"]
            # hottest first, the addresses hottest first, each with its code
            counts = [l["count"] for l in lines["lines"]]
            assert counts == sorted(counts, reverse=True)
            for l in lines["lines"]:
                a = [x["count"] for x in l["addresses"]]
                assert a == sorted(a, reverse=True)
                assert all(re.fullmatch(r"([0-9a-f]{2})+", x["code"]) for x in l["addresses"])
            # the text: source lines and disassembly
            # from anywhere: relative file names are found under the compilation directory
            assert lines["comp_dir"] == ROOT, lines.get("comp_dir")
            text = text_from("/", d.sock, "list", tid, "--lines", "work")
            assert "/* LOOP_A */" in text and "/* CALL_H */" in text, text[:2000]
            assert re.search(r"\bimul\b", text), text[:2000]
        finally:
            d.stop()


def cells_from(addresses, offset, scale, ncells):
    """profil's cells computed here from the per-address counts, by profil(2)'s formula (docs/lines.md)."""
    cells, outside = [0] * ncells, 0
    for addr, count in addresses:
        if scale < 2 or addr < offset:
            outside += count
            continue
        c = 0 if scale == 2 else (((addr - offset) * scale) >> 16) // 2
        if c < ncells:
            cells[c] += count
        else:
            outside += count
    return cells, outside


def test_profil_scales_against_the_samples():
    d, tid, listing, own = profiled()
    try:
        lines = lines_of(tid, "work", d.sock)
        addrs = [(int(a["address"], 16), a["count"]) for l in lines["lines"] for a in l["addresses"]]
        for scale in (0x10000, 0x8000, 2, 1, 0):
            p = pcmon_json("profil", tid, "--offset", "work", "--scale", hex(scale), sock=d.sock)[0]
            p = p["profil"]
            off = int(p["offset"], 16)
            want, _ = cells_from(addrs, off, scale, len(p["cells"]))
            assert p["cells"] == want, (scale, p["cells"], want)
            assert p["inside"] == sum(p["cells"])
            assert p["inside"] + p["outside"] == p["samples"]
            if scale >= 2:
                # over the procedure: every sample of work's code, nothing else
                assert p["inside"] == lines["count"], (scale, p["inside"], lines["count"])
                for c in p["detail"]:
                    lo = int(c["lo"], 16)
                    assert off <= lo and c["procedure"] == "lines.work", c
                    if "hi" in c:
                        assert int(c["hi"], 16) <= off + (p["bufsiz"] // 2) * 131072 // scale + 2
            else:
                assert p["off"] and p["inside"] == 0 and p["cells"] == [], p
        # the same buffer from an address: MODULE+0xOFF, or the program's own 0xADDR
        p1 = pcmon_json("profil", tid, "--offset", "work", "--scale", "0x8000", sock=d.sock)[0]
        off, size = p1["profil"]["offset"], p1["profil"]["bufsiz"]
        for spec in (f"lines+{off}", off):
            p2 = pcmon_json("profil", tid, "--offset", spec, "--scale", "0x8000", "--bufsiz", size,
                            sock=d.sock)[0]
            assert p2["profil"]["cells"] == p1["profil"]["cells"], spec
        # a smaller buffer: the samples past it are counted outside
        p3 = pcmon_json("profil", tid, "--offset", off, "--scale", "0x10000", "--bufsiz", 16,
                        sock=d.sock)[0]["profil"]
        want, outside = cells_from(addrs, int(off, 16), 0x10000, 8)
        assert p3["cells"] == want and p3["outside"] == p3["samples"] - sum(want)
        text = pcmon("profil", tid, "--offset", "work", "--scale", "0x8000", sock=d.sock,
                     check=0).stdout
        assert "one cell per 4 bytes" in text and "outside the buffer" in text, text
    finally:
        d.stop()


def test_after_restart_and_with_when():
    d, tid, listing, own = profiled(secs=1)
    try:
        before = lines_of(tid, "work", d.sock)
        prof = pcmon_json("profil", tid, "--offset", "work", "--scale", "0x8000", sock=d.sock)[0]
        d.stop()
        d.start()
        after = lines_of(tid, "work", d.sock)
        strip = lambda ls: [(l["file"], l["line"], l["count"]) for l in ls["lines"]]
        assert strip(after) == strip(before)
        # the object is not open after a restart: no code, and the text says so
        text = pcmon("list", tid, "--lines", "work", sock=d.sock, check=0).stdout
        assert "no code: the object is not open" in text, text[:1000]
        # the compilation directory is not known now: --source-dir finds the source
        assert "/* LOOP_A */" not in text_from("/", d.sock, "list", tid, "--lines", "work")
        text = text_from("/", d.sock, "list", tid, "--lines", "work", "--source-dir",
                         os.path.join(ROOT, "tests", "workloads"))
        assert "/* LOOP_A */" in text, text[:1000]
        prof2 = pcmon_json("profil", tid, "--offset", "work", "--scale", "0x8000", sock=d.sock)[0]
        assert prof2["profil"]["cells"] == prof["profil"]["cells"]
        # --when first: only the samples under the helper... which is inlined: its line only.
        # The CALL_H line also holds an instruction of work's own (loading the helper's
        # argument, outside its inlined code): --when leaves that address out, and keeps
        # every other address of the line with its count
        w = lines_of(tid, "work", d.sock, "--when", "*->lines.helper")
        assert [l["line"] for l in w["lines"]] == [marker_line("CALL_H")], w
        within_call_h(w, before)
    finally:
        d.stop()


def test_without_line_tables_and_errors():
    d = Daemon().start()
    try:
        listing, _ = pcmon_json("run", "--interval", 500, "--", workload("lines_nodebug"), 1,
                                sock=d.sock)
        tid = str(listing["target"]["id"])
        hot = procs(listing)["lines_nodebug.work"]
        ls = lines_of(tid, "work", d.sock)
        assert not ls["line_tables"] and ls["count"] == hot["shallow"], (ls, hot)
        assert [l["line"] for l in ls["lines"]] == [0]
        text = pcmon("list", tid, "--lines", "work", sock=d.sock, check=0).stdout
        assert "no line tables" in text and "addresses only" in text, text
        # mistakes, each one line
        for args, status, words in (
                (["list", tid, "--lines", "no_such_proc"], 1, "no procedure no_such_proc"),
                (["profil", tid, "--offset", "work"], 2, "--scale"),
                (["profil", tid, "--scale", "0x8000"], 2, "--offset"),
                (["profil", tid, "--offset", "work", "--scale", "0x10001"], 2, "--scale"),
                (["profil", tid, "--offset", "0x1000", "--scale", "0x8000"], 2, "--bufsiz"),
                (["profil", tid, "--offset", "x+0xzz", "--scale", "2"], 2, "--offset"),
                (["profil", tid, "--offset", "py+0x10", "--scale", "2"], 2, "list --lines"),
                (["profil", tid, "--offset", "0x1000", "--scale", "2", "--bufsiz", "1"], 2,
                 "--bufsiz")):
            p = pcmon(*args, sock=d.sock, check=status)
            assert words in p.stderr and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
    finally:
        d.stop()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
