#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""VIRTUAL sampling end to end: pcmon run (embedded and through pcmond), start/stop on a
running process, exits, forks, recursion, errors, restarts and protocol abuse."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import (PCMON, Daemon, cgroup2_root, first_json_line, oncpu_ns, pcmon, pcmon_json, procs,
                 run_tests, share_tolerance_pp, spin_in, workload)

FNS = ("work_a", "work_b", "work_c")


def check_threefn(listing, own):
    s = listing["summary"]
    n = s["counted"]
    assert n >= 2000, f"only {n} samples counted"
    assert s["lost"] == 0, s
    p = procs(listing)
    for fn in FNS:
        got = p[f"threefn.{fn}"]["shallow"] / n
        want = own[fn]
        tol = share_tolerance_pp(want, n)
        assert abs(got - want) * 100 <= tol, \
            f"{fn}: pcmon {got:.4f} vs program {want:.4f} (tolerance {tol:.2f} pp, {n} samples)"


def test_run_embedded_command_keeps_its_priority():
    """pcmon run's own engine runs at nice -10 (as pcmond), the command at the CLI's own
    nice value; a value someone chose is left alone."""
    for pre, want_cmd, want_engine in (([], "0", "-10"), (["nice", "-n", "5"], "5", "5")):
        p = subprocess.run([*pre, PCMON, "run", "-o", "/dev/null", "--", "sh", "-c",
                            "nice; ps -o ni= -p $PPID"],
                           env=dict(os.environ, PCMON_SOCKET="/nonexistent/pcmond.sock"),
                           capture_output=True, text=True, timeout=60)
        assert p.stdout.split() == [want_cmd, want_engine], (pre, p.stdout, p.stderr)


def test_run_embedded_accuracy():
    """No daemon: `pcmon run` serves itself; shares within 2 pp of the program's own."""
    listing, p = pcmon_json("run", "--interval", 200, "--", workload("threefn"), 3,
                            sock="/nonexistent/pcmond.sock")
    check_threefn(listing, first_json_line(p.stdout))
    t = listing["target"]
    assert t["state"] == "exited" and t["wait_status"] == 0, t
    assert t["mode"] == "VIRTUAL" and t["interval_us"] == 200


def test_dwarf_at_10khz_loses_nothing():
    """10 kHz with --unwind dwarf on three busy threads: some 20,000 stacks a second come
    through the ring while the engine names the first ones (its debug information read).
    The ring's reader thread keeps them in a backlog: none is lost (the engine reading the
    ring itself lost 200 to 1,100 of 95,000 as a run started)."""
    listing, p = pcmon_json("run", "--interval", 100, "--unwind", "dwarf", "--",
                            workload("threefn"), 3, sock="/nonexistent/pcmond.sock")
    s, own = listing["summary"], first_json_line(p.stdout)
    # a sample for each 100 us of the CPU time the program had (fewer on a busy machine,
    # which gives it less of its 3 s: the rate is what matters)
    assert s["counted"] >= 0.9 * own["cpu_s"] * 1e4, (s, own)
    assert s["lost"] == 0, s["lost_by_reason"]


def test_missed_ticks_are_counted():
    """At a 20 us interval this machine's timer cannot keep up (a cpu-clock event with no
    profiler at all delivers about 40 % of its ticks here, and the program runs many times
    slower): the kernel moves the timer past the ticks it fired too late for, and perf's
    samples simply stop. pcmon counts them (ticks_missed): samples and missed ticks
    together are the program's whole CPU time at the timer's period. (A machine that misses
    none passes with the samples alone.) A tick that lands just after a switch may belong
    to the thread before: a few percent either way, more than that is a miscount."""
    d = Daemon().start()
    try:
        listing, p = pcmon_json("run", "--interval", 20, "--unwind", "fp", "--",
                                workload("threefn"), 1, sock=d.sock)
        s, own = listing["summary"], first_json_line(p.stdout)
        due = own["proc_cpu_s"] / (listing["target"]["period_us"] * 1e-6)
        seen = s["interrupts"] + s["ticks_missed"]
        print(f"  {s['interrupts']} samples + {s['ticks_missed']} missed = {seen / due:.3f} "
              f"of {due:.0f} due ({own['proc_cpu_s']:.3f} s of CPU)", flush=True)
        assert s["lost"] == 0, s["lost_by_reason"]
        assert 0.92 * due <= seen <= 1.05 * due, (s["interrupts"], s["ticks_missed"], due)
        # the text listing says so whenever there are any
        text = pcmon("list", str(listing["target"]["id"]), sock=d.sock).stdout
        assert ("ticks missed" in text) == (s["ticks_missed"] > 0), text[:800]
    finally:
        d.stop()


