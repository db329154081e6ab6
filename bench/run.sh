#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make bench` and `make bench-full` (BENCH_FORM=full), after `make all workloads`: builds
# the benchmark's own workload programs into .output/bench/ and runs the harness,
# bench/bench.py, which prints the table, writes bench/results.json and refreshes the table
# in bench/README.md. Needs root. Exits with the harness's status: 1 when a cell FAILED.
set -euo pipefail

cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "make bench: must run as root (BPF programs, perf events, other processes' /proc)" >&2
	exit 1
fi
for f in bin/pcmon bin/pcmond .output/workloads/threefn .output/workloads/spinsleep .output/workloads/cnt; do
	[ -x "$f" ] || { echo "make bench: $f is missing: run 'make all workloads' first" >&2; exit 1; }
done
# the system's Python (Debian's python3; the harness needs only its standard library, 3.9+)
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=$(command -v python3) || { echo "make bench: python3 is needed (make deps)" >&2; exit 1; }

# Same flags as the test workloads: frame pointers everywhere, so every profiler can walk
# the stacks with frame pointers alone.
CC=${CC:-gcc}
CFLAGS_BENCH="-std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"
mkdir -p .output/bench
for src in bench/*.c; do
	bin=.output/bench/$(basename "$src" .c)
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ] || [ bench/bench.h -nt "$bin" ] || [ tests/workloads/workload.h -nt "$bin" ]; then
		echo "  CC      $bin" >&2
		$CC $CFLAGS_BENCH "$src" -lpthread -o "$bin"
	fi
done

exec "$PYTHON" bench/bench.py "$@"
