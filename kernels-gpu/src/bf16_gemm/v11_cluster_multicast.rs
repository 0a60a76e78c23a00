//! bf16_gemm/v11_cluster_multicast — v10 in clusters of two blocks that share their W tile
//! through TMA multicast (sm_90a only).
//!
//! Changed from v10, one idea: fewer bytes from L2. A v10 block brings 48 KiB per K tile
//! into its SM (16 KiB of x, 32 KiB of W) for 4.2 MFLOP, 0.0117 bytes per FLOP: at 700
//! TFLOP/s that is 8 TB/s out of L2 for the whole chip, at the edge of what L2 delivers
//! (the L2 ceiling measures ~6.7 TB/s). Two blocks on neighbouring row blocks need the same
//! 256 rows of W; launched as a cluster of two (`.reqnctapercluster 2`), each loads 128 of
//! those rows and the copy engine writes them into *both* blocks' stages
//! (`.multicast::cluster`), so a block fetches 32 KiB per K tile instead of 48 (a third
//! less). The price: a stage is free only when both blocks' consumers are done with it (each
//! consumer warp also arrives on its peer's empty barrier, `mapa` + a remote
//! arrive), so the pair runs in step; the blocks start and end with a cluster barrier
//! (barriers initialized before the peer uses them; nobody exits while the peer may still
//! write into it).
//!
//! Thread mapping: as v10 (384 threads: a producer warpgroup, two consumer warpgroups of
//! 64×256), persistent: the grid is as many clusters as fit at once (the host asks the
//! driver, `cuOccupancyMaxActiveClusters`; a cluster's two blocks share a GPC), each cluster
//! walking pairs of row blocks × a column block in the grouped order.
//!
//! Memory traffic: L2 → SM 32 KiB per K tile and block, 0.0078 bytes per FLOP.
//!
//! Expected bound: the tensor pipe, less the epilogue and the lockstep of the pair.
//! K a multiple of 8; x, W 16-byte aligned.

use super::{tma_ring, wgmma_tile};

pub const CONSUMERS: u32 = 2;
/// Blocks per cluster (along M), sharing each W tile.
pub const CLUSTER: u32 = 2;
pub const BLOCK_THREADS: u32 = tma_ring::block_threads(CONSUMERS, true);
pub const BM: u32 = tma_ring::bm(CONSUMERS);
pub const BN: u32 = wgmma_tile::BN;
pub const BK: u32 = wgmma_tile::BK;
pub const STAGES: u32 = 4;
pub const SHARED_BYTES: u32 = wgmma_tile::shared_bytes(BM, STAGES);
pub const K_MULTIPLE: u32 = wgmma_tile::K_MULTIPLE;

crate::kernel! {
    /// v11: v10 in clusters of two along M, each W tile loaded half by each block and
    /// multicast to both. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn bf16_gemm_v11_cluster_multicast(
        m: u32,
        n: u32,
        k: u32,
        x_map: *const crate::tensor_map::TensorMap,
        w_map: *const crate::tensor_map::TensorMap,
        y: *mut u16,
    ) {
        crate::gpu::hopper::launch_bounds::<BLOCK_THREADS, 1>();
        crate::gpu::hopper::cluster_dims::<CLUSTER>();
        // SAFETY: forwarded; the host encodes the maps with boxes 64×BM and 64×(BN/CLUSTER)
        // and the 128-byte swizzle, and launches a whole number of clusters in x on sm_90a.
        unsafe { tma_ring::dev::body::<CONSUMERS, true, true, CLUSTER, STAGES>(m, n, k, x_map, w_map, y) }
    }
}
