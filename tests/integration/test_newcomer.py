#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A newcomer's first hour: the advice pcmon gives is right, nothing that matched nothing is
silent, and the output says what it means (docs/sampling.md, the man page)."""
import os
import pty
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import PCMON, Daemon, Users, pcmon, pcmon_json, procs, run_tests, workload


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



def test_kernel_threads_are_listed_as_kernel_threads():
    """start --all while files are written and synced (work for the kernel's writeback and
    journal threads): their samples are charged to kernel.[NAME] (with their kernel frames
    under --kernel), not to the unwalkable section."""
    d = Daemon().start()
    data = tempfile.NamedTemporaryFile(dir="/var/tmp", delete=False)
    try:
        for extra in ((), ("--kernel",)):
            tid = pcmon("start", "--all", "--interval", 1000, *extra, sock=d.sock,
                        check=0).stdout.strip()
            t = time.time()
            while time.time() - t < 3:
                data.write(os.urandom(1 << 20))
                data.flush()
                os.fsync(data.fileno())
                data.seek(0)
            pcmon("stop", tid, sock=d.sock, check=0)
            listing, _ = pcmon_json("list", tid, sock=d.sock)
            kt = {n: p for n, p in procs(listing).items() if n.startswith("kernel.[")}
            assert kt, sorted(procs(listing))[:40]
            if extra:  # the thread is the root, its kernel frames above it
                folded = pcmon("export", tid, "--format", "folded", sock=d.sock).stdout
                names = tuple(n[len("kernel."):] + ";" for n in kt)  # (folded: no module)
                rows = [l for l in folded.splitlines() if l.startswith(names)]
                assert rows and any(len(l.rsplit(" ", 1)[0].split(";")) > 1 for l in rows), rows[:5]
            pcmon("drop", tid, sock=d.sock, check=0)
    finally:
        data.close()
        os.unlink(data.name)
        d.stop()



def test_a_listing_shows_only_lines_that_say_something():
    """No critical-sections line where no section is declared and nothing was unwalkable;
    each table titled; the words explained in --help."""
    r = pcmon("run", "-o", "/dev/stdout", "--", workload("threefn"), 0.3,
              sock="/nonexistent/pcmond.sock")
    text = r.stdout[r.stdout.index("pcmon: target "):]
    # (a sample whose walk faulted is said, and then the line says something: a busy
    # machine's run had one of its 22)
    said = [l for l in text.splitlines() if "critical" in l]
    assert all(re.match(r"critical sections: unwalkable [1-9]", l) for l in said), text
    assert "marks pending" not in text, text
    assert "by shallow count" in text and "by deep count" in text, text
    helps = pcmon("list", "--help").stdout
    for word in ("VIRTUAL t=", "interrupts", "foreignPcs", "kernel-mode", "lost",
                 "stacks cut short", "critical sections", "shallow, deep", "kernel.[NAME]"):
        assert word in helps, word



def test_names_follow_what_runs():
    """A target started on a shell that then execs is named after what it became; a target
    that only counts calls shows "count" for its mode; top -b prints no keys; a pprof of a
    system-wide target is "File: all", not its busiest process."""
    d = Daemon().start()
    try:
        sh = subprocess.Popen(["sh", "-c", f"sleep 0.5; exec {workload('threefn')} 0.5"],
                              stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", sh.pid, "--interval", 1000, sock=d.sock,
                    check=0).stdout.strip()
        named = pcmon("start", "--pid", os.getpid(), "--name", "mine", "--no-sample",
                      "--count", "libc.so.6.getpid", sock=d.sock, check=0).stdout.strip()
        sh.wait(30)
        time.sleep(0.5)
        targets, _ = pcmon_json("targets", sock=d.sock)
        names = {str(t["id"]): t["name"] for t in targets["targets"]}
        assert names[tid] == "threefn" and names[named] == "mine", names
        rows = {l.split()[0]: l.split() for l in pcmon("targets", sock=d.sock).stdout.splitlines()[1:]}
        assert rows[named][3] == "count" and rows[tid][3] == "VIRTUAL", rows
        pcmon("drop", named, sock=d.sock, check=0)
        spin = subprocess.Popen([workload("spinner"), "5"], stdout=subprocess.DEVNULL)
        top = pcmon("top", "-b", "-n", "1", "-d", "0.5", "--pid", spin.pid, sock=d.sock, check=0)
        assert "pcmon top:" in top.stdout and "keys:" not in top.stdout, top.stdout
        every = pcmon("start", "--all", "--interval", 1000, sock=d.sock, check=0).stdout.strip()
        time.sleep(1.5)
        pcmon("stop", every, sock=d.sock, check=0)
        spin.kill()
        spin.wait()
        out = os.path.join(d.dir, "all.pb.gz")
        pcmon("export", every, "--format", "pprof", "-o", out, sock=d.sock, check=0)
        r = subprocess.run(["go", "tool", "pprof", "-top", out], capture_output=True, text=True,
                           timeout=120, env=dict(os.environ, PPROF_TMPDIR=d.dir))
        assert r.returncode == 0 and r.stdout.startswith("File: all\n"), (r.stdout[:200], r.stderr)
    finally:
        d.stop()



def test_a_name_that_matches_nothing_is_said_with_those_near():
    """--when and timeline --proc name procedures as WHEN does (the module may be left out);
    a name no procedure of the target answers to is said, with the names nearest it."""
    listing, _ = pcmon_json("run", "--when", "work_x->*", "--", workload("threefn"), 0.5,
                            sock="/nonexistent/pcmond.sock")
    unseen = listing["summary"]["when_unseen"]
    assert [u["name"] for u in unseen] == ["work_x"] and "threefn.work_a" in unseen[0]["near"], unseen
    r = pcmon("run", "-o", "/dev/stdout", "--when", "nosuchfunc", "--", "true",
              sock="/nonexistent/pcmond.sock")
    assert "--when nosuchfunc: no procedure of the target is named so" in r.stdout, r.stdout
    listing, _ = pcmon_json("run", "--when", "work_a", "--", workload("threefn"), 0.5,
                            sock="/nonexistent/pcmond.sock")
    assert "when_unseen" not in listing["summary"], listing["summary"]
    # count: in a running process, the error; for a command, the table's line
    # (until killed: an engine started on a loaded machine took longer than 10 s to look)
    spin = subprocess.Popen([workload("spinner"), "120"], stdout=subprocess.PIPE)
    try:
        spin.stdout.readline()
        r = pcmon("count", "spinner.spin_her", "--pid", spin.pid, "--duration", 0.3,
                  sock="/nonexistent/pcmond.sock")
        assert r.returncode == 1 and "(near: spinner.spin_here" in r.stderr, r.stderr
    finally:
        spin.kill()
        spin.wait()
    r = pcmon("count", "threefn.work_x", "-o", "/dev/stdout", "--", workload("threefn"), 0.2,
              sock="/nonexistent/pcmond.sock")
    line = [l for l in r.stdout.splitlines() if l.startswith("no procedure matched")]
    assert line and "near: " in line[0] and "threefn.work_a" in line[0], r.stdout
    d = Daemon().start()
    try:
        p = subprocess.Popen([workload("threefn"), "1.5"], stdout=subprocess.DEVNULL)
        tid = pcmon("start", "--pid", p.pid, "--interval", 1000, sock=d.sock,
                    check=0).stdout.strip()
        p.wait(30)
        tl, _ = pcmon_json("timeline", tid, "--proc", "work_a", "--proc", "main", "--proc",
                           "wrok_b", "--top", "0", sock=d.sock)
        rows = {r["procedure"]: r for r in tl["timeline"]["procedures"]}
        assert set(rows) == {"threefn.work_a", "threefn.main"}, rows.keys()
        counted = sum(sl["counted"] for sl in tl["timeline"]["slices"])
        assert sum(rows["threefn.main"]["deep"]) >= 0.9 * counted, (rows["threefn.main"], counted)
        un = tl["timeline"]["timeline_unseen"]
        assert un[0]["name"] == "wrok_b" and "threefn.work_b" in un[0]["near"], un
        text = pcmon("timeline", tid, "--proc", "main", "--top", "0", sock=d.sock).stdout
        row = [l for l in text.splitlines() if l.startswith("main ")]
        assert row and float(row[0].split()[1].rstrip("%")) >= 90, text  # deep: main is on every stack
        assert "deep (anywhere on the stack)" in text, text
    finally:
        d.stop()



def test_count_of_a_command_leaves_no_target_and_errors_name_every_id():
    """count -- CMD forgets its target with the table, as count --pid does; count's -o is
    its own; a name three targets share is refused naming all three ids."""
    d = Daemon().start()
    try:
        out = os.path.join(d.dir, "calls.txt")
        r = pcmon("count", "threefn.work_a", "-o", out, "--", workload("threefn"), 0.2,
                  sock=d.sock)
        assert r.returncode == 0 and r.stderr == "", r
        with open(out) as f:
            assert "threefn.work_a" in f.read()
        targets, _ = pcmon_json("targets", sock=d.sock)
        assert targets["targets"] == [], targets
        sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
        ids = [pcmon("start", "--pid", p.pid, "--name", "same", "--no-children", sock=d.sock,
                     check=0).stdout.strip() for p in sleepers]
        r = pcmon("list", "same", sock=d.sock)
        assert r.returncode == 2 and f"(ids {', '.join(ids)})" in r.stderr, (ids, r.stderr)
        for p in sleepers:
            p.kill()
            p.wait()
    finally:
        d.stop()


if __name__ == "__main__":
    run_tests(globals())
