//! The TMA ring of v08-v10: tiles of x and W brought into a ring of shared-memory stages by
//! the copy engine, each stage guarded by a *full* and an *empty* mbarrier, multiplied by
//! `wgmma` (sm_90a). The steps differ only in who issues the copies and which tiles a block
//! takes, set by the const parameters of [`dev::body`]:
//! - `CONSUMERS` warpgroups multiply, each its 64 rows of the block's `64·CONSUMERS`×256
//!   tile of y;
//! - `SPECIALIZED`: an extra warpgroup (the first) only issues copies and gives its
//!   registers to the consumers (`setmaxnreg`); otherwise thread 0 of the consumers issues
//!   them between its wgmmas;
//! - `PERSISTENT`: a grid of at most one block per SM walks the tiles in groups of
//!   `GROUP_M` row blocks (a group's x rows and the W columns it sweeps stay in L2);
//!   otherwise one tile per block, (blockIdx.y, blockIdx.x);
//! - `CLUSTER` = 2 (with `PERSISTENT`): clusters of two consecutive blocks in x walk pairs
//!   of neighbouring row blocks: the pair needs the same 256
//!   rows of W, so each block loads 128 of them and the copy engine *multicasts* them into
//!   both blocks' stages; a stage is then empty only when the consumers of both blocks have
//!   released it (each consumer warp arrives on its own and on its peer's empty barrier).
//!
//! The ring, counted in K tiles `j` over all the tiles a block takes: stage `j % STAGES`,
//! round `j / STAGES`. The producer waits until `empty[s]` has completed the round before
//! (parity `(round & 1) ^ 1`: passes at once in round 0), arms `full[s]` with the stage's
//! bytes (`arrive.expect_tx`) and issues the two copies, which complete on `full[s]`. A
//! consumer warpgroup waits on `full[s]` (parity `round & 1`), issues its 4 wgmmas, commits,
//! and once `wgmma.wait_group 1` says the previous stage's wgmmas are done, lane 0 of each of
//! its warps arrives on that stage's `empty` (4·CONSUMERS arrivals complete a round).

use super::wgmma_tile::{self, WG_M};

/// Row blocks per group of the persistent tile order.
pub const GROUP_M: u32 = 8;

/// Threads of a block with `consumers` multiplying warpgroups, plus one if `specialized`.
pub const fn block_threads(consumers: u32, specialized: bool) -> u32 {
    (consumers + specialized as u32) * wgmma_tile::WARPGROUP_THREADS
}

/// Rows of y per block.
pub const fn bm(consumers: u32) -> u32 {
    WG_M * consumers
}

