#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""`make soak`: pcmond watching the whole machine while it compiles, for minutes.

A build is the churn a system-wide profiler meets everywhere: hundreds of short processes a
minute (make, sh, gcc, cc1, as, ld), most of them sampled a few times or never. The soak
starts a private pcmond with `pcmon start --all` (the default unwinding) and runs a compile
loop beside it (`make clean; make -j2` of a copy of this tree, again and again). Every
SOAK_STEP_S it prints pcmond's CPU since the last line and its resident memory; at the end,
what the target counted (lost, foreignPcs, unwalkable) and the verdict against the targets:
CPU <= 10 ms/s at 19 Hz (<= 20 ms/s at 100 Hz), RSS <= 150 MB at the end, growing <= 5 MB
over the second half (its trend: RSS swings by some MB as objects are opened and let go, so
growth is the least-squares slope of RSS read every 5 s, times the half's length). Then `perf record -a -g` at the same rate on the same loop, for
SOAK_PEER_S, as the peer: its CPU a second and its peak RSS.

Knobs (environment): SOAK_S (default 600), SOAK_HZ (default 19), SOAK_STEP_S (default 30),
SOAK_PEER_S (default 120; 0: no peer). Exit status 0 when every target is met.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PCMON = os.path.join(ROOT, "bin", "pcmon")
PCMOND = os.path.join(ROOT, "bin", "pcmond")
SOAK_S = float(os.environ.get("SOAK_S", "600"))
HZ = int(os.environ.get("SOAK_HZ", "19"))
STEP_S = float(os.environ.get("SOAK_STEP_S", "30"))
PEER_S = float(os.environ.get("SOAK_PEER_S", "120"))
RSS_POLL_S = 5
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(msg, flush=True)


def proc_cpu_s(pid):
    """User + system CPU seconds of @pid (and its reaped children: none for pcmond)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def die_with_parent():
    """In the child: SIGKILL when the process that started it dies (a soak killed, or cut
    short by a timeout, leaves no compile loop behind to load the machine)."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class CompileLoop:
    """`make clean; make -j2` of a copy of the tree, round after round, in a process group of
    its own (stopped whole), whose shell dies with this process: the round under way ends
    and no other starts."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="pcmon-soak-src-")
        subprocess.run(f"git -C {ROOT} archive HEAD | tar -x -C {self.dir}", shell=True,
                       check=True)
        self.proc = subprocess.Popen(
            ["sh", "-c", "while :; do make -s clean >/dev/null 2>&1; "
                         "make -s -j2 all >/dev/null 2>&1; done"],
            cwd=self.dir, start_new_session=True, preexec_fn=die_with_parent)

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def trend(points):
    """The least-squares slope of (t, y) points: RSS goes up and down by some MB as objects
    are opened and let go, and growth is its trend, not the difference of two readings."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (y - my) for t, y in points) / var if var else 0.0


def pcmon(sock, *args):
    env = dict(os.environ, PCMON_SOCKET=sock)
    r = subprocess.run([PCMON, *map(str, args)], env=env, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"pcmon {' '.join(map(str, args))}: {r.stderr.strip()}")
    return r.stdout


def soak():
    """pcmond --all for SOAK_S on the compile loop: the series and the totals."""
    d = tempfile.mkdtemp(prefix="pcmon-soak-")
    sock = os.path.join(d, "sock")
    daemon = subprocess.Popen([PCMOND, "--foreground", "--socket", sock, "--state-dir",
                               os.path.join(d, "state")], stdout=subprocess.DEVNULL,
                              stderr=open(os.path.join(d, "pcmond.log"), "w"),
                              preexec_fn=die_with_parent)
    loop = None
    try:
        end = time.monotonic() + 15
        while not os.path.exists(sock) and time.monotonic() < end:
            time.sleep(0.05)
        tid = pcmon(sock, "start", "--all", "--interval", round(1e6 / HZ)).strip()
        loop = CompileLoop()
        t0, cpu0 = time.monotonic(), proc_cpu_s(daemon.pid)
        series, rss = [], []
        log(f"{'t_s':>6} {'cpu_ms/s':>9} {'rss_MB':>8}")
        last_t, last_cpu = t0, cpu0
        while time.monotonic() - t0 < SOAK_S:
            step_end = min(last_t + STEP_S, t0 + SOAK_S)
            while time.monotonic() < step_end:
                time.sleep(min(RSS_POLL_S, max(0, step_end - time.monotonic())))
                rss.append((time.monotonic() - t0, proc_rss_mb(daemon.pid)))
            now, cpu = time.monotonic(), proc_cpu_s(daemon.pid)
            row = {"t_s": now - t0, "cpu_ms_per_s": 1000 * (cpu - last_cpu) / (now - last_t),
                   "rss_mb": proc_rss_mb(daemon.pid)}
            series.append(row)
            log(f"{row['t_s']:6.0f} {row['cpu_ms_per_s']:9.1f} {row['rss_mb']:8.1f}")
            last_t, last_cpu = now, cpu
        total_cpu = proc_cpu_s(daemon.pid) - cpu0
        listing = json.loads(pcmon(sock, "list", "--json", tid))
        status = json.loads(pcmon(sock, "status", "--json"))
        target = next((t for t in json.loads(pcmon(sock, "targets", "--json"))["targets"]
                       if str(t["id"]) == tid), {})
        s = listing["summary"]
        unwalk = sum(c["count"] for c in s.get("critical", []) if c["name"] == "unwalkable")
        half = [p for p in rss if p[0] >= SOAK_S / 2]
        return {"hz": HZ, "seconds": SOAK_S, "series": series,
                "cpu_ms_per_s": 1000 * total_cpu / (time.monotonic() - t0),
                "rss_end_mb": series[-1]["rss_mb"] if series else None,
                "rss_growth_second_half_mb": trend(half) * (SOAK_S / 2) if len(half) > 1 else None,
                "rss_max_second_half_mb": max(p[1] for p in half) if half else None,
                "counted": s["counted"], "lost": s["lost"],
                "foreign_pct": 100 * s["foreign"] / max(1, s["counted"]),
                "unwalkable_pct": 100 * unwalk / max(1, s["counted"]),
                "symbols": status.get("symbols"),
                "target_memory_mb": target.get("memory_bytes", 0) / 2**20,
                "probes": {"events": status.get("probe_events"),
                           "spared": status.get("probe_events_spared"),
                           **status.get("sampling", {}).get("critical_probes", {})}}
    finally:
        if loop:
            loop.stop()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(d, ignore_errors=True)


def peer():
    """perf record -a -g at the same rate on the same loop: CPU a second and peak RSS of perf
    itself."""
    perf = shutil.which("perf")
    if not perf or PEER_S <= 0:
        return {"error": "perf not found" if not perf else "skipped"}
    d = tempfile.mkdtemp(prefix="pcmon-soak-perf-")
    loop = CompileLoop()
    try:
        t0 = time.monotonic()
        p = subprocess.Popen([perf, "record", "-a", "-g", "-F", str(HZ), "-o",
                              os.path.join(d, "perf.data"), "--", "sleep", str(PEER_S)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # wait4: perf's own rusage (and its `sleep`), not the compile loop's
        _, status, ru = os.wait4(p.pid, 0)
        took = time.monotonic() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            return {"error": p.stderr.read().decode(errors="replace").strip()[-300:]}
        return {"seconds": took, "cpu_ms_per_s": 1000 * (ru.ru_utime + ru.ru_stime) / took,
                "max_rss_mb": ru.ru_maxrss / 1024,
                "data_mb": os.path.getsize(os.path.join(d, "perf.data")) / 2**20}
    finally:
        loop.stop()
        shutil.rmtree(d, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        sys.exit("make soak: must run as root (BPF programs, perf events)")
    cpu_goal = 10 if HZ <= 20 else 20
    log(f"soak: pcmond --all at {HZ} Hz for {SOAK_S:.0f} s on a compile loop")
    r = soak()
    log(f"pcmond: {r['cpu_ms_per_s']:.1f} ms/s CPU (goal <= {cpu_goal}), RSS {r['rss_end_mb']:.1f} MB "
        f"at the end (goal <= 150, at most {r['rss_max_second_half_mb']:.1f} MB over the second "
        f"half), growing {r['rss_growth_second_half_mb']:+.1f} MB over the second half (goal <= 5, "
        f"its trend: the least-squares slope of RSS read every {RSS_POLL_S} s); counted {r['counted']}, lost {r['lost']}, foreignPcs {r['foreign_pct']:.1f} %, "
        f"unwalkable {r['unwalkable_pct']:.1f} %")
    log(f"symbols: {json.dumps(r['symbols'])}; the target's counts: {r['target_memory_mb']:.1f} MB")
    log(f"critical-section probes: {json.dumps(r['probes'])}")
    p = peer()
    if "error" in p:
        log(f"perf record -a -g: {p['error']}")
    else:
        log(f"perf record -a -g -F {HZ} for {p['seconds']:.0f} s: {p['cpu_ms_per_s']:.1f} ms/s CPU, "
            f"peak RSS {p['max_rss_mb']:.1f} MB, {p['data_mb']:.1f} MB of perf.data")
    ok = (r["cpu_ms_per_s"] <= cpu_goal and r["rss_end_mb"] <= 150 and
          r["rss_growth_second_half_mb"] <= 5 and r["lost"] == 0)
    with open(os.path.join(ROOT, "bench", "soak.json"), "w") as f:
        json.dump({"pcmond": r, "perf": p, "met": ok}, f, indent=1)
    log("soak: every target met" if ok else "soak: a target was missed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
