#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Safe to share: what a user in group pcmon may watch, start and see, tested as real
unprivileged users against a real pcmond."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, Users, as_user, cgroup2_root, pcmon, pcmon_json, procs, run_tests, workload

ALICE = "pcmsafe-alice"


def shared_daemon(*args):
    """A pcmond whose socket a user in group pcmon can reach."""
    d = Daemon(args=args).start()
    os.chmod(d.dir, 0o755)
    return d


def until(cond, timeout=20):
    """Wait for @cond() (a busy machine can be slow); fails when it never holds."""
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, "timed out waiting"
        time.sleep(0.1)


def user_request(d, user, reqs, timeout=5):
    """Send raw request lines to pcmond as @user; returns (replies, seconds taken)."""
    prog = ("import socket, sys, json\n"
            "s = socket.socket(socket.AF_UNIX); s.settimeout(%d); s.connect(sys.argv[1])\n"
            "s.sendall(sys.stdin.buffer.read()); out = b''\n"
            "while out.count(b'\\n') < int(sys.argv[2]):\n"
            "    c = s.recv(65536)\n"
            "    if not c: break\n"
            "    out += c\n"
            "sys.stdout.buffer.write(out)\n" % timeout)
    raw = "".join(json.dumps(r) + "\n" for r in reqs).encode()
    t0 = time.time()
    p = subprocess.run(as_user(["python3", "-c", prog, d.sock, str(len(reqs))], user, True),
                       input=raw, capture_output=True, timeout=timeout + 5)
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip()], time.time() - t0


def test_cgroup_target_must_be_a_cgroup2_directory_of_hers():
    """Only a cgroup v2 directory (fs magic, not an inode number that happens to match a
    cgroup id), opened with the user's own rights, and owned by her."""
    root = cgroup2_root()
    mine = os.path.join(root, f"pcmon-safe-{os.getpid()}")
    theirs = os.path.join(root, f"pcmon-root-{os.getpid()}")
    shm = tempfile.mkdtemp(dir="/dev/shm")
    with Users(ALICE) as u:
        os.mkdir(mine)
        os.mkdir(theirs)
        os.chown(mine, u[ALICE], -1)
        os.chown(shm, u[ALICE], -1)
        d = shared_daemon()
        try:
            # a tmpfs directory she owns: its inode number could equal any cgroup's id
            r = pcmon("start", "--cgroup", shm, sock=d.sock, user=ALICE, groups=True)
            assert r.returncode == 1 and "not a cgroup v2 directory" in r.stderr, r.stderr
            r = pcmon("start", "--cgroup", theirs, sock=d.sock, user=ALICE, groups=True)
            assert r.returncode == 1 and "belongs to uid 0" in r.stderr, r.stderr
            r = pcmon("start", "--cgroup", mine, sock=d.sock, user=ALICE, groups=True)
            assert r.returncode == 0, r.stderr
            # a raw request naming a path: pcmond opens nothing as root on her behalf
            reps, _ = user_request(d, ALICE, [{"v": 1, "cmd": "start", "cgroup": theirs}])
            assert not reps[0]["ok"] and "pass the descriptor" in reps[0]["error"], reps
            assert [t["kind"] for t in pcmon_json("targets", sock=d.sock)[0]["targets"]] == ["cgroup"]
        finally:
            d.stop()
            os.rmdir(mine)
            os.rmdir(theirs)
            os.rmdir(shm)


def test_nothing_a_user_names_can_block_the_daemon():
    """A FIFO given as the command's executable: pcmond opens no path for a user, and a
    root request naming one opens it without blocking."""
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo, 0o666)
    with Users(ALICE) as u:
        d = shared_daemon()
        p = subprocess.Popen(as_user([workload("spinner"), "20"], ALICE), stdout=subprocess.PIPE)
        try:
            p.stdout.readline()
            reps, took = user_request(d, ALICE, [{"v": 1, "cmd": "start", "pid": p.pid,
                                                  "exe": fifo}, {"v": 1, "cmd": "status"}])
            assert len(reps) == 2 and reps[1]["ok"] and took < 3, (reps, took)
            t0 = time.time()
            rep = d.request(json.dumps({"v": 1, "cmd": "start", "pid": os.getpid(),
                                        "exe": fifo}).encode() + b"\n")
            assert rep and time.time() - t0 < 3, rep
        finally:
            p.kill()
            p.wait()
            d.stop()
            shutil.rmtree(tmp)


