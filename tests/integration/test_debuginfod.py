#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Debug info from debuginfod servers (opt-in): a stripped program gets its names, inline
frames and lines from a real `debuginfod` serving its split-off debug info; without
DEBUGINFOD_URLS nothing is asked; a server that never answers delays nothing; names of
samples already taken improve when the debug info arrives later."""
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from lib import (ROOT, Daemon, first_json_line, pcmon, pcmon_json, procs, run_tests,
                 share_tolerance_pp)

NODAEMON = "/nonexistent/pcmond.sock"
SRC = os.path.join(ROOT, "tests", "workloads", "special", "inlined.c")


def own_share(p):
    """hot_inline's share of outer's work as the workload measured it (about 7/10)."""
    return first_json_line(p.stdout)["inline_share_of_outer"]


def check_inline(listing, prog, want):
    """As in test_unwind: hot_inline is a procedure of its own, @want of outer's work (the
    workload's own measure: own_share)."""
    p = procs(listing)
    assert f"{prog}.hot_inline" in p and f"{prog}.outer" in p, sorted(p)[:20]
    inl, outer = p[f"{prog}.hot_inline"], p[f"{prog}.outer"]
    tol = share_tolerance_pp(want, outer["deep"], 3.0) / 100
    # (the summary says what was lost, cut or not yet named: what a failure needs)
    print(f"  inline share: pcmon {inl['shallow'] / outer['deep']:.3f} of {outer['deep']}, program {want:.3f}")
    assert abs(inl["shallow"] / outer["deep"] - want) <= tol, \
        (inl, outer, want, tol, listing["summary"], sorted(p.items(), key=lambda kv: -kv[1]["deep"])[:8])
    assert outer["deep"] >= inl["deep"] + outer["shallow"]
    assert inl.get("file", "").endswith("inlined.c") and inl.get("line"), inl


def nameless(listing, prog):
    """The program's own procedures are unknown: no symbols, no DWARF."""
    return not any(k.startswith(prog + ".") and not k.endswith(".?") for k in procs(listing))


def last_json(text):
    """The last JSON document in @text (the program prints its own first)."""
    dec, pos, doc = json.JSONDecoder(), 0, None
    while (start := text.find("{", pos)) >= 0:
        try:
            doc, pos = dec.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
    assert doc is not None, text[-2000:]
    return doc


def state_of(status, bid):
    """The state pcmond gives build-id @bid: pending, fetching, fetched, failed, or None."""
    for b in status["debuginfod"].get("build_ids", []):
        if b["build_id"] == bid:
            return b["state"]
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Program:
    """inlined.c built with a build-id of its own (so no other test's or engineer's debug
    info can be found for it), stripped of everything, its debug info split into @srvdir."""

    def __init__(self, tmp, srvdir, name, debuglink=False):
        self.name = name
        self.exe = os.path.join(tmp, name)
        self.bid = os.urandom(20).hex()
        subprocess.run(["gcc", "-std=gnu11", "-D_GNU_SOURCE", "-O2", "-g",
                        "-I" + os.path.join(ROOT, "include"), SRC, "-o", self.exe,
                        f"-Wl,--build-id=0x{self.bid}", "-lm"], check=True)
        self.debug = os.path.join(srvdir, name + ".debug")
        subprocess.run(["objcopy", "--only-keep-debug", self.exe, self.debug], check=True)
        if debuglink:  # found next to the program, by .gnu_debuglink
            subprocess.run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + self.debug,
                            self.exe], check=True)
            return
        subprocess.run(["objcopy", "--strip-all", self.exe], check=True)
        out = subprocess.run(["readelf", "-S", "-n", self.exe], capture_output=True,
                             text=True).stdout
        assert ".symtab" not in out and ".debug_info" not in out, "must be stripped"
        assert ".gnu_debuglink" not in out and self.bid in out, out


