#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The command line itself: --help against what the parser accepts, and errors in --json mode."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lib import PCMON, ROOT, Daemon, pcmon, run_tests, workload

NODAEMON = "/nonexistent/pcmond.sock"
GLOBAL = {"--json", "--verbose", "--socket", "--help"}  # "Every command takes ..."


def parser_options():
    """The long options of the commands' option tables (cli/*.c: a row of struct opt begins
    { "name", letter, value,), from which the parser's getopt table is made:
    {--name: takes a value}."""
    opts = {}
    for f in glob.glob(os.path.join(ROOT, "cli", "*.c")):
        rows = re.findall(r'\{ "([a-z-]+)", (?:\'.\'|0), (NULL|"[^"]*"), OPT_', open(f).read())
        opts.update(rows)
    assert len(opts) > 15, opts
    return {"--" + k: v != "NULL" for k, v in opts.items()}


def sample_value(opt, tmp):
    when_file = os.path.join(tmp, "when")
    with open(when_file, "w") as f:
        f.write("main;\n")
    return {"--interval": "1000", "--when": "main", "--when-file": when_file,
            "--critical": "x=main", "--name": "n", "--pid": "1", "--cgroup": "/sys/fs/cgroup",
            "--top": "5", "--unwind": "fp", "--socket": NODAEMON, "--lines": "main",
            "--debuginfod": "", "--cache-dir": tmp, "--count": "main", "--max-probes": "10",
            "--sort": "calls", "--duration": "1", "--node": "main", "--hist-arg": "0",
            "--leg": "1:2", "--hist": "node:1,log", "--track": "all", "--add": "none",
            "--buckets": "4", "--scale": "10", "--base": "0", "--format": "folded",
            "--output": os.path.join(tmp, "out"), "--title": "t", "--delay": "1",
            "--iterations": "1", "--offset": "main", "--bufsiz": "64", "--source-dir": tmp,
            "--by": "comm", "--since": "-1m", "--until": "now", "--slices": "10s",
            "--slice-memory": "64", "--proc": "main", "--svg": os.path.join(tmp, "svg"),
            "--per": "sample", "--alloc-rate": "4096", "--alloc-value": "alloc_space",
            "--alloc-functions": "malloc=je_malloc", "--tail": "1", "--program": "/bin/true"}[opt]


def accepts(cmd, opt, takes_value, tmp):
    """Does `pcmon CMD OPT [VALUE]` get past the option parser? (It fails later: no daemon,
    no target, no command: all fine here.)"""
    args = [cmd, opt] + ([sample_value(opt, tmp)] if takes_value else [])
    r = pcmon(*args, sock=NODAEMON, timeout=20)
    return not re.search(r"is not an option of|unknown option", r.stderr), r


def help_text():
    r = pcmon("--help", check=0)
    assert r.stderr == "", r.stderr
    return r.stdout


def options_in(text):
    """--long options named in a piece of help; -i as --ignore-case, -v as --verbose."""
    found = set(re.findall(r"(--[a-z][a-z-]*)", text))
    if re.search(r"(^|[\s\[|])-i\b", text):
        found.add("--ignore-case")
    if re.search(r"(^|[\s\[|])-v\b", text):
        found.add("--verbose")
    return found


ACCEPTED = {}


def accepted(cmd):
    """The options `pcmon CMD` gets past the parser with (asked once per command)."""
    if cmd not in ACCEPTED:
        tmp = tempfile.mkdtemp()
        ACCEPTED[cmd] = {opt for opt, takes_value in parser_options().items()
                         if opt == "--help" or accepts(cmd, opt, takes_value, tmp)[0]}
    return ACCEPTED[cmd]


def commands():
    text = help_text()
    return re.findall(r"^  pcmon (\w+)", text[:text.index("\nOPTS:")], re.M)