def test_wrong_types_are_refused_and_nothing_is_done():
    """A wrong type, an out-of-range number or an unknown field is an error naming the
    field: it never falls back to a default ("your newest target")."""
    with Users(ALICE) as u:
        d = shared_daemon()
        p = subprocess.Popen(as_user([workload("spinner"), "20"], ALICE), stdout=subprocess.PIPE)
        try:
            p.stdout.readline()
            tid = pcmon("start", "--pid", p.pid, sock=d.sock, user=ALICE, groups=True,
                        check=0).stdout.strip()
            bad = [{"cmd": "drop", "target": v} for v in ([], {}, True, None, 0.6, -1, "")]
            bad += [{"cmd": "drop"}, {"cmd": "stop", "target": int(tid), "extra": 1},
                    {"cmd": "start", "pid": p.pid, "interval_us": "1000"},
                    {"cmd": "start", "pid": p.pid, "mode": 1},
                    {"cmd": "start", "pid": p.pid, "unwind": "frame"},
                    {"cmd": "start", "pid": float(p.pid) + 0.5},
                    {"cmd": "start", "pid": p.pid, "critical": "x=y"},
                    {"cmd": "list", "target": int(tid), "when": ["main"]}]
            reps, _ = user_request(d, ALICE, [dict(v=1, **b) for b in bad])
            assert len(reps) == len(bad), reps
            for b, r in zip(bad, reps):
                assert not r["ok"] and r["status"] == 2, (b, r)
                # named: the field, or the option that gives it as a user types it
                assert "field" in r["error"] or re.search(r"start: --(unwind|pid) ", r["error"]), (b, r)
            targets = pcmon_json("targets", sock=d.sock)[0]["targets"]
            assert [(t["id"], t["state"]) for t in targets] == [(int(tid), "running")], targets
        finally:
            p.kill()
            p.wait()
            d.stop()


def test_a_process_is_in_one_target_and_never_moved_silently():
    """A process root named explicitly is refused to her; one root's --all merely picked up
    may become hers, and root's target says it handed it over."""
    with Users(ALICE) as u:
        d = shared_daemon()
        a = subprocess.Popen(as_user([workload("spinner"), "20"], ALICE), stdout=subprocess.PIPE)
        b = subprocess.Popen(as_user([workload("spinner"), "20"], ALICE), stdout=subprocess.PIPE)
        try:
            a.stdout.readline()
            b.stdout.readline()
            rid = pcmon("start", "--pid", a.pid, sock=d.sock, check=0).stdout.strip()
            r = pcmon("start", "--pid", a.pid, sock=d.sock, user=ALICE, groups=True)
            assert r.returncode == 1 and "already watched by another user's target" in r.stderr, r
            r = pcmon("start", "--pid", a.pid, sock=d.sock)
            assert r.returncode == 1 and f"already watched by target {rid}" in r.stderr, r
            allid = pcmon("start", "--all", "--interval", 1000, sock=d.sock, check=0).stdout.strip()
            # b is sampled, so --all picks it up (wait for it on a busy machine)
            until(lambda: "spinner.spin_here" in procs(pcmon_json("list", allid, sock=d.sock)[0]))
            mine = pcmon("start", "--pid", b.pid, "--interval", 1000, sock=d.sock, user=ALICE,
                         groups=True, check=0).stdout.strip()
            everything = pcmon_json("list", allid, sock=d.sock)[0]["summary"]
            assert everything["handed_over"] == 1, everything
            assert pcmon("list", allid, sock=d.sock, check=0).stdout.count("handed over") == 1
            until(lambda: "spinner.spin_here" in procs(
                pcmon_json("list", mine, sock=d.sock, user=ALICE, groups=True)[0]))
        finally:
            for p in (a, b):
                p.kill()
                p.wait()
            d.stop()


