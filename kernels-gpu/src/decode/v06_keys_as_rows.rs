//! decode/v06_keys_as_rows — the keys as the rows of the tensor-core tile, the heads as its
//! eight columns, and two blocks an SM.
//!
//! Changed from v05 (same per-warp `cp.async` ring of K-or-V buffers, same splits, same
//! merge and combine): v05 runs at 53-73% of the DRAM roof with one block of 8 warps an SM
//! (its 192 KiB of rings leave room for no second), 13 cycles between a warp's instructions
//! and the SMs at 13% of their issue rate (ncu, H200, 2026-12-03): latency with too few warps,
//! and a GQA group of 4 fills 4 of its 16 mma rows. Here the product is transposed:
//! - Sᵀ = K·qᵀ: a tile is `TILE` = 16 keys, the M of `mma.m16n8k16`; the chunk's `HEADS` = 8
//!   query heads are its N (a group of 4 wastes half the columns instead of three quarters
//!   of the rows, so half v05's mmas a key). K's A fragments come from the swizzled K buffer
//!   by `ldmatrix.x4` (lane `l`: key `l % 16`, chunk `2kk + l / 16`: attention v03's Q
//!   layout); q's B fragments (head `l / 4`, dims `16kk + 2·(l % 4)` and `+8`) are loaded
//!   from global memory once.
//! - The online softmax runs on Sᵀ's C fragments: lane `l` holds keys `l / 4`, `l / 4 + 8`
//!   of heads `2·(l % 4)`, `+1`; a head's max over the tile is three shuffles (lanes 4, 8,
//!   16 apart).
//! - Oᵀ += Vᵀ·Pᵀ: Vᵀ's A fragments (16 dims × 16 keys) from the V buffer by
//!   `ldmatrix.x4.trans` (attention v03's K layout); Pᵀ's B fragments (keys `2·(l % 4)..` of
//!   head `l / 4`) are the transposes of the packed C fragments: one `movmatrix.trans` per
//!   8×8 (four a tile with the family's hi + lo split of the f32 weights), no shared memory.
//! - The smaller tiles halve the ring (96 KiB at D 128): two blocks, 16 warps, an SM, and
//!   the registers are capped for them (`MIN_BLOCKS_*`).
//!
//! Per 16-key tile and warp at D = 128: 8 `ldmatrix` + 8 mmas for Sᵀ, 8 `ldmatrix` + 16
//! mmas for Oᵀ, 4 `movmatrix`, ~40 softmax instructions and 16 copies a lane (v05: twice
//! the mmas per key).
//!
//! Thread mapping: grid (Hkv · chunks, B, splits) with chunks = ⌈(Hq/Hkv)/8⌉, `WARPS`
//! warps a block; warp `w` takes tiles `w, w + WARPS, ..` of the block's slice; lane `l`
//! holds Oᵀ's C fragments (dims `16i + l / 4`, `+8` of heads `2·(l % 4)`, `+1`), finds key
//! `l`'s cache row (lanes below 16), and copies row `l / 2` of each buffer (chunks
//! `2c + l % 2`, v05's copy layout with one row a lane).
//!
//! Memory traffic: the KV bytes the context lengths need, once for groups up to 8; q and
//! out; with splits, `B·Hq·splits·(D + 2)` f32 partials written and read by the combine.
//!
//! Expected bound: DRAM.

use crate::attention::v03_flash_mma::{q_lane, swizzled_byte_offset};

/// v04's pipeline shape (warps a block, buffers a warp's ring) and its splits
/// (`v04_vectorized_pipeline::split_len`, whose lengths are multiples of 32 keys).
pub use super::v04_vectorized_pipeline::{STAGES, THREADS, WARPS};
/// v05's copy layout: lane `l`'s chunk offsets in a buffer row.
pub use super::v05_mma_heads::chunk_offset;
/// Keys a tile: the M of `mma.m16n8k16`.
pub const TILE: u32 = 16;
/// Query heads a block: the N of `mma.m16n8k16`.
pub const HEADS: u32 = 8;
/// Blocks an SM the registers are capped for (`.minnctapersm`): at D 128 the rings leave
/// room for two (128 registers a thread), at D 64 for four, capped at three (85 registers).
pub const MIN_BLOCKS_D64: u32 = 3;
pub const MIN_BLOCKS_D128: u32 = 2;

