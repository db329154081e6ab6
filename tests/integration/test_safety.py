#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Safe to share: what a user in group pcmon may watch, start and see, tested as real
unprivileged users against a real pcmond."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, Users, as_user, pcmon, pcmon_json, procs, run_tests, workload

ALICE = "pcmsafe-alice"


def shared_daemon():
    """A pcmond whose socket a user in group pcmon can reach."""
    d = Daemon().start()
    os.chmod(d.dir, 0o755)
    return d


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
            assert p.stdout.readline().strip() == "done"
            p.wait(30)
            listing = pcmon_json("list", tid, sock=d.sock, user=ALICE, groups=True)[0]
            pr, s = procs(listing), listing["summary"]
            assert pr["undump.spin_mine"]["shallow"] >= 200, pr
            assert "undump.spin_secret" not in pr, pr
            assert s["denied"] >= 200, s
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
