#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""OTLP profiles (docs/exports.md): a real run's profile, exported as JSON, encoded by pcmond's
encoder (.output/tools/otlp_encode) and decoded by the real protoc against daemon/fleet's
schema; the decoded samples add up to the listing, function by function."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import ROOT, Daemon, pcmon, pcmon_json, run_tests, workload

ENCODE = os.path.join(ROOT, ".output", "tools", "otlp_encode")
REQUEST = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
FLEET = os.path.join(ROOT, "daemon", "fleet")


def parse_text(text):
    """protoc's text format as nested dicts; every field a list of its values."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
            continue
        m = re.match(r"(\w+) \{$", line)
        if m:
            child = {}
            cur.setdefault(m.group(1), []).append(child)
            stack.append(cur)
            cur = child
            continue
        m = re.match(r"(\w+): (.*)$", line)
        assert m, line
        v = m.group(2)
        if v.startswith('"'):
            v = v[1:-1].encode("latin-1").decode("unicode_escape").encode("latin-1").decode()
        elif re.match(r"-?\d+$", v):
            v = int(v)
        cur.setdefault(m.group(1), []).append(v)
    assert not stack, "unbalanced braces"
    return root


def one(msg, field, default=0):
    return msg.get(field, [default])[0]


def encoded(d, tid, *extra):
    """(export JSON, the OTLP body decoded by protoc) of target @tid."""
    js = os.path.join(d.dir, "export.json")
    pcmon("export", tid, "--format", "json", "-o", js, sock=d.sock, check=0)
    body = subprocess.run([ENCODE, js, *extra], capture_output=True, timeout=60)
    assert body.returncode == 0, body.stderr
    dec = subprocess.run(["protoc", f"--decode={REQUEST}", "-I", FLEET,
                          os.path.join(FLEET, "otlp_profiles.proto")],
                         input=body.stdout, capture_output=True, timeout=60)
    assert dec.returncode == 0, dec.stderr
    import json
    with open(js) as f:
        return json.load(f), body.stdout, parse_text(dec.stdout.decode())


class Dict:
    """The request's dictionary, its indirections followed."""

    def __init__(self, req):
        d = one(req, "dictionary", {})
        self.d = d
        self.strings = d.get("string_table", [])
        for t in ("string_table", "mapping_table", "location_table", "function_table",
                  "attribute_table", "stack_table", "link_table"):
            assert t in d, t
        assert self.strings[0] == "", self.strings[:3]

    def s(self, i):
        return self.strings[i]

    def attrs(self, indices):
        out = {}
        for i in indices:
            a = self.d["attribute_table"][i]
            v = one(a, "value", {})
            key = self.s(one(a, "key_strindex"))
            assert key not in out, key  # keys unique within a sample
            out[key] = self.s(v["string_value_strindex"][0]) if "string_value_strindex" in v \
                else one(v, "int_value")
        return out

    def stack(self, i):
        """[[function name, ...] per location, innermost first], leaf first."""
        out = []
        for li in self.d["stack_table"][i].get("location_indices", []):
            loc = self.d["location_table"][li]
            out.append([self.s(one(self.d["function_table"][one(ln, "function_index")],
                                   "name_strindex")) for ln in loc.get("lines", [])])
        return out


def check_unique(d):
    """The format wants each entry once: no two entries of a table alike."""
    for t in ("string_table", "mapping_table", "location_table", "function_table",
              "attribute_table", "stack_table"):
        seen = [repr(e) for e in d.d[t]]
        assert len(seen) == len(set(seen)), t