def test_help_lists_what_the_parser_accepts():
    text = help_text()
    parser = parser_options()
    opts_start = text.index("\nOPTS:")
    opts_part = text[opts_start:text.index("\n", text.index("\n", opts_start + 1) + 1)]
    opts_part = text[opts_start:text.index("Every command")]
    common = options_in(text[text.index("Every command"):])
    assert common >= GLOBAL - {"--help"}, common
    # the commands' lines, joined with their continuation lines
    lines = {}
    cur = None
    for line in text[:opts_start].splitlines():
        m = re.match(r"\s+pcmon (\w+)\s(.*)", line)
        if m:
            cur = m.group(1)
            lines[cur] = m.group(2)
        elif cur and line.startswith("      "):
            lines[cur] += " " + line
    assert {"run", "start", "list", "stop", "targets", "status"} <= set(lines), lines.keys()
    tmp = tempfile.mkdtemp()
    bad = []
    for cmd, line in lines.items():
        shown = options_in(line) | common
        if "[OPTS]" in line:
            shown |= options_in(opts_part)
        for opt, takes_value in parser.items():
            if opt == "--help":
                continue
            ok, r = accepts(cmd, opt, takes_value, tmp)
            if ok != (opt in shown):
                bad.append(f"pcmon {cmd} {opt}: parser {'accepts' if ok else 'refuses'} it, "
                           f"--help {'shows' if opt in shown else 'does not show'} it "
                           f"({r.stderr.strip()!r})")
        for opt in shown - set(parser) - {"--help"}:
            bad.append(f"pcmon {cmd}: --help shows {opt}, which the parser does not know")
    assert not bad, "\n".join(bad)


def test_command_help_lists_what_the_parser_accepts():
    """pcmon CMD --help: that command's options, from the same table the parser walks."""
    assert len(commands()) > 15, commands()
    for cmd in commands():
        r = pcmon(cmd, "--help", sock=NODAEMON)
        assert r.returncode == 0 and r.stderr == "", (cmd, r)
        assert r.stdout.startswith(f"usage: pcmon {cmd} "), (cmd, r.stdout)
        assert options_in(r.stdout) == accepted(cmd), (cmd, options_in(r.stdout) ^ accepted(cmd))


COMPLETION = os.path.join(ROOT, ".output", "pcmon.bash-completion")


def test_completion_file_is_pcmons():
    """make writes the installed completion with `pcmon --completion bash`: a stale one (a
    table changed since) would offer other options than the parser takes."""
    r = pcmon("--completion", "bash")
    assert r.returncode == 0 and r.stdout.startswith("# SPDX"), r
    with open(COMPLETION) as f:
        assert f.read() == r.stdout, f"{COMPLETION} is stale: make it again"
    r = pcmon("--completion", "tcsh", check=2)
    assert "bash" in r.stderr, r