def test_run_daemon_accuracy():
    d = Daemon().start()
    try:
        listing, p = pcmon_json("run", "--interval", 200, "--", workload("threefn"), 3,
                                sock=d.sock)
        check_threefn(listing, first_json_line(p.stdout))
        # the target stays after the run, listed by pcmond
        targets = pcmon_json("targets", sock=d.sock)[0]["targets"]
        assert [t["name"] for t in targets] == ["threefn"], targets
    finally:
        assert d.stop() == 0, d.logtext()


def test_table_format():
    p = pcmon("run", "--interval", 500, "--", workload("threefn"), 1,
              sock="/nonexistent/pcmond.sock", check=0)
    out = p.stderr.splitlines()  # (stdout is not a terminal: the listing goes to stderr)
    hdr = [i for i, l in enumerate(out) if l.startswith("pcmon: target ")]
    assert hdr, p.stderr
    lines = out[hdr[0]:]
    assert "VIRTUAL t=500us" in lines[0] and "exited 0" in lines[0], lines[0]
    assert lines[1].startswith("interrupts ") and "counted" in lines[1]
    assert lines[2].startswith("foreignPcs ") and "kernel-mode" in lines[2] and "lost 0" in lines[2]
    # no section declared: a critical-sections line only for samples unwalkable (the
    # program's exit, where its stack is torn down, may give one), never "unwalkable 0"
    crit = [l for l in lines if l.startswith("critical")]
    assert all(l.startswith("critical sections: unwalkable ") and
               not l.startswith("critical sections: unwalkable 0 ") for l in crit), crit
    heads = [i for i, l in enumerate(lines) if l.strip().startswith("shallow")]
    assert len(heads) == 2, lines
    assert lines[heads[0] - 1].startswith("by shallow count") and \
        lines[heads[1] - 1].startswith("by deep count"), lines
    # first table: by shallow, descending; second: by deep, descending
    shallow = [int(l.split()[0]) for l in lines[heads[0] + 1:heads[1] - 1] if l.strip()]
    deep = [int(l.split()[2]) for l in lines[heads[1] + 1:] if l.strip()]
    assert shallow == sorted(shallow, reverse=True) and shallow[0] > 0, shallow
    assert deep == sorted(deep, reverse=True), deep
    assert lines[heads[0] + 1].split()[-1] == "threefn.work_a"


def test_recursion_deep_at_most_counted():
    listing, _ = pcmon_json("run", "--interval", 500, "--", workload("recursive"), 2,
                            sock="/nonexistent/pcmond.sock")
    n = listing["summary"]["counted"]
    p = procs(listing)
    assert n >= 1000
    for name, row in p.items():
        assert row["deep"] <= n, f"{name}: deep {row['deep']} > counted {n}"
        assert row["shallow"] <= row["deep"], name
    # rec is on every stack of the loop, once per sample however deep it recursed; before the
    # loop come the dynamic linker and calibration (fixed CPU work)
    loop = n - p.get("recursive.calibrate", {"deep": 0})["deep"] - \
        (n - p["recursive.main"]["deep"])
    assert p["recursive.rec"]["deep"] >= 0.99 * loop, (p["recursive.rec"], loop, n)
    assert p["recursive.leaf"]["deep"] == p["recursive.leaf"]["shallow"]
    # leaf spins 2 units, each of the 9 levels of rec 1 unit: leaf ~ 2/11 of the time
    leaf = p["recursive.leaf"]["shallow"] / loop
    assert abs(leaf - 2 / 11) < 0.05, leaf
    total_shallow = sum(r["shallow"] for r in p.values())
    critical = sum(c["count"] for c in listing["summary"]["critical"])
    assert total_shallow + listing["summary"]["foreign"] + critical == n


