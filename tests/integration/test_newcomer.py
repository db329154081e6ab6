#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A newcomer's first hour: the advice pcmon gives is right, nothing that matched nothing is
silent, and the output says what it means (docs/sampling.md, the man page)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import Daemon, Users, pcmon, run_tests


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


if __name__ == "__main__":
    run_tests(globals())
