#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The README's commands work in one invocation on a machine without the dependencies.

`sudo make deps demo` used to fail there: the Makefile asked pkg-config for the libraries'
flags when it was read, before `deps` had installed anything. Here a copy of the tree (as a
fresh clone has it: no .output/, no bin/) is built with a pkg-config that fails until a
marker file exists, and a `deps` step (DEPS_INSTALL) that only creates the marker, slowly,
so that under -j anything not waiting for deps would ask too early.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, run_tests


def fresh_copy():
    """The tree's files as a clone would have them (tracked, plus new files not ignored),
    with the working tree's contents."""
    dest = tempfile.mkdtemp(prefix="pcmon-build-")
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], check=True, capture_output=True).stdout
    for f in filter(None, files.decode().split("\0")):
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue  # deleted in the working tree
        os.makedirs(os.path.dirname(os.path.join(dest, "src", f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, "src", f))
    return dest


def make(src, *args, timeout=600):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    return subprocess.run(["make", "-C", src, *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_deps_and_build_in_one_make_run():
    top = fresh_copy()
    src = os.path.join(top, "src")
    marker = os.path.join(top, "installed")
    fake = os.path.join(top, "pkg-config")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\n"
                f"[ -e '{marker}' ] || {{ echo 'pkg-config: no such package' >&2; exit 1; }}\n"
                'exec pkg-config "$@"\n')
    os.chmod(fake, 0o755)
    try:
        # without deps: a clear stop that says what to do, not a missing header
        r = make(src, "-j2", "all", f"PKG_CONFIG={fake}")
        assert r.returncode != 0, r.stdout[-2000:]
        assert "make deps" in r.stderr and "No such file" not in r.stderr, r.stderr[-2000:]
        # the README's first command, in one run, in parallel
        r = make(src, "-j2", "deps", "demo", f"PKG_CONFIG={fake}",
                 f"DEPS_INSTALL=sleep 1; touch '{marker}'")
        assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
        for b in ("bin/pcmon", "bin/pcmond"):
            assert os.access(os.path.join(src, b), os.X_OK), b
        # the demo's listing (on stderr here: stdout is not a terminal, as pcmon run says)
        assert "threefn.work_a" in r.stdout + r.stderr, (r.stdout[-2000:], r.stderr[-2000:])
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
