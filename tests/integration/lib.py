# SPDX-License-Identifier: GPL-2.0-only
"""Small harness for pcmon's integration tests: real BPF, real pcmond, real workloads.

Each test is a function named test_*; it passes by returning, fails by raising, and is
skipped by raising Skip (only when not root or without BTF; under CI a skip is a failure).
"""
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PCMON = os.path.join(ROOT, "bin", "pcmon")
PCMOND = os.path.join(ROOT, "bin", "pcmond")
WORK = os.path.join(ROOT, ".output", "workloads")


class Skip(Exception):
    pass


def workload(name):
    return os.path.join(WORK, name)


def as_user(cmd, user, groups=False):
    """@cmd run as @user: with only the user's primary group, or (groups=True) with all the
    groups the user is in (group pcmon, to reach pcmond's socket)."""
    import pwd
    pw = pwd.getpwnam(user)
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
            "--init-groups" if groups else "--clear-groups", *cmd]


def pcmon(*args, sock=None, check=None, timeout=120, user=None, stdin=None, groups=False,
          env=None):
    """Run the CLI; returns CompletedProcess. check=N asserts the exit status; env: the
    environment (default ours)."""
    env = dict(os.environ if env is None else env)
    env.pop("PCMON_SOCKET", None)
    if sock:
        env["PCMON_SOCKET"] = sock
    cmd = [PCMON, *map(str, args)]
    if user:
        cmd = as_user(cmd, user, groups)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, stdin=stdin)
    if check is not None and p.returncode != check:
        raise AssertionError(f"pcmon {' '.join(map(str, args))}: exit {p.returncode}, wanted {check}\n"
                             f"stdout: {p.stdout[-2000:]}\nstderr: {p.stderr[-2000:]}")
    return p


class Users:
    """Real unprivileged users for a test, in group pcmon (pcmond's socket group); removed on
    exit. `with Users("alice", "bob") as u: u["alice"]` is alice's uid."""

    def __init__(self, *names, group="pcmon"):
        self.names, self.group, self.made = names, group, []

    def __enter__(self):
        import pwd
        if subprocess.run(["getent", "group", self.group], capture_output=True).returncode:
            subprocess.run(["groupadd", "--system", self.group], check=True)
        for n in self.names:
            if subprocess.run(["id", n], capture_output=True).returncode:
                subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin",
                                n], check=True)
                self.made.append(n)
            subprocess.run(["usermod", "-a", "-G", self.group, n], check=True)
        self.uid = {n: pwd.getpwnam(n).pw_uid for n in self.names}
        return self

    def __getitem__(self, name):
        return self.uid[name]

    def __exit__(self, *exc):
        for n in self.made:
            subprocess.run(["userdel", n], capture_output=True)


def pcmon_json(*args, sock=None, **kw):
    p = pcmon(args[0], "--json", *args[1:], sock=sock, check=0, **kw)
    # `run` prints the workload's own output first; pcmon's document is the last one
    dec, text, pos, doc = json.JSONDecoder(), p.stdout, 0, None
    while True:
        start = text.find("{", pos)
        if start < 0:
            break
        try:
            doc, pos = dec.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
    if doc is None:
        raise AssertionError(f"no JSON in output of pcmon {args}: {text[-2000:]}")
    return doc, p


def first_json_line(text):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            return json.loads(line)
    raise AssertionError(f"no JSON line in {text!r}")


def procs(listing):
    return {p["procedure"]: p for p in listing["procedures"]}


def charged(listing):
    """Counted samples charged to procedures: not to a critical section (an unwalkable
    sample matches no WHEN pattern and is counted all the same)."""
    s = listing["summary"]
    return s["counted"] - sum(c["count"] for c in s["critical"])


def cgroup2_root():
    """Where the cgroup v2 hierarchy is mounted (the tests that make cgroups need one)."""
    for line in open("/proc/self/mounts"):
        mnt, fstype = line.split()[1:3]
        if fstype == "cgroup2":
            return mnt
    raise AssertionError("no cgroup2 mount")


def spin_in(cg, seconds=120):
    """The spinner workload, started and moved into cgroup @cg."""
    p = subprocess.Popen([workload("spinner"), str(seconds)], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(p.pid))
    return p


def share_tolerance_pp(p, n, floor_pp=2.0):
    """Tolerance for a sampled share: the spec's 2 pp, widened to 4 sigma for small n."""
    sigma = math.sqrt(max(p * (1 - p), 1e-4) / max(n, 1))
    return max(floor_pp, 4 * sigma * 100)


