// SPDX-License-Identifier: GPL-2.0-only
// A Node workload that measures itself (tests/integration/test_node.py).
//
// Runs random blocks of three functions over a shared leaf for SECONDS: two loops (workA,
// workB) and a recursion 8 deep into a closure that maps an array with
// Array.prototype.map (rec). Each block is timed by the main thread's own CPU time (its
// schedstat), and the whole run by the process's CPU clock (V8's helper threads too, as a
// profiler's samples count them). At the end one JSON line: each function's share of the
// process's CPU time, and its calls.
//
// With --wait FILE it first prints its pid as a JSON line, then waits for FILE to exist before
// it starts (a profiler attached meanwhile sees all of its time).
//
// With --flat the blocks run in the top-level loop itself rather than in a function of their
// own (V8 replaces the loop's code while it runs, and inlines the three into it).
//
// usage: node jsphases.js SECONDS [--wait FILE] [--flat]
'use strict';

const fs = require('fs');

const secs = Number(process.argv[2] || 4);
const waitAt = process.argv.indexOf('--wait');
const flat = process.argv.includes('--flat');
// (JSPHASES_WEIGHTS=workA,workB,rec: the blocks' odds, 0.45,0.35,0.2 by default)
const odds = (process.env.JSPHASES_WEIGHTS || '0.45,0.35,0.2').split(',').map(Number);
const weights = { workA: odds[0], workB: odds[1], rec: odds[2] };
const cpu = { workA: 0, workB: 0, rec: 0 };
const calls = { workA: 0, workB: 0, rec: 0 };
let sink = 0;

function leaf(x) {
	let s = x;
	for (let i = 0; i < 400; i++)
		s = (s * 31 + i) % 1000003;
	return s;
}

function workA(n) {
	let t = 0;
	for (let i = 0; i < n; i++)
		t = (t + leaf(i)) | 0;
	return t;
}

function workB(n) {
	let t = 1;
	for (let i = 0; i < n; i++)
		t = (t ^ leaf(i + 7)) | 0;
	return t;
}

function makeRec() {
	const items = Array.from({ length: 40 }, (_, i) => i);

	return function rec(depth) {
		if (depth > 0)
			return rec(depth - 1) + 1;
		return items.map((x) => leaf(x)).reduce((a, b) => (a + b) | 0, 0);
	};
}
const rec = makeRec();

function usec(d) {
	return d.user + d.system;
}

// The main thread's own time on a CPU, in us (/proc's schedstat, ns): what a block of
// JavaScript costs, without V8's helper threads (a garbage collector's markers, the
// compiler), whose CPU the process's clock would charge to whichever block runs beside
// them, and a profiler to their own threads. The kernel brings a running thread's schedstat
// up to date only at a scheduler tick (4 ms at 250 Hz): read as it is, each block would be
// charged whole ticks, a clock no finer than a 250 Hz sampler (1.2 pp of noise on a share
// over 4 s). process.cpuUsage() (getrusage) brings the calling thread's up to date first.
const schedstat = fs.openSync(`/proc/self/task/${process.pid}/schedstat`, 'r');
const statBuf = Buffer.alloc(128);
function threadUs() {
	process.cpuUsage();
	const n = fs.readSync(schedstat, statBuf, 0, statBuf.length, 0);

	return Number(statBuf.toString('latin1', 0, n).split(' ')[0]) / 1000;
}

// One block of @name, timed: each function has a call site of its own.
function block(name) {
	const t0 = threadUs();
	let r = 0;

	for (let k = 0; k < 16; k++) {
		if (name === 'workA')
			r ^= workA(60);
		else if (name === 'workB')
			r ^= workB(60);
		else
			r ^= rec(8);
	}
	cpu[name] += threadUs() - t0;
	calls[name]++;
	sink ^= r;
}

if (waitAt > 0) {
	const flag = process.argv[waitAt + 1];

	console.log(JSON.stringify({ pid: process.pid }));
	while (!fs.existsSync(flag))
		Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
}

const start = process.cpuUsage();
const t0 = Date.now();
const names = Object.keys(weights);
while (Date.now() - t0 < secs * 1000) {
	let u = Math.random(), name = names[names.length - 1];

	for (const n of names) {
		if (u < weights[n]) {
			name = n;
			break;
		}
		u -= weights[n];
	}
	if (!flat) {
		block(name);
		continue;
	}
	// --flat: the block in this loop itself, which V8 replaces while it runs (on-stack
	// replacement) with code that has the three functions inlined
	const c0 = threadUs();
	let r = 0;

	for (let k = 0; k < 16; k++) {
		if (name === 'workA')
			r ^= workA(60);
		else if (name === 'workB')
			r ^= workB(60);
		else
			r ^= rec(8);
	}
	cpu[name] += threadUs() - c0;
	calls[name]++;
	sink ^= r;
}
// (the process's CPU time: since its start, or with --wait since it was let go, when a
// profiler attached meanwhile starts counting)
const total = usec(process.cpuUsage(start)) + (waitAt > 0 ? 0 : usec(start));
const out = { cpu: {}, calls, total_us: total, sink };
for (const n of names)
	out.cpu[n] = cpu[n] / total;
console.log(JSON.stringify(out));
