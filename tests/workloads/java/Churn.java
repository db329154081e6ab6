// SPDX-License-Identifier: GPL-2.0-only
/*
 * Compiled code that does not stay put (tests/integration/test_java.py, docs/java.md): the
 * main thread alternates blocks of work(), whose call site meets one more receiver class
 * every 250 ms (each a new type profile: its code deoptimized and compiled again), and of
 * other(), a plain loop, and measures each with the JVM's thread CPU clock. Prints their
 * shares as one JSON line.
 *
 * usage: java -cp DIR Churn SECONDS
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class Churn {
	interface Step {
		long apply(long x);
	}

	static final class S0 implements Step { public long apply(long x) { return x * 3 ^ x >>> 1; } }
	static final class S1 implements Step { public long apply(long x) { return x * 5 ^ x >>> 2; } }
	static final class S2 implements Step { public long apply(long x) { return x * 7 ^ x >>> 3; } }
	static final class S3 implements Step { public long apply(long x) { return x * 11 ^ x >>> 4; } }
	static final class S4 implements Step { public long apply(long x) { return x * 13 ^ x >>> 5; } }
	static final class S5 implements Step { public long apply(long x) { return x * 17 ^ x >>> 6; } }
	static final class S6 implements Step { public long apply(long x) { return x * 19 ^ x >>> 7; } }
	static final class S7 implements Step { public long apply(long x) { return x * 23 ^ x >>> 8; } }
	static final class S8 implements Step { public long apply(long x) { return x * 29 ^ x >>> 9; } }
	static final class S9 implements Step { public long apply(long x) { return x * 31 ^ x >>> 10; } }
	static final class S10 implements Step { public long apply(long x) { return x * 37 ^ x >>> 11; } }
	static final class S11 implements Step { public long apply(long x) { return x * 41 ^ x >>> 12; } }

	static final Step[] ALL = { new S0(), new S1(), new S2(), new S3(), new S4(), new S5(), new S6(),
				    new S7(), new S8(), new S9(), new S10(), new S11() };
	static long sink;

	static long work(Step[] steps, int k, int n) {
		long s = 0;
		for (int i = 0; i < n; i++)
			s += steps[i % k].apply(i);
		return s;
	}

	static long other(int n) {
		long s = 0;
		for (int i = 0; i < n; i++)
			s += (s ^ i) * 31 + i;
		return s;
	}

	public static void main(String[] args) {
		ThreadMXBean mx = ManagementFactory.getThreadMXBean();
		long end = System.nanoTime() + (long)(Double.parseDouble(args[0]) * 1e9), next = 0;
		Step[] steps = new Step[ALL.length];
		long[] cpu = new long[2];
		int k = 0;

		while (System.nanoTime() < end) {
			if (k < ALL.length && System.nanoTime() > next) {
				steps[k] = ALL[k];
				k++;
				next = System.nanoTime() + 250000000L;
			}
			long t0 = mx.getCurrentThreadCpuTime();
			sink += work(steps, k, 20000);
			long t1 = mx.getCurrentThreadCpuTime();
			sink += other(20000);
			cpu[0] += t1 - t0;
			cpu[1] += mx.getCurrentThreadCpuTime() - t1;
		}
		System.out.printf("{\"work\": %.4f, \"other\": %.4f, \"sink\": %d}%n",
				  (double)cpu[0] / (cpu[0] + cpu[1]), (double)cpu[1] / (cpu[0] + cpu[1]), sink & 0xff);
	}
}