/// The tile (row block, column block) of linear index `l` in the persistent order: groups of
/// `GROUP_M` row blocks (fewer in the last group), column-major inside a group.
pub const fn grouped_tile(l: u32, tiles_m: u32, tiles_n: u32) -> (u32, u32) {
    let per_group = GROUP_M * tiles_n;
    let group = l / per_group;
    let first_m = group * GROUP_M;
    let rows = if tiles_m - first_m < GROUP_M {
        tiles_m - first_m
    } else {
        GROUP_M
    };
    let in_group = l % per_group;
    (first_m + in_group % rows, in_group / rows)
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub(crate) mod dev {
    use super::super::dev::pairs_storable;
    use super::super::wgmma_tile::{self, BK, BN, WG_M, dev::mma_stage, dev::store_tile};
    use super::grouped_tile;
    use crate::gpu::async_copy::shared_addr;
    use crate::gpu::hopper::{
        cluster_ctarank, cluster_sync, fence_mbarrier_init, mbarrier_arrive,
        mbarrier_arrive_cluster, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
        prefetch_tensormap, setmaxnreg_dec, setmaxnreg_inc, tma_load_2d, tma_load_2d_multicast,
        wgmma_commit, wgmma_fence, wgmma_wait,
    };
    use crate::gpu::vector::F32x4;
    use crate::gpu::{shared, sync_threads, thread};
    use crate::tensor_map::TensorMap;

    /// Registers a thread of the producer warpgroup keeps; the consumers take the rest
    /// (40·128 + 232·256 = 64512 of the SM's 65536).
    const PRODUCER_REGS: u32 = 40;
    const CONSUMER_REGS: u32 = 232;

    /// Where things are in shared memory: the stages (1024-byte aligned), then `full[s]`
    /// and `empty[s]`, 8 bytes each.
    #[derive(Clone, Copy)]
    struct Ring<const STAGES: u32> {
        base: u32,
        stage_bytes: u32,
        x_bytes: u32,
    }

    impl<const STAGES: u32> Ring<STAGES> {
        fn stage(self, j: u32) -> u32 {
            self.base + (j % STAGES) * self.stage_bytes
        }
        fn full(self, j: u32) -> u32 {
            self.base + STAGES * self.stage_bytes + 8 * (j % STAGES)
        }
        fn empty(self, j: u32) -> u32 {
            self.full(j) + 8 * STAGES
        }
        fn round_parity(j: u32) -> u32 {
            (j / STAGES) & 1
        }
    }

    /// The tiles this block takes, in order: `(row block, column block)` for i = 0, 1, ...
    /// until `None`. Clusters (persistent only) are consecutive blocks in x and walk *pairs*
    /// of row blocks (one each) in the grouped order, every
    /// block of a cluster the same number of tiles (a row block past M computes zeros and
    /// stores nothing), so that they stay in step.
    #[inline(always)]
    fn tile_of<const PERSISTENT: bool, const CLUSTER: u32>(
        i: u32,
        rank: u32,
        tiles_m: u32,
        tiles_n: u32,
    ) -> Option<(u32, u32)> {
        if PERSISTENT {
            let (unit, units) = (
                thread::block_idx_x() / CLUSTER,
                thread::grid_dim_x() / CLUSTER,
            );
            let groups_m = tiles_m.div_ceil(CLUSTER);
            let l = unit + i * units;
            (l < groups_m * tiles_n).then(|| {
                let (gm, tn) = grouped_tile(l, groups_m, tiles_n);
                (gm * CLUSTER + rank, tn)
            })
        } else {
            (i == 0).then(|| (thread::block_idx_y(), thread::block_idx_x()))
        }
    }

    /// Issue the copies of K tile `kt` of tile `(tm, tn)`, ring position `j`: wait for the
    /// stage to be empty, arm `full`, two TMA copies.
    ///
    /// # Safety
    /// One thread; the maps describe x (M×K, box 64 × bm) and W (N×K, box 64 × 256).
    /// With `CLUSTER` > 1 the W box is `BN / CLUSTER` rows: block `rank` loads its share
    /// and multicasts it to the whole cluster, whose blocks all arm `full` for the whole
    /// stage (their own x and every share of W).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn produce<const STAGES: u32, const CLUSTER: u32>(
        ring: Ring<STAGES>,
        j: u32,
        tm: u32,
        tn: u32,
        kt: u32,
        bm: u32,
        rank: u32,
        xmap: *const TensorMap,
        wmap: *const TensorMap,
    ) {
        let s = ring.stage(j);
        // SAFETY: initialized barriers; the stage holds ring.stage_bytes; the copies fill
        // exactly the bytes armed (TMA counts zero-filled bytes too), with CLUSTER > 1 the
        // W shares of every block of the cluster together.
        unsafe {
            // With clusters the peer's consumers arrive here too; a CTA-scope acquire is
            // enough (no data of theirs is read, only their being done with the stage).
            mbarrier_wait(ring.empty(j), Ring::<STAGES>::round_parity(j) ^ 1);
            mbarrier_arrive_expect_tx(ring.full(j), ring.stage_bytes);
            tma_load_2d(s, xmap.cast(), kt * BK, tm * bm, ring.full(j));
            if CLUSTER > 1 {
                let share = BN / CLUSTER;
                let mask = ((1u32 << CLUSTER) - 1) as u16;
                tma_load_2d_multicast(
                    s + ring.x_bytes + rank * share * BK * 2,
                    wmap.cast(),
                    kt * BK,
                    tn * BN + rank * share,
                    ring.full(j),
                    mask,
                );
            } else {
                tma_load_2d(
                    s + ring.x_bytes,
                    wmap.cast(),
                    kt * BK,
                    tn * BN,
                    ring.full(j),
                );
            }
        }
    }

    /// Release the stage of ring position `j`: lane 0 of the warp arrives on its block's
    /// empty barrier and, with clusters, on every other block's.
    #[inline(always)]
    unsafe fn release<const STAGES: u32, const CLUSTER: u32>(
        ring: Ring<STAGES>,
        j: u32,
        rank: u32,
    ) {
        // SAFETY: forwarded (initialized barriers; the cluster's blocks wait for each other
        // before exiting).
        unsafe {
            mbarrier_arrive(ring.empty(j));
            let mut r = 0;
            while r < CLUSTER {
                if r != rank {
                    mbarrier_arrive_cluster(ring.empty(j), r);
                }
                r += 1;
            }
        }
    }

    /// The whole kernel (module docs).
    ///
    /// # Safety
    /// The maps describe x (M×K) and W (N×K) with boxes 64 × `64·CONSUMERS` and 64 × 256 and
    /// the 128-byte swizzle; y is M×N; block_threads(CONSUMERS, SPECIALIZED) threads,
    /// shared_bytes(bm, STAGES) of dynamic shared memory; grid (ceil(N/256), ceil(M/bm)), or
    /// at most one block per SM in x if PERSISTENT.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body<
        const CONSUMERS: u32,
        const SPECIALIZED: bool,
        const PERSISTENT: bool,
        const CLUSTER: u32,
        const STAGES: u32,
    >(
        m: u32,
        n: u32,
        k: u32,
        xmap: *const TensorMap,
        wmap: *const TensorMap,
        y: *mut u16,
    ) {
        const { assert!((SPECIALIZED || !PERSISTENT) && (CLUSTER == 1 || (SPECIALIZED && PERSISTENT))) };
        let bm = WG_M * CONSUMERS;
        let ring = Ring::<STAGES> {
            base: (shared_addr(shared::dynamic_shared_mem::<F32x4>()) + 1023) & !1023,
            stage_bytes: wgmma_tile::stage_bytes(bm),
            x_bytes: bm * BK * 2,
        };
        let t = thread::thread_idx_x();
        let wg = t / 128;
        let rank = if CLUSTER > 1 { cluster_ctarank() } else { 0 };
        if t == 0 {
            // SAFETY: the barriers lie past the stages, inside the dynamic shared memory.
            unsafe {
                prefetch_tensormap(xmap.cast());
                prefetch_tensormap(wmap.cast());
                for s in 0..STAGES {
                    mbarrier_init(ring.full(s), 1);
                    mbarrier_init(ring.empty(s), 4 * CONSUMERS * CLUSTER);
                }
            }
            fence_mbarrier_init();
        }
        // With clusters, the peer's barriers must be initialized before anything arrives on
        // them or multicasts into its stages.
        if CLUSTER > 1 {
            cluster_sync();
        } else {
            sync_threads();
        }
        let (tiles_m, tiles_n, ktiles) = (m.div_ceil(bm), n.div_ceil(BN), k.div_ceil(BK));

        if SPECIALIZED && wg == 0 {
            setmaxnreg_dec::<PRODUCER_REGS>();
            if t == 0 {
                let mut j = 0;
                let mut i = 0;
                while let Some((tm, tn)) = tile_of::<PERSISTENT, CLUSTER>(i, rank, tiles_m, tiles_n)
                {
                    for kt in 0..ktiles {
                        // SAFETY: thread 0 only; maps as the body's contract.
                        unsafe {
                            produce::<STAGES, CLUSTER>(ring, j, tm, tn, kt, bm, rank, xmap, wmap)
                        };
                        j += 1;
                    }
                    i += 1;
                }
            }
        } else {
            if SPECIALIZED {
                setmaxnreg_inc::<CONSUMER_REGS>();
            }
            // SAFETY: forwarded.
            unsafe {
                consume::<CONSUMERS, SPECIALIZED, PERSISTENT, CLUSTER, STAGES>(
                    ring, m, n, k, rank, xmap, wmap, y,
                )
            };
        }
        // A block of a cluster stays until its peer is done multicasting into it and
        // arriving on its barriers.
        if CLUSTER > 1 {
            cluster_sync();
        }
    }

    /// The consumer warpgroups' part of [`body`] (and the inline producer's, without a
    /// producer warpgroup).
    ///
    /// # Safety
    /// As [`body`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn consume<
        const CONSUMERS: u32,
        const SPECIALIZED: bool,
        const PERSISTENT: bool,
        const CLUSTER: u32,
        const STAGES: u32,
    >(
        ring: Ring<STAGES>,
        m: u32,
        n: u32,
        k: u32,
        rank: u32,
        xmap: *const TensorMap,
        wmap: *const TensorMap,
        y: *mut u16,
    ) {
        let bm = WG_M * CONSUMERS;
        let (tiles_m, tiles_n, ktiles) = (m.div_ceil(bm), n.div_ceil(BN), k.div_ceil(BK));
        let t = thread::thread_idx_x();
        let wg = t / 128;
        let c = if SPECIALIZED { wg - 1 } else { wg };
        let ct = t % 128;
        let lane = t % 32;
        // Without a producer warpgroup, thread 0 fills the ring ahead: STAGES - 1 tiles
        // now, one more each time a stage is released.
        let inline_producer = !SPECIALIZED && t == 0;
        if inline_producer {
            let (tm, tn) = (thread::block_idx_y(), thread::block_idx_x());
            for j in 0..STAGES.min(ktiles) {
                // SAFETY: thread 0; round 0 passes the empty wait at once.
                unsafe { produce::<STAGES, CLUSTER>(ring, j, tm, tn, j, bm, rank, xmap, wmap) };
            }
        }
        let mut j = 0u32;
        let mut i = 0;
        while let Some((tm, tn)) = tile_of::<PERSISTENT, CLUSTER>(i, rank, tiles_m, tiles_n) {
            let mut acc = [0.0f32; wgmma_tile::ACC];
            for kt in 0..ktiles {
                let s = ring.stage(j);
                // SAFETY: initialized barrier.
                unsafe { mbarrier_wait(ring.full(j), Ring::<STAGES>::round_parity(j)) };
                wgmma_fence();
                // SAFETY: the whole warpgroup is here; the stage's bytes have landed (full).
                unsafe { mma_stage(&mut acc, s + c * WG_M * BK * 2, s + ring.x_bytes) };
                wgmma_commit();
                wgmma_wait::<1>();
                if kt > 0 {
                    if lane == 0 {
                        // SAFETY: this warp's wgmmas on stage j - 1 are done.
                        unsafe { release::<STAGES, CLUSTER>(ring, j - 1, rank) };
                    }
                    if inline_producer && kt - 1 + STAGES < ktiles {
                        // SAFETY: thread 0; the stage of j - 1 gets K tile kt - 1 + STAGES.
                        unsafe {
                            produce::<STAGES, CLUSTER>(
                                ring,
                                j - 1 + STAGES,
                                tm,
                                tn,
                                kt - 1 + STAGES,
                                bm,
                                rank,
                                xmap,
                                wmap,
                            )
                        };
                    }
                }
                j += 1;
            }
            wgmma_wait::<0>();
            if lane == 0 && ktiles > 0 {
                // SAFETY: every wgmma of this tile is done.
                unsafe { release::<STAGES, CLUSTER>(ring, j - 1, rank) };
            }
            // SAFETY: store_tile masks against M and N.
            unsafe {
                store_tile(
                    y,
                    m,
                    n,
                    tm * bm + c * WG_M,
                    tn * BN,
                    ct,
                    &acc,
                    pairs_storable(y, n),
                )
            };
            i += 1;
        }
    }
}
