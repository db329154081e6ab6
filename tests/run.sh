#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs every suite: unit tests (ASan/UBSan), a short fuzz of each fuzz target, and the
# integration tests (root, real BPF); with --unit, the unit tests alone (any user, no BPF).
# Ends with one line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
OUT=.output
passed=0 failed=0 skipped=0
failures=() # what failed, named again at the end (a long log may be read from its tail)
FUZZ_SECONDS=${FUZZ_SECONDS:-20}

note() { printf '%s\n' "$*"; }

finish() {
	[ ${#failures[@]} -eq 0 ] || note "failed: ${failures[*]}"
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" -eq 0 ]
	exit
}

# --- unit tests: cmocka prints "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s)"
for t in "$OUT"/tests/test_*; do
	[ -x "$t" ] || continue
	log=$(mktemp)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$t" >"$log" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -1)
	p=${p:-0} f=${f:-0}
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi # crashed, or a sanitizer fired
	passed=$((passed + p)) failed=$((failed + f))
	note "unit $(basename "$t"): $p passed, $f failed"
	[ "$f" -eq 0 ] || { cat "$log"; failures+=("unit:$(basename "$t")"); }
	rm -f "$log"
done
[ "${1:-}" = --unit ] && finish

# --- fuzz targets: a short run each; any crash, leak or timeout fails
for t in "$OUT"/fuzz/fuzz_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	corpus=tests/fuzz/corpus/${name#fuzz_}
	dict=tests/fuzz/${name#fuzz_}.dict
	mkdir -p "$OUT/fuzz-work/$name"
	log=$(mktemp)
	if "$t" -max_total_time="$FUZZ_SECONDS" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1 \
		$( [ -f "$dict" ] && echo "-dict=$dict" ) \
		"$OUT/fuzz-work/$name" $( [ -d "$corpus" ] && echo "$corpus" ) >"$log" 2>&1; then
		passed=$((passed + 1))
		note "fuzz $name: ${FUZZ_SECONDS}s, $(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}') runs, no crash"
	else
		failed=$((failed + 1))
		note "fuzz $name: FAILED"
		failures+=("fuzz:$name")
		tail -40 "$log"
	fi
	rm -f "$log"
done

# --- integration tests (root, real BPF)
for t in tests/integration/test_*.py; do
	log=$(mktemp)
	python3 "$t" 2>&1 | tee "$log" | grep -v '^RESULT'
	read -r _ p f s < <(grep '^RESULT' "$log" | tail -1)
	if [ -z "${p:-}" ]; then p=0 f=1 s=0; note "integration $(basename "$t"): crashed"; fi
	if [ "$f" -gt 0 ]; then
		for n in $(sed -n 's/^FAIL \([^ ]*\).*/\1/p' "$log"); do
			failures+=("$(basename "$t" .py)::$n")
		done
		grep -q '^FAIL ' "$log" || failures+=("$(basename "$t" .py)")
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	rm -f "$log"
	unset p f s
done

finish
