// SPDX-License-Identifier: GPL-2.0-only
//! Rust names for the demangler: functions in a module and a method of a generic type,
//! spending 60 and 40 % of the CPU in random order. Prints the shares as measured here:
//! the thread's CPU time in each piece (clock_gettime(CLOCK_THREAD_CPUTIME_ID), which std
//! does not offer; its wall time would hold the time the thread was preempted, which on a
//! busy machine falls in one piece or the other by chance, and moved a share by 4 pp).
use std::time::{Duration, Instant};

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
}

const CLOCK_THREAD_CPUTIME_ID: i32 = 3;

/// The calling thread's CPU time so far.
fn thread_cpu() -> Duration {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the struct it is given, of the layout declared above.
    unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Keeps the optimizer from folding the loops (std's black_box is not stable in 1.63).
fn black_box<T>(x: T) -> T {
    let v = std::mem::ManuallyDrop::new(x);
    unsafe { std::ptr::read_volatile(&*v as *const T) }
}

mod shapes {
    use super::black_box;

    #[inline(never)]
    pub fn area(iters: u64) -> u64 {
        let mut s = 0u64;
        for i in 0..iters {
            s = black_box(s.wrapping_add(i));
        }
        s
    }

    pub struct Grid<T> {
        pub cell: T,
    }

    impl<T: Copy + Into<u64>> Grid<T> {
        #[inline(never)]
        pub fn total(&self, iters: u64) -> u64 {
            let mut s: u64 = self.cell.into();
            for i in 0..iters {
                s = black_box(s.wrapping_add(i));
            }
            s
        }
    }
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3.0);
    let t0 = Instant::now();
    black_box(shapes::area(1_000_000));
    let chunk = (1_000_000u128 * 200_000 / (t0.elapsed().as_nanos() + 1)) as u64 + 1;
    let grid = shapes::Grid { cell: 7u32 };
    let (mut a, mut b) = (Duration::ZERO, Duration::ZERO);
    // SECS of CPU time, not of the clock: as many samples on a busy machine as on a quiet one
    let end = thread_cpu() + Duration::from_secs_f64(secs);
    let mut rnd: u64 = 88172645463325252;
    while thread_cpu() < end {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        let t = thread_cpu();
        if rnd % 10 < 6 {
            black_box(shapes::area(chunk));
            a += thread_cpu() - t;
        } else {
            black_box(grid.total(chunk));
            b += thread_cpu() - t;
        }
    }
    let all = (a + b).as_secs_f64();
    println!("{{\"area\": {:.5}, \"total\": {:.5}}}", a.as_secs_f64() / all, b.as_secs_f64() / all);
}
