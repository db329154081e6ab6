#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A newcomer's first hour: the advice pcmon gives is right, nothing that matched nothing is
silent, and the output says what it means (docs/sampling.md, the man page)."""
import os
import pty
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lib import PCMON, Daemon, Users, pcmon, pcmon_json, run_tests, workload


def one_line(r, status):
    """The one line a failing command printed on stderr."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == status and len(lines) == 1, (r.returncode, r.stderr)
    return lines[0]


def test_a_user_outside_group_pcmon_is_told_to_join_it():
    """pcmond runs; a user not in group pcmon cannot reach its socket: pcmon says to join
    the group or use sudo, for a command on a target and for run, never that pcmond is not
    running. With no pcmond, it says to start it."""
    d = Daemon().start()
    try:
        os.chmod(d.dir, 0o711)
        with Users("pcmon_nogroup_u", group="nogroup"):
            for args in (("targets",), ("run", "--", "true")):
                line = one_line(pcmon(*args, sock=d.sock, user="pcmon_nogroup_u"), 1)
                assert "Permission denied" in line and "group pcmon" in line and \
                    "usermod -aG pcmon" in line and "sudo" in line, line
                assert "not running" not in line, line
    finally:
        d.stop()
    line = one_line(pcmon("targets", sock=os.path.join(d.dir, "gone.sock")), 1)
    assert "pcmond is not running" in line and "systemctl start pcmond" in line, line



def test_run_keeps_its_listing_apart_from_the_program():
    """The program's output alone on stdout when stdout is not a terminal (the listing on
    stderr); -o FILE takes the listing; on a terminal the listing follows the output."""
    d = Daemon().start()
    try:
        r = pcmon("run", "--", "sh", "-c", "echo program-output", sock=d.sock)
        assert r.returncode == 0 and r.stdout == "program-output\n", r
        assert "pcmon: target " in r.stderr and "exited 0" in r.stderr, r.stderr
        out = os.path.join(d.dir, "listing.txt")
        r = pcmon("run", "-o", out, "--", "sh", "-c", "echo program-output", sock=d.sock)
        assert r.returncode == 0 and r.stdout == "program-output\n" and r.stderr == "", r
        with open(out) as f:
            assert f.read().startswith("pcmon: target "), out
        r = pcmon("run", "-o", "/nonexistent/dir/file", "--", "touch", out + ".ran", sock=d.sock)
        assert one_line(r, 1).startswith("pcmon: -o /nonexistent/dir/file: "), r.stderr
        assert not os.path.exists(out + ".ran"), "the command ran with nowhere to list"
        # a terminal: the program's output, then the listing, both there
        master, slave = pty.openpty()
        p = subprocess.run([PCMON, "run", "--", "sh", "-c", "echo program-output"],
                           stdout=slave, stderr=subprocess.PIPE, text=True, timeout=60,
                           env=dict(os.environ, PCMON_SOCKET=d.sock))
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
        text = seen.decode()
        assert p.returncode == 0 and text.index("program-output") < text.index("pcmon: target "), \
            (text, p.stderr)
    finally:
        d.stop()


def test_run_of_a_missing_program_says_so_first_and_leaves_nothing():
    """run -- /nonexistent: one line saying it cannot run, exit 127 as a shell's, no empty
    listing, and no target left with pcmond."""
    d = Daemon().start()
    try:
        r = pcmon("run", "--", "/nonexistent/program", sock=d.sock)
        line = one_line(r, 127)
        assert line == "pcmon: cannot run '/nonexistent/program': No such file or directory", line
        assert r.stdout == "", r.stdout
        r = pcmon("run", "--", "no-such-command-anywhere", sock=d.sock)
        assert "cannot run 'no-such-command-anywhere'" in one_line(r, 127), r.stderr
        targets, _ = pcmon_json("targets", sock=d.sock)
        assert targets["targets"] == [], targets
    finally:
        d.stop()


if __name__ == "__main__":
    run_tests(globals())