def test_start_pid_then_stop():
    d = Daemon().start()
    sp = subprocess.Popen([workload("spinner"), "30"], stdout=subprocess.PIPE, text=True)
    try:
        sp.stdout.readline()
        cpu0 = oncpu_ns(sp.pid)
        r = pcmon("start", "--pid", sp.pid, "--interval", 1000, sock=d.sock, check=0)
        cpu1 = oncpu_ns(sp.pid)
        tid = r.stdout.strip()
        assert tid.isdigit(), r.stdout
        time.sleep(1.5)
        l1 = pcmon_json("list", tid, sock=d.sock)[0]
        cpu2 = oncpu_ns(sp.pid)
        assert l1["target"]["state"] == "running"
        # a sample a ms of the CPU it had since it was watched: on a busy machine, well
        # under the 1.5 s it was watched
        lo, hi = (cpu2 - cpu1) / 1e6, (cpu2 - cpu0) / 1e6
        got = l1["summary"]["counted"]
        assert got > 100 and lo - 4 * lo ** 0.5 - 8 <= got <= hi + 4 * hi ** 0.5 + 8, (lo, hi, got)
        assert procs(l1)["spinner.spin_here"]["shallow"] >= 0.95 * l1["summary"]["counted"]
        pcmon("stop", tid, sock=d.sock, check=0)
        a = pcmon_json("list", tid, sock=d.sock)[0]
        time.sleep(0.5)
        b = pcmon_json("list", tid, sock=d.sock)[0]
        assert a["target"]["state"] == "stopped"
        assert a["summary"]["interrupts"] == b["summary"]["interrupts"], "samples after stop"
        assert sp.poll() is None, "stopping a target must not touch the process"
        # pause/resume/zero on a stopped target: clear errors or effects
        r = pcmon("pause", tid, sock=d.sock)
        assert r.returncode == 1 and r.stderr.startswith("pcmon: "), r
        pcmon("zero", tid, sock=d.sock, check=0)
        z = pcmon_json("list", tid, sock=d.sock)[0]
        assert z["summary"]["interrupts"] == 0 and z["procedures"] == []
        pcmon("drop", tid, sock=d.sock, check=0)
        r = pcmon("list", tid, sock=d.sock)
        assert r.returncode == 1 and "no target" in r.stderr
    finally:
        sp.kill()
        sp.wait()
        d.stop()


def test_pause_resume():
    d = Daemon().start()
    sp = subprocess.Popen([workload("spinner"), "30"], stdout=subprocess.PIPE, text=True)
    try:
        sp.stdout.readline()
        tid = pcmon("start", "--pid", sp.pid, "--interval", 1000, "--name", "sp",
                    sock=d.sock, check=0).stdout.strip()
        time.sleep(0.5)
        pcmon("pause", "sp", sock=d.sock, check=0)
        a = pcmon_json("list", "sp", sock=d.sock)[0]
        time.sleep(0.5)
        b = pcmon_json("list", "sp", sock=d.sock)[0]
        assert a["target"]["state"] == "paused"
        assert a["summary"]["interrupts"] == b["summary"]["interrupts"]
        pcmon("resume", tid, sock=d.sock, check=0)
        # sampled again once resumed: by the spinner's own CPU time since, not the wall
        # clock's (beside a build it may get a tenth of a CPU for a while)
        cpu0, deadline = oncpu_ns(sp.pid), time.time() + 30
        while oncpu_ns(sp.pid) - cpu0 < 500e6 and time.time() < deadline:
            time.sleep(0.1)
        ran_ms = (oncpu_ns(sp.pid) - cpu0) / 1e6  # (the listing comes after: more)
        c = pcmon_json("list", tid, sock=d.sock)[0]
        assert ran_ms >= 500, f"the spinner ran {ran_ms:.0f} ms in 30 s"
        # a tick per ms it ran, less the one in flight as it resumed and the scheduler's
        # count, which lags by up to a tick (4 ms)
        gained = c["summary"]["interrupts"] - b["summary"]["interrupts"]
        assert gained >= 0.9 * ran_ms - 10, (gained, ran_ms)
    finally:
        sp.kill()
        sp.wait()
        d.stop()


def test_target_exits_before_list():
    d = Daemon().start()
    sp = subprocess.Popen([workload("spinner"), "1"], stdout=subprocess.PIPE, text=True)
    try:
        sp.stdout.readline()
        tid = pcmon("start", "--pid", sp.pid, "--interval", 1000, sock=d.sock,
                    check=0).stdout.strip()
        sp.wait()
        time.sleep(0.3)
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        t = listing["target"]
        assert t["state"] == "exited" and t["wait_status"] == 0, t
        p = procs(listing)
        # symbolized though the process is gone
        assert p["spinner.spin_here"]["shallow"] >= 0.9 * listing["summary"]["counted"], p
        assert p["spinner.main"]["deep"] >= 0.9 * listing["summary"]["counted"]
        text = pcmon("list", tid, sock=d.sock, check=0).stdout
        assert "exited 0" in text.splitlines()[0]
    finally:
        d.stop()


