// SPDX-License-Identifier: GPL-2.0-only
/*
 * A Java workload that measures itself (tests/integration/test_java.py, docs/java.md).
 *
 * For SECONDS, the main thread runs blocks of three methods over a shared leaf, picked at
 * random 3 : 1 : 2: alpha (a plain loop), beta (through an interface) and gamma (through a
 * lambda). Each block is timed with the JVM's own thread CPU clock (ThreadMXBean), so the
 * three shares printed at the end, one JSON line, are what the JVM measured, JIT and all.
 *
 * With --nap, a second thread, "napper", parks in nap() (LockSupport.parkNanos, 1 ms at a
 * time) for as long: with REAL it is charged to nap, its Java caller.
 *
 * usage: java -cp DIR Phases SECONDS [--nap]
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Random;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongUnaryOperator;

public class Phases {
	interface Step {
		long apply(long x);
	}

	static final class Mixer implements Step {
		public long apply(long x) {
			return leaf(x) ^ (x >>> 3);
		}
	}

	static long sink;

	/* the leaf all three share: small enough to be inlined by C2 */
	static long leaf(long x) {
		long h = x * 0x9E3779B97F4A7C15L;
		for (int i = 0; i < 12; i++)
			h = (h ^ (h >>> 29)) * 0xBF58476D1CE4E5B9L + i;
		return h;
	}

	static long alpha(int n) {
		long s = 0;
		for (int i = 0; i < n; i++)
			s += leaf(i);
		return s;
	}

	static long beta(int n, Step step) {
		long s = 0;
		for (int i = 0; i < n; i++)
			s += step.apply(i);
		return s;
	}

	static long gamma(int n, LongUnaryOperator f) {
		long s = 0;
		for (int i = 0; i < n; i++)
			s += f.applyAsLong(i);
		return s;
	}

	static volatile boolean done;

	static void nap() {
		while (!done)
			LockSupport.parkNanos(1000000);
	}

	public static void main(String[] args) throws InterruptedException {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
		ThreadMXBean mx = ManagementFactory.getThreadMXBean();
		Random rnd = new Random(40);
		Step step = new Mixer();
		LongUnaryOperator f = x -> leaf(x) + (x << 1);
		long[] cpu = new long[3];
		long end = System.nanoTime() + (long)(seconds * 1e9);
		int n = 20000;
		Thread napper = null;

		if (args.length > 1 && args[1].equals("--nap")) {
			napper = new Thread(Phases::nap, "napper");
			napper.start();
		}

		while (System.nanoTime() < end) {
			int r = rnd.nextInt(6), which = r < 3 ? 0 : r < 4 ? 1 : 2;
			long t0 = mx.getCurrentThreadCpuTime();

			if (which == 0)
				sink += alpha(n);
			else if (which == 1)
				sink += beta(n, step);
			else
				sink += gamma(n, f);
			cpu[which] += mx.getCurrentThreadCpuTime() - t0;
		}
		done = true;
		if (napper != null)
			napper.join();
		long total = cpu[0] + cpu[1] + cpu[2];
		System.out.printf("{\"alpha\": %.4f, \"beta\": %.4f, \"gamma\": %.4f, \"cpu_ns\": %d, \"sink\": %d}%n",
				  (double)cpu[0] / total, (double)cpu[1] / total, (double)cpu[2] / total,
				  total, sink & 0xff);
	}
}