def test_per_user_limits():
    """A user has at most --user-targets targets and --user-memory MiB of results; past the
    memory, new stacks are lost and counted; root is exempt; status states the limits."""
    with Users(ALICE) as u:
        d = shared_daemon("--user-targets", 2, "--user-memory", 1)
        spin = subprocess.Popen(as_user([workload("spinner"), "30"], ALICE), stdout=subprocess.PIPE)
        uq = subprocess.Popen(as_user([workload("uniq"), "4"], ALICE), stdout=subprocess.PIPE)
        try:
            spin.stdout.readline()
            uq.stdout.readline()
            big = pcmon("start", "--pid", uq.pid, "--interval", 200, sock=d.sock, user=ALICE,
                        groups=True, check=0).stdout.strip()
            pcmon("start", "--pid", spin.pid, sock=d.sock, user=ALICE, groups=True, check=0)
            r = pcmon("start", "--pid", spin.pid, sock=d.sock, user=ALICE, groups=True)
            assert r.returncode == 1 and "the most one user may have" in r.stderr, r.stderr
            uq.wait(30)
            time.sleep(0.3)
            s = pcmon_json("list", big, sock=d.sock, user=ALICE, groups=True)[0]["summary"]
            lost = s["lost_by_reason"]["memory_limit"]
            assert lost > 0 and s["lost"] >= lost, s
            st = pcmon_json("status", sock=d.sock, user=ALICE, groups=True)[0]
            lim = st["limits"]
            assert lim["targets_per_user"] == 2 and lim["your_targets"] == 2, lim
            assert lim["memory_per_user_bytes"] == 1 << 20, lim
            # over the allowance by at most what one drain brought
            assert 1 << 20 < lim["your_memory_bytes"] < 8 << 20, lim
            assert "objects" not in st and st["targets"] == 2, st
            assert "objects" in pcmon_json("status", sock=d.sock)[0]
            assert "limits per user" in pcmon("status", sock=d.sock, check=0).stdout
            # root is exempt
            pcmon("start", "--pid", os.getpid(), sock=d.sock, check=0)
        finally:
            for p in (spin, uq):
                p.kill()
                p.wait()
            d.stop()


def test_status_hides_other_users_save_errors():
    """A failed save names a target and a path: root's status says it, hers does not."""
    with Users(ALICE) as u:
        d = shared_daemon()
        try:
            os.makedirs(os.path.join(d.state, "target-1.json"), exist_ok=True)  # in the way
            tid = pcmon("start", "--pid", os.getpid(), sock=d.sock, check=0).stdout.strip()
            assert tid == "1", tid
            pcmon("stop", tid, sock=d.sock, check=0)
            until(lambda: "last_error" in pcmon_json("status", sock=d.sock)[0]["store"])
            hers = pcmon_json("status", sock=d.sock, user=ALICE, groups=True)[0]
            assert "last_error" not in hers["store"], hers["store"]
        finally:
            d.stop()


