//! ceilings/fma_throughput — FP32 FMA throughput.
//!
//! What it does: each thread runs `CHAINS` independent FMA chains (`x = x * a + b`), `ITERS`
//! rounds of `STEPS` FMAs each, all in registers. Independent chains hide the FMA latency;
//! a machine-filling grid keeps every FP32 lane busy. One f32 per thread is written.
//!
//! Thread mapping: `BLOCKS_PER_SM` blocks of `BLOCK_THREADS` on every SM.
//!
//! Memory traffic: none to speak of.
//!
//! Expected bound: FP32 pipe (2 FLOPs per lane per clock).

pub const BLOCK_THREADS: u32 = 256;
pub const BLOCKS_PER_SM: u32 = 8;
pub const CHAINS: usize = 8;
pub const STEPS: u32 = 8;
/// FLOPs one thread does per round.
pub const FLOPS_PER_THREAD_ITER: u64 = 2 * CHAINS as u64 * STEPS as u64;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{math, thread};

crate::kernel! {
    /// `iters` rounds of `CHAINS x STEPS` FMAs per thread.
    pub unsafe fn ceilings_fma_throughput(
        iters: u32,
        a: f32,
        b: f32,
        out: *mut f32,
    ) {
        let t = thread::index_1d();
        let mut x = [0.0f32; CHAINS];
        for (k, xk) in x.iter_mut().enumerate() {
            *xk = (t as u32).wrapping_add(k as u32) as f32 * 1e-3;
        }
        for _ in 0..iters {
            for _ in 0..STEPS {
                for xk in x.iter_mut() {
                    *xk = math::fma(*xk, a, b);
                }
            }
        }
        let mut s = 0.0;
        for xk in x {
            s += xk;
        }
        // SAFETY: the host allocates one f32 per launched thread.
        unsafe { *out.add(t as usize) = s };
    }
}