def test_forked_child_joins_target():
    listing, p = pcmon_json("run", "--interval", 500, "--", workload("forker"), 2,
                            sock="/nonexistent/pcmond.sock")
    n = listing["summary"]["counted"]
    pp = procs(listing)
    parent = pp["forker.parent_work"]["shallow"] / n
    child = pp["forker.child_work"]["shallow"] / n
    # two CPUs, both spin for the same wall time: each about half (pcmon's own unwinding
    # takes some CPU from one of them)
    assert parent >= 0.3 and child >= 0.3, (parent, child)
    assert parent + child > 0.85


def test_no_children():
    listing, _ = pcmon_json("run", "--no-children", "--interval", 500, "--",
                            workload("forker"), 1, sock="/nonexistent/pcmond.sock")
    assert "forker.child_work" not in procs(listing)
    assert "forker.parent_work" in procs(listing)


def test_run_exit_status():
    r = pcmon("run", "--", "sh", "-c", "exit 3", sock="/nonexistent/pcmond.sock")
    assert r.returncode == 3, r
    assert "exited 3" in r.stderr  # (stdout is not a terminal: the listing goes to stderr)
    r = pcmon("run", "--", "/nonexistent/program", sock="/nonexistent/pcmond.sock")
    assert r.returncode == 127 and "cannot run" in r.stderr, r
    r = pcmon("run", "--", "sh", "-c", "kill -KILL $$", sock="/nonexistent/pcmond.sock")
    assert r.returncode == 128 + 9 and "killed by SIGKILL" in r.stderr, r


def one_line_error(r, status, *words):
    assert r.returncode == status, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcmon"), r.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_errors():
    d = Daemon().start()
    try:
        one_line_error(pcmon("start", "--pid", 3999999, sock=d.sock), 1, "no process")
        one_line_error(pcmon("start", "--pid", "abc", sock=d.sock), 2, "--pid")
        one_line_error(pcmon("start", sock=d.sock), 2, "--pid")
        one_line_error(pcmon("start", "--pid", 1, "--interval", 1, sock=d.sock), 2, "--interval")
        one_line_error(pcmon("list", "--bogus", sock=d.sock), 2, "--bogus")
        one_line_error(pcmon("list", "--pid", 1, sock=d.sock), 2, "not an option")
        one_line_error(pcmon("st", sock=d.sock), 2, "ambiguous", "start", "status", "stop")
        one_line_error(pcmon("frobnicate", sock=d.sock), 2, "unknown command")
        one_line_error(pcmon("list", "42", sock=d.sock), 1, "no target")
        one_line_error(pcmon("stop", sock=d.sock), 2, "which target")
        one_line_error(pcmon("targets", sock="/nonexistent/pcmond.sock"), 1, "cannot reach pcmond")
        one_line_error(pcmon("run", "--real", "--virtual", "--", "true"), 2, "exclude")
        one_line_error(pcmon("run", sock=d.sock), 2, "no command")
        # JSON mode: the error is a JSON document too
        r = pcmon("list", "42", "--json", sock=d.sock)
        assert r.returncode == 1 and "error" in json.loads(r.stdout)
        # prefixes, case-insensitive
        assert pcmon("TARG", sock=d.sock).returncode == 0
        assert pcmon("stat", sock=d.sock).returncode == 0
        assert d.alive()
    finally:
        d.stop()


def test_permissions():
    """A non-root user may only watch and see their own processes and targets."""
    d = Daemon().start()
    sp = subprocess.Popen([workload("spinner"), "30"], stdout=subprocess.PIPE, text=True)
    try:
        sp.stdout.readline()
        tid = pcmon("start", "--pid", sp.pid, sock=d.sock, check=0).stdout.strip()
        os.chmod(d.sock, 0o666)
        os.chmod(d.dir, 0o755)
        r = pcmon("start", "--pid", sp.pid, sock=d.sock, user="nobody")
        one_line_error(r, 1, "belongs to uid 0")
        r = pcmon("list", tid, sock=d.sock, user="nobody")
        one_line_error(r, 1, "no target")
        r = pcmon_json("targets", sock=d.sock, user="nobody")[0]
        assert r["targets"] == []
        # and without pcmond, no BPF for an unprivileged user: a clear failure
        r = pcmon("run", "--", "true", sock="/nonexistent/pcmond.sock", user="nobody")
        one_line_error(r, 1, "cannot load BPF")
    finally:
        sp.kill()
        sp.wait()
        d.stop()


