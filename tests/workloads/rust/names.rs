// SPDX-License-Identifier: GPL-2.0-only
//! Rust names for the demangler: functions in a module and a method of a generic type,
//! spending 60 and 40 % of the CPU in random order. Prints the shares as measured here
//! (wall time of each piece, on an otherwise idle thread: what std can measure).
use std::time::{Duration, Instant};

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
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut rnd: u64 = 88172645463325252;
    while Instant::now() < end {
        rnd ^= rnd << 13;
        rnd ^= rnd >> 7;
        rnd ^= rnd << 17;
        let t = Instant::now();
        if rnd % 10 < 6 {
            black_box(shapes::area(chunk));
            a += t.elapsed();
        } else {
            black_box(grid.total(chunk));
            b += t.elapsed();
        }
    }
    let all = (a + b).as_secs_f64();
    println!("{{\"area\": {:.5}, \"total\": {:.5}}}", a.as_secs_f64() / all, b.as_secs_f64() / all);
}
