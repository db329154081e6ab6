#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Names you can trust (docs/names.md): stripped code named after its FDE (module+0xSTART), each
inline frame at its own line, JIT code from /tmp/perf-PID.map, programs in another mount
namespace and programs deleted while they run."""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import (charged, ROOT, Daemon, first_json_line, pcmon, pcmon_json, procs, run_tests,
                 share_tolerance_pp, workload)

NODAEMON = "/nonexistent/pcmond.sock"
FNS = ("work_a", "work_b", "work_c")


def nm_addrs(exe):
    out = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines()) if len(p) == 3}


def check_shares(listing, own, names, among_named=False):
    """Each function's shallow share within the tolerance docs/design.md states of the program's
    own. @among_named: the program's shares are of the named functions' time alone (what
    it measured around them), so pcmon's are taken among their samples too: its time in
    the clock it reads them with, a system call whose cost grows with the host's load
    (6 % of the samples once), is in neither."""
    n = listing["summary"]["counted"]
    p = procs(listing)
    if among_named:
        n = sum(p[name]["shallow"] for name in names.values() if name in p)
    for fn, name in names.items():
        assert name in p, (name, sorted(p)[:30])
        got = p[name]["shallow"] / n
        tol = share_tolerance_pp(own[fn], n)
        assert abs(got - own[fn]) * 100 <= tol, \
            f"{name}: pcmon {got:.4f} vs program {own[fn]:.4f} " \
            f"(tolerance {tol:.2f} pp, {n} samples)"


def at_most_foreign(listing, frac):
    s = listing["summary"]
    assert s["foreign"] <= frac * s["counted"], s


def test_stripped_code_named_by_fde():
    """No symbols at all: each function is named MODULE+0xSTART, START as nm gives it."""
    tmp = tempfile.mkdtemp()
    exe = os.path.join(tmp, "threefn_stripped")
    try:
        shutil.copy(workload("threefn"), exe)
        addrs = nm_addrs(exe)
        subprocess.run(["strip", "--strip-all", exe], check=True)
        sections = subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True).stdout
        assert ".symtab" not in sections and ".eh_frame " in sections, sections
        names = {fn: f"threefn_stripped+0x{addrs[fn]:x}" for fn in FNS}
        d = Daemon().start()
        try:
            listing, p = pcmon_json("run", "--unwind", "dwarf", "--interval", 500, "--", exe, 3,
                                    sock=d.sock)
            check_shares(listing, first_json_line(p.stdout), names)
            at_most_foreign(listing, 0.005)
            row = procs(listing)[names["work_a"]]
            assert row["module"] == "threefn_stripped" and row["name"] == f"+0x{addrs['work_a']:x}"
            # WHEN names it as module+0xSTART, also by the module alone and by a glob
            n = procs(listing)[names["work_b"]]["shallow"]
            tid = listing["target"]["id"]
            for pat in (names["work_b"], f'"{names["work_b"]}"', f'"+0x{addrs["work_b"]:x}"'):
                w = pcmon_json("list", tid, "--when", pat, sock=d.sock)[0]
                assert charged(w) == n and procs(w)[names["work_b"]]["shallow"] == n, (pat, w)
            w = pcmon_json("list", tid, "--when", "threefn_stripped+0x*", sock=d.sock)[0]
            assert charged(w) >= 0.95 * charged(listing), (w["summary"], listing["summary"])
        finally:
            d.stop()
    finally:
        shutil.rmtree(tmp)


def test_debian_xz_named_by_eh_frame():
    """Debian's xz and liblzma ship without symbols for their internal functions."""
    xz = shutil.which("xz")
    assert xz, "xz is missing: make deps installs xz-utils"
    tmp = tempfile.mkdtemp()
    try:
        data = os.path.join(tmp, "data")
        with open(data, "wb") as f:
            # a few MB that compress a little: xz -9e works hard on them
            f.write(subprocess.run(["base64"], input=os.urandom(2_500_000),
                                   capture_output=True, check=True).stdout)
        listing, _ = pcmon_json("run", "--unwind", "dwarf", "--interval", 1000, "--", xz, "-9e",
                                "-T1", "-k", "-f", data, sock=NODAEMON)
        s = listing["summary"]
        assert s["counted"] >= 500, s
        at_most_foreign(listing, 0.05)
        lzma = sum(p["shallow"] for p in listing["procedures"]
                   if re.fullmatch(r"liblzma\.so\.5[.0-9]*\+0x[0-9a-f]+", p["procedure"]))
        assert lzma >= 0.5 * s["counted"], (lzma, s, listing["procedures"][:10])
        assert any(p["procedure"].startswith("xz+0x") and p["deep"] >= 0.5 * s["counted"]
                   for p in listing["procedures"]), listing["procedures"][:20]
    finally:
        shutil.rmtree(tmp)


