#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The pages say what the tree holds. Every doc (README.md, HACKING.md, docs/*.md,
bench/README.md and the man pages, packaging/*.[1-8]) is read for what can be checked
against the tree, and each claim that is not so fails with the doc file and line:

- files: a path of the tree (`daemon/engine/engine.c`, `tests/...`, a markdown link) that does
  not exist, and a bare source file name (`push.c`, `sample_mark.c`, `.c .h .py .sh .proto`)
  that no tracked file has;
- functions: a `name()` (in a code span or not) that no C, BPF, C++, Rust, shell or Python
  source of the tree defines (as a function or macro; `a.b()`: b), no header under
  /usr/include declares and Python's library does not have (`time.thread_time()`);
- options: a `--option` of pcmon or pcmond that the programs themselves do not take: pcmon's
  from the bash completion its option tables write (`pcmon --completion bash`), by command
  where a span names one; pcmond's from `pcmond --help`, each of them checked to be one its
  getopt table knows.

Which options are pcmon's (the context rules): in a code span or code-block line that starts
with `pcmon CMD` (after `sudo`, `VAR=value`), the command's; one that starts with `pcmond`,
pcmond's; one that starts with any other word (perf, gcc, go tool pprof, ...), none are
checked. A span that is only an option (`--count N`) and an option in prose are checked
against pcmon's and pcmond's together, unless their line names another tool (FOREIGN). The
man pages' inline bold text is read as code spans, their `.B` lines as bare spans.

The example instrument of HACKING.md's walk ("Adding an instrument", `--faults`) does not
exist on purpose: names with "fault" under that heading are left alone. Run it alone with
`python3 tests/integration/test_docs.py` (root only for the runner's environment check).
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import PCMON, PCMOND, ROOT, run_tests

# Tools whose options docs quote beside pcmon's, in prose or as a bare span: a line naming
# one (as a word: not --no-python's python) is not checked for bare options.
FOREIGN = re.compile(r"(?<![\w-])(perf|bpftrace|gcc|clang|pprof|curl|protoc|py-spy|"
                     r"flamegraph\.pl)(?![\w-])")
# A function docs may cite that neither the tree defines nor /usr/include declares: the
# kernel's own (its internals, which BPF programs attach to or mirror).
EXTERNAL_FUNCTIONS = {"__schedule", "synchronize_rcu"}
SOURCE_EXT = (".c", ".h", ".py", ".sh", ".proto", ".cc", ".rs")
# Files of other projects that docs name: pprof's profile description.
EXTERNAL_FILES = {"profile.proto"}


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.exists(os.path.join(ROOT, f))]


def doc_files(files):
    docs = ["README.md", "HACKING.md", "bench/README.md"]
    docs += sorted(f for f in files if re.fullmatch(r"docs/[^/]+\.md", f))
    docs += sorted(f for f in files if re.search(r"(^|/)[^/]+\.[1-8]$", f))  # man pages
    return [d for d in docs if d in files]


# --- what the tree defines ----------------------------------------------------------------

C_DEF = re.compile(r"^(?![\s#/*{}])[\w\s\*]*?\b([A-Za-z_]\w*)\s*\(", re.M)
C_MACRO = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)", re.M)
BPF_DEF = re.compile(r"\b(?:BPF_\w+|SEC\w*)\s*\(\s*([A-Za-z_]\w*)\s*[,)]")
C_FNPTR = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(")
PY_DEF = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.M)
SH_DEF = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?", re.M)
RS_DEF = re.compile(r"\bfn\s+([A-Za-z_]\w*)")


def defined_names(files):
    names = set()
    for f in files:
        if f.startswith("vmlinux/") or not f.endswith((".c", ".h", ".cc", ".py", ".sh", ".rs")):
            continue
        try:
            text = open(os.path.join(ROOT, f), errors="replace").read()
        except OSError:
            continue
        if f.endswith((".c", ".h", ".cc")):
            names.update(C_DEF.findall(text), C_MACRO.findall(text), BPF_DEF.findall(text),
                         C_FNPTR.findall(text))
        elif f.endswith(".py"):
            names.update(PY_DEF.findall(text))
        elif f.endswith(".sh"):
            names.update(SH_DEF.findall(text))
        else:
            names.update(RS_DEF.findall(text))
    return names


def system_declared(names):
    """Those of @names that a header under /usr/include declares as a function or macro."""
    if not names:
        return set()
    alt = "|".join(sorted(map(re.escape, names)))
    p = subprocess.run(["grep", "-rhoE", "--include=*.h",
                        rf"(\b({alt})[[:space:]]*\(|define[[:space:]]+({alt})\b)",
                        "/usr/include"], capture_output=True, text=True)
    found = set()
    for m in p.stdout.splitlines():
        found.update(n for n in re.findall(r"\w+", m) if n in names)
    return found


def python_has(name):
    """mod.fn of Python's own library (time.thread_time)."""
    import importlib
    mod, _, fn = name.rpartition(".")
    try:
        return bool(mod) and hasattr(importlib.import_module(mod), fn)
    except ImportError:
        return False


# --- the programs' options -----------------------------------------------------------------

def pcmon_options():
    """{command: options} from the completion pcmon writes from its option tables; "" holds
    the options taken before a command."""
    text = subprocess.run([PCMON, "--completion", "bash"], check=True, capture_output=True,
                          text=True).stdout
    by = {cmd: set(words.split()) for cmd, words in
          re.findall(r'^\s*([a-z]+)\) words="([^"]*)"', text, re.M)}
    top = re.search(r'compgen -W "\$cmds ([^"]*)"', text)
    assert by and top, text[:2000]
    by[""] = set(top.group(1).split()) | {"--completion"}
    return by


def pcmond_options():
    text = subprocess.run([PCMOND, "--help"], capture_output=True, text=True).stdout
    opts = set()
    for line in text.splitlines():
        m = re.match(r"\s{2}(?:-\w, )?(--[\w-]+)[^,]*(?:, (--[\w-]+))?", line)
        if m:
            opts.update(o for o in m.groups() if o)
    opts.update({"--help", "--version"})
    assert "--state-dir" in opts, text
    # each is one that pcmond's getopt table takes (not merely a line of the help)
    for o in sorted(opts):
        p = subprocess.run([PCMOND, "--config", "/dev/null", "--check-config", o + "=x"],
                           capture_output=True, text=True, timeout=20)
        assert "unrecognized option" not in p.stderr, (o, p.stderr)
    return opts


# --- reading the docs ----------------------------------------------------------------------

OPTION = re.compile(r"(?<![\w\-/.=])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
PATHISH = re.compile(r"(?<![\w/.$~@-])((?:\.{1,2}/)?[A-Za-z0-9_.*-]+(?:/[A-Za-z0-9_.*{}-]+)+/?)")
BARE = re.compile(r"(?<![\w/.-])([A-Za-z_][\w-]*(?:\.bpf)?\.(?:c|h|py|sh|proto|cc|rs))(?![\w/]|\.\w)")
CALL = re.compile(r"(?<![\w$])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)\(\)")
MDLINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]*))?\)")
TOP_DIRS = ("bench", "bpf", "cli", "daemon", "debian", "docs", "include", "packaging",
            "tests", "vmlinux")


def unman(line):
    """A man page line as text: escapes and font changes away."""
    line = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\\(em|\\\(en", "", line)
    return line.replace("\\-", "-").replace("\\e", "\\")


def code_spans(doc, lines):
    """(line number, text, is_code) pieces of a doc: code spans (a span that runs on to the
    next line is one piece, at the line it starts on), code-block lines, and the prose
    between them."""
    out, fenced, para = [], False, []

    def flush():
        if not para:
            return
        text = "\n".join(l for _, l in para)
        starts = [n for n, l in para for _ in range(len(l) + 1)]
        pos = 0
        for k, part in enumerate(text.split("`")):
            if k % 2:
                out.append((starts[pos], part.replace("\n", " "), True))
            else:
                off = pos
                for piece in part.split("\n"):
                    out.append((starts[min(off, len(starts) - 1)], piece, False))
                    off += len(piece) + 1
            pos += len(part) + 1
        para.clear()

    for i, line in enumerate(lines, 1):
        if not doc.endswith(".md"):
            if line.startswith(".\\\""):
                continue
            if re.match(r"\.B[IR]? ", line):  # a line of pcmon's own syntax
                out.append((i, unman(line.split(" ", 1)[1]), True))
                continue
            # inline bold spans are code (a command line, an option), the rest prose
            pos = 0
            for m in re.finditer(r"\\fB(.*?)(?=\\f[RPI]|$)", line):
                out.append((i, unman(line[pos:m.start()]), False))
                out.append((i, unman(m.group(1)), True))
                pos = m.end()
            out.append((i, unman(line[pos:]), False))
            continue
        if line.lstrip().startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced or (line.startswith("    ") and not para):
            out.append((i, line, True))
        elif not line.strip() or line.startswith("|") or line.startswith("#"):
            flush()
            if line.strip():
                para.append((i, line))
                flush()
        else:
            para.append((i, line))
    flush()
    return out


def anchors(path):
    """The anchors GitHub gives a markdown file's headings: lower case, punctuation but
    hyphens and underscores dropped, spaces as hyphens; a repeated one numbered -1, -2."""
    seen, out, fenced = {}, set(), False
    for line in open(path, errors="replace"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if not n else f"{slug}-{n}")
    return out


def heading_of(lines):
    """The markdown heading each line is under."""
    h, out = "", []
    for line in lines:
        if line.startswith("#"):
            h = line
        out.append(h)
    return out


class Checker:
    def __init__(self):
        self.files = tracked()
        self.fileset = set(self.files)
        self.dirs = {os.path.dirname(f) for f in self.files}
        for d in list(self.dirs):
            while d:
                d = os.path.dirname(d)
                self.dirs.add(d)
        self.basenames = {os.path.basename(f) for f in self.files}
        self.docs = doc_files(self.fileset)
        self.problems = []

    def bad(self, doc, line, what):
        self.problems.append(f"{doc}:{line}: {what}")

    # files
    def exists(self, doc, ref):
        ref = ref.rstrip("/.,:;")
        if not ref or ref.startswith(("/", "~", "$", ".output/", "bin/")):
            return True
        cands = [os.path.normpath(ref), os.path.normpath(os.path.join(os.path.dirname(doc), ref))]
        for c in cands:
            if any(ch in c for ch in "*{"):
                pat = re.sub(r"\{([^}]*)\}", lambda m: "@(" + m.group(1).replace(",", "|") + ")", c)
                if glob.glob(os.path.join(ROOT, c)) or glob.glob(os.path.join(ROOT, pat)):
                    return True
                if "{" in c:
                    alts = re.match(r"(.*)\{([^}]*)\}(.*)", c)
                    if all(os.path.exists(os.path.join(ROOT, alts.group(1) + a + alts.group(3)))
                           for a in alts.group(2).split(",")):
                        return True
                continue
            if c in self.fileset or c in self.dirs:
                return True
            if c.startswith("tests/workloads/") and any(c + e in self.fileset for e in (".c", ".py")):
                return True  # a workload, named by its program
        return False

    def check_paths(self, doc, i, text, exempt):
        for m in PATHISH.finditer(text):
            ref = m.group(1)
            first = re.sub(r"^\./", "", ref).split("/")[0]
            if first not in TOP_DIRS and ref.endswith(SOURCE_EXT) and not ref.startswith("."):
                # a header as code includes it (pcmon/critical.h), or the system's (sys/sdt.h)
                if not exempt(ref) and not any(f.endswith("/" + ref) for f in self.files) \
                        and not glob.glob(os.path.join("/usr/include", ref)) \
                        and not glob.glob(os.path.join("/usr/include/*", ref)):  # multiarch
                    self.bad(doc, i, f"no file {ref} in the tree (nor in /usr/include)")
                continue
            if first not in TOP_DIRS:
                continue  # not a path of the tree (a URL's, a system's, a program run, a ratio)
            if exempt(ref) or any(re.search(r"[A-Z]{2,}|^X$|_X\b|N$", c) for c in ref.split("/")):
                continue  # a placeholder: vmlinux/ARCH/, tests/integration/test_X.py, formatN
            if not self.exists(doc, ref):
                self.bad(doc, i, f"no file or directory {ref} in the tree")
        for m in BARE.finditer(text):
            name = m.group(1)
            if exempt(name) or name in self.basenames or name in EXTERNAL_FILES:
                continue
            if len(name.split(".")[0]) == 1:
                continue  # m.c: a WHEN pattern's procedure c of object m
            pre = text[max(0, m.start() - 1):m.start()]
            if pre == "/":
                continue
            self.bad(doc, i, f"no file named {name} in the tree")

    def check_links(self, doc, i, line):
        for m in MDLINK.finditer(line):
            ref, anchor = m.group(1), m.group(2)
            if re.match(r"[a-z]+:", ref):
                continue  # a URL
            # (a bare #anchor: a heading of the same doc)
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), ref) if ref
                                    else os.path.join(ROOT, doc))
            if ref and not os.path.exists(path):
                self.bad(doc, i, f"the link to {ref} leads to no file")
            elif anchor and path.endswith(".md") and anchor not in anchors(path):
                self.bad(doc, i, f"the link to {ref}#{anchor}: {os.path.relpath(path, ROOT)} "
                                 "has no such heading")

    def run(self, extra=()):
        """The problems of every doc, and of @extra: (name, text) of docs not in the tree."""
        defined = defined_names(self.files)
        pcmon_by = pcmon_options()
        pcmon_all = set().union(*pcmon_by.values())
        pcmond = pcmond_options()
        calls = []  # (doc, line, name) not defined in the tree
        docs = [(d, open(os.path.join(ROOT, d), errors="replace").read()) for d in self.docs]
        for doc, text in docs + list(extra):
            lines = text.splitlines()
            heads = heading_of(lines)
            man = not doc.endswith(".md")

            def exempt_for(i):
                if doc == "HACKING.md" and "Adding an instrument" in heads[i - 1]:
                    return lambda s: "fault" in s
                return lambda s: False

            for i, line in enumerate(lines, 1):
                if not man:
                    self.check_links(doc, i, line)
            for i, text, is_code in code_spans(doc, lines):
                exempt = exempt_for(i)
                line = unman(lines[i - 1]) if man else lines[i - 1]
                self.check_paths(doc, i, text, exempt)
                for m in CALL.finditer(text):
                    name = m.group(2)
                    if name not in defined and not exempt(name):
                        calls.append((doc, i, m.group(1) + name))
                self.check_options(doc, i, text, is_code, line, exempt, pcmon_by, pcmon_all,
                                   pcmond)
        names = {c[2].split(".")[-1] for c in calls}
        system = system_declared(names - EXTERNAL_FUNCTIONS) | EXTERNAL_FUNCTIONS
        for doc, i, name in calls:
            if name.split(".")[-1] not in system and not python_has(name):
                self.bad(doc, i, f"{name}() is defined nowhere in the tree (nor in /usr/include)")
        return self.problems

    def check_options(self, doc, i, text, is_code, line, exempt, pcmon_by, pcmon_all, pcmond):
        opts = ["--" + o for o in OPTION.findall(text)]
        if not opts:
            return
        opts = [o for o in opts if not exempt(o)]
        words = re.sub(r"^\s*(\$|#)\s+", "", text).split()
        while words and (words[0] in ("sudo", "env", "exec", "time") or
                         re.fullmatch(r"\w+=\S*", words[0])):
            words.pop(0)
        if is_code and words and not words[0].startswith("-"):
            tool = os.path.basename(words[0])
            if tool == "pcmond":
                known, who = pcmond, "pcmond"
            elif tool == "pcmon":
                cmd = words[1] if len(words) > 1 else ""
                known, who = pcmon_by.get(cmd), f"pcmon {cmd}"
                if known is None:  # a command's abbreviation, or a placeholder
                    known, who = pcmon_all, "pcmon"
                known = known | pcmon_by[""]
            else:
                return  # another tool's command line
            # options after a `--` are the launched command's
            cut = words.index("--") if "--" in words else len(words)
            for o in opts:
                if o not in known and o in words[:cut] or o not in known and o not in words:
                    if o in words[cut:]:
                        continue
                    self.bad(doc, i, f"{who} has no option {o}")
            return
        if FOREIGN.search(line):
            return
        for o in opts:
            if o not in pcmon_all and o not in pcmond:
                self.bad(doc, i, f"neither pcmon nor pcmond has an option {o}")


# A page of false claims, one a line: what the check must say of each (line: message).
FALSE_PAGE = """\
The drain is `daemon/core/drainer.c`.
It calls `sampler_drain_everything()` at once.
Start it with `pcmon start --countt f`, or `pcmond --state-dirr D`.
The exports are in exporter.c.
See [the walk](HACKING.md#no-such-heading).
Run `perf record --call-graph dwarf` and `pcmon list --calls`; `time.thread_time()`.
"""
FALSE_FOUND = [
    "1: no file or directory daemon/core/drainer.c in the tree",
    "2: sampler_drain_everything() is defined nowhere in the tree (nor in /usr/include)",
    "3: pcmon start has no option --countt",
    "3: pcmond has no option --state-dirr",
    "4: no file named exporter.c in the tree",
    "5: the link to HACKING.md#no-such-heading: HACKING.md has no such heading",
]


def test_the_check_finds_false_claims():
    """The check itself: a page of false claims (and of true ones, line 6) is told line by
    line."""
    c = Checker()
    c.docs = []
    problems = c.run(extra=[("selftest.md", FALSE_PAGE)])
    assert sorted(problems) == sorted("selftest.md:" + p for p in FALSE_FOUND), problems


def test_docs_say_what_the_tree_holds():
    problems = Checker().run()
    assert not problems, f"{len(problems)} false claims in the docs:\n" + "\n".join(problems)


if __name__ == "__main__":
    sys.exit(run_tests(globals()))
