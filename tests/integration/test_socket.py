#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""pcmond's socket under abuse by real unprivileged users: malformed, oversized and
wrong-typed requests, a pipelined flood that is never read, more connections than one user
may hold, idle connections and half-sent requests. Every abuser is answered or refused with
a line; throughout, root is served within SERVE_BOUND_S and a target sampling a spinning
workload loses no sample."""
import json
import os
import pwd
import grp
import select
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from lib import oncpu_ns, PCMON, Daemon, pcmon, pcmon_json, run_tests, workload

SERVE_BOUND_S = 1.0
# a python the test users may run (root's own may live under /root)
USER_PYTHON = "/usr/bin/python3"
STATUS = b'{"v":1,"cmd":"status"}\n'
# short timeouts, so that the test sees them fire (the defaults are 60 s, 10 s and 10 s)
QUICK = ("--idle-timeout", 3, "--request-timeout", 2, "--write-timeout", 2)
# pcmond's defaults: 64 connections, 8 of them kept for root, 16 per user
MAX_CLIENTS, ROOT_RESERVE, PER_USER = 64, 8, 16

# The abusers, run as unprivileged users; each prints JSON lines to report what it saw.
HELPER = r'''
import json, os, select, socket, sys, time
STATUS = b'{"v":1,"cmd":"status"}\n'
mode, path = sys.argv[1], sys.argv[2]

def say(**kw):
    print(json.dumps(kw), flush=True)

def connect():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    return s

def one_line(s):
    """A reply line (empty if the daemon closed without one)."""
    data = b""
    while b"\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data

def closed_after(s, secs=2):
    """Whether the daemon closes the connection (after what it sent) within secs."""
    s.settimeout(secs)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except OSError:
        return True

def wait_closed(socks, secs):
    """Wait for the daemon to close each socket; (seconds, parting line) for each."""
    t0, out, left, got = time.monotonic(), [], list(socks), {}
    while left and time.monotonic() < t0 + secs:
        r, _, _ = select.select(left, [], [], 0.2)
        for s in r:
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if chunk:
                got[s] = got.get(s, b"") + chunk
                continue
            out.append({"after_s": time.monotonic() - t0,
                        "line": got.get(s, b"").decode(errors="replace")})
            left.remove(s)
    return out, len(left)

if mode == "conns":
    # open N connections one after another, ask each for the status, keep those answered
    n, hold = int(sys.argv[3]), float(sys.argv[4])
    held, refused, silent, worst = [], [], 0, 0.0
    for i in range(n):
        s = connect()
        t0 = time.monotonic()
        try:
            s.sendall(STATUS)
        except OSError:
            pass   # refused before we wrote: the line is there to read all the same
        try:
            line = one_line(s)
        except (socket.timeout, OSError):
            line = b""
        worst = max(worst, time.monotonic() - t0)
        if not line:
            silent += 1
            s.close()
            continue
        rep = json.loads(line)
        if rep.get("ok"):
            held.append(s)
        else:
            refused.append({"error": rep.get("error"), "status": rep.get("status"),
                            "closed": closed_after(s)})
            s.close()
    say(ok=len(held), refused=refused, silent=silent, worst_s=worst)
    sys.stdin.readline()   # the test says when to start waiting for the idle timeout
    closed, still_open = wait_closed(held, hold)
    say(closed=closed, still_open=still_open)

elif mode == "flood":
    # pipeline N status requests and never read a reply
    n, hold = int(sys.argv[3]), float(sys.argv[4])
    s = connect()
    s.settimeout(None)
    t0 = time.monotonic()
    err = None
    try:
        s.sendall(STATUS * n)
    except OSError as e:
        err = e.strerror
    sent_s = time.monotonic() - t0
    # poll with no events: only a hangup (the daemon closing us) wakes it
    p = select.poll()
    p.register(s, 0)
    closed_s = None
    while time.monotonic() < t0 + hold:
        if p.poll(200):
            closed_s = time.monotonic() - t0
            break
    say(sent_s=sent_s, send_error=err, closed_s=closed_s)

elif mode == "trickle":
    # pipeline N status requests and read their replies a hundred bytes at a time
    import threading
    n = int(sys.argv[3])
    s = connect()
    s.settimeout(None)
    def send():
        try:
            s.sendall(STATUS * n)
        except OSError:
            pass   # closed by the daemon: expected
    threading.Thread(target=send, daemon=True).start()
    p = select.poll()
    p.register(s, 0)   # no events: only a hangup (the daemon closing us) shows
    t0, got, closed_s = time.monotonic(), 0, None
    while time.monotonic() < t0 + 60:
        if p.poll(200):
            closed_s = time.monotonic() - t0
            break
        got += len(s.recv(100))
    say(closed_s=closed_s, read=got)

elif mode == "partial":
    # half a request, then nothing
    s = connect()
    s.sendall(b'{"v":1,"cmd":"sta')
    t0 = time.monotonic()
    s.settimeout(30)
    try:
        line = one_line(s)
    except (socket.timeout, OSError):
        line = b""
    after = time.monotonic() - t0
    say(after_s=after, line=line.decode(errors="replace"), closed=closed_after(s))
'''


def pcmon_gid():
    subprocess.run(["groupadd", "--system", "--force", "pcmon"], check=True)
    return grp.getgrnam("pcmon").gr_gid


class Users:
    """Unprivileged users in group pcmon, made for the test and removed after it."""

    def __init__(self, n):
        self.gid = pcmon_gid()
        self.names = []
        try:
            for i in range(n):
                name = f"pcmt{os.getpid()}u{i}"
                for attempt in range(20):   # /etc/passwd may be locked by a parallel useradd
                    r = subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-G",
                                        "pcmon", name], capture_output=True, text=True)
                    if r.returncode == 0:
                        break
                    time.sleep(0.2)
                else:
                    raise AssertionError(f"useradd {name}: {r.stderr}")
                self.names.append(name)
        except BaseException:
            self.remove()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def popen(self, i, argv, **kw):
        pw = pwd.getpwnam(self.names[i])
        return subprocess.Popen(argv, user=pw.pw_uid, group=pw.pw_gid, extra_groups=[self.gid],
                                cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)

    def helper(self, i, *args):
        return self.popen(i, [USER_PYTHON, "-c", HELPER, *map(str, args)])

    def pcmon(self, i, *args, sock):
        p = self.popen(i, [PCMON, *map(str, args)], env={"PCMON_SOCKET": sock})
        out, err = p.communicate(timeout=30)
        return p.returncode, out, err

    def remove(self):
        for name in self.names:
            subprocess.run(["userdel", "-f", name], capture_output=True)
        self.names = []


def report(p, timeout=60):
    """The next JSON line a helper prints."""
    r, _, _ = select.select([p.stdout], [], [], timeout)
    line = p.stdout.readline() if r else ""
    if not line:
        p.kill()
        raise AssertionError(f"helper said nothing: {p.stderr.read()[-2000:]}")
    return json.loads(line)


class RootProbe(threading.Thread):
    """root asks pcmond for its status (raw, every 0.1 s) and its targets (with pcmon,
    every fifth time) and records how long each answer took."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d, self.stopping, self.times, self.errors = d, threading.Event(), [], []

    def run(self):
        i = 0
        while not self.stopping.is_set():
            t0 = time.monotonic()
            try:
                if i % 5 == 4:
                    r = pcmon("targets", sock=self.d.sock, timeout=60)
                    kind, ok = "pcmon targets", r.returncode == 0
                    if not ok:
                        self.errors.append(f"pcmon targets: exit {r.returncode}: {r.stderr}")
                else:
                    rep = self.d.request(STATUS, timeout=60)
                    kind, ok = "status", len(rep) == 1 and rep[0]["ok"]
                    if not ok:
                        self.errors.append(f"status: {rep}")
            except Exception as e:
                kind = "error"
                self.errors.append(f"{type(e).__name__}: {e}")
            self.times.append((kind, time.monotonic() - t0))
            i += 1
            self.stopping.wait(0.1)

    def finish(self):
        deadline = time.monotonic() + 10
        while len(self.times) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)   # a short test: probe a few times all the same
        self.stopping.set()
        self.join(90)
        assert not self.errors, self.errors[:5]
        assert len(self.times) >= 5, self.times
        worst = max(self.times, key=lambda x: x[1])
        by_kind = {k: max(t for kk, t in self.times if kk == k) for k, _ in self.times}
        print(f"  root served {len(self.times)} times, worst " +
              ", ".join(f"{k} {t * 1000:.0f} ms" for k, t in sorted(by_kind.items())), flush=True)
        assert worst[1] <= SERVE_BOUND_S, \
            f"root waited {worst[1]:.2f} s for '{worst[0]}' (bound {SERVE_BOUND_S} s)"