def test_restart_keeps_results():
    d = Daemon().start()
    listing, _ = pcmon_json("run", "--interval", 500, "--", workload("threefn"), 1,
                            sock=d.sock)
    tid = str(listing["target"]["id"])
    d.stop()
    d2 = Daemon(state_dir=d.state)
    d2.sock = d.sock
    d2.dir = d.dir
    d2.start()
    try:
        again = pcmon_json("list", tid, sock=d2.sock)[0]
        assert again["summary"] == listing["summary"], (again["summary"], listing["summary"])
        assert procs(again).keys() == procs(listing).keys()
        for k, v in procs(listing).items():
            assert procs(again)[k]["shallow"] == v["shallow"] and procs(again)[k]["deep"] == v["deep"]
    finally:
        d2.stop()


def test_protocol_abuse():
    d = Daemon().start()
    try:
        replies = d.request(b"garbage\n[1,2]\n{\"v\":1}\n{\"v\":99,\"cmd\":\"list\"}\n"
                            b"{\"v\":1,\"cmd\":\"explode\"}\n{\"v\":1,\"cmd\":\"status\"}\n")
        assert [r["ok"] for r in replies] == [False, False, False, False, False, True], replies
        assert "version" in replies[3]["error"] and "unknown command" in replies[4]["error"]
        huge = b"{\"v\":1,\"cmd\":\"status\",\"x\":\"" + b"a" * (1 << 20) + b"\"}\n"
        replies = d.request(huge + b"{\"v\":1,\"cmd\":\"status\"}\n")
        assert replies[0]["ok"] is False and "too long" in replies[0]["error"]
        assert replies[1]["ok"] is True
        # a client that vanishes mid-request
        s = socket.socket(socket.AF_UNIX)
        s.connect(d.sock)
        s.sendall(b"{\"v\":1,\"cmd\":")
        s.close()
        time.sleep(0.2)
        assert d.alive()
        assert pcmon("status", sock=d.sock).returncode == 0
    finally:
        d.stop()


def bpf_stats_sysctl():
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        return f.read().strip() == "1"


def test_status_reports_overhead():
    """With --bpf-stats, status gives each BPF program's runs and run time."""
    d = Daemon(args=["--bpf-stats"]).start()
    try:
        pcmon("run", "--interval", 1000, "--", workload("spinner"), 1, sock=d.sock, check=0)
        st = pcmon_json("status", sock=d.sock)[0]
        prog = {p["name"]: p for p in st["programs"]}
        assert st["bpf_stats"], st
        assert prog["on_sample"]["runs"] > 500, prog
        assert prog["on_sample"]["avg_ns"] > 0
        assert st["version"] and st["uptime_s"] > 0
    finally:
        d.stop()


def test_no_bpf_stats_by_default():
    """Run-time statistics cost every BPF program on the machine: off unless asked for,
    and status says the runs are not counted rather than showing zeros."""
    assert not bpf_stats_sysctl(), "kernel.bpf_stats_enabled is on: turn it off to run this test"
    d = Daemon().start()
    try:
        pcmon("run", "--interval", 1000, "--", workload("spinner"), 0.5, sock=d.sock, check=0)
        assert not bpf_stats_sysctl()
        st = pcmon_json("status", sock=d.sock)[0]
        assert st["bpf_stats"] is False, st
        text = pcmon("status", sock=d.sock, check=0).stdout
        assert "not counted: start pcmond with --bpf-stats" in text, text
        # the programs' table in line, whatever the longest name (on_dl_debug_state), and
        # no blanks after its last column
        lines = text.splitlines()
        head = lines.index(next(l for l in lines if l.startswith("BPF program")))
        rows = lines[head:head + 1 + len(st["programs"])]
        cols = {l.index(" yes") if " yes" in l else l.index(" no") for l in rows[1:]}
        assert cols == {rows[0].index(" attached")}, rows
        assert all(l == l.rstrip() for l in rows), rows
    finally:
        d.stop()


