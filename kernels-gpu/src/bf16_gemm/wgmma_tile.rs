//! What the wgmma steps (v07-v10) share: the warpgroup tile (64 rows of y × 256 columns, one
//! `wgmma.m64n256k16` per K16 step, 128 f32 accumulators a thread), the K tile of a stage
//! (64 bf16 = one 128-byte swizzled row), the stage layout, and the device code that issues
//! a stage's wgmmas and stores a warpgroup's tile of y.
//!
//! A stage holds the x tile (`64·WARPGROUPS` rows) then the W tile (`BN` rows), each row 128
//! bytes in the 128-byte swizzle (`gpu::hopper`), each tile starting on a 1024-byte boundary.
//! Warpgroup `g` multiplies x rows `64·g ..` of the stage by all `BN` rows of W.

/// Threads of a warpgroup.
pub const WARPGROUP_THREADS: u32 = 128;
/// Rows of y one warpgroup computes (wgmma's M).
pub const WG_M: u32 = 64;
/// Columns of y per block: wgmma's largest N, so that each byte of x brought on chip feeds
/// 256 columns.
pub const BN: u32 = 256;
/// K per stage: 64 bf16 = 128 bytes, the width of the 128-byte swizzle.
pub const BK: u32 = 64;
/// K of one wgmma.
pub const WGMMA_K: u32 = 16;
/// f32 accumulators per thread: 64·BN / 128.
pub const ACC: usize = (WG_M * BN / WARPGROUP_THREADS) as usize;
/// Rows of x and W need 16-byte steps (TMA strides, `cp.async` chunks): K a multiple of 8.
pub const K_MULTIPLE: u32 = 8;

/// Bytes of one stage for `bm` rows of x: (bm + BN) rows of 128 bytes.
pub const fn stage_bytes(bm: u32) -> u32 {
    (bm + BN) * BK * 2
}

/// Dynamic shared memory of a `stages`-deep ring for `bm` rows of x: the stages, 1024 bytes
/// of slack to align them (the dynamic block is only 16-byte aligned), and 16 bytes per stage
/// for its two mbarriers.
pub const fn shared_bytes(bm: u32, stages: u32) -> u32 {
    stages * stage_bytes(bm) + 1024 + 16 * stages
}

const _: () = assert!(ACC == 128 && BK * 2 == 128);

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub(crate) mod dev {
    use super::super::dev::store_pair;
    use super::{ACC, BK, WG_M, WGMMA_K};
    use crate::gpu::hopper::{smem_desc_sw128, wgmma_m64n256k16_bf16};

    /// The wgmmas of one stage for one warpgroup: 4 K16 steps of `m64n256k16`, A = the
    /// warpgroup's 64 x rows at `.shared` address `a`, B = the 256 W rows at `b` (both
    /// 1024-byte aligned, swizzled); a K16 step advances both descriptors by 32 bytes.
    ///
    /// # Safety
    /// All 128 threads of the warpgroup call it, after `wgmma_fence`; the tiles are complete
    /// and visible to the async proxy.
    #[inline(always)]
    pub unsafe fn mma_stage(acc: &mut [f32; ACC], a: u32, b: u32) {
        unroll!((BK / WGMMA_K) as usize, ks => {
            let off = ks as u32 * WGMMA_K * 2;
            // SAFETY: forwarded from the caller; the descriptors stay inside the tiles.
            unsafe { wgmma_m64n256k16_bf16(acc, smem_desc_sw128(a + off), smem_desc_sw128(b + off)) };
        });
    }

    /// Store a warpgroup's 64×256 tile of y at corner `(r0, c0)`, masked against M and N:
    /// thread `t` (warp `w`, lane `l`) holds `acc[i]` at row `16·w + l/4 + 8·((i%4)/2)`,
    /// column `8·(i/4) + 2·(l%4) + i%2` (see `gpu::hopper`), stored as bf16 pairs.
    ///
    /// # Safety
    /// `y` is M×N; `pairs` only if `pairs_storable(y, n)`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn store_tile(
        y: *mut u16,
        m: u32,
        n: u32,
        r0: u32,
        c0: u32,
        t: u32,
        acc: &[f32; ACC],
        pairs: bool,
    ) {
        let (w, l) = (t / 32, t % 32);
        let row = r0 + 16 * w + l / 4;
        const { assert!(WG_M == 64) };
        // Two unrolled levels (unroll! goes to 16): 8-column groups c = 4·hi + lo.
        unroll!(8, hi => {
            unroll!(4, lo => {
                let c = 4 * hi + lo;
                let col = c0 + 8 * c as u32 + 2 * (l % 4);
                // SAFETY: store_pair masks against M and N; col is even.
                unsafe {
                    store_pair(y, m, n, row, col, acc[4 * c], acc[4 * c + 1], pairs);
                    store_pair(y, m, n, row + 8, col, acc[4 * c + 2], acc[4 * c + 3], pairs);
                }
            });
        });
    }
}