class Abused:
    """A pcmond whose root target samples a spinner while root probes it. On a clean exit:
    root was always served within the bound, and the target lost no sample."""

    def __init__(self, *args):
        self.d = Daemon(args=args)

    def __enter__(self):
        pcmon_gid()   # the socket's group must exist when pcmond starts
        self.d.start()
        os.chmod(self.d.dir, 0o711)   # users reach the socket; the socket is 0660 group pcmon
        st = os.stat(self.d.sock)
        assert st.st_mode & 0o777 == 0o660 and st.st_gid == pcmon_gid(), oct(st.st_mode)
        self.sp = subprocess.Popen([workload("spinner"), "600"], stdout=subprocess.PIPE,
                                   text=True)
        self.probe = None
        try:
            self.sp.stdout.readline()
            self.tid = pcmon("start", "--pid", self.sp.pid, "--interval", 200,
                             sock=self.d.sock, check=0).stdout.strip()
            time.sleep(0.5)
            self.before, self.cpu0 = self.target(), oncpu_ns(self.sp.pid)
            self.probe = RootProbe(self.d)
            self.probe.start()
        except BaseException:
            self.cleanup()
            raise
        return self

    def target(self):
        ts = pcmon_json("targets", sock=self.d.sock)[0]["targets"]
        return next(t for t in ts if str(t["id"]) == self.tid)

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.probe.finish()
                cpu = oncpu_ns(self.sp.pid) - self.cpu0
                after = self.target()
                got = after["samples"] - self.before["samples"]
                # a sample every 200 us of the spinner's CPU time while it lasted (2 % for the
                # timer's slack), less what may still be on its way: 0.1 s of them
                want = 0.98 * cpu / 200e3 - 500
                print(f"  target: {got:.0f} samples during the abuse ({cpu / 1e9:.2f} s of the "
                      f"spinner's CPU), lost {after['lost']:.0f}", flush=True)
                assert after["state"] == "running", after
                assert after["lost"] == 0, after
                assert got > 0 and got >= want, (got, cpu, self.before, after)
                assert self.d.alive(), self.d.logtext()
        finally:
            self.cleanup()

    def cleanup(self):
        if self.probe:
            self.probe.stopping.set()
        self.sp.kill()
        self.sp.wait()
        rc = self.d.stop()
        assert rc == 0, f"pcmond exited {rc}: {self.d.logtext()}"


