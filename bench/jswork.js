// SPDX-License-Identifier: GPL-2.0-only
// A fixed amount of JavaScript work, for the Node section of the benchmark (bench/bench.py, 13).
//
// usage: node jswork.js UNITS [MAX_WALL_S]
//
// Runs UNITS units of arithmetic, each through a chain of eight JavaScript calls (which
// TurboFan may inline into one another: inline frames then), and prints the CPU and wall
// time the work took as the program measures them (process.cpuUsage(), the process's CPU
// clock: its one JavaScript thread, and V8's helpers while it runs; hrtime):
//   {"units": N, "cpu_s": ..., "wall_s": ...}
// A unit is a fixed number of iterations, never calibrated. With MAX_WALL_S it stops after
// that much wall time and "units" says how many it did. It prints "ready PID" first, for
// sessions that attach to it by pid, after a warm-up that gets its functions optimized.
'use strict';

const UNIT_ITERS = 4000;
let sink = 0;

function leaf() {
  let s = 0;
  for (let i = 0; i < UNIT_ITERS; i++)
    s = (s + (i * i) % 7) | 0;
  return s;
}

// eight levels deep
function level1(x) { return (leaf() + x) | 0; }
function level2(x) { return level1(x + 1) ^ x; }
function level3(x) { return level2(x + 1) ^ x; }
function level4(x) { return level3(x + 1) ^ x; }
function level5(x) { return level4(x + 1) ^ x; }
function level6(x) { return level5(x + 1) ^ x; }
function level7(x) { return level6(x + 1) ^ x; }

function main() {
  const units = Number(process.argv[2] || 1000);
  const maxWall = Number(process.argv[3] || 0);

  for (let i = 0; i < 2000; i++) // warm-up: optimized before the work is timed
    sink ^= level7(i);
  console.log(`ready ${process.pid}`);
  const c0 = process.cpuUsage(), w0 = process.hrtime.bigint();
  const deadline = w0 + BigInt(Math.round(maxWall * 1e9));
  let u = 0;
  while (u < units) {
    if (maxWall > 0 && (u & 15) === 0 && process.hrtime.bigint() > deadline)
      break;
    sink ^= level7(u);
    u++;
  }
  const c = process.cpuUsage(c0), w1 = process.hrtime.bigint();
  console.log(JSON.stringify({ units: u, cpu_s: (c.user + c.system) / 1e6,
                               wall_s: Number(w1 - w0) / 1e9, sink: sink & 0xff }));
}

main();