def test_cgroup_and_all_targets():
    """--cgroup DIR watches the processes in a cgroup v2 directory; --all every task."""
    root = cgroup2_root()
    cg = os.path.join(root, f"pcmon-test-{os.getpid()}")
    os.mkdir(cg)
    d = Daemon().start()
    inside = outside = None
    try:
        # a name of its own: other spinners on the machine are the --all target's by right,
        # and so is another run's of this test (the same machine runs two checks at once)
        name = f"cgspin{os.getpid()}"
        spin = os.path.join(tempfile.mkdtemp(), name)
        shutil.copy(workload("spinner"), spin)
        inside = subprocess.Popen([spin, "30"], stdout=subprocess.PIPE, text=True)
        inside.stdout.readline()
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(inside.pid))
        outside = subprocess.Popen([workload("threefn"), "30"], stdout=subprocess.PIPE)
        cid = pcmon("start", "--cgroup", cg, "--interval", 1000, sock=d.sock,
                    check=0).stdout.strip()
        aid = pcmon("start", "--all", "--interval", 1000, "--name", "everything",
                    sock=d.sock, check=0).stdout.strip()
        time.sleep(1.5)
        c = pcmon_json("list", cid, sock=d.sock)[0]
        a = pcmon_json("list", aid, sock=d.sock)[0]
        pc, pa = procs(c), procs(a)
        assert c["target"]["kind"] == "cgroup" and a["target"]["kind"] == "all"
        assert pc[f"{name}.spin_here"]["shallow"] >= 0.9 * c["summary"]["counted"], pc
        assert not any(k.startswith("threefn.") for k in pc), "a process outside the cgroup"
        # every other task; a process belongs to one target, the first that took it. threefn
        # gets what CPU a busy machine leaves it: check its shares (50/30/20), not a count
        w = [pa.get(f"threefn.work_{x}", {"shallow": 0})["shallow"] for x in "abc"]
        assert sum(w) >= 100, pa
        share_a = w[0] / sum(w)
        assert abs(share_a - 0.5) <= share_tolerance_pp(0.5, sum(w), 5) / 100, w
        assert f"{name}.spin_here" not in pa, pa
        r = pcmon("start", "--cgroup", "/nonexistent", sock=d.sock)
        assert r.returncode == 1 and "cgroup" in r.stderr
    finally:
        for p in (inside, outside):
            if p:
                p.kill()
                p.wait()
        d.stop()
        os.rmdir(cg)


def test_a_stopped_target_lets_its_processes_go():
    """A process of a stopped cgroup or --all target is free for the next target that takes
    it. The spinner in a cgroup: its target stops, and the --all target takes it; that one
    stops, and a target started on the cgroup gets it, again and again. (Taken out of a
    stopped target while its cgroup or the --all setting still led to it, a process came
    straight back and stayed with the stopped target: CI saw a cgroup target get none of its
    process after a reload. The more processes the target has, the longer that window.)"""
    root = cgroup2_root()
    cg = os.path.join(root, f"pcmon-test-free-{os.getpid()}")
    os.mkdir(cg)
    d = Daemon().start()
    spin = None
    try:
        spin = spin_in(cg, 60)

        def spinner_samples(tid, least=20):
            deadline = time.time() + 10
            while True:
                pp = procs(pcmon_json("list", tid, sock=d.sock)[0])
                n = pp.get("spinner.spin_here", {"shallow": 0})["shallow"]
                if n >= least:
                    return
                assert time.time() < deadline, (tid, n)
                time.sleep(0.1)

        tid = pcmon("start", "--cgroup", cg, "--interval", 1000, sock=d.sock).stdout.strip()
        for _ in range(4):
            spinner_samples(tid)
            # every process that runs joins the --all target (REAL: at its next switch)
            aid = pcmon("start", "--all", "--real", "--interval", 1000,
                        sock=d.sock).stdout.strip()
            time.sleep(0.5)
            pcmon("stop", tid, sock=d.sock)
            spinner_samples(aid)
            pcmon("stop", aid, sock=d.sock)
            tid = pcmon("start", "--cgroup", cg, "--interval", 1000, sock=d.sock).stdout.strip()
        spinner_samples(tid)
    finally:
        if spin:
            spin.kill()
            spin.wait()
        d.stop()
        os.rmdir(cg)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