def marker_line(path, marker):
    with open(path) as f:
        hits = [i + 1 for i, l in enumerate(f) if marker in l]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def saved_target(d, tid, timeout=20):
    """The daemon's saved results of a finished target (written when it exits)."""
    path = os.path.join(d.state, f"target-{tid}.json")
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                o = json.load(f)
            if o["state"] not in (0, "running"):  # no longer running (format 1 or 2)
                return o
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{path} not saved: {d.logtext()}")


def test_inline_frames_carry_call_sites():
    src = os.path.join(ROOT, "tests", "workloads", "special", "inline_chain.c")
    body = marker_line(src, "LINE leaf_work body")
    call_leaf = marker_line(src, "CALL leaf_work")
    call_mid = marker_line(src, "CALL mid_work")
    d = Daemon().start()
    try:
        listing, _ = pcmon_json("run", "--interval", 500, "--", workload("inline_chain"), 2,
                                sock=d.sock)
        p = procs(listing)
        n = charged(listing)
        leaf, mid, top = (p[f"inline_chain.{f}"] for f in ("leaf_work", "mid_work", "top_work"))
        # the middle of the chain is a procedure too, active whenever leaf_work runs
        assert mid["deep"] >= leaf["shallow"] and top["deep"] >= mid["deep"], (leaf, mid, top)
        assert leaf["shallow"] >= 0.5 * n, (leaf, n)
        # a procedure's own line is its entry, not a call site
        assert mid["line"] not in (call_leaf, call_mid) and top["line"] not in (call_leaf, call_mid)

        saved = saved_target(d, listing["target"]["id"])["sampling"]
        # a location's frames are indices into "procs"
        names = [pr["n"] for pr in saved["procs"]]
        chains = [l for l in saved["locs"]
                  if [names[i] for i in l["f"]] == ["leaf_work", "mid_work", "top_work"]]
        assert chains, [l["f"] for l in saved["locs"]][:20]
        for loc in chains:
            fl = loc["fl"]
            assert all(f.endswith("inline_chain.c") for f, _ in fl), fl
            # innermost: the line of the pc; outer frames: the line of the inlined call
            assert [line for _, line in fl] == [body, call_leaf, call_mid], (fl, body, call_leaf,
                                                                              call_mid)
            assert (loc["file"], loc["line"]) == tuple(fl[0]), loc
        # results saved with lines list the same after a restart
        d.stop()
        d.start()
        again = pcmon_json("list", listing["target"]["id"], sock=d.sock)[0]
        assert procs(again)["inline_chain.mid_work"]["deep"] == mid["deep"]
    finally:
        d.stop()


NODE_JS = """
function hotLoop(n) {
    let x = 0;
    for (let i = 0; i < n; i++)
        x = (x * 31 + i) % 1000003;
    return x;
}
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
const end = Date.now() + SECS * 1000;
let s = 0, inHot = 0;
while (Date.now() < end) {
    const t0 = cpu();
    s += hotLoop(100000);
    inHot += cpu() - t0;
}
console.log(JSON.stringify({ hotLoop: inHot / cpu(), cpu_s: cpu() / 1e6, s: s }));
setTimeout(() => {}, LINGER * 1000);
"""