class Server:
    """debuginfod from Debian's package, scanning ELF/DWARF files in a directory."""

    def __init__(self, tmp, srvdir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.logpath = os.path.join(tmp, "debuginfod.log")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(
            ["debuginfod", "-p", str(self.port), "-F", "-t", "1", "-g", "0", "-c", "1",
             "-d", os.path.join(tmp, "debuginfod.sqlite"), srvdir],
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait_indexed(self, bid, timeout=60):
        """Until the server answers 200 for @bid (it scans in the background)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, f"debuginfod exited: {self.logtext()}"
            try:
                with urllib.request.urlopen(f"{self.url}/buildid/{bid}/debuginfo",
                                            timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"debuginfod did not index {bid}: {self.logtext()}")

    def wait_up(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, f"debuginfod exited: {self.logtext()}"
            try:
                with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"debuginfod did not come up: {self.logtext()}")

    def requests(self, bid):
        """How many times libdebuginfod (not our polling) asked for @bid."""
        return sum(1 for l in self.logtext().splitlines()
                   if f"/buildid/{bid}/" in l and "elfutils" in l)

    def logtext(self):
        self.log.flush()
        with open(self.logpath) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Gate:
    """A TCP relay to @port that holds every connection until opened: a server whose
    first answer comes as late as the test wants."""

    def __init__(self, port):
        self.upstream = port
        self.opened = threading.Event()
        self.connections = 0
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.url = f"http://127.0.0.1:{self.lsock.getsockname()[1]}"
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._relay, args=(c,), daemon=True).start()

    def _relay(self, c):
        with c:
            self.opened.wait()
            if self.closed:
                return
            with socket.create_connection(("127.0.0.1", self.upstream)) as u:
                socks = [c, u]
                while True:
                    r, _, _ = select.select(socks, [], [], 30)
                    if not r:
                        return
                    for s in r:
                        data = s.recv(65536)
                        if not data:
                            return
                        (u if s is c else c).sendall(data)

    def close(self):
        self.closed = True
        self.opened.set()
        self.lsock.close()


def env_with(**kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_")}
    env.update(kw)
    return env


def run(prog, env, *opts, secs=1.5, exe=None):
    return pcmon_json("run", "--interval", 1000, *opts, "--", exe or prog.exe, secs,
                      sock=NODAEMON, env=env)


def fixture(fn):
    """Run @fn(tmp, srvdir) and clean up its directory, whatever happens."""
    tmp = tempfile.mkdtemp(prefix="pcmon-dbgd-")
    srvdir = os.path.join(tmp, "srv")
    os.mkdir(srvdir)
    try:
        return fn(tmp, srvdir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_stripped_program_gets_names_from_debuginfod():
    """pcmon run (its own engine) with DEBUGINFOD_URLS: names, inline frames and lines of
    a program that carries no symbols at all; one request; the file lands in --cache-dir."""
    def body(tmp, srvdir):
        prog = Program(tmp, srvdir, "dbgd_fetch")
        srv = Server(tmp, srvdir)
        try:
            srv.wait_indexed(prog.bid)
            cache = os.path.join(tmp, "cache")
            env = env_with(DEBUGINFOD_URLS=srv.url)
            t0 = time.time()
            listing, p = run(prog, env, "--cache-dir", cache, secs=3)
            took = time.time() - t0
            runs = 1
            if nameless(listing, prog.name) and listing["summary"]["debuginfod_pending"]:
                # a machine so busy that the download outlasted the program: the listing
                # does not wait for it; the next run finds it in the cache
                listing, p = run(prog, env, "--cache-dir", cache, secs=3)
                runs = 2
            check_inline(listing, prog.name, own_share(p))
            # once (twice if the first download was cut short when the first run ended)
            assert 1 <= srv.requests(prog.bid) <= runs, srv.logtext()[-3000:]
            cached = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
                      if prog.bid in d]
            assert cached, list(os.walk(cache))
            print(f"  fetch: run of 3 s took {took:.2f} s", flush=True)
        finally:
            srv.stop()
    fixture(body)


def test_dwz_debug_info_brings_its_shared_part():
    """Debug info compressed with dwz (as distributions ship it) refers to a shared file
    by .gnu_debugaltlink: fetched too, by its own build-id; inline frames need it."""
    def body(tmp, srvdir):
        progs = [Program(tmp, srvdir, n) for n in ("dbgd_dwz1", "dbgd_dwz2")]
        common = os.path.join(srvdir, "common.debug")
        # the shared part's name says where it would be installed: not on this machine
        subprocess.run(["dwz", "-m", common, "-M", f"/usr/lib/debug/.dwz/pcmon-{os.getpid()}.debug",
                        *[p.debug for p in progs]], check=True)
        out = subprocess.run(["readelf", "-S", "-n", common, progs[0].debug],
                             capture_output=True, text=True).stdout
        assert ".gnu_debugaltlink" in out, out
        alt = out.split("Build ID: ")[1].split()[0]
        srv = Server(tmp, srvdir)
        try:
            srv.wait_indexed(progs[0].bid)
            srv.wait_indexed(alt)
            listing, p = run(progs[0], env_with(DEBUGINFOD_URLS=srv.url), "--cache-dir",
                             os.path.join(tmp, "cache"), secs=2)
            check_inline(listing, progs[0].name, own_share(p))
            assert srv.requests(progs[0].bid) == 1 and srv.requests(alt) == 1, \
                srv.logtext()[-3000:]
        finally:
            srv.stop()
    fixture(body)


def test_local_debug_info_comes_first():
    """With servers configured, debug info found here (by .gnu_debuglink, by build-id under
    /usr/lib/debug) is used as before, and nothing is asked for it."""
    def body(tmp, srvdir):
        linked = Program(tmp, tmp, "dbgd_link", debuglink=True)
        byid = Program(tmp, tmp, "dbgd_byid")
        ddir = f"/usr/lib/debug/.build-id/{byid.bid[:2]}"
        dfile = f"{ddir}/{byid.bid[2:]}.debug"
        made_dir = not os.path.isdir(ddir)
        srv = Server(tmp, srvdir)  # serves nothing: any request shows in its log
        try:
            os.makedirs(ddir, exist_ok=True)
            shutil.copy(byid.debug, dfile)
            os.unlink(byid.debug)
            srv.wait_up()
            env = env_with(DEBUGINFOD_URLS=srv.url)
            cache = os.path.join(tmp, "cache")
            for prog in (linked, byid):
                listing, p = run(prog, env, "--cache-dir", cache, secs=1.5)
                check_inline(listing, prog.name, own_share(p))
                assert srv.requests(prog.bid) == 0, srv.logtext()[-3000:]
        finally:
            srv.stop()
            if os.path.exists(dfile):
                os.unlink(dfile)
            if made_dir:
                try:
                    os.rmdir(ddir)  # only if empty: others may use it meanwhile
                except OSError:
                    pass
    fixture(body)


def test_off_without_urls():
    """No DEBUGINFOD_URLS (or --debuginfod ''): no request, names stay unknown."""
    def body(tmp, srvdir):
        prog = Program(tmp, srvdir, "dbgd_off")
        srv = Server(tmp, srvdir)
        try:
            srv.wait_indexed(prog.bid)
            cache = os.path.join(tmp, "cache")
            listing, _ = run(prog, env_with(), "--cache-dir", cache, secs=1)
            assert nameless(listing, prog.name), procs(listing).keys()
            assert listing["summary"]["counted"] > 0
            assert "debuginfod_pending" not in listing["summary"]
            # an empty --debuginfod turns it off even when the environment names servers
            listing, _ = run(prog, env_with(DEBUGINFOD_URLS=srv.url), "--debuginfod", "",
                             "--cache-dir", cache, secs=1)
            assert nameless(listing, prog.name), procs(listing).keys()
            assert srv.requests(prog.bid) == 0, srv.logtext()[-3000:]
            assert not os.path.exists(cache), list(os.walk(cache))
        finally:
            srv.stop()
    fixture(body)


def test_server_that_never_answers_delays_nothing():
    """A server that accepts and never replies (with a 60 s client timeout): the run ends
    on time with its samples, names missing; pcmond drains as usual, shows the fetch
    pending, answers at once and stops promptly."""
    def body(tmp, srvdir):
        prog = Program(tmp, srvdir, "dbgd_hole")
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(16)  # never accepted: connections wait in the backlog
        url = f"http://127.0.0.1:{hole.getsockname()[1]}"
        env = env_with(DEBUGINFOD_URLS=url, DEBUGINFOD_TIMEOUT="60")
        d = None
        try:
            t0 = time.time()
            listing, _ = run(prog, env, "--cache-dir", os.path.join(tmp, "c1"), secs=2)
            took = time.time() - t0
            s = listing["summary"]
            # sampled as usual (a busy machine may give the program far less than its 2 s)
            assert s["counted"] >= 100, s
            assert nameless(listing, prog.name), procs(listing).keys()
            # 2 s of work, then about 1 s for the stuck download to be aborted: far from
            # the client's 60 s (the bounds leave room for a busy machine)
            assert took < 2 + 10, took

            d = Daemon(args=["--debuginfod", url, "--cache-dir", os.path.join(tmp, "c2")],
                       env=env).start()
            listing, _ = pcmon_json("run", "--interval", 1000, "--", prog.exe, 2, sock=d.sock)
            assert listing["summary"]["counted"] >= 100, listing["summary"]
            assert nameless(listing, prog.name)
            t1 = time.time()
            st = pcmon_json("status", sock=d.sock)[0]
            again = pcmon_json("list", str(listing["target"]["id"]), sock=d.sock)[0]
            answered = time.time() - t1
            assert again["summary"]["counted"] == listing["summary"]["counted"]
            dbg = st["debuginfod"]
            assert dbg["enabled"] and dbg["urls"] == url and dbg["fetched"] == 0, dbg
            assert state_of(st, prog.bid) in ("pending", "fetching"), dbg
            per_drain = st["drain_ms_total"] / max(st["drains"], 1)
            # a drain that waited for the download would wait out the client's 60 s; one that
            # names a new process's objects takes its time on a busy machine (127 ms beside a
            # build, where a quiet one takes a few)
            assert st["drain_ms_max"] < 5000, st
            assert answered < 10, answered
            text = pcmon("status", sock=d.sock, check=0).stdout
            assert "debuginfod" in text and url in text, text
            text = pcmon("list", str(listing["target"]["id"]), sock=d.sock, check=0).stdout
            assert "still downloading" in text, text
            t2 = time.time()
            d.stop()
            stopped = time.time() - t2
            assert d.proc.returncode == 0, d.logtext()
            assert stopped < 10, stopped
            print(f"  never answers: run {took:.2f} s for 2 s of work; drain {per_drain:.2f} ms "
                  f"avg over {st['drains']}; status+list {answered * 1000:.0f} ms; "
                  f"pcmond stop {stopped:.2f} s", flush=True)
        finally:
            if d:
                d.stop()
                shutil.rmtree(d.dir, ignore_errors=True)
            hole.close()
    fixture(body)


def test_names_improve_after_the_fact():
    """pcmond's server answers only after the samples were taken and listed (and the
    program deleted): the same target, listed again once the debug info arrived, has the
    names, inline frames and lines; its saved results too."""
    names_improve(let_go=False)


def test_names_improve_for_an_object_let_go():
    """The same, the program's object let go (idle for a second) before its debug info
    arrived: it is opened again to take it (it was skipped: the names never improved)."""
    names_improve(let_go=True)


def names_improve(let_go):
    def body(tmp, srvdir):
        prog = Program(tmp, srvdir, "dbgd_late")
        srv = Server(tmp, srvdir)
        gate, d = None, None
        try:
            srv.wait_indexed(prog.bid)
            gate = Gate(srv.port)
            # the held request must outlive the wait: no client timeout in between
            d = Daemon(args=["--debuginfod", gate.url, "--cache-dir", os.path.join(tmp, "c")]
                       + (["--object-idle", "1"] if let_go else []),
                       env=env_with(DEBUGINFOD_TIMEOUT="300")).start()
            first, p = pcmon_json("run", "--interval", 1000, "--", prog.exe, 2, sock=d.sock)
            want = first_json_line(p.stdout)["inline_share_of_outer"]
            tid = str(first["target"]["id"])
            assert nameless(first, prog.name), procs(first).keys()
            assert first["summary"]["debuginfod_pending"] >= 1, first["summary"]
            st = pcmon_json("status", sock=d.sock)[0]
            assert state_of(st, prog.bid) in ("pending", "fetching"), st["debuginfod"]
            assert st["debuginfod"]["fetched"] == 0, st["debuginfod"]
            before = pcmon_json("list", tid, sock=d.sock)[0]
            assert nameless(before, prog.name)  # the gate is still closed
            # gone from the disk too: pcmond reopens the image it read
            os.unlink(prog.exe)
            if let_go:  # the object let go before the gate opens
                deadline = time.time() + 30
                while pcmon_json("status", "--json", sock=d.sock)[0]["symbols"]["objects_open"]:
                    assert time.time() < deadline, "the objects were never let go"
                    time.sleep(0.2)

            gate.opened.set()
            deadline = time.time() + 60
            while time.time() < deadline:
                st = pcmon_json("status", sock=d.sock)[0]
                if state_of(st, prog.bid) == "fetched":
                    break
                time.sleep(0.1)
            dbg = st["debuginfod"]
            assert state_of(st, prog.bid) == "fetched" and dbg["fetched"] == 1, dbg
            after = pcmon_json("list", tid, sock=d.sock)[0]
            check_inline(after, prog.name, want)
            assert after["summary"]["counted"] == before["summary"]["counted"]
            assert srv.requests(prog.bid) == 1
            print(f"  late: fetch took {dbg['fetch_ms_max']:.0f} ms (held at the gate)",
                  flush=True)
            # a restarted pcmond lists the saved results with the names
            d.stop()
            assert d.proc.returncode == 0, d.logtext()
            with open(os.path.join(d.state, f"target-{tid}.json")) as f:
                saved = f.read()
            assert '"outer"' in saved and '"hot_inline"' in saved, saved[:2000]
        finally:
            if d:
                d.stop()
                shutil.rmtree(d.dir, ignore_errors=True)
            if gate:
                gate.close()
            srv.stop()
    fixture(body)


def test_fetch_is_clean_under_sanitizers():
    """The fetch, the re-symbolization and the worker's shutdown under ASan/UBSan."""
    asan = os.path.join(ROOT, ".output", "pcmon-asan")

    def body(tmp, srvdir):
        prog = Program(tmp, srvdir, "dbgd_asan")
        srv = Server(tmp, srvdir)
        try:
            srv.wait_indexed(prog.bid)
            env = env_with(DEBUGINFOD_URLS=srv.url, PCMON_SOCKET=NODAEMON,
                           ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
                           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
            p = subprocess.run([asan, "run", "--json", "--interval", "1000", "--cache-dir",
                                os.path.join(tmp, "cache"), "--", prog.exe, "3"], env=env,
                               capture_output=True, text=True, errors="replace", timeout=120)
            bad = [l for l in p.stderr.splitlines() if "Sanitizer" in l or "runtime error" in l]
            assert not bad, "\n".join(p.stderr.splitlines()[-40:])
            assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
            check_inline(last_json(p.stdout), prog.name, own_share(p))
        finally:
            srv.stop()
    fixture(body)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