def test_names_are_printable_and_escaped():
    """A process name with a terminal escape reaches root's `pcmon targets` only escaped;
    --name must be printable UTF-8."""
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    evil = os.path.join(os.fsencode(tmp), b"x\x1b[2Jy\xff")  # ESC, and a byte no UTF-8 has
    shutil.copy(workload("spinner"), evil)
    with Users(ALICE) as u:
        d = shared_daemon()
        p = subprocess.Popen(as_user([evil, "20"], ALICE), stdout=subprocess.PIPE)
        try:
            p.stdout.readline()
            r = pcmon("start", "--pid", p.pid, "--name", "a\nb", sock=d.sock, user=ALICE,
                      groups=True)
            assert r.returncode == 2 and "printable" in r.stderr, r
            pcmon("start", "--pid", p.pid, sock=d.sock, user=ALICE, groups=True, check=0)
            out = subprocess.run([os.path.join(os.path.dirname(__file__), "..", "..", "bin",
                                               "pcmon"), "targets"],
                                 env=dict(os.environ, PCMON_SOCKET=d.sock),
                                 capture_output=True).stdout
            assert b"\x1b" not in out and b"\xff" not in out, out
            assert b"x?[2Jy?" in out, out
            doc = pcmon_json("targets", sock=d.sock)[0]
            assert doc["targets"][0]["name"] == "x?[2Jy?", doc
        finally:
            p.kill()
            p.wait()
            d.stop()
            shutil.rmtree(tmp)


def test_non_dumpable_process_is_not_watched():
    """A process that makes itself non-dumpable (prctl, as ssh-agent does) is out of its
    owner's reach from then on, like ptrace: its samples are denied and counted."""
    with Users(ALICE) as u:
        d = shared_daemon()
        p = subprocess.Popen(as_user([workload("undump"), "1"], ALICE), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        try:
            assert p.stdout.readline().strip() == "ready"
            tid = pcmon("start", "--pid", p.pid, "--interval", 1000, sock=d.sock, user=ALICE,
                        groups=True, check=0).stdout.strip()
            p.stdin.write("go\n")
            p.stdin.flush()
            done, mine_s, secret_s = p.stdout.readline().split()
            p.wait(30)
            listing = pcmon_json("list", tid, sock=d.sock, user=ALICE, groups=True)[0]
            pr, s = procs(listing), listing["summary"]
            # 1 ms samples of each half's CPU time (4 sigma, and 5 % for the edges)
            for got, cpu in ((pr["undump.spin_mine"]["shallow"], float(mine_s)),
                             (s["denied"], float(secret_s))):
                want = cpu * 1000
                assert abs(got - want) <= 4 * want ** 0.5 + 0.05 * want + 5, (got, want, s)
            assert "undump.spin_secret" not in pr, pr
            text = pcmon("list", tid, sock=d.sock, user=ALICE, groups=True, check=0).stdout
            assert "denied" in text, text
        finally:
            p.kill()
            p.wait()
            d.stop()


def test_setuid_exec_is_not_watched():
    """A user's target on her shell stops sampling it once it execs a setuid program."""
    tmp = tempfile.mkdtemp(prefix="pcmon-suid-")
    os.chmod(tmp, 0o755)
    suid = os.path.join(tmp, "threefn")
    shutil.copy(workload("threefn"), suid)
    os.chown(suid, 0, 0)
    os.chmod(suid, 0o4755)
    with Users(ALICE) as u:
        d = shared_daemon()
        sh = subprocess.Popen(as_user(["/bin/sh", "-c", f"read x; {workload('spinner')} 1 "
                                       f">/dev/null; exec {suid} 1 >/dev/null"], ALICE),
                              stdin=subprocess.PIPE, text=True)
        try:
            # setpriv drops to her uid, then execs the shell: until then the process is root's
            end = time.time() + 10
            while os.stat(f"/proc/{sh.pid}").st_uid == 0 and time.time() < end:
                time.sleep(0.01)
            tid = pcmon("start", "--pid", sh.pid, "--interval", 1000, sock=d.sock, user=ALICE,
                        groups=True, check=0).stdout.strip()
            sh.stdin.write("go\n")
            sh.stdin.flush()
            assert sh.wait(30) == 0
            listing = pcmon_json("list", tid, sock=d.sock, user=ALICE, groups=True)[0]
            pr, s = procs(listing), listing["summary"]
            assert pr["spinner.spin_here"]["shallow"] >= 200, pr
            assert not [k for k in pr if k.startswith("threefn.")], pr
            assert s["denied"] >= 200, s
        finally:
            sh.kill()
            sh.wait()
            d.stop()
            shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