class Daemon:
    """A pcmond of our own, on a private socket and state directory (removed after a test
    that passed; kept, and named, after one that failed)."""

    made = []  # this test's

    def __init__(self, state_dir=None, args=(), env=None):
        self.dir = tempfile.mkdtemp(prefix="pcmon-it-")
        Daemon.made.append(self)
        self.sock = os.path.join(self.dir, "pcmond.sock")
        self.state = state_dir or os.path.join(self.dir, "state")
        self.args = [str(a) for a in args]  # more pcmond options
        if "--config" not in self.args:  # not the machine's /etc/pcmon/pcmond.conf
            self.args += ["--config", "/dev/null"]
        self.env = env  # its environment (default ours)
        self.proc = None

    def start(self):
        # pcmond gives its socket to group pcmon when there is one (the package makes it):
        # made here too, so that a test's users reach any pcmond, whichever test ran first
        if subprocess.run(["getent", "group", "pcmon"], capture_output=True).returncode:
            subprocess.run(["groupadd", "--system", "pcmon"], check=True)
        self.log = open(os.path.join(self.dir, "pcmond.log"), "a")
        # $PCMON_TEST_DAEMON_WRAP: a command pcmond runs under (test_service.py: the unit's
        # capability bounding set, through setpriv)
        wrap = (self.env or os.environ).get("PCMON_TEST_DAEMON_WRAP", "").split()
        self.proc = subprocess.Popen([*wrap, PCMOND, "--foreground", "--socket", self.sock,
                                      "--state-dir", self.state, "-v", *self.args],
                                     stdout=self.log, stderr=self.log, env=self.env)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"pcmond exited {self.proc.returncode}: {self.logtext()}")
            if os.path.exists(self.sock):
                try:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(self.sock)
                    s.close()
                    return self
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError("pcmond did not come up: " + self.logtext())

    def logtext(self):
        try:
            return open(os.path.join(self.dir, "pcmond.log")).read()[-3000:]
        except OSError:
            return ""

    def alive(self):
        return self.proc and self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def request(self, raw: bytes, timeout=10):
        """Send raw bytes, return the reply lines (parsed JSON)."""
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(timeout)
        s.connect(self.sock)
        s.sendall(raw)
        data = b""
        want = raw.count(b"\n")
        try:
            while data.count(b"\n") < want:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        return [json.loads(l) for l in data.splitlines() if l.strip()]


@contextlib.contextmanager
def held(cmd):
    """@cmd (a workload that takes --wait FILE: it prints its pid as a JSON line, then waits
    for FILE), held at its start until let go: yields the process, its pid and a function
    that lets it go (a target started meanwhile sees all of its time, however slowly a
    loaded machine starts it). The process is killed if it is still there at the end."""
    flag = tempfile.mktemp(prefix="pcmon-go-")
    proc = subprocess.Popen([*map(str, cmd), "--wait", flag], stdout=subprocess.PIPE, text=True)
    try:
        pid = json.loads(proc.stdout.readline())["pid"]
        yield proc, pid, lambda: open(flag, "w").close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if os.path.exists(flag):
            os.unlink(flag)


def status(d):
    """`pcmon status` of pcmond @d (a Daemon), as JSON."""
    return pcmon_json("status", sock=d.sock)[0]


def oncpu_ns(pid):
    """Process @pid's main thread's time on a CPU (ns, /proc/PID/schedstat): as of its last
    scheduler tick while it runs (4 ms at 250 Hz), for spans of a second or more."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def check_environment():
    if os.geteuid() != 0:
        raise Skip("integration tests need root (BPF, perf events)")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        raise Skip("no kernel BTF at /sys/kernel/btf/vmlinux")


def run_tests(module_globals):
    only = sys.argv[1:]
    tests = [(n, f) for n, f in sorted(module_globals.items()) if n.startswith("test_") and callable(f)]
    tests = [(n, f) for n, f in tests if not only or any(o in n for o in only)]
    passed = failed = skipped = 0
    in_ci = os.environ.get("CI") == "true"
    try:
        check_environment()
        env_skip = None
    except Skip as e:
        env_skip = str(e)
    for name, fn in tests:
        t0 = time.time()
        try:
            if env_skip:
                raise Skip(env_skip)
            fn()
            passed += 1
            print(f"PASS {name} ({time.time() - t0:.1f}s)", flush=True)
            for d in Daemon.made:  # what a passed test left: its daemons stopped, dirs gone
                d.stop()
                shutil.rmtree(d.dir, ignore_errors=True)
        except Skip as e:
            if in_ci:
                failed += 1
                print(f"FAIL {name}: skipped under CI, which must never skip: {e}", flush=True)
            else:
                skipped += 1
                print(f"SKIP {name}: {e}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name} ({time.time() - t0:.1f}s)\n" + traceback.format_exc()
                  + "".join(f"(kept: {d.dir})\n" for d in Daemon.made), flush=True)
        Daemon.made.clear()
    print(f"RESULT {passed} {failed} {skipped}")
    return 0 if failed == 0 else 1