@contextlib.contextmanager
def cwd(path):
    """node --perf-basic-prof also leaves an isolate-*-v8.log in its working directory."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def node_script(tmp, secs, linger=0):
    node = shutil.which("node") or shutil.which("nodejs")
    assert node, "node is missing: make deps installs nodejs"
    js = os.path.join(tmp, "hot.js")
    with open(js, "w") as f:
        f.write(NODE_JS.replace("SECS", str(secs)).replace("LINGER", str(linger)))
    return node, js


def jit_rows(listing, fn):
    return [p for p in listing["procedures"] if p["module"] == "[jit]" and fn in p["name"]]


def check_jit(listing, own):
    n = charged(listing)
    assert n >= 300, listing["summary"]
    hot = jit_rows(listing, "hotLoop")
    shallow = sum(p["shallow"] for p in hot)
    # The program's own share is process CPU time during its calls of hotLoop: it also holds
    # what V8's other threads and its clock did meanwhile (node has no per-thread clock),
    # so pcmon's share is a few points below it. What is checked is the name, carrying the
    # bulk of that time, and never more than the program spent there.
    tol = share_tolerance_pp(own["hotLoop"], n) / 100
    assert 0.5 * own["hotLoop"] <= shallow / n <= own["hotLoop"] + tol, \
        (shallow, n, own, listing["procedures"][:10])
    assert all(p["procedure"] == "[jit]." + p["name"] for p in hot), hot
    at_most_foreign(listing, 0.05)
    # stacks through JIT frames are whole: unwalkable ones are few
    assert n >= 0.95 * listing["summary"]["counted"], listing["summary"]
    return shallow / n, max(p["deep"] for p in hot) / n


# V8's JIT frames have no CFI but keep frame pointers: the default unwinding steps them by
# frame pointer, and the kernel's walk (--unwind fp) follows them too. (--no-python: pcmon
# reads no runtime's frames, so the perf map names the JIT code; where it reads V8's, the
# frames are JavaScript's and the map's names are not doubled: test_node.py.)
def test_jit_named_from_perf_map():
    tmp = tempfile.mkdtemp()
    try:
        node, js = node_script(tmp, 2)
        for unwind in ("auto", "fp"):
            with cwd(tmp):
                listing, p = pcmon_json("run", "--unwind", unwind, "--interval", 1000,
                                        "--no-python", "--", node, "--perf-basic-prof", js,
                                        sock=NODAEMON)
            os.unlink(f"/tmp/perf-{listing['target']['pid']}.map")  # node leaves it
            own = first_json_line(p.stdout)
            shallow, deep = check_jit(listing, own)
            print(f"  node hotLoop, --unwind {unwind}: shallow {shallow:.1%} deep {deep:.1%} "
                  f"of {charged(listing)} samples; its own {own['hotLoop']:.1%}", flush=True)
    finally:
        shutil.rmtree(tmp)


def test_jit_in_container_reads_its_own_tmp():
    """node in its own pid and mount namespaces writes /tmp/perf-1.map on a private tmpfs.

    That file can be read only while node lives: node idles a second at the end, so that a
    pcmon slowed down by a busy machine gets to its samples before it is gone."""
    tmp = tempfile.mkdtemp(dir="/var/tmp")  # not under the /tmp it hides
    try:
        node, js = node_script(tmp, 2, linger=1)
        script = f"mount -t tmpfs none /tmp && exec {node} --perf-basic-prof {js}"
        with cwd(tmp):
            listing, p = pcmon_json("run", "--interval", 1000, "--no-python", "--", "unshare",
                                    "--mount", "--pid", "--fork", "--propagation", "private",
                                    "sh", "-c", script, sock=NODAEMON)
        check_jit(listing, first_json_line(p.stdout))
    finally:
        shutil.rmtree(tmp)


def test_binary_only_in_another_mount_namespace():
    """The program lives on a tmpfs that exists only in its own mount namespace."""
    tmp = tempfile.mkdtemp()
    try:
        inner = os.path.join(tmp, "ns")
        os.mkdir(inner)
        exe = os.path.join(inner, "threefn_ns")
        script = (f"mount -t tmpfs none {inner} && cp {workload('threefn')} {exe} && "
                  f"exec {exe} 3")
        listing, p = pcmon_json("run", "--unwind", "dwarf", "--interval", 500, "--", "unshare",
                                "--mount", "--pid", "--fork", "--propagation", "private", "sh",
                                "-c", script, sock=NODAEMON)
        assert not os.path.exists(exe), "the binary must exist in the namespace only"
        # among the named functions: unshare, sh, mount and cp are sampled too, and take
        # longer on a busy machine (4 % of the samples once)
        check_shares(listing, first_json_line(p.stdout), {fn: f"threefn_ns.{fn}" for fn in FNS},
                     among_named=True)
        assert procs(listing)["threefn_ns.main"]["deep"] >= 0.9 * listing["summary"]["counted"]
    finally:
        shutil.rmtree(tmp)


def test_binary_deleted_while_it_runs():
    """Started, then unlinked, then watched with start --pid: still one module, named."""
    tmp = tempfile.mkdtemp()
    d = Daemon().start()
    proc = None
    try:
        exe = os.path.join(tmp, "threefn_gone")
        shutil.copy(workload("threefn"), exe)
        proc = subprocess.Popen([exe, "4"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)  # past its calibration, into the measured loop
        os.unlink(exe)
        out = pcmon("start", "--pid", proc.pid, "--unwind", "dwarf", "--interval", 500,
                    sock=d.sock, check=0).stdout
        tid = int(out.split()[0])  # start prints the target's id
        own = json.loads(proc.communicate(timeout=30)[0])
        time.sleep(0.5)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        p = procs(listing)
        n = listing["summary"]["counted"]
        assert n >= 1000, listing["summary"]
        assert not [k for k in p if "deleted" in k], sorted(p)
        assert {r["module"] for r in listing["procedures"] if "work_" in r["name"]} == \
            {"threefn_gone"}, listing["procedures"][:10]
        # started late, the listing covers the last 3.5 s of the program's 4: the shares of
        # its pieces are the same throughout
        check_shares(listing, own, {fn: f"threefn_gone.{fn}" for fn in FNS})
        at_most_foreign(listing, 0.005)
    finally:
        if proc and proc.poll() is None:
            proc.kill()
        d.stop()
        shutil.rmtree(tmp)


CXX_NAMES = {"bitmap_set_bit": "cxxnames.bitmap_set_bit(bitmap_head*, int)",
             "sum": "cxxnames.geo::Grid<int>::sum(int) const",
             "helper": "cxxnames.(anonymous namespace)::helper(long)"}


def test_cxx_names_are_demangled():
    """C++ procedures read as perf prints them, in the default mode and with fp, built with
    frame pointers or not; their shares are the program's own; WHEN names them without
    parameters, in full, or mangled; exports carry the same names."""
    for prog in ("cxxnames", "cxxnames_nofp"):
        for mode in ("auto", "fp"):
            listing, proc = pcmon_json("run", "--interval", 1000, "--unwind", mode, "--",
                                       workload(prog), 2.5, sock=NODAEMON)
            own = first_json_line(proc.stdout)
            names = {k: v.replace("cxxnames.", prog + ".") for k, v in CXX_NAMES.items()}
            check_shares(listing, own, names)
            assert not any("_Z" in p["procedure"] for p in listing["procedures"]), \
                [p["procedure"] for p in listing["procedures"] if "_Z" in p["procedure"]]
    d = Daemon().start()
    try:
        listing, proc = pcmon_json("run", "--interval", 1000, "--", workload("cxxnames"), 2.5,
                                   sock=d.sock)
        own = first_json_line(proc.stdout)
        tid = str(listing["target"]["id"])
        n = listing["summary"]["counted"]
        sum_count = procs(listing)[CXX_NAMES["sum"]]["shallow"]
        for when in ("geo::Grid<int>::sum", "cxxnames.geo::Grid<int>::sum",
                     '"geo::Grid<int>::sum(int) const"', "_ZNK3geo4GridIiE3sumEi",
                     "cxxnames._ZNK3geo4GridIiE3sumEi", "*::Grid<*>::sum"):
            # (a sample of the program's exit, unwalkable, is counted under any pattern)
            w = pcmon_json("list", tid, "--when", when, sock=d.sock)[0]
            assert charged(w) == sum_count, (when, w["summary"], sum_count)
        w = pcmon_json("list", tid, "--when", "_ZNK3geo4GridIlE3sumEi", sock=d.sock)[0]
        assert charged(w) == 0, w["summary"]  # Grid<long>: not in the program
        folded = pcmon("export", tid, "--format", "folded", sock=d.sock).stdout
        assert "geo::Grid<int>::sum(int) const" in folded and "_Z" not in folded, folded[:2000]
        # call counting names procedures the same way
        out = pcmon("count", "cxxnames.bitmap_set_bit", "cxxnames.geo::Grid<int>::sum", "--",
                    workload("cxxnames"), 0.5, sock=NODAEMON).stderr
        assert "bitmap_set_bit(bitmap_head*, int)" in out and \
            "geo::Grid<int>::sum(int) const" in out, out
        assert n >= 2000
    finally:
        d.stop()


def test_rust_names_are_demangled():
    """Rust's legacy mangling (its hash dropped) and v0, as rustc-demangle prints them."""
    for prog, names in (("rustnames", {"area": "rustnames.names::shapes::area",
                                       "total": "rustnames.names::shapes::Grid<T>::total"}),
                        ("rustnames_v0", {"area": "rustnames_v0.names::shapes::area",
                                          "total": "rustnames_v0.<names::shapes::Grid<u32>>::total"})):
        for mode in ("auto", "fp"):
            listing, proc = pcmon_json("run", "--interval", 1000, "--unwind", mode, "--",
                                       workload(prog), 2.5, sock=NODAEMON)
            check_shares(listing, first_json_line(proc.stdout), names, among_named=True)
            # (a name with no module, such as [truncated] or an unnamed address, has no dot)
            assert not any(p["procedure"].split(".", 1)[-1].startswith(("_Z", "_R"))
                           for p in listing["procedures"]), listing["procedures"][:10]
    w, _ = pcmon_json("run", "--interval", 1000, "--when", "names::shapes::area", "--",
                      workload("rustnames"), 1, sock=NODAEMON)
    assert set(procs(w)) >= {"rustnames.names::shapes::area"}, sorted(procs(w))
    assert w["summary"]["not_matching"] > 0 and w["summary"]["counted"] > 0, w["summary"]


