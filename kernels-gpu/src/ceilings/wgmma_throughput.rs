//! ceilings/wgmma_throughput — BF16 tensor-core throughput through `wgmma` (sm_90a only): the
//! chip's BF16 roof, measured.
//!
//! What it does: every warpgroup of a block issues `iters` rounds of the 4 K16 steps of
//! `wgmma.m64n256k16` (as the bf16_gemm wgmma steps do per stage), A and B the same 64×64 and
//! 256×64 bf16 tiles in shared memory (128-byte swizzle), keeping one round in flight while
//! it issues the next. Nothing is loaded in the loop: the tensor pipe is the only thing
//! working. One f32 per thread (the sum of its accumulators) is written, so no wgmma can be
//! removed.
//!
//! Thread mapping: one block per SM of `WARPGROUPS` warpgroups; the tiles are filled by all
//! threads with small bf16 values made from the element index (never NaN or zero).
//!
//! Memory traffic: none to speak of.
//!
//! Expected bound: the BF16 tensor pipe itself (datasheet dense BF16: 989 TFLOP/s at the
//! H200's boost clock; less at the clock the run holds under this load).

use crate::bf16_gemm::wgmma_tile::{self, BK, BN, WG_M};

/// Warpgroups per block (their wgmmas interleave in the tensor pipe).
pub const WARPGROUPS: u32 = 2;
pub const BLOCK_THREADS: u32 = WARPGROUPS * wgmma_tile::WARPGROUP_THREADS;
pub const BLOCKS_PER_SM: u32 = 1;
/// FLOPs one warpgroup does per round: 4 wgmmas of 2·64·256·16.
pub const FLOPS_PER_WARPGROUP_ITER: u64 = (BK / wgmma_tile::WGMMA_K) as u64 * 2 * 64 * 256 * 16;
/// Dynamic shared memory: one 64-row A tile and one 256-row B tile, plus alignment slack.
pub const SHARED_BYTES: u32 = (WG_M + BN) * BK * 2 + 1024;

crate::kernel! {
    /// `iters` rounds of 4 `wgmma.m64n256k16` per warpgroup on tiles resident in shared
    /// memory. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn ceilings_wgmma_throughput(iters: u32, out: *mut f32) {
        use crate::bf16_gemm::wgmma_tile::dev::mma_stage;
        use crate::gpu::async_copy::shared_addr;
        use crate::gpu::hopper::{fence_proxy_async_shared, wgmma_commit, wgmma_fence, wgmma_wait};
        use crate::gpu::{shared, sync_threads, thread};
        let base = (shared_addr(shared::dynamic_shared_mem::<crate::gpu::vector::F32x4>()) + 1023) & !1023;
        let t = thread::thread_idx_x();
        // Fill both tiles (layout irrelevant: any bf16 values do): 0x3f80 is 1.0, the low
        // mantissa bits vary.
        let words = (WG_M + BN) * BK / 2;
        let mut i = t;
        while i < words {
            let v = 0x3f80_3f80u32 | (i & 0x007f_007f);
            // SAFETY: word i of the two tiles, inside the dynamic shared memory.
            unsafe { core::arch::asm!("st.shared.u32 [{0}], {1};", in(reg32) base + 4 * i, in(reg32) v) };
            i += BLOCK_THREADS;
        }
        fence_proxy_async_shared();
        sync_threads();
        let mut acc = [0.0f32; wgmma_tile::ACC];
        for _ in 0..iters {
            wgmma_fence();
            // SAFETY: the whole warpgroup is here; the tiles are written and visible to
            // the async proxy.
            unsafe { mma_stage(&mut acc, base, base + WG_M * BK * 2) };
            wgmma_commit();
            wgmma_wait::<1>();
        }
        wgmma_wait::<0>();
        let mut s = 0.0;
        for a in acc {
            s += a;
        }
        // SAFETY: the host allocates one f32 per launched thread.
        unsafe { *out.add(thread::index_1d() as usize) = s };
    }
}
