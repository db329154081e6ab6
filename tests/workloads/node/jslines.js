// SPDX-License-Identifier: GPL-2.0-only
// A Node workload for lines (tests/integration/test_node.py): `lined` runs two loops, each
// on a line of its own, and times each by the main thread's own CPU time (its schedstat: no
// helper thread's; brought up to date by process.cpuUsage() first, as jsphases.js says), loops
// long enough (milliseconds) that the clock's own reads are nothing beside them; at the end
// one JSON line with each loop's line and its share of lined's time.
//
// usage: node jslines.js SECONDS
'use strict';

const secs = Number(process.argv[2] || 3);
const spent = [0, 0];
let sink = 0;

const fs = require('fs');
const schedstat = fs.openSync(`/proc/self/task/${process.pid}/schedstat`, 'r');
const statBuf = Buffer.alloc(128);
function threadNs() {
	process.cpuUsage();
	const n = fs.readSync(schedstat, statBuf, 0, statBuf.length, 0);

	return Number(statBuf.toString('latin1', 0, n).split(' ')[0]);
}

function lined(n) {
	let s = 0, t = threadNs();
	for (let i = 0; i < 2 * n; i++) s = (s * 31 + i) % 1000003; // LOOP1
	spent[0] += threadNs() - t;
	t = threadNs();
	for (let i = 0; i < n; i++) s = (s * 17 + i) % 999983; // LOOP2
	spent[1] += threadNs() - t;
	return s;
}

const end = Date.now() + secs * 1000;
while (Date.now() < end)
	sink += lined(400000);
const src = fs.readFileSync(__filename, 'utf8').split('\n');
const line = (tag) => src.findIndex((l) => l.includes(tag + '\n') || l.endsWith(tag)) + 1;
const total = spent[0] + spent[1];
console.log(JSON.stringify({ lines: { [line('// LOOP1')]: spent[0] / total,
	[line('// LOOP2')]: spent[1] / total }, sink }));