def assert_error(rep, *words):
    assert rep["ok"] is False and rep["v"] == 1, rep
    assert rep["status"] in (1, 2) and isinstance(rep["error"], str) and rep["error"], rep
    for w in words:
        assert w in rep["error"], (w, rep)


def padded_status(size):
    """A status request exactly @size bytes long, newline not counted (JSON white space:
    a command refuses fields it does not know)."""
    head, tail = b'{"v":1,"cmd":"status"', b'}'
    return head + b" " * (size - len(head) - len(tail)) + tail


NOPID = 3999999   # a process id that does not exist, were a bad request to get through
BAD = [
    (b"garbage", "not JSON"),
    (b'{"v":1,"cmd":"status"', "not JSON"),
    (b"\xff\xfe{}", "not JSON"),
    (b'{"v":1,"cmd":"status"} {}', "after the JSON"),
    (b"[1,2]", "not a JSON object"),
    (b'"status"', "not a JSON object"),
    (b"{}", '"v"'),
    (b'{"v":"1","cmd":"status"}', '"v"'),
    (b'{"v":2,"cmd":"status"}', "version"),
    (b'{"v":1e999,"cmd":"status"}', "version"),
    (b'{"v":1}', '"cmd"'),
    (b'{"v":1,"cmd":7}', '"cmd"'),
    (b'{"v":1,"cmd":["status"]}', '"cmd"'),
    (b'{"v":1,"cmd":""}', '"cmd"'),
    (b'{"v":1,"cmd":"explode"}', "unknown command"),
    (b'{"v":1,"cmd":"st\\u0000atus"}', ""),
    (b"[" * 100000 + b"]" * 100000, ""),
    (b'{"a":' * 50000 + b"1" + b"}" * 50000, ""),
    # wrong-typed fields are refused, not taken for absent ones
    (b'{"v":1,"cmd":"start","pid":"%d"}' % NOPID, '"pid"'),
    (b'{"v":1,"cmd":"start","pid":%d,"interval_us":"fast"}' % NOPID, '"interval_us"'),
    # a number out of range is named as the option that gives it
    (b'{"v":1,"cmd":"start","pid":%d,"interval_us":1e300}' % NOPID, '--interval 1.0000000000000001e+300'),
    (b'{"v":1,"cmd":"start","pid":%d,"kernel":"yes"}' % NOPID, '"kernel"'),
    (b'{"v":1,"cmd":"start","pid":%d,"children":0}' % NOPID, '"children"'),
    (b'{"v":1,"cmd":"start","pid":%d,"critical":"a=b"}' % NOPID, '"critical"'),
    (b'{"v":1,"cmd":"start","pid":%d,"critical":[1]}' % NOPID, '"critical"'),
    (b'{"v":1,"cmd":"start","pid":%d,"mode":1}' % NOPID, '"mode"'),
    (b'{"v":1,"cmd":"start","pid":-1}', "pid"),
    (b'{"v":1,"cmd":"start","pid":1e300}', "pid"),
    (b'{"v":1,"cmd":"list","target":{"id":1}}', '"target"'),
    (b'{"v":1,"cmd":"list","target":null}', '"target"'),
    (b'{"v":1,"cmd":"list","when":["main"]}', '"when"'),
    (b'{"v":1,"cmd":"stop","target":true}', '"target"'),
    (b'{"v":1,"cmd":"list","target":"999"}', "no target"),
]


