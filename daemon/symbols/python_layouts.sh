#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Regenerate daemon/symbols/python_layouts.h (docs/python.md): the byte offsets pcmon reads
# CPython 3.8 to 3.13 with, each version's from its own headers. For each include directory
# given (default: pyenv's builds under ~/.pyenv/versions), a small program compiled against
# it prints the fields of python_fields.h with offsetof(); the defines of every version are
# written to stdout. Usage: python_layouts.sh [include/python3.X ...] > python_layouts.h
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -eq 0 ]; then
	for v in 8 9 10 11 12 13; do
		d=$(ls -d "$HOME"/.pyenv/versions/3.$v.*/include/python3.$v 2>/dev/null | tail -n 1)
		[ -n "$d" ] && set -- "$@" "$d"
	done
fi
cat <<HDR
/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where CPython 3.8 to 3.13 keep what pcmon reads (docs/python.md): byte offsets into their
 * structs on x86-64, PY3<minor>_<field>. Written by daemon/symbols/python_layouts.sh from each
 * version's own headers (the fields: python_fields.h); do not edit by hand.
 * tests/unit/pyoffsets_check.c checks them against every version's headers present
 * (\`make unit\`).
 */
#ifndef PCMON_PYTHON_LAYOUTS_H
#define PCMON_PYTHON_LAYOUTS_H
HDR
for inc in "$@"; do
	cat > "$tmp/p.c" <<'PROG'
#include "python_fields.h"
#include <stdio.h>
#define STR2(x) #x
#define STR(x) STR2(x)
#define OFF(n, t, m) printf("#define PY3%d_%s %zu\n", PY_MINOR_VERSION, #n, offsetof(t, m));
#define SIZE(n, t) printf("#define PY3%d_%s %zu\n", PY_MINOR_VERSION, #n, sizeof(t));
#define VAL(n, e) printf("#define PY3%d_%s %ld\n", PY_MINOR_VERSION, #n, (long)(e));
int main(void)
{
	printf("\n/* CPython %s, from its headers */\n", PY_VERSION);
	PY_FIELDS
	return 0;
}
PROG
	"$cc" -std=gnu11 -w -I"$here" -I"$inc" "$tmp/p.c" -o "$tmp/p"
	"$tmp/p"
done
printf '\n#endif\n'