// A split (a multiple of 32 keys) is whole tiles; one buffer row per lane pair.
const _: () = assert!(TILE == 16 && HEADS == 8 && 32 % TILE == 0);

/// Dynamic shared memory of a block at head dim `d`: the warps' rings of K or V tiles
/// (bf16), reused at the end for the warps' partial rows (f32) and their (m, l).
pub const fn shared_bytes(d: u32) -> u32 {
    let ring = WARPS * STAGES * TILE * d * 2;
    let merge = WARPS * HEADS * (d + 2) * 4;
    if ring > merge { ring } else { merge }
}

/// Blocks an SM holds at head dim `d`: the fewer of what shared memory allows and what
/// the register cap is built for.
pub const fn resident_blocks(d: u32) -> u32 {
    let by_smem = super::v04_vectorized_pipeline::resident_blocks(shared_bytes(d));
    let by_regs = if d == 128 { MIN_BLOCKS_D128 } else { MIN_BLOCKS_D64 };
    if by_smem < by_regs { by_smem } else { by_regs }
}

/// Byte offset in a K buffer of lane `lane`'s `ldmatrix.x4` row for Sᵀ's A fragment at k16
/// step `kk = 4j + i`: this for `i`, plus `128·j` (the swizzle's XOR touches the low 3 bits
/// of the chunk index only). Key `lane % 16`, chunk `2kk + lane / 16`.
pub const fn k_lane_offset(d: u32, lane: u32, i: u32) -> u32 {
    let (r, c) = q_lane(lane, i);
    swizzled_byte_offset(d, r, c)
}

/// Byte offset in a V buffer of lane `lane`'s `ldmatrix.x4.trans` row for Vᵀ's A fragment
/// of dims `16·(4j + i) ..`: this for `i`, plus `128·j`. Matrix `lane / 8` is keys 0-7 or
/// 8-15 (`lane / 16`) × the d-tile's first or second 8 dims (`(lane / 8) % 2`), which the
/// transposing load turns into A's a0 (dims 0-7, keys 0-7), a1 (dims 8-15), a2 (keys 8-15),
/// a3.
pub const fn v_lane_offset(d: u32, lane: u32, i: u32) -> u32 {
    swizzled_byte_offset(d, lane % 8 + (lane / 16) * 8, 2 * i + (lane / 8) % 2)
}

/// The (key in the tile, head in the chunk) of Sᵀ's C-fragment element `e` of lane `lane`;
/// Oᵀ's element `e` of d-tile `i` is (dim `16i` + the key's place, the same head).
pub const fn st_key_head(lane: u32, e: u32) -> (u32, u32) {
    (lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2)
}

/// The keys one block pass covers: `[begin, end)` of sequence `b`'s context, for the query
/// heads of chunk `chunk` of KV head `kvh` (v06/v07: the block's split; v08: one of the
/// block's planned segments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub b: u32,
    pub kvh: u32,
    pub chunk: u32,
    pub begin: u32,
    pub end: u32,
}

/// How [`dev::segment`] brings a tile into its warp's ring (its `COPY`): v06-v08's 16-byte
/// `cp.async` (zero-filled past the slice) ...
pub const COPY_CP_ASYNC: u32 = 0;
/// ... v09's bulk copy of each key's row into padded rows (`v09_bulk_copy`) ...
pub const COPY_BULK_ROWS: u32 = 1;
/// ... or v10's TMA boxes of a page's 16 slots (`v10_tma_pages`); both behind mbarriers.
pub const COPY_TMA_PAGES: u32 = 2;

