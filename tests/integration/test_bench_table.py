#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The benchmark's committed table is one a reader can trust (bench/README.md).

Every cell of the table at the end of bench/README.md was measured or says why it does not
apply (n/a): none FAILED, none was skipped, no section is still waiting to be measured. And
neither the table nor bench/results.json names a path of the machine that ran it (the
tree's own path is written ".", temporary directories "<tmp>"). This checks the files as
committed; `make bench` and `make bench-full` write them, and exit 1 when a cell failed.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, run_tests

README = os.path.join(ROOT, "bench", "README.md")
RESULTS = os.path.join(ROOT, "bench", "results.json")
BEGIN, END = "<!-- BEGIN LATEST TABLE -->", "<!-- END LATEST TABLE -->"

# a cell that is not a measurement nor visibly not applicable
NOT_MEASURED = re.compile(r"failed|skipped|not measured yet", re.I)
# any absolute path in the table: a path is a word after a slash that another follows
ABSOLUTE = re.compile(r"(?<![\w.~<>-])/[\w.+-]+/[^\s'\":,;)\]}>]*")
# a path of the machine that ran it, in results.json (which may quote system paths)
MACHINE = re.compile(r"(?<![\w.~<-])/(?:tmp|var/tmp|work|home|root|run/user|srv|mnt)\b[^\s'\":,;)\]}>]*")


def latest_table():
    with open(README) as f:
        doc = f.read()
    assert BEGIN in doc and END in doc, "bench/README.md has no table between its markers"
    return doc.split(BEGIN, 1)[1].split(END, 1)[0]


def test_table_cells_measured():
    text = latest_table()
    assert text.strip().strip("`").strip(), "bench/README.md's table is empty"
    bad = [l.strip() for l in text.splitlines() if NOT_MEASURED.search(l)]
    assert not bad, (f"{len(bad)} line(s) of bench/README.md's table are not measurements "
                     "(re-run make bench-full, then make bench, and commit the table):\n  "
                     + "\n  ".join(l[:160] for l in bad[:20]))


def test_table_names_no_path():
    text = latest_table()
    bad = [m.group(0) for m in ABSOLUTE.finditer(text)]
    bad += [ROOT] if ROOT in text else []
    assert not bad, f"bench/README.md's table names absolute paths: {sorted(set(bad))[:10]}"


def test_results_name_no_machine_path():
    with open(RESULTS) as f:
        text = f.read()
    bad = [m.group(0) for m in MACHINE.finditer(text)]
    bad += [ROOT] if ROOT in text else []
    assert not bad, f"bench/results.json names paths of the machine that ran it: {sorted(set(bad))[:10]}"


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
