//! reduce/v01_atomic — one global atomic add per element.
//!
//! The baseline: thread `i` does `atomicAdd(out, x[i])` (`red.global.add.f32`). The reads
//! coalesce, but every add lands on the same 4-byte address, and the L2's atomic unit
//! serializes them: the kernel runs at the rate of same-address atomics, not of DRAM.
//! The sum is a running f32 sum in arbitrary order, so it is neither reproducible nor, for
//! long inputs, accurate (once the total is large, each small addend loses its low bits).
//!
//! Thread mapping: one element per thread, `BLOCK_THREADS` per block.
//!
//! Memory traffic: the minimum read; 4 bytes of atomic traffic per element to one L2 line.
//!
//! Expected bound: same-address atomic throughput (far below DRAM). That is also why the
//! tree versions that follow write per-block partials instead of adding them atomically:
//! at 2^28, even one atomic per 256 elements (2^20 on one address) takes about 2 ms.

/// Threads per block.
pub const BLOCK_THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{atomic, thread};

crate::kernel! {
    /// `*out += Σ x[i]` (the host zeroes `*out` first).
    pub unsafe fn reduce_v01_atomic(x: *const f32, n: u64, out: *mut f32) {
        let i = thread::index_1d();
        if i < n {
            // SAFETY: i < n, the length of `x`; `out` is one valid, aligned f32.
            unsafe { atomic::add_f32(out, *x.add(i as usize)) };
        }
    }
}