def test_malformed_requests():
    """Every bad line is answered with one error, in order, and the connection goes on."""
    with Abused() as a:
        raw = b"".join(line + b"\n" for line, _ in BAD) + STATUS
        reps = a.d.request(raw, timeout=30)
        assert len(reps) == len(BAD) + 1, reps
        for (line, word), rep in zip(BAD, reps):
            assert_error(rep, word)
        assert reps[-1]["ok"] is True
        # lines past the 256 KiB limit are skipped and answered; one at the limit is served
        limit = 256 * 1024
        for size in (limit + 1, 300 * 1024, 4 << 20):
            reps = a.d.request(padded_status(size) + b"\n" + STATUS, timeout=30)
            assert len(reps) == 2, reps
            assert_error(reps[0], "too long")
            assert reps[1]["ok"] is True
        reps = a.d.request(padded_status(limit) + b"\n", timeout=30)
        assert reps[0]["ok"] is True, reps
        # an empty line carries descriptors for the next request: no reply of its own
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(a.d.sock)
        s.sendall(b"\n\n" + STATUS)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        assert [json.loads(x)["ok"] for x in data.splitlines()] == [True], data
        # a client that leaves mid-request, and one that half-closes after asking
        s = socket.socket(socket.AF_UNIX)
        s.connect(a.d.sock)
        s.sendall(b'{"v":1,"cmd":')
        s.close()
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(a.d.sock)
        s.sendall(STATUS * 3)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        assert [json.loads(x)["ok"] for x in data.splitlines()] == [True] * 3


def connections(d):
    return pcmon_json("status", sock=d.sock)[0]["connections"]


def test_pipelined_flood_never_read():
    """Two users pipeline 20000 status requests each and never read a reply: pcmond stops
    reading them once their unread replies pass the cap and drops them when they stay
    stalled past the write timeout (default 10 s). Root and the target do not notice."""
    with Abused() as a, Users(2) as u:
        floods = [u.helper(i, "flood", a.d.sock, 20000, 40) for i in range(2)]
        for f in floods:
            rep = report(f, 60)
            print(f"  flooder: {rep}", flush=True)
            assert rep["closed_s"] is not None and rep["closed_s"] <= 10 + 5, rep
            # pcmond stopped reading it once its replies passed the cap: its writes blocked
            # until it was closed
            assert rep["send_error"] is not None, rep
            f.wait(10)
        c = connections(a.d)
        assert c["write_timeouts"] >= 2, c
        assert c["clients"] <= 2, c   # the flooders are gone: just us (and the probe)


