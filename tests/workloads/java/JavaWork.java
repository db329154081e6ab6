// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fixed amount of Java work, for the Java section of the benchmark (bench/bench.py, 12).
 *
 * usage: java -cp DIR JavaWork UNITS [MAX_WALL_S]
 *
 * Runs UNITS units of arithmetic, each through a chain of eight Java calls (which C2 may
 * inline into one another: inline frames then), and prints the CPU and
 * wall time the work took as the JVM measures them (its thread CPU clock, nanoTime):
 *   {"units": N, "cpu_s": ..., "wall_s": ...}
 * A unit is a fixed number of iterations, never calibrated. With MAX_WALL_S it stops after
 * that much wall time and "units" says how many it did. It prints "ready PID" first, for
 * sessions that attach to it by pid, after a warm-up that gets its methods compiled.
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class JavaWork {
	static final int UNIT_ITERS = 4000;
	static long sink;

	static long leaf() {
		long s = 0;
		for (int i = 0; i < UNIT_ITERS; i++)
			s += (long)i * i % 7;
		return s;
	}

	/* eight levels deep */
	static long level1(long x) { return leaf() + x; }
	static long level2(long x) { return level1(x + 1) ^ x; }
	static long level3(long x) { return level2(x + 1) ^ x; }
	static long level4(long x) { return level3(x + 1) ^ x; }
	static long level5(long x) { return level4(x + 1) ^ x; }
	static long level6(long x) { return level5(x + 1) ^ x; }
	static long level7(long x) { return level6(x + 1) ^ x; }

	public static void main(String[] args) {
		long units = args.length > 0 ? Long.parseLong(args[0]) : 1000;
		double maxWall = args.length > 1 ? Double.parseDouble(args[1]) : 0;
		ThreadMXBean mx = ManagementFactory.getThreadMXBean();

		for (int i = 0; i < 2000; i++) /* warm-up: compiled before the work is timed */
			sink += level7(i);
		System.out.println("ready " + ProcessHandle.current().pid());
		System.out.flush();
		long c0 = mx.getCurrentThreadCpuTime(), w0 = System.nanoTime();
		long deadline = w0 + (long)(maxWall * 1e9), u = 0;
		while (u < units) {
			if (maxWall > 0 && (u & 15) == 0 && System.nanoTime() > deadline)
				break;
			sink += level7(u);
			u++;
		}
		long c1 = mx.getCurrentThreadCpuTime(), w1 = System.nanoTime();
		System.out.printf("{\"units\": %d, \"cpu_s\": %.6f, \"wall_s\": %.6f, \"sink\": %d}%n", u,
				  (c1 - c0) / 1e9, (w1 - w0) / 1e9, sink & 0xff);
	}
}
