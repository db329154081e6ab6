#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmond as a Debian service (docs/service.md): the unit verifies and is sandboxed, pcmond says it
is ready (sd_notify) and takes systemd's socket, it works with only the unit's
capabilities, and `make deb` builds a package that lintian passes and apt installs."""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import PCMON, PCMOND, ROOT, Daemon, pcmon, pcmon_json, run_tests, workload

UNIT = os.path.join(ROOT, "packaging", "pcmond.service")


def unit_dir():
    """The units as installed (ExecStart pointing at our pcmond), and the manual pages
    their Documentation= names."""
    d = tempfile.mkdtemp(prefix="pcmon-unit-")
    with open(UNIT) as f:
        text = f.read().replace("@SBINDIR@/pcmond", PCMOND)
    with open(os.path.join(d, "pcmond.service"), "w") as f:
        f.write(text)
    shutil.copy(os.path.join(ROOT, "packaging", "pcmond.socket"), d)
    for sec, page in (("1", "pcmon.1"), ("8", "pcmond.8")):
        os.makedirs(os.path.join(d, "man", "man" + sec), exist_ok=True)
        shutil.copy(os.path.join(ROOT, "packaging", page), os.path.join(d, "man", "man" + sec))
    return d


def test_unit_verifies_and_is_sandboxed():
    d = unit_dir()
    env = dict(os.environ, MANPATH=os.path.join(d, "man"))
    p = subprocess.run(["systemd-analyze", "verify", os.path.join(d, "pcmond.service"),
                        os.path.join(d, "pcmond.socket")], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0 and not p.stderr.strip(), p.stderr
    p = subprocess.run(["systemd-analyze", "security", "--offline=true",
                        os.path.join(d, "pcmond.service")], capture_output=True, text=True)
    m = re.search(r"Overall exposure level for pcmond.service: ([\d.]+)", p.stdout)
    assert m and float(m.group(1)) <= 5.0, p.stdout[-500:]
    print(f"  exposure {m.group(1)}", flush=True)
    text = open(UNIT).read()
    assert re.search(r"^Type=notify$", text, re.M)


def bounding_set():
    caps = re.search(r"^CapabilityBoundingSet=(.*)$", open(UNIT).read(), re.M).group(1).split()
    return [c.lower().replace("cap_", "") for c in caps]


def wrap(caps):
    return f"setpriv --bounding-set=-all,{','.join('+' + c for c in caps)} --inh-caps=-all"


def test_ready_once_listening():
    tmp = tempfile.mkdtemp()
    ns = os.path.join(tmp, "notify")
    n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    n.bind(ns)
    n.settimeout(20)
    sock = os.path.join(tmp, "pcmond.sock")
    p = subprocess.Popen([PCMOND, "--foreground", "--socket", sock, "--state-dir",
                          os.path.join(tmp, "st")], env=dict(os.environ, NOTIFY_SOCKET=ns),
                         stderr=subprocess.PIPE, text=True)
    try:
        msg = n.recv(256)
        assert msg == b"READY=1", msg
        c = socket.socket(socket.AF_UNIX)
        c.connect(sock)  # listening already when it said so
        c.close()
        p.terminate()
        assert n.recv(256) == b"STOPPING=1"
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_detached():
    """pcmond without --foreground: the command returns 0 once pcmond serves, or pcmond's own
    status and message when it cannot; the pcmond it leaves has its threads (its pushes
    arrive) and its signals (SIGHUP reads the configuration file again, SIGTERM stops it)."""
    from test_push import Receiver, wait_for
    rx = Receiver()
    tmp = tempfile.mkdtemp(prefix="pcmon-detached-")
    sock, conf = os.path.join(tmp, "s"), os.path.join(tmp, "pcmond.conf")
    with open(conf, "w") as f:
        f.write("[daemon]\nuser-targets = 3\n")
    os.chmod(conf, 0o644)
    args = [PCMOND, "--socket", sock, "--state-dir", os.path.join(tmp, "st"), "--config", conf,
            "--push", rx.url, "--push-interval", "1"]
    p = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    pid = pcmon_json("status", sock=sock)[0]["pid"]  # serving already
    w = None
    try:
        again = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert again.returncode == 1 and "another pcmond is serving" in again.stderr, again
        w = subprocess.Popen([workload("threefn"), "4"], stdout=subprocess.DEVNULL)
        pcmon("start", "--pid", w.pid, "--publish", "--interval", 10000, sock=sock)
        wait_for(lambda: rx.got, 30, "a push from the detached pcmond")
        with open(conf, "a") as f:
            f.write("[target idle]\nall = yes\ninterval = 100000\n")
        os.kill(pid, signal.SIGHUP)
        wait_for(lambda: "idle" in {t["name"] for t in
                                    pcmon_json("targets", sock=sock)[0]["targets"]},
                 30, "the target SIGHUP read")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 30, "pcmond to stop on SIGTERM")
    finally:
        rx.close()
        if w:
            w.kill()
            w.wait()
        if os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGKILL)


def test_socket_activation():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "activated.sock")
    lsock = socket.socket(socket.AF_UNIX)
    lsock.bind(path)
    lsock.listen(16)
    fd = lsock.fileno()
    # as systemd passes it: fd 3, and LISTEN_PID is pcmond's own pid (a shell that execs
    # it knows it)
    to3 = f"exec 3<&{fd} {fd}<&-; " if fd != 3 else ""
    cmd = ["sh", "-c", f'{to3}LISTEN_PID=$$ LISTEN_FDS=1 exec "{PCMOND}" '
           f'--foreground --socket {path} --state-dir {tmp}/st']
    p = subprocess.Popen(cmd, pass_fds=(fd,), stderr=subprocess.PIPE, text=True)
    try:
        listing, _ = pcmon_json("run", "--interval", 1000, "--", workload("threefn"), 0.5,
                                sock=path, timeout=30)
        assert listing["summary"]["counted"] > 100, listing["summary"]
        p.terminate()
        assert p.wait(20) == 0
        assert os.path.exists(path)  # systemd's socket: not pcmond's to remove
        err = p.stderr.read()
        assert "another pcmond" not in err, err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # two sockets passed: refused with a clear message
    p = subprocess.run(["sh", "-c", f'LISTEN_PID=$$ LISTEN_FDS=2 exec "{PCMOND}" --foreground'
                        f' --socket {tmp}/x.sock --state-dir {tmp}/st'], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 1 and "more than one socket" in p.stderr, p.stderr


def test_works_with_only_the_units_capabilities():
    caps = bounding_set()
    assert "sys_admin" in caps and "bpf" in caps, caps
    env = dict(os.environ, PCMON_TEST_DAEMON_WRAP=wrap(caps))
    # the integration suites of sampling (fp, dwarf, REAL), call counting and critical
    # sections, against a pcmond that has these capabilities and no others
    for t in ("test_virtual.py", "test_count.py", "test_critical.py", "test_real.py"):
        p = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), t)],
                           capture_output=True, text=True, env=env, timeout=900)
        res = re.search(r"^RESULT (\d+) (\d+) (\d+)$", p.stdout, re.M)
        assert res and res.group(2) == "0" and int(res.group(1)) > 0, (t, p.stdout[-3000:])
    # and what each capability is for: without CAP_SYS_ADMIN no uprobe attaches
    env["PCMON_TEST_DAEMON_WRAP"] = wrap([c for c in caps if c != "sys_admin"])
    d = Daemon(env=env).start()
    try:
        r = pcmon("count", "calls.exact", "--json", "--", workload("calls"), 0.2, sock=d.sock)
        assert r.returncode != 0 or "cannot" in d.logtext(), r.stdout[-500:]
    finally:
        d.stop()


def test_version_and_levels():
    p = subprocess.run([PCMOND, "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and re.fullmatch(r"pcmond \d+\.\d+\.\d+\n", p.stdout), p.stdout
    d = Daemon().start()
    try:
        pcmon("status", sock=d.sock, check=0)
    finally:
        d.stop()
    # every log line says its level
    lines = [l for l in d.logtext().splitlines() if l.startswith("pcmon")]
    assert lines and all(re.match(r"pcmon: (error|warning|info|debug): ", l) for l in lines), lines


def test_debian_package():
    for f in glob.glob(os.path.join(ROOT, "*.deb")):
        os.unlink(f)
    p = subprocess.run(["make", "-C", ROOT, "deb"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    debs = glob.glob(os.path.join(ROOT, "pcmon_*_amd64.deb"))
    assert len(debs) == 1, debs
    dev = glob.glob(os.path.join(ROOT, "pcmon-dev_*_all.deb"))
    lint = subprocess.run(["lintian", "--tag-display-limit", "0", *debs, *dev],
                          capture_output=True, text=True)
    errors = [l for l in lint.stdout.splitlines() if l.startswith("E:")]
    assert not errors, lint.stdout
    info = subprocess.run(["dpkg-deb", "-f", debs[0], "Depends"], capture_output=True,
                          text=True).stdout
    for lib in ("libbpf", "libdw", "libcjson", "libcapstone", "libncurses"):
        assert lib in info, info  # real Depends, from the shared libraries
    installed = subprocess.run(["dpkg", "-s", "pcmon"], capture_output=True).returncode == 0
    assert not installed, "pcmon is installed already: this test would not leave it so"
    try:
        p = subprocess.run(["apt-get", "install", "-y", "-q", debs[0], *dev], capture_output=True,
                           text=True, timeout=600,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        for cmd in (["/usr/bin/pcmon", "--version"], ["/usr/sbin/pcmond", "--version"]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            assert r.returncode == 0 and "0." in r.stdout, (cmd, r)
        assert subprocess.run(["getent", "group", "pcmon"], capture_output=True).returncode == 0
        assert os.path.exists("/lib/systemd/system/pcmond.service")
        assert os.path.exists("/lib/systemd/system/pcmond.socket")
        assert os.path.exists("/usr/share/bash-completion/completions/pcmon")
        assert os.path.exists("/usr/include/pcmon/critical.h")
        # enabled, as the postinst says (no systemd running here: the links are made)
        assert os.path.lexists("/etc/systemd/system/multi-user.target.wants/pcmond.service")
        # the installed pcmond profiles
        tmp = tempfile.mkdtemp()
        d = subprocess.Popen(["/usr/sbin/pcmond", "--foreground", "--socket", f"{tmp}/s",
                              "--state-dir", f"{tmp}/st"])
        try:
            for _ in range(100):
                if os.path.exists(f"{tmp}/s"):
                    break
                time.sleep(0.1)
            r = subprocess.run(["/usr/bin/pcmon", "run", "--json", "--", workload("threefn"),
                                "0.3"], capture_output=True, text=True,
                               env=dict(os.environ, PCMON_SOCKET=f"{tmp}/s"))
            assert r.returncode == 0 and '"counted"' in r.stdout, r.stderr
        finally:
            d.terminate()
            d.wait(20)
    finally:
        p = subprocess.run(["apt-get", "purge", "-y", "-q", "pcmon", "pcmon-dev"],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        assert p.returncode == 0, p.stderr[-2000:]
    assert not os.path.exists("/usr/sbin/pcmond")
    assert not os.path.lexists("/etc/systemd/system/multi-user.target.wants/pcmond.service")


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