def test_connection_limits():
    """One user may hold 16 connections; users together 56 of the 64, the rest are root's.
    Past a limit a connection is refused with one error line, at once; idle connections
    are closed after the idle timeout with a line saying so."""
    idle = 6
    with Abused("--idle-timeout", idle) as a, Users(4) as u:
        first = [u.helper(0, "conns", a.d.sock, PER_USER + 4, 30)] + \
                [u.helper(i, "conns", a.d.sock, PER_USER, 30) for i in (1, 2)]
        reps = [report(h) for h in first]
        last = u.helper(3, "conns", a.d.sock, PER_USER, 30)
        reps.append(report(last))
        helpers = first + [last]
        print(f"  accepted {[r['ok'] for r in reps]}, refused "
              f"{[len(r['refused']) for r in reps]}, slowest {max(r['worst_s'] for r in reps):.3f} s",
              flush=True)
        for r in reps:
            assert r["silent"] == 0 and r["worst_s"] <= SERVE_BOUND_S, r
            for ref in r["refused"]:
                assert ref["status"] == 1 and ref["closed"], ref
        assert reps[0]["ok"] == PER_USER and len(reps[0]["refused"]) == 4, reps[0]
        assert "per user" in reps[0]["refused"][0]["error"], reps[0]
        assert reps[1]["ok"] == reps[2]["ok"] == PER_USER, reps
        nonroot = MAX_CLIENTS - ROOT_RESERVE
        assert reps[3]["ok"] == nonroot - 3 * PER_USER, reps[3]
        assert len(reps[3]["refused"]) == PER_USER - reps[3]["ok"], reps[3]
        assert "busy" in reps[3]["refused"][0]["error"], reps[3]
        # the CLI of a user at the limit says why, in one line, and does not hang
        rc, out, err = u.pcmon(0, "targets", sock=a.d.sock)
        assert rc == 1 and err.count("\n") == 1 and "per user" in err, (rc, out, err)
        # root still gets in, several times over
        held = []
        for i in range(ROOT_RESERVE - 2):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(SERVE_BOUND_S)
            s.connect(a.d.sock)
            s.sendall(STATUS)
            assert json.loads(s.makefile("rb").readline())["ok"] is True
            held.append(s)
        c = connections(a.d)
        assert c["clients"] >= nonroot + len(held), c
        assert (c["max_clients"], c["root_reserved"], c["per_user"]) == \
            (MAX_CLIENTS, ROOT_RESERVE, PER_USER), c
        assert c["refused"] == 4 + PER_USER - reps[3]["ok"] + 1, c
        text = pcmon("status", sock=a.d.sock, check=0).stdout
        assert "connections" in text, text
        # idle connections are closed with a line saying so
        for h in helpers:
            h.stdin.write("\n")
            h.stdin.flush()
        for h, r in zip(helpers, reps):
            done = report(h, 60)
            assert done["still_open"] == 0 and len(done["closed"]) == r["ok"], done
            for cl in done["closed"]:
                assert "idle" in cl["line"] and cl["after_s"] <= idle + 3, cl
            h.wait(10)
        for s in held:
            s.close()
        assert connections(a.d)["idle_timeouts"] >= nonroot, connections(a.d)


def test_slow_clients():
    """Half a request is answered and closed after the request timeout; a connection that
    says nothing after its last reply is closed after the idle timeout; one that reads its
    replies a trickle at a time after the write timeout; `pcmon run`, idle while its command
    runs, is not hurt by any of that."""
    with Abused(*QUICK) as a, Users(3) as u:
        part = u.helper(0, "partial", a.d.sock)
        idle = u.helper(1, "conns", a.d.sock, 3, 20)
        slow = u.helper(2, "trickle", a.d.sock, 20000)
        r = report(idle)
        assert r["ok"] == 3, r
        idle.stdin.write("\n")
        idle.stdin.flush()
        p = report(part, 30)
        assert p["closed"] and 2 - 0.5 <= p["after_s"] <= 2 + 3, p
        rep = json.loads(p["line"])
        assert_error(rep, "incomplete")
        done = report(idle, 30)
        assert done["still_open"] == 0, done
        for cl in done["closed"]:
            assert "idle" in cl["line"] and cl["after_s"] <= 3 + 3, cl
        # a reader that takes a hundred bytes now and then is as stalled as one that reads
        # nothing: closed after the write timeout
        t = report(slow, 30)
        print(f"  trickler: {t}", flush=True)
        assert t["closed_s"] is not None and t["closed_s"] <= 2 + 3, t
        c = connections(a.d)
        assert c["request_timeouts"] == 1 and c["idle_timeouts"] >= 3, c
        assert c["write_timeouts"] == 1, c
        # `pcmon run` through pcmond outlives the idle timeout of its connection
        listing, _ = pcmon_json("run", "--interval", 1000, "--", workload("spinner"), 4,
                                sock=a.d.sock)
        assert listing["target"]["state"] == "exited", listing["target"]
        assert listing["summary"]["counted"] > 500, listing["summary"]


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
