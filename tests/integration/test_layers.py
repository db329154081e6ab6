#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The daemon's layers hold (HACKING.md, "The picture"): a file includes headers of its own
layer or of one below, never of one above, and a layer's functions are called only from it
or from above (a header of a layer is where its functions are declared, so an include is
what a call needs)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, run_tests

# from the bottom up; a path's layer is the first whose prefix it has
LAYERS = (
    ("include/", 0),
    ("daemon/core/", 1),
    ("daemon/symbols/", 2),
    ("daemon/pattern/", 3),
    ("daemon/views/", 4),
    ("daemon/instruments/", 5),
    ("daemon/engine/", 6),
    ("daemon/fleet/", 7),
    ("daemon/service/", 8),
    ("cli/", 8),
)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    for prefix, n in LAYERS:
        if path.startswith(prefix):
            return n
    return None


def sources():
    for top in ("include", "daemon", "cli"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def headers():
    """Each header of the tree by its name: include directories are flat (-I per folder)."""
    by_name = {}
    for p in sources():
        if p.endswith(".h"):
            by_name.setdefault(os.path.basename(p), []).append(p)
    return by_name


def read(p):
    with open(os.path.join(ROOT, p)) as f:
        return f.read()


def upward_includes(files=None):
    """What includes a header of a layer above its own: of the tree's files, or of @files
    ({path: text})."""
    by_name, up = headers(), []
    for p, text in (files or {p: None for p in sources()}).items():
        mine = layer_of(p)
        if mine is None:
            continue
        text = read(p) if text is None else text
        for name in INCLUDE.findall(text):
            here = os.path.join(os.path.dirname(p), name)
            found = [here] if os.path.exists(os.path.join(ROOT, here)) else by_name.get(name, [])
            for h in found:  # (generated headers, .skel.h and .pb-c.h, are not in the tree)
                theirs = layer_of(h)
                if theirs is not None and theirs > mine:
                    up.append(f"{p} includes {h}")
    return up


def test_no_include_runs_up_a_layer():
    up = upward_includes()
    assert not up, "a layer includes one above it:\n  " + "\n  ".join(up)


def test_the_check_sees_an_upward_include():
    """The check itself: every layer but the top has a header, and a file of the lowest
    daemon layer that included the engine's would be found."""
    by_name = headers()
    assert "engine.h" in by_name and layer_of(by_name["engine.h"][0]) == 6, by_name.get("engine.h")
    assert "inst.h" in by_name and layer_of(by_name["inst.h"][0]) == 1, by_name.get("inst.h")
    up = upward_includes({"daemon/core/probe.c": '#include "util.h"\n#include "engine.h"\n'})
    assert up == ["daemon/core/probe.c includes daemon/engine/engine.h"], up


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