def test_otlp_decodes_and_adds_up_to_the_listing():
    d = Daemon().start()
    try:
        listing, _ = pcmon_json("run", "--interval", 1000, "--kernel", "--",
                                workload("crit"), 2, sock=d.sock)
        tid = str(listing["target"]["id"])
        listing = pcmon_json("list", tid, sock=d.sock)[0]
        js, body, req = encoded(d, tid, "otlp-test-host", "1700000000000000000", "2000000000")
        prof = js["profile"]
        samples = [s for s in prof["samples"] if s["count"]]
        # the size: a few bytes per sample, location and function, strings once
        strings = sum(len(f["name"]) + len(f.get("file", "")) for f in prof["functions"])
        bound = 4096 + strings + 64 * (len(samples) + len(prof["locations"]) +
                                      len(prof["functions"]))
        assert 0 < len(body) < bound, (len(body), bound)

        dic = Dict(req)
        check_unique(dic)
        (rp,) = req["resource_profiles"]
        res = {one(a, "key"): one(a["value"][0], "string_value", None) or
               one(a["value"][0], "int_value") for a in rp["resource"][0]["attributes"]}
        assert res["host.name"] == "otlp-test-host", res
        assert res["service.name"] == js["target"]["name"], (res, js["target"])
        assert res["process.pid"] == samples[0]["pid"], res
        (sp,) = rp["scope_profiles"]
        assert one(sp["scope"][0], "name") == "pcmon"
        counts, nanos = sp["profiles"]
        vt = lambda p, f: (dic.s(one(p[f][0], "type_strindex")), dic.s(one(p[f][0], "unit_strindex")))
        assert vt(counts, "sample_type") == ("samples", "count")
        assert vt(nanos, "sample_type") == ("cpu", "nanoseconds")
        assert vt(counts, "period_type") == ("cpu", "nanoseconds")
        assert one(counts, "period") == int(prof["period_ns"]), (counts.get("period"), prof)
        for p in (counts, nanos):
            assert one(p, "time_unix_nano") == 1700000000000000000
            assert one(p, "duration_nano") == 2000000000

        total = sum(one(s, "values") for s in counts["samples"])
        assert total == listing["summary"]["counted"], (total, listing["summary"])
        want_ns = sum(s["ns"] or s["count"] * int(prof["period_ns"]) for s in samples)
        assert sum(one(s, "values") for s in nanos["samples"]) == want_ns
        # the same samples in both, in the same order
        key = lambda s: (one(s, "stack_index"), tuple(s.get("attribute_indices", [])))
        assert [key(s) for s in counts["samples"]] == [key(s) for s in nanos["samples"]]
        assert len(set(key(s) for s in counts["samples"])) == len(counts["samples"])

        # function by function, as go tool pprof counts: flat at the leaf's innermost line,
        # cum once per stack
        flat, cum = {}, {}
        for s in counts["samples"]:
            v = one(s, "values")
            frames = dic.stack(one(s, "stack_index"))
            a = dic.attrs(s["attribute_indices"])
            assert a["pcmon.kind"] == "on-cpu" and a["process.pid"] > 0, a
            assert a["pcmon.target"] == js["target"]["name"], a
            assert "thread.id" in a, a
            flat[frames[0][0]] = flat.get(frames[0][0], 0) + v
            for name in {n for loc in frames for n in loc}:
                cum[name] = cum.get(name, 0) + v
        by = {}
        for p in listing["procedures"]:
            by.setdefault(p["name"], []).append(p)
        compared = 0
        for name, ps in by.items():
            if len(ps) != 1 or name.startswith("+0x") or name not in cum:
                continue
            assert (flat.get(name, 0), cum[name]) == (ps[0]["shallow"], ps[0]["deep"]), \
                (name, flat.get(name), cum[name], ps[0])
            compared += 1
        assert compared >= 5, compared
        for c in listing["summary"]["critical"]:
            if c["count"]:
                assert flat[f"[critical:{c['name']}]"] == c["count"], (c, flat)

        # mappings: the program by its path with its build-id; kernel frames typed so
        maps = dic.d["mapping_table"]
        crit = [m for m in maps[1:] if dic.s(one(m, "filename_strindex")).endswith("/crit")]
        assert len(crit) == 1, [dic.s(one(m, "filename_strindex")) for m in maps]
        bid = dic.attrs(crit[0]["attribute_indices"])["process.executable.build_id.gnu"]
        assert re.match(r"[0-9a-f]{40}$", bid), bid
        assert one(crit[0], "memory_start") < one(crit[0], "memory_limit")
        types = {dic.attrs(l.get("attribute_indices", [])).get("profile.frame.type")
                 for l in dic.d["location_table"][1:]}
        # (kernel frames where a sample was taken in the kernel: crit's clock reads, a few
        # in 2,000 on a quiet machine, none in one busy run)
        assert "native" in types and ("kernel" in types) == (listing["summary"]["kernel_mode"] > 0), \
            (types, listing["summary"]["kernel_mode"])
        lines = [one(ln, "line") for l in dic.d["location_table"] for ln in l.get("lines", [])]
        assert any(lines), "no line numbers"
        files = {dic.s(one(f, "filename_strindex")) for f in dic.d["function_table"]}
        assert any(f.endswith("crit.c") for f in files), files
    finally:
        d.stop()


def test_otlp_real_mode_wall_time_and_kinds():
    d = Daemon().start()
    try:
        listing, _ = pcmon_json("run", "--interval", 1000, "--real", "--",
                                workload("spinsleep"), 2, sock=d.sock)
        tid = str(listing["target"]["id"])
        js, _, req = encoded(d, tid)
        dic = Dict(req)
        counts, nanos = req["resource_profiles"][0]["scope_profiles"][0]["profiles"]
        st = nanos["sample_type"][0]
        assert (dic.s(one(st, "type_strindex")), dic.s(one(st, "unit_strindex"))) == \
            ("wall", "nanoseconds")
        kinds = {}
        for s in nanos["samples"]:
            k = dic.attrs(s["attribute_indices"])["pcmon.kind"]
            kinds[k] = kinds.get(k, 0) + one(s, "values")
        want = {}
        for s in js["profile"]["samples"]:
            if s["count"]:
                want[s["kind"]] = want.get(s["kind"], 0) + \
                    (s["ns"] or s["count"] * int(js["profile"]["period_ns"]))
        assert kinds == want and "blocked" in kinds, (kinds, want)
        # without a window given, the profile's own
        assert one(counts, "time_unix_nano") == int(js["profile"]["start_wall"] * 1e9)
        total = sum(one(s, "values") for s in counts["samples"])
        assert total == js["summary"]["counted"], (total, js["summary"])
    finally:
        d.stop()


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