#[cfg(target_arch = "nvptx64")]
pub(in crate::decode) mod dev {
    use super::*;
    use crate::decode::MergeDest;
    use crate::bf16_gemm::unroll;
    use crate::decode::v05_mma_heads::dev::load_rows;
    use crate::gpu::async_copy::{commit_group, shared_addr, wait_group};
    use crate::gpu::mma::{
        ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16, movmatrix_trans, split_bf16x2,
    };
    use crate::decode::v03_split_k::combine_row;
    use crate::decode::v09_bulk_copy::{self as v09};
    use crate::decode::v10_tma_pages::{self as v10};
    use crate::tensor_map::TensorMap;
    use crate::gpu::vector::F32x4;
    use crate::gpu::{atomic, math, shared, sync_threads, thread, warp};

    /// The kernel body for head dim `D`, `KS = D/16` k16 steps of Sᵀ and d-tiles of Oᵀ,
    /// its split rows left for v03's combine.
    ///
    /// # Safety
    /// As [`body_with`] without `FUSED`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body<const D: usize, const KS: usize>(
        q: *const u16,
        k_cache: *const u16,
        v_cache: *const u16,
        block_table: *const u32,
        context_lens: *const u32,
        out: *mut u16,
        ws_o: *mut f32,
        ws_ml: *mut f32,
        hq: u32,
        hkv: u32,
        page_size: u32,
        max_pages: u32,
        scale: f32,
        split_len: u32,
    ) {
        // SAFETY: forwarded.
        unsafe {
            body_with::<D, KS, false>(
                q, k_cache, v_cache, block_table, context_lens, out, ws_o, ws_ml, hq, hkv,
                page_size, max_pages, scale, split_len, core::ptr::null_mut(),
            )
        }
    }

    /// [`body`], and with `FUSED` (v07) the combine too: with several splits, the last
    /// block of each (sequence, KV head, chunk) to finish — a ticket from `counters` — merges
    /// the splits' rows of its heads into `out`, one warp a head (v03's `combine_row`), and
    /// sets the counter back to 0.
    ///
    /// # Safety
    /// The buffers have decode's shapes (`super::super`); every block-table entry a context
    /// needs is `< num_pages`, every length is in `1..=max_pages·page_size` and cache rows
    /// (`num_pages·page_size·Hkv`) fit in u32 (host-checked); the launch is grid
    /// (Hkv·chunks, B, splits) with chunks = ⌈(Hq/Hkv)/HEADS⌉, `THREADS` threads and
    /// `shared_bytes(D)` of dynamic shared memory; with `splits > 1` the workspace holds
    /// `B·Hq·splits` rows of D f32 and as many (m, l) pairs, and `split_len` (a multiple of
    /// `TILE`) times `splits` covers the longest context. With `FUSED` and `splits > 1`,
    /// `counters` holds `B·gridDim.x` u32, all 0 (each launch leaves them 0).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body_with<const D: usize, const KS: usize, const FUSED: bool>(
        q: *const u16,
        k_cache: *const u16,
        v_cache: *const u16,
        block_table: *const u32,
        context_lens: *const u32,
        out: *mut u16,
        ws_o: *mut f32,
        ws_ml: *mut f32,
        hq: u32,
        hkv: u32,
        page_size: u32,
        max_pages: u32,
        scale: f32,
        split_len: u32,
        counters: *mut u32,
    ) {
        let group = hq / hkv;
        let chunks = thread::grid_dim_x() / hkv;
        let (kvh, chunk) = (thread::block_idx_x() / chunks, thread::block_idx_x() % chunks);
        let b = thread::block_idx_y();
        let (z, splits) = (thread::block_idx_z(), thread::grid_dim_z());
        // SAFETY: the caller's contract: b < B, the block's slice inside its context, the
        // workspace rows of `of_splits` inside `B·Hq·splits`, the counters inside `B·gridDim.x`.
        unsafe {
            let len = *context_lens.add(b as usize);
            let begin = (z as u64 * split_len as u64).min(len as u64) as u32;
            let end = (begin as u64 + split_len as u64).min(len as u64) as u32;
            let seg = Segment { b, kvh, chunk, begin, end };
            let dest = MergeDest::of_splits(b, hq, kvh * group + chunk * HEADS, z, splits);
            segment::<D, KS, false, COPY_CP_ASYNC>(
                q, k_cache, v_cache, block_table.add(b as usize * max_pages as usize), out,
                ws_o, ws_ml, hq, hkv, page_size, scale, seg, dest, 0, 0, [core::ptr::null(); 2],
                core::ptr::null_mut(),
            );
            if FUSED && splits > 1 {
                let c = counters.add((b * thread::grid_dim_x() + thread::block_idx_x()) as usize);
                if last_to_arrive(c, splits) {
                    let hi = chunk * HEADS + thread::thread_idx_x() / 32;
                    if hi < group {
                        let row = b * hq + kvh * group + hi;
                        combine_row(ws_o, ws_ml, out, row, splits, D as u32);
                    }
                }
            }
        }
    }

    /// After a block's partial rows are written: whether it is the last of the `arrivals`
    /// blocks that share the counter `c` (CUDA's threadFenceReduction pattern: every thread
    /// fences its rows, thread 0 takes a ticket, and the block whose ticket is the last one
    /// reads the other blocks' rows after a fence). The last block sets `c` back to 0.
    ///
    /// # Safety
    /// Every thread of the block calls it with the same `c`, a u32 that exactly `arrivals`
    /// blocks of this launch tick once each, and it was 0 before the first of them; the
    /// block's shared memory past its first word is no longer read (word 0 is overwritten).
    #[inline(always)]
    pub unsafe fn last_to_arrive(c: *mut u32, arrivals: u32) -> bool {
        let flag = shared::dynamic_shared_mem::<u32>();
        // SAFETY: the caller's contract.
        unsafe {
            atomic::fence_gpu();
            sync_threads();
            if thread::thread_idx_x() == 0 {
                let last = atomic::fetch_add_u32(c, 1) == arrivals - 1;
                if last {
                    // Every block has arrived: nothing else touches it in this launch.
                    atomic::store_u32(c, 0);
                }
                *flag = last as u32;
            }
            sync_threads();
            let last = *flag != 0;
            if last {
                atomic::fence_gpu();
            }
            last
        }
    }

    /// One block's pass over `seg`: the keys `[seg.begin, seg.end)` of sequence `seg.b`
    /// (`table` is its block-table row) for the query heads of chunk `seg.chunk` of KV head
    /// `seg.kvh`, merged across warps into `dest` (v06's whole loop: the per-warp rings, Sᵀ,
    /// the online softmax, Oᵀ, then [`merge_warps`](super::super::merge_warps)); with
    /// `PREFETCH` (v08) each tile's block-table entries are read a tile ahead. `COPY` says
    /// how the tiles come ([`COPY_CP_ASYNC`] …): with the bulk copies (v09) or TMA (v10, the
    /// cache's tensor maps in `maps`, K then V) each buffer is guarded by its mbarrier of
    /// the warp's `bars`, `pos` being the warp's place in its ring (returned advanced past
    /// this segment; 0 with `cp.async`). Ends with every thread past the merge; the shared
    /// memory may be reused after a barrier (with the mbarrier forms, after each thread's
    /// `fence.proxy.async`). A non-null `first_data` (v08-v11's `--timeline` stamp, passed to
    /// thread 0 only) that still holds 0 gets the GPU clock when warp 0's first buffer is in.
    ///
    /// # Safety
    /// As [`body_with`] for the buffers and the block; `seg.begin < seg.end` within the
    /// sequence's context, `seg.begin` a multiple of `TILE` (the slice is whole tiles but
    /// the context's last); the workspace holds the rows `dest` names. With the mbarrier
    /// forms: sm_90a, the step's `shared_bytes(D)`, `bars` the warp's initialized barriers
    /// and `pos` the value the warp's previous segment returned (0 at first); with TMA, the
    /// page size a multiple of 16 and `maps` the caches' maps.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn segment<const D: usize, const KS: usize, const PREFETCH: bool, const COPY: u32>(
        q: *const u16,
        k_cache: *const u16,
        v_cache: *const u16,
        table: *const u32,
        out: *mut u16,
        ws_o: *mut f32,
        ws_ml: *mut f32,
        hq: u32,
        hkv: u32,
        page_size: u32,
        scale: f32,
        seg: Segment,
        dest: MergeDest,
        bars: u32,
        pos: u32,
        maps: [*const TensorMap; 2],
        first_data: *mut u64,
    ) -> u32 {
        const { assert!(D == 16 * KS && D.is_multiple_of(64) && KS <= 16) };
        // v10's page slots come from the prefetched lookup (`slot_from`) only.
        const { assert!(COPY != COPY_TMA_PAGES || PREFETCH) };
        let (bulk, tma) = (COPY == COPY_BULK_ROWS, COPY == COPY_TMA_PAGES);
        let mbar = bulk || tma;
        let d = D as u32;
        let tile_bytes = if bulk { v09::tile_bytes(d) } else { TILE * d * 2 };
        // ldmatrix's step from one 64-dim quarter of the k16 steps to the next: 8 chunks of
        // a row, or (v10) the next swizzled sub-tile.
        let jstride = if tma { v10::SUB_TILE_BYTES } else { 128 };
        let t = thread::thread_idx_x();
        let (w, lane) = (t / 32, warp::lane_id());
        let (g, tq) = (lane / 4, lane % 4);
        let group = hq / hkv;
        let Segment { b, kvh, chunk, begin, end } = seg;
        let sl = scale * core::f32::consts::LOG2_E;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned.
        let base = shared::dynamic_shared_mem::<F32x4>();
        let sm = shared_addr(base);
        // SAFETY: (whole body) global reads are q rows (b, head < Hq) and cache rows of
        // pages the table names for keys < the context length (past it, copies of 0 bytes
        // that zero-fill); shared accesses stay in `shared_bytes(D)`: warp w's ring, then
        // (after the barrier that ends every warp's loop) the merge area; every thread
        // reaches both barriers and every warp-wide instruction (the branches around them
        // are warp-uniform).
        unsafe {
            // qᵀ's B fragments (PTX ISA, m16n8k16 B: b0 = k 2t, 2t+1 of column g, b1 = k
            // 2t+8, 2t+9): head g of the chunk, raw bf16 pairs; heads past the group stay
            // zero (their scores are 0, their rows dropped by the merge).
            let h0 = chunk * HEADS;
            let mut qf = [[0u32; 2]; KS];
            if h0 + g < group {
                let row = q.add((b * hq + kvh * group + h0 + g) as usize * D);
                unroll!(KS, kk => {
                    unroll!(2, i => {
                        qf[kk][i] = *(row.add(16 * kk + 2 * tq as usize + 8 * i) as *const u32);
                    });
                });
            }

            let ring = if tma { v10::rings_at(sm) } else { sm } + w * STAGES * tile_bytes;
            // Warp w's tiles: w, w + WARPS, .. of [begin, end); its chunks K0, V0, K1, V1, ..
            let tiles = (end - begin).div_ceil(TILE);
            let mine = if w < tiles { (tiles - w).div_ceil(WARPS) } else { 0 };
            let start_of = |i: u32| begin + (w + i * WARPS) * TILE;
            // Lane l (< 16)'s key of the tile starting at `j0`: its cache row (u32::MAX past
            // the slice, and for lanes 16-31).
            // (v09: keys past the slice take its last key's row, a bulk copy cannot zero-fill.)
            let key = |j0: u32| if bulk { (j0 + lane).min(end - 1) } else { j0 + lane };
            let slot_of = |j0: u32| {
                let j = key(j0);
                if lane < TILE && j < end {
                    let page = *table.add((j / page_size) as usize) as u64;
                    ((page * page_size as u64 + (j % page_size) as u64) * hkv as u64
                        + kvh as u64) as u32
                } else {
                    u32::MAX
                }
            };
            // With PREFETCH (v08): the same lookup in two halves, the block-table entry (and
            // the key's place in its page; u32::MAX past the slice) read one tile before the
            // copies that need it, so its global latency is not on the warp's path.
            let lookup = |j0: u32| {
                let j = key(j0);
                if lane < TILE && j < end {
                    let q = j / page_size;
                    (*table.add(q as usize), j - q * page_size)
                } else {
                    (0, u32::MAX)
                }
            };
            // (v10: the key's page slot, the third coordinate of the cache's tensor map.)
            let slot_from = |(page, off): (u32, u32)| {
                if off == u32::MAX {
                    u32::MAX
                } else if tma {
                    page * page_size + off
                } else {
                    ((page as u64 * page_size as u64 + off as u64) * hkv as u64 + kvh as u64) as u32
                }
            };
            // The entry of the next tile whose K chunk is to be issued.
            let mut pre = (0u32, u32::MAX);
            if PREFETCH {
                pre = lookup(start_of(0));
            }
            // Copies: a lane pair per row (v05's layout), 16 rows an instruction: lane l
            // copies row l/2, whose cache row the lane that looked it up passes by shuffle.
            let coff: [u32; 4] = core::array::from_fn(|i| chunk_offset(lane, i as u32));
            let rows_of = |slot: u32| [warp::shfl_idx_u32(slot, lane / 2)];
            let cache_of = |c: u32| if c.is_multiple_of(2) { k_cache } else { v_cache };
            let map_of = |c: u32| if c.is_multiple_of(2) { maps[0] } else { maps[1] };
            // v09: chunk c's buffer and barrier (the warp's fill `pos + c`).
            let buf_of = |c: u32| ring + ((pos + c) % STAGES) * tile_bytes;
            let bar_of = |c: u32| bars + 8 * ((pos + c) % STAGES);

            let chunks_mine = 2 * mine;
            // The slot of the tile whose K chunk was issued last (its V chunk follows).
            let mut slot = 0u32;
            for c in 0..STAGES - 1 {
                if c < chunks_mine && c.is_multiple_of(2) {
                    if PREFETCH {
                        slot = slot_from(pre);
                        pre = lookup(start_of(c / 2 + 1));
                    } else {
                        slot = slot_of(start_of(c / 2));
                    }
                }
                if bulk || tma {
                    if c < chunks_mine && bulk {
                        v09::bulk::fill::<D>(cache_of(c), buf_of(c), bar_of(c), slot, lane);
                    } else if c < chunks_mine {
                        v10::tma::fill::<D>(map_of(c), buf_of(c), bar_of(c), slot, kvh, lane);
                    }
                } else {
                    let rows = rows_of(slot);
                    if c < chunks_mine {
                        load_rows::<D, 1>(cache_of(c), ring + c * tile_bytes, rows, lane, coff);
                    }
                    commit_group();
                }
            }

            let klo: [u32; 4] = core::array::from_fn(|i| match () {
                _ if bulk => v09::k_lane_offset(d, lane, i as u32),
                _ if tma => v10::k_lane_offset(lane, i as u32),
                _ => k_lane_offset(d, lane, i as u32),
            });
            let vlo: [u32; 4] = core::array::from_fn(|i| match () {
                _ if bulk => v09::v_lane_offset(d, lane, i as u32),
                _ if tma => v10::v_lane_offset(lane, i as u32),
                _ => v_lane_offset(d, lane, i as u32),
            });
            // Oᵀ: d-tile i, the lane's dims 16i + g, +8 of heads 2tq, 2tq + 1.
            let mut acc = [[0.0f32; 4]; KS];
            // Running max (raw scores) and per-lane partial sums of heads 2tq, 2tq + 1.
            let mut m = [f32::NEG_INFINITY; 2];
            let mut l = [0.0f32; 2];
            // The last K tile's weights as Pᵀ's B fragments, bf16 hi then lo, for its V tile.
            let mut pb = [[0u32; 2]; 2];
            for c in 0..chunks_mine {
                let next = c + STAGES - 1;
                if next < chunks_mine && next.is_multiple_of(2) {
                    if PREFETCH {
                        slot = slot_from(pre);
                        pre = lookup(start_of(next / 2 + 1));
                    } else {
                        slot = slot_of(start_of(next / 2));
                    }
                }
                let buf = if mbar {
                    if next < chunks_mine && bulk {
                        v09::bulk::fill::<D>(cache_of(next), buf_of(next), bar_of(next), slot, lane);
                    } else if next < chunks_mine {
                        v10::tma::fill::<D>(map_of(next), buf_of(next), bar_of(next), slot, kvh, lane);
                    }
                    v09::bulk::wait(bar_of(c), (pos + c) / STAGES);
                    // v10: a partial tile's box brought the page's slots past the slice;
                    // their V rows are zeroed (their scores are masked below).
                    let j0 = start_of(c / 2);
                    if tma && !c.is_multiple_of(2) && j0 + TILE > end {
                        v10::tma::zero_rows::<D>(buf_of(c), end - j0, lane);
                    }
                    // The lanes leave their waits together for the warp-wide ldmatrix.
                    warp::sync();
                    buf_of(c)
                } else {
                    let rows = rows_of(slot);
                    if next < chunks_mine {
                        let dst = ring + (next % STAGES) * tile_bytes;
                        load_rows::<D, 1>(cache_of(next), dst, rows, lane, coff);
                    }
                    commit_group();
                    wait_group::<{ STAGES - 1 }>();
                    warp::sync();
                    ring + (c % STAGES) * tile_bytes
                };
                // --timeline: when the block's first tile was in (its first segment's).
                if c == 0 && !first_data.is_null() && *first_data == 0 {
                    *first_data = thread::global_timer_ns();
                }

                if c.is_multiple_of(2) {
                    // Sᵀ = K·qᵀ for the tile's 16 keys and the chunk's 8 heads, the even and
                    // odd k16 steps into separate accumulators (chains of D/32 mmas).
                    let mut s = [0.0f32; 4];
                    let mut s_odd = [0.0f32; 4];
                    unroll!(KS, kk => {
                        let ka = ldmatrix_x4(buf + klo[kk % 4] + jstride * (kk / 4) as u32);
                        if kk.is_multiple_of(2) {
                            s = mma_m16n8k16_bf16(ka, qf[kk], s);
                        } else {
                            s_odd = mma_m16n8k16_bf16(ka, qf[kk], s_odd);
                        }
                    });
                    unroll!(4, e => {
                        s[e] += s_odd[e];
                    });
                    // Keys past the slice (its last tile only; zero-filled rows).
                    let j0 = start_of(c / 2);
                    if j0 + TILE > end {
                        unroll!(4, e => {
                            if j0 + st_key_head(lane, e as u32).0 >= end {
                                s[e] = f32::NEG_INFINITY;
                            }
                        });
                    }
                    // Online softmax per head (column): the max over the lane's two keys,
                    // then over the 8 lanes of the same column pair. Key j0 is inside the
                    // slice, so every head's max is finite (heads past the group score 0).
                    let mut mx = [0.0f32; 2];
                    let mut corr = [0.0f32; 2];
                    let mut msc = [0.0f32; 2];
                    unroll!(2, h => {
                        mx[h] = math::max(m[h], math::max(s[h], s[h + 2]));
                        mx[h] = math::max(mx[h], warp::shfl_xor_f32(mx[h], 4));
                        mx[h] = math::max(mx[h], warp::shfl_xor_f32(mx[h], 8));
                        mx[h] = math::max(mx[h], warp::shfl_xor_f32(mx[h], 16));
                        msc[h] = mx[h] * sl;
                        corr[h] = math::exp2(m[h] * sl - msc[h]);
                        m[h] = mx[h];
                    });
                    let mut p = [0.0f32; 4];
                    unroll!(4, e => {
                        p[e] = math::exp2(math::fma(s[e], sl, -msc[e % 2]));
                    });
                    unroll!(2, h => {
                        l[h] = math::fma(l[h], corr[h], p[h] + p[h + 2]);
                    });
                    // The output rows need rescaling only when a max moved.
                    if warp::any(corr[0] != 1.0 || corr[1] != 1.0) {
                        unroll!(KS, i => {
                            unroll!(4, e => {
                                acc[i][e] *= corr[e % 2];
                            });
                        });
                    }
                    // Pᵀ's B fragments: keys 0-7 (p0, p1) and 8-15 (p2, p3) of the lane's
                    // head pair, packed and transposed to keys 2tq.. of head g.
                    let (hi0, lo0) = split_bf16x2(p[0], p[1]);
                    let (hi1, lo1) = split_bf16x2(p[2], p[3]);
                    pb = [
                        [movmatrix_trans(hi0), movmatrix_trans(hi1)],
                        [movmatrix_trans(lo0), movmatrix_trans(lo1)],
                    ];
                } else {
                    // Oᵀ += Vᵀ·Pᵀ, one d-tile of 16 dims an ldmatrix, hi and lo weights.
                    unroll!(KS, i => {
                        let va = ldmatrix_x4_trans(buf + vlo[i % 4] + jstride * (i / 4) as u32);
                        acc[i] = mma_m16n8k16_bf16(va, pb[0], acc[i]);
                        acc[i] = mma_m16n8k16_bf16(va, pb[1], acc[i]);
                    });
                }
                // Every lane is done with this buffer before it is refilled.
                warp::sync();
            }
            if !mbar {
                wait_group::<0>();
            }

            // The warps' partial rows into the merge area (over the rings, after every
            // warp's loop): acc [w][head][D] f32, then (m in the log2 domain, l) [w][head].
            sync_threads();
            let mo = base as *mut f32;
            let ml = mo.add((WARPS * HEADS) as usize * D);
            let hw = (w * HEADS) as usize;
            unroll!(KS, i => {
                unroll!(4, e => {
                    let (dim, head) = st_key_head(lane, e as u32);
                    *mo.add((hw + head as usize) * D + 16 * i + dim as usize) = acc[i][e];
                });
            });
            unroll!(2, h => {
                l[h] += warp::shfl_xor_f32(l[h], 4);
                l[h] += warp::shfl_xor_f32(l[h], 8);
                l[h] += warp::shfl_xor_f32(l[h], 16);
                if g == 0 {
                    let at = 2 * (hw + (2 * tq) as usize + h);
                    *ml.add(at) = m[h] * sl;
                    *ml.add(at + 1) = l[h];
                }
            });
            sync_threads();
            super::super::merge_warps::<D, { HEADS as usize }, { WARPS as usize }>(
                mo, ml, out, ws_o, ws_ml, hq, group, kvh, chunk, b, dest,
            );
            if mbar { pos + chunks_mine } else { 0 }
        }
    }
}

super::pipeline_entry! { /// v06 at head dim 64.
    decode_v06_keys_as_rows_d64 => dev::body<64, 4>, launch_bounds(THREADS, MIN_BLOCKS_D64) }
super::pipeline_entry! { /// v06 at head dim 128.
    decode_v06_keys_as_rows_d128 => dev::body<128, 8>, launch_bounds(THREADS, MIN_BLOCKS_D128) }
