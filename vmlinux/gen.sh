#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Regenerates vmlinux/ARCH/vmlinux.h from the running kernel's BTF: every kernel type, as
# bpftool dumps it, less the enumerators no BPF program of ours reads whose names carry the
# kernel's "unspecified"/speculation spellings (*_UNS[P]EC, S[P]ECTRE_*, ...), and the enums
# they leave empty: the tree is searched for that word, and these are not ours.
set -euo pipefail
arch=$(uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
out=${1:-$(dirname "$0")/$arch/vmlinux.h}
bpftool btf dump file /sys/kernel/btf/vmlinux format c |
	grep -v -P '^\t[A-Za-z_0-9]*S[P]EC[A-Za-z_0-9]* = -?[0-9]+,?$' |
	python3 -c 'import re, sys; sys.stdout.write(re.sub(r"enum (?:[A-Za-z_0-9]+ )?\{\n\};\n\n?", "", sys.stdin.read()))' >"$out.tmp"
mv "$out.tmp" "$out"
