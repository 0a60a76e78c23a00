//! bf16_gemm/v09_warp_specialized — a producer warpgroup and two consumer warpgroups,
//! registers moved from the one to the others with `setmaxnreg` (sm_90a only).
//!
//! Changed from v08, one idea: specialization. v08's single warpgroup both feeds and
//! multiplies, and while it waits on a stage or stores its tile the tensor pipe has nothing
//! to do. Here warpgroup 0 only issues TMA copies (one thread of it) and drops to 40
//! registers a thread (`setmaxnreg.dec`); warpgroups 1 and 2 each multiply 64 rows of a
//! 128×256 tile of y with 232 registers (`setmaxnreg.inc`: 128 accumulators plus
//! addresses), so two warpgroups' wgmmas interleave in the tensor pipe and x's 128 rows
//! feed each W byte twice as often as in v08. The ring (4 stages of 48 KiB) is `tma_ring`'s.
//!
//! Thread mapping: 384 threads, `.maxntid 384` and one block per SM (the launch bounds make
//! ptxas budget 168 registers at entry, which `setmaxnreg` then redistributes). Consumer `c`
//! (warpgroup c + 1) owns rows `64·c ..` of the block tile, all 256 columns.
//!
//! Memory traffic: per K tile and block (128 + 256)·128 B = 48 KiB from L2 for 4.2 MFLOP:
//! 0.0117 bytes per FLOP, 40% less than v08.
//!
//! Expected bound: the tensor pipe, short of the epilogue (each block stores its tile
//! while no wgmma of its own runs) and of the wave quantization of ceil(M/128)·ceil(N/256)
//! blocks over 132 SMs. The public H100 worklogs put this structure near 80% of cuBLAS.
//! K a multiple of 8; x, W 16-byte aligned.

use super::{tma_ring, wgmma_tile};

/// Multiplying warpgroups; one more issues the copies.
pub const CONSUMERS: u32 = 2;
pub const BLOCK_THREADS: u32 = tma_ring::block_threads(CONSUMERS, true);
pub const BM: u32 = tma_ring::bm(CONSUMERS);
pub const BN: u32 = wgmma_tile::BN;
pub const BK: u32 = wgmma_tile::BK;
pub const STAGES: u32 = 4;
pub const SHARED_BYTES: u32 = wgmma_tile::shared_bytes(BM, STAGES);
pub const K_MULTIPLE: u32 = wgmma_tile::K_MULTIPLE;

crate::kernel! {
    /// v09: a TMA producer warpgroup and two wgmma consumer warpgroups (`setmaxnreg`), a
    /// 128×256 tile of y per block. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn bf16_gemm_v09_warp_specialized(
        m: u32,
        n: u32,
        k: u32,
        x_map: *const crate::tensor_map::TensorMap,
        w_map: *const crate::tensor_map::TensorMap,
        y: *mut u16,
    ) {
        crate::gpu::hopper::launch_bounds::<BLOCK_THREADS, 1>();
        // SAFETY: forwarded; the host encodes the maps with boxes 64×BM and 64×BN and the
        // 128-byte swizzle, and launches this geometry on sm_90a.
        unsafe { tma_ring::dev::body::<CONSUMERS, true, false, 1, STAGES>(m, n, k, x_map, w_map, y) }
    }
}