def test_aliases_take_the_public_name():
    """glibc's free is also __libc_free (and cfree, an old version): one address, three
    names. The one users know is listed."""
    tmp = tempfile.mkdtemp()
    try:
        src, exe = os.path.join(tmp, "frees.c"), os.path.join(tmp, "frees")
        with open(src, "w") as f:
            f.write("#include <stdlib.h>\n#include <time.h>\n"
                    "int main(void) { time_t end = time(NULL) + 2; void *v[64];\n"
                    "  while (time(NULL) < end) {\n"
                    "    for (int i = 0; i < 64; i++) v[i] = malloc(100 + i * 17);\n"
                    "    for (int i = 0; i < 64; i++) free(v[i]); }\n  return 0; }\n")
        subprocess.run(["gcc", "-O2", src, "-o", exe], check=True)
        listing, _ = pcmon_json("run", "--interval", 1000, "--", exe, sock=NODAEMON)
        p = procs(listing)
        assert p["libc.so.6.free"]["deep"] >= 0.1 * listing["summary"]["counted"], p.get("libc.so.6.free")
        assert "libc.so.6.malloc" in p
        assert not any(n in p for n in ("libc.so.6.__libc_free", "libc.so.6.cfree",
                                        "libc.so.6.__libc_malloc")), sorted(p)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
