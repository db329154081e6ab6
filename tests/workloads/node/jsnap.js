// SPDX-License-Identifier: GPL-2.0-only
// A Node workload for REAL (tests/integration/test_node.py): its main thread alternates a
// function blocked in Atomics.wait (nap) and a busy loop (spin) for SECONDS, and prints
// nap's share of the thread's wall time since the process started (performance.now()
// counts from then), its milliseconds and those of that wall time, as one JSON line.
//
// usage: node jsnap.js SECONDS
'use strict';

const secs = Number(process.argv[2] || 3);
const cell = new Int32Array(new SharedArrayBuffer(4));
let napMs = 0;
let sink = 0;

function nap(ms) {
	Atomics.wait(cell, 0, 0, ms);
}

function spin(ms) {
	const t = performance.now();
	let s = 0;

	while (performance.now() - t < ms)
		s++;
	return s;
}

const end = performance.now() + secs * 1000;
while (performance.now() < end) {
	const t = performance.now();

	nap(20);
	napMs += performance.now() - t;
	sink += spin(25);
}
const wallMs = performance.now();

console.log(JSON.stringify({ nap: napMs / wallMs, nap_ms: napMs, wall_ms: wallMs, sink }));
