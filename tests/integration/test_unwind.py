#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Whole stacks without frame pointers: --unwind dwarf|auto with libdw, inline frames,
separate debug info."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, pcmon_json, procs, run_tests, workload

NODAEMON = "/nonexistent/pcmond.sock"


def run(name, *opts, secs=2):
    return pcmon_json("run", "--interval", 500, *opts, "--", workload(name), secs,
                      sock=NODAEMON)[0]


def charged(listing):
    s = listing["summary"]
    return s["counted"] - sum(c["count"] for c in s["critical"])


def test_qsort_comparator_keeps_its_callers():
    for mode in ("dwarf", "auto"):
        listing = run("qsort_nofp", "--unwind", mode)
        n = charged(listing)
        unwalkable = listing["summary"]["counted"] - n
        assert unwalkable <= 0.01 * listing["summary"]["counted"], listing["summary"]
        p = procs(listing)
        assert listing["target"]["unwind"] == mode
        assert p["qsort_nofp.main"]["deep"] >= 0.98 * n, (mode, p["qsort_nofp.main"], n)
        sorters = [v["deep"] for k, v in p.items() if k.startswith("libc.so.6.") and
                   ("qsort" in k or "msort" in k)]
        assert sorters and max(sorters) >= 0.95 * n, (mode, sorters, n)
        assert p["qsort_nofp.slow_compare"]["shallow"] >= 0.9 * n


def test_fp_loses_them():
    listing = run("qsort_nofp", "--unwind", "fp")
    n = listing["summary"]["counted"]
    main = procs(listing).get("qsort_nofp.main", {"deep": 0})["deep"]
    assert main < 0.5 * n, (main, n)


def test_leaf_caller_present_under_auto():
    """GCC gives frame-pointer leaf functions no frame: fp skips the leaf's caller."""
    auto = run("leaf_fp")
    assert auto["target"]["unwind"] == "auto"
    n = charged(auto)
    assert procs(auto)["leaf_fp.middle_work"]["deep"] >= 0.9 * n, procs(auto)
    assert procs(auto)["leaf_fp.main"]["deep"] >= 0.98 * n
    fp = run("leaf_fp", "--unwind", "fp")
    assert procs(fp).get("leaf_fp.middle_work", {"deep": 0})["deep"] < 0.1 * charged(fp)


def check_inline(listing, prog):
    p = procs(listing)
    inl, outer = p[f"{prog}.hot_inline"], p[f"{prog}.outer"]
    # hot_inline is 7/10 of outer's work and is a procedure of its own, inside outer
    assert abs(inl["shallow"] / outer["deep"] - 0.7) <= 0.03, (inl, outer)
    assert inl["deep"] == inl["shallow"] and outer["deep"] >= inl["deep"] + outer["shallow"]
    assert inl.get("file", "").endswith("inlined.c") and inl.get("line"), inl


def test_inlined_function_is_a_procedure():
    listing = run("inlined")
    check_inline(listing, "inlined")
    flat = run("inlined", "--no-inline")
    assert "inlined.hot_inline" not in procs(flat)
    o = procs(flat)["inlined.outer"]
    assert o["shallow"] >= 0.9 * charged(flat), o


def test_separate_debug_info_by_debuglink():
    exe = workload("inlined_stripped")
    out = subprocess.run(["readelf", "-S", exe], capture_output=True, text=True).stdout
    assert ".symtab" not in out and ".debug_info" not in out, "the binary must be stripped"
    check_inline(run("inlined_stripped"), "inlined_stripped")


def test_separate_debug_info_by_build_id():
    tmp = tempfile.mkdtemp()
    exe = os.path.join(tmp, "inlined_bid")
    shutil.copy(workload("inlined"), exe)
    notes = subprocess.run(["readelf", "-n", exe], capture_output=True, text=True).stdout
    bid = notes.split("Build ID: ")[1].split()[0]
    ddir = f"/usr/lib/debug/.build-id/{bid[:2]}"
    dfile = f"{ddir}/{bid[2:]}.debug"
    created = not os.path.exists(dfile)
    os.makedirs(ddir, exist_ok=True)
    try:
        subprocess.run(["objcopy", "--only-keep-debug", exe, dfile], check=True)
        subprocess.run(["objcopy", "--strip-all", exe], check=True)
        listing = pcmon_json("run", "--interval", 500, "--", exe, 2, sock=NODAEMON)[0]
        check_inline(listing, "inlined_bid")
    finally:
        if created and os.path.exists(dfile):
            os.unlink(dfile)
        shutil.rmtree(tmp)


def test_status_shows_how_each_object_unwinds():
    d = Daemon().start()
    try:
        pcmon_json("run", "--interval", 1000, "--", workload("qsort_nofp"), 0.5, sock=d.sock)
        st = pcmon_json("status", sock=d.sock)[0]
        objs = {os.path.basename(o["path"]): o for o in st["objects"]}
        assert objs["qsort_nofp"]["unwind"] == "dwarf" and objs["qsort_nofp"]["cfi"] == ".eh_frame"
        assert objs["libc.so.6"]["frames_unwound"] > 0
        assert st["dwarf_samples_unwound"] > 0
    finally:
        d.stop()


def test_real_mode_unwinds_off_cpu_stacks():
    """libc's nanosleep has no frame pointer: only CFI finds usleep's callers off CPU."""
    src = os.path.join(tempfile.mkdtemp(), "libcsleep.c")
    exe = src[:-2]
    with open(src, "w") as f:
        f.write("#include <unistd.h>\n"
                "__attribute__((noinline)) void nap(void) { usleep(5000); "
                "__asm__ volatile(\"\" ::: \"memory\"); }\n"
                "int main(void) { for (int i = 0; i < 200; i++) nap(); return 0; }\n")
    subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer", src, "-o", exe], check=True)
    listing = pcmon_json("run", "--real", "--interval", 1000, "--", exe, sock=NODAEMON)[0]
    n = charged(listing)
    p = procs(listing)
    assert listing["summary"]["off_blocked"] >= 0.8 * n
    assert p["libcsleep.nap"]["deep"] >= 0.95 * n, (p.get("libcsleep.nap"), n)
    assert p["libcsleep.main"]["deep"] >= 0.98 * n


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