def test_bash_completion():
    env = dict(os.environ, PATH=os.path.dirname(PCMON) + ":" + os.environ["PATH"])

    def complete(*words):
        script = (f"source {COMPLETION}; COMP_WORDS=(pcmon {' '.join(words)}); "
                  f"COMP_CWORD={len(words)}; _pcmon; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout.split()

    assert "list" in complete("li") and "flamegraph" in complete("fl")
    assert {"--format", "--output"} <= set(complete("export", "--")), complete("export", "--")
    assert set(complete("export", "--format", "")) == {"folded", "pprof", "json"}
    assert "/etc/hostname" in complete("fl", "-o", "/etc/host")
    assert complete("list", "--when", "") == [] and complete("st", "--") == []  # ambiguous
    # every command's options are those its parser takes
    for cmd in commands():
        assert set(complete(cmd, "--")) == accepted(cmd), (cmd, set(complete(cmd, "--")))
    d = Daemon().start()
    try:
        pcmon("run", "--interval", 5000, "--name", "comptest", "--", workload("threefn"), 0.2,
              sock=d.sock, check=0)
        env["PCMON_SOCKET"] = d.sock
        assert "comptest" in complete("list", "comp")
        assert "comptest" in complete("LIS", "comp")  # a prefix, in any case, as pcmon takes it
    finally:
        d.stop()


def test_help_lists_every_unwind_method():
    """--help shows the methods the engine accepts (the CLI checks no value itself)."""
    text = help_text()
    m = re.search(r"--unwind ([a-z|]+)", text)
    assert m, text
    shown = m.group(1).split("|")
    d = Daemon().start()
    try:
        for method in shown:
            r = pcmon("start", "--unwind", method, sock=d.sock)
            assert r.returncode == 2 and "--unwind" not in r.stderr, (method, r.stderr)
            assert "exactly one of --pid" in r.stderr, r.stderr
        r = pcmon("start", "--unwind", "no-such-method", "--pid", os.getpid(), sock=d.sock)
    finally:
        d.stop()
    assert r.returncode == 2, r
    m = re.search(r"--unwind no-such-method: must be one of ([a-z|]+)$", r.stderr.strip())
    assert m, r.stderr
    accepted = m.group(1).split("|")
    assert sorted(accepted) == sorted(shown), (accepted, shown)
    assert {"fp", "dwarf", "auto"} <= set(shown), shown
    # and the manual page says the same
    man = open(os.path.join(ROOT, "packaging", "pcmon.1")).read().replace("\\-", "-")
    assert f"--unwind {'|'.join(shown)}" in man, shown


def test_manual_page_synopsis_is_the_parsers():
    """Each command's lines of the manual's SYNOPSIS name the options its parser takes (the
    start request's as OPTS, as --help does; the global ones may be left out)."""
    man = open(os.path.join(ROOT, "packaging", "pcmon.1")).read().replace("\\-", "-")
    man = re.sub(r"\\f[BIR]", "", man)
    syn = man[man.index(".SH SYNOPSIS"):man.index(".SH DESCRIPTION")]
    text = help_text()
    opts = options_in(text[text.index("\nOPTS:"):text.index("Every command")])
    seen, bad = set(), []
    for chunk in syn.split(".br\n"):
        names = re.findall(r"^\.B pcmon ([a-z|]+)|^\.B ([a-z]+)$", chunk, re.M)
        names = [n for pair in names for alt in pair if alt for n in alt.split("|")
                 if n in commands()]  # not ".B pcmon" of "pcmon [COMMAND] --help"
        shown = options_in(chunk) | (opts if "[OPTS]" in chunk else set())
        for cmd in names:
            seen.add(cmd)
            if shown - GLOBAL != accepted(cmd) - GLOBAL:
                bad.append(f"{cmd}: {sorted((shown - GLOBAL) ^ (accepted(cmd) - GLOBAL))}")
    assert not bad, "\n".join(bad)
    assert seen >= set(commands()), set(commands()) - seen


def test_manual_page_names_every_option():
    man = open(os.path.join(ROOT, "packaging", "pcmon.1")).read().replace("\\-", "-")
    missing = [o for o in parser_options() if o != "--help" and o not in man]
    assert not missing, missing


def one_json_error(r, status, *words):
    """With --json an error is exactly one JSON object on stdout, and nothing on stderr."""
    where = f"exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}"
    assert r.returncode == status, where
    assert r.stderr == "", where
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(f"stdout is not one JSON document ({e}): {where}")
    assert isinstance(doc, dict) and list(doc) == ["error"], where
    assert isinstance(doc["error"], str) and doc["error"], where
    assert "\n" not in doc["error"] and not re.match(r"pcmon( \w+)?:", doc["error"]), where
    for w in words:
        assert w in doc["error"], (w, where)
    return doc


def test_json_errors_without_a_daemon():
    for args in (("start", "--pid", 1), ("list",), ("list", "1"), ("stop", "1"),
                 ("targets",), ("status",), ("zero", "x"), ("drop", "1")):
        for a in ((args[0], "--json") + args[1:], args + ("--json",)):  # first or last
            one_json_error(pcmon(*a, sock=NODAEMON), 1, "cannot reach pcmond")


def check_usage_errors(cases, sock):
    for args, words in cases:
        one_json_error(pcmon(*args, sock=sock), 2, words)
    # without --json: the same errors are one line on stderr, nothing on stdout
    for args, words in cases:
        plain = [a for a in args if a != "--json"]
        r = pcmon(*plain, sock=sock)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and r.stdout == "" and len(lines) == 1, (plain, r)
        assert lines[0].startswith("pcmon: ") and words in lines[0], (plain, lines)


def test_json_usage_errors():
    """The command line's own errors: no daemon needed to make them."""
    tmp = tempfile.mkdtemp()
    check_usage_errors([
        (("start", "--json", "extra"), "unexpected argument"),
        (("start", "--json", "--pid", "abc"), "--pid abc"),
        (("start", "--pid", "abc", "--json"), "--pid abc"),
        (("start", "--json", "--pid"), "needs a value"),
        (("start", "--json", "--real", "--virtual", "--pid", 1), "exclude"),
        (("list", "--bogus", "--json"), "unknown option"),
        (("list", "--json", "--bogus"), "unknown option"),
        (("list", "--json", "--pid", 1), "not an option of list"),
        (("list", "--json", "--when-file", os.path.join(tmp, "missing")), "--when-file"),
        (("list", "--json", "--lines"), "needs a value"),
        (("profil", "1", "--json", "--scale", "0x8000"), "--offset"),
        (("profil", "1", "--json", "--offset", "main", "--scale", "70000"), "--scale"),
        (("list", "--json", "--top", "-3"), "--top"),
        (("stop", "--json"), "which target"),
        (("run", "--json"), "no command"),
        (("frobnicate", "--json"), "unknown command"),
        (("st", "--json"), "ambiguous"),
    ], NODAEMON)


def test_engine_environment_checked():
    """PCMON_CFI_TABLES sets an engine of the CLI's own: a value that is not a size pcmond
    would take is a usage error saying what to give, before anything runs."""
    for bad in ("abc", "-1", "4097", "64k", "99999999999999999999999"):
        r = pcmon("run", "--", "/bin/true", sock=NODAEMON,
                  env=dict(os.environ, PCMON_CFI_TABLES=bad))
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and r.stdout == "" and len(lines) == 1, (bad, r)
        assert lines[0] == f"pcmon: PCMON_CFI_TABLES={bad}: give the BPF unwind tables' size " \
            "in MiB, 0 (none) to 4096", lines
    r = pcmon("run", "--", "/bin/true", sock=NODAEMON, env=dict(os.environ, PCMON_CFI_TABLES="8"))
    assert r.returncode == 0, r


def test_values_are_checked_by_the_engine():
    """Values are checked once, by the engine (pcmond's or pcmon run's own), which names the
    option as typed; the CLI prints what it says, as a usage error."""
    d = Daemon().start()
    try:
        pid = os.getpid()
        r = pcmon("start", "--pid", pid, "--name", "mine", sock=d.sock)
        assert r.returncode == 0, r
        check_usage_errors([
            (("start", "--json"), "exactly one of --pid"),
            (("start", "--json", "--pid", 1, "--all"), "exactly one of --pid"),
            (("start", "--json", "--pid", 0), "--pid 0: must be a whole number from 1 to"),
            (("start", "--json", "--pid", 99999999), "--pid 99999999: must be"),
            (("start", "--json", "--pid", pid, "--unwind", "nope"), "--unwind nope: must be one of"),
            (("start", "--json", "--pid", pid, "--interval", 0), "--interval 0: must be"),
            (("start", "--json", "--pid", pid, "--interval", 70000000), "--interval 70000000"),
            (("start", "--json", "--pid", pid, "--no-sample"), "no instrument"),
            (("start", "--json", "--pid", pid, "--critical", "noequals"), "NAME=PATTERN"),
            (("list", "--json", "--when", "a->"), "--when: column"),
            (("list", "--json", "--critical", "noequals"), "NAME=PATTERN"),
            (("run", "--json", "--when", "(", "--", "true"), "--when"),
        ], d.sock)
        # a pattern file's error says where in the file
        tmp = tempfile.mkdtemp()
        with open(os.path.join(tmp, "w"), "w") as f:
            f.write("main\n  -> (;\n")
        r = pcmon("list", "--when-file", os.path.join(tmp, "w"), sock=d.sock)
        assert r.returncode == 2 and r.stderr.startswith("pcmon: --when-file: line 2, column"), r
        assert d.alive()
    finally:
        d.stop()
    # `run` stops at the command: a --json after it is the command's own
    r = pcmon("run", "--real", "--virtual", "true", "--json", sock=NODAEMON)
    assert r.returncode == 2 and r.stdout == "" and "exclude" in r.stderr, r


def test_json_errors_from_the_daemon_and_the_engine():
    d = Daemon().start()
    try:
        one_json_error(pcmon("list", "42", "--json", sock=d.sock), 1, "no target")
        one_json_error(pcmon("start", "--json", "--pid", 3999999, sock=d.sock), 1, "no process")
        one_json_error(pcmon("pause", "--json", "1", sock=d.sock), 1, "no target")
        assert d.alive()
    finally:
        d.stop()
    # no daemon, and no BPF for an unprivileged user: the embedded engine cannot start
    r = pcmon("run", "--json", "--", "true", sock=NODAEMON, user="nobody")
    one_json_error(r, 1, "own engine cannot start")


def loaded_objects(cmd, env):
    """What the dynamic loader opened for @cmd (LD_DEBUG=files), and its result."""
    p = subprocess.run(cmd, env=dict(env, LD_DEBUG="files"), capture_output=True, text=True,
                       timeout=60)
    return re.findall(r"file=(\S+)", p.stderr), p


def test_socket_commands_do_not_load_the_engine():
    """A command that only asks pcmond opens no engine library (libbpf, libdw, ...): on a busy
    machine each one mapped at start-up makes the command wait longer for the CPU. `run`
    without a daemon opens pcmon-engine.so."""
    d = Daemon().start()
    try:
        env = dict(os.environ, PCMON_SOCKET=d.sock)
        for args, rc in ((["targets"], 0), (["status"], 0), (["list"], 1)):  # list: no target
            objs, p = loaded_objects([PCMON, *args], env)
            assert p.returncode == rc and "pcmond" not in p.stderr, (args, p.stderr[-2000:])
            heavy = [o for o in objs if re.search(r"pcmon-engine|libbpf|libdw|libelf", o)]
            assert objs and not heavy, (args, heavy)
    finally:
        d.stop()
    objs, p = loaded_objects([PCMON, "run", "--", workload("threefn"), "0.2"],
                             dict(os.environ, PCMON_SOCKET=NODAEMON))
    assert p.returncode == 0, p.stderr[-2000:]
    assert any(o.endswith("/pcmon-engine.so") for o in objs), objs


def test_the_engine_is_found_where_it_is_installed():
    """Beside the executable (the build tree) or in ../lib/pcmon (an installed pcmon, any
    prefix); without it, `run` says what to do in one line, and --help still works."""
    with tempfile.TemporaryDirectory() as tmp:
        alone = os.path.join(tmp, "alone")
        os.makedirs(alone)
        shutil.copy(PCMON, alone)
        env = dict(os.environ, PCMON_SOCKET=NODAEMON)
        cmd = [os.path.join(alone, "pcmon"), "run", "--", workload("threefn"), "0.2"]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and p.stderr.count("\n") == 1, p
        assert "pcmon-engine.so not found" in p.stderr and "reinstall pcmon" in p.stderr, p.stderr
        one_json_error(subprocess.run(cmd[:2] + ["--json"] + cmd[2:], env=env, capture_output=True,
                                      text=True, timeout=60), 1, "pcmon-engine.so not found")
        p = subprocess.run([cmd[0], "--help"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "--unwind" in p.stdout, p
        # another build's engine is refused, not called with this one's structures
        fake = os.path.join(tmp, "fake.c")
        with open(fake, "w") as f:
            f.write('const char engine_version[] = "0.0.0-other"; int log_verbosity;\n'
                    + "".join(f"void {fn}(void) {{}}\n" for fn in (
                        "engine_new", "engine_free", "engine_fd", "engine_work", "engine_handle",
                        "engine_start_field")))
        subprocess.run(["cc", "-shared", "-fPIC", fake, "-o", os.path.join(alone, "pcmon-engine.so")],
                       check=True)
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "pcmon-engine.so is version 0.0.0-other" in p.stderr, p
        # installed: PREFIX/bin/pcmon and PREFIX/lib/pcmon/pcmon-engine.so
        prefix = os.path.join(tmp, "usr")
        os.makedirs(os.path.join(prefix, "bin"))
        os.makedirs(os.path.join(prefix, "lib", "pcmon"))
        shutil.copy(PCMON, os.path.join(prefix, "bin"))
        shutil.copy(os.path.join(ROOT, "bin", "pcmon-engine.so"), os.path.join(prefix, "lib", "pcmon"))
        cmd[0] = os.path.join(prefix, "bin", "pcmon")
        p = subprocess.run(cmd[:2] + ["--json"] + cmd[2:], env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0 and '"work_a"' in p.stdout, p



def test_listing_choices_checked_before_anything_runs():
    """A listing's option that a run uses only at its end is checked as it is read: a wrong
    --by or --sort is refused before the command runs, not after (when its results would be
    gone with the run's own engine)."""
    marker = os.path.join(tempfile.mkdtemp(), "ran")
    for cmd, opt, val in (("run", "--by", "nope"), ("count", "--sort", "size")):
        args = ("main",) if cmd == "count" else ()
        p = pcmon(cmd, opt, val, *args, "--", "touch", marker, sock=NODAEMON)
        assert p.returncode == 2 and f"{opt} {val}: give one of" in p.stderr, (p.returncode, p.stderr)
        assert not os.path.exists(marker), opt

if __name__ == "__main__":
    sys.exit(run_tests(globals()))
