//! ceilings/mma_throughput — BF16 tensor-core throughput through `mma.sync`.
//!
//! What it does: each warp runs `CHAINS` independent accumulator chains of
//! `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` (`d = a·b + d`), `iters` rounds of
//! one mma per chain, all operands in registers. Independent chains hide the mma latency; a
//! machine-filling grid keeps every SM sub-partition's tensor core busy. One f32 per thread
//! (the sum of its accumulators) is written, so no mma can be removed.
//!
//! Thread mapping: `BLOCKS_PER_SM` blocks of `BLOCK_THREADS` on every SM; the A and B
//! fragments are made from the lane index (small bf16 values, never NaN).
//!
//! Memory traffic: none to speak of.
//!
//! Expected bound: the tensor pipe as `mma.sync` can drive it. On Hopper that is well below
//! the datasheet BF16 peak, which only `wgmma` reaches (about 60-65% of it): the ceiling of
//! the `bf16_gemm` mma.sync ladder, not the chip's roof.

pub const BLOCK_THREADS: u32 = 256;
pub const BLOCKS_PER_SM: u32 = 2;
/// Independent accumulator chains per warp (one mma of each per round).
pub const CHAINS: usize = 8;
/// FLOPs of one m16n8k16 mma: 2·16·8·16.
pub const FLOPS_PER_MMA: u64 = 2 * 16 * 8 * 16;
/// FLOPs one warp does per round: `CHAINS` mmas.
pub const FLOPS_PER_WARP_ITER: u64 = FLOPS_PER_MMA * CHAINS as u64;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{mma, thread, warp};

crate::kernel! {
    /// `iters` rounds of `CHAINS` independent m16n8k16 bf16 mmas per warp.
    pub unsafe fn ceilings_mma_throughput(iters: u32, out: *mut f32) {
        let t = thread::index_1d();
        let lane = warp::lane_id();
        // bf16 1.0 is 0x3f80; the low mantissa bits from the lane keep the values distinct
        // and finite.
        let a0 = mma::pair_bf16(0x3f80 | (lane & 7) as u16, 0x3f80 | ((lane >> 3) & 7) as u16);
        let b0 = mma::pair_bf16(0x3c00 | (lane & 15) as u16, 0xbc00 | (lane & 15) as u16);
        let a = [a0, a0 ^ 1, a0 ^ 2, a0 ^ 3];
        let b = [b0, b0 ^ 1];
        let mut c = [[0.0f32; 4]; CHAINS];
        for (j, cj) in c.iter_mut().enumerate() {
            cj[0] = (lane + j as u32) as f32 * 1e-3;
        }
        for _ in 0..iters {
            for cj in c.iter_mut() {
                *cj = mma::mma_m16n8k16_bf16(a, b, *cj);
            }
        }
        let mut s = 0.0;
        for cj in c {
            s += cj[0] + cj[1] + cj[2] + cj[3];
        }
        // SAFETY: the host allocates one f32 per launched thread.
        unsafe { *out.add(t as usize) = s };
    }
}
