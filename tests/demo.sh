#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make demo`: profile a bundled workload that spends 50/30/20% of its CPU in work_a,
# work_b and work_c, and show what pcmon saw next to what the program measured itself.
set -eu
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
	echo "make demo: pcmon needs root for BPF and perf events: run 'sudo make demo'" >&2
	exit 1
fi
echo "\$ bin/pcmon run --interval 1000 -- .output/workloads/threefn 3"
echo "(the first line is the workload's own measurement of its shares)"
exec bin/pcmon run --interval 1000 -- .output/workloads/threefn 3
