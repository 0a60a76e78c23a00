//! decode/v08_stream_k — the batch's keys packed into one wave of blocks, whatever the
//! sequences' lengths (stream-K), on v07's body.
//!
//! Changed from v07 (the same per-block pass, the same last-block combine): v04-v07 cut
//! every context into splits of one length and launch (sequence, KV head, chunk, split)
//! blocks, about two per resident block slot: blocks as uneven as the contexts, and a
//! second wave that drains while SMs go idle. Here the host plans the launch once per step
//! (the block table and lengths are the step's metadata, reused by every layer, as
//! FlashInfer's `plan`; `PagedKv::stream_plan`):
//! - the work is the (sequence, KV head, chunk) pairs' tiles of `TILE` keys laid end to
//!   end, packed into at most as many blocks as the GPU holds at once, each of a cost of at
//!   most `C` (the smallest whose packing fits): a block's cost is its segments' tiles in
//!   whole rounds of its warps plus `SEGMENT_COST_TILES` a segment, so a block of many short
//!   pairs takes fewer tiles; a pair of at most `MIN_TILES_PER_BLOCK` tiles is never cut, a
//!   longer one fills what is left of the open block and then blocks of its own;
//! - a block's range crosses pairs: each piece (a segment) is one v06 pass (rings, Sᵀ,
//!   online softmax, Oᵀ, merge across warps); a pair inside one block writes `out`
//!   directly, a pair cut across `n` blocks leaves `n` partial rows a head, and the last of
//!   those blocks (a ticket from the pair's counter, as v07) merges them;
//! - each warp reads the block-table entries of its next tile one tile ahead (`segment`'s
//!   `PREFETCH`), so that global load is off its path;
//! - the plan is one u32 buffer ([`plan_len`]): per pair its first tile, first partial
//!   group, first block and block count; per block its first tile and first pair.
//!
//! Measured (H100, 2026-12-07, chapter 11): a few points over v07 where contexts are long
//! (batch 1 × L 32768 61.9 → 66.3% of the roof), up to 2× slower where they are short (a
//! block then runs many short pairs one after another); one wave did not lift DRAM past
//! ~62% busy at batch 1: the warps wait on the MIO queue, not on the tail.
//!
//! Thread mapping: grid (blocks of the plan, 1, 1) of `THREADS` threads; within a segment
//! v06's (warp `w` takes the segment's tiles `w, w + WARPS, ..`); in a pair's last block warp
//! `w` merges head `8·chunk + w` ([`combine_range`], `COMBINE_UNROLL` rows in flight).
//!
//! Memory traffic: v07's (the KV bytes once for groups up to 8, q and out), with partial
//! rows only for pairs cut across blocks: at most `(pairs + blocks)·8·(D + 2)` f32 written
//! and read once, and the plan (`5·pairs + 2·blocks` u32).
//!
//! Expected bound: DRAM.

pub use super::v06_keys_as_rows::{HEADS, MIN_BLOCKS_D128, THREADS, TILE, WARPS, shared_bytes};

/// Blocks an SM the registers are capped for at D 64: two (128 registers), not v06's three
/// (80): the segment loop's state spilled 8 bytes (24 on sm_80) under that cap.
pub const MIN_BLOCKS_D64: u32 = 2;

/// Blocks an SM holds at head dim `d`: v06's shared memory, this step's register caps.
pub const fn resident_blocks(d: u32) -> u32 {
    resident_blocks_with(shared_bytes(d), d)
}

/// Blocks an SM holds for a block of `shared` bytes at head dim `d` under this step's
/// register caps (v09 and v10 keep the caps and bring their own shared memory).
pub const fn resident_blocks_with(shared: u32, d: u32) -> u32 {
    let by_smem = super::v04_vectorized_pipeline::resident_blocks(shared);
    let by_regs = if d == 128 { MIN_BLOCKS_D128 } else { MIN_BLOCKS_D64 };
    if by_smem < by_regs { by_smem } else { by_regs }
}

/// Tiles a block takes at least, and the longest pair never cut: 512 keys, v04-v07's
/// shortest split (shorter ranges spend more on the rings' fill and the partial rows than
/// on keys).
pub const MIN_TILES_PER_BLOCK: u32 = 32;
/// What a segment costs a block beyond its tiles, in tiles, when the host packs the plan
/// (each segment fills its rings from DRAM and drains them, then merges across warps): two
/// rounds of the block's warps. Measured (H100, 2026-12-07 21:10, v10,
/// `docs/runs/2026-12-07-h100-2110-decode-plan.txt`): packed by tiles alone, 83.5% of the
/// roof at batch 64 × L 4096 and 55.3% at L 1024; charging 0 / 8 / 16 tiles a segment,
/// 86.3 / 89.6 / 91.4% and 60.3 / 71.5 / 76.6%; batch 1 × L 32768 (one segment a block)
/// within the runs' spread. 16 since 2026-12-08 (8 before): with it the decode GPU
/// tests pass (H100, 00:55; `docs/runs/2026-12-08-h100-0102-decode-seg16.txt`) and v10 reads
/// 89.6% at batch 64 × L 4096 and 77.0% at L 1024.
pub const SEGMENT_COST_TILES: u32 = 2 * WARPS;
/// Partial rows a pair's last block reads at once per head.
pub const COMBINE_UNROLL: usize = 8;

/// The bench's `--timeline`: with a non-null `stamps` (zeroed) the kernel writes, per block
/// `g`, `STAMP_WORDS` u64 at `stamps[STAMP_WORDS·g ..]`: the GPU clock (ns) when its thread
/// 0 starts, when warp 0 has its first tile, when its last segment's merge is done, when
/// the whole block is done (after a pair's combine, if it was the pair's last block), and
/// its SM. Null (every other launch) costs a few branches per block.
pub const STAMP_WORDS: usize = 5;
pub const STAMP_START: usize = 0;
pub const STAMP_FIRST_DATA: usize = 1;
pub const STAMP_TILES_DONE: usize = 2;
pub const STAMP_END: usize = 3;
pub const STAMP_SM: usize = 4;

// One warp merges one head of a chunk.
const _: () = assert!(WARPS == HEADS);

/// The plan's parts in its buffer, for `pairs` pairs and `blocks` blocks, in order:
/// each pair's first tile (`pairs + 1` entries, the last = the total), first partial group
/// (`HEADS` workspace rows a group), first block and number of blocks (`pairs` each); then
/// each block's first tile (`blocks + 1`, the last = the total) and first pair (`blocks`).
pub const fn part_off_at(pairs: u32) -> usize {
    pairs as usize + 1
}
pub const fn pair_first_block_at(pairs: u32) -> usize {
    2 * pairs as usize + 1
}
pub const fn pair_blocks_at(pairs: u32) -> usize {
    3 * pairs as usize + 1
}
pub const fn block_start_at(pairs: u32) -> usize {
    4 * pairs as usize + 1
}
pub const fn block_first_pair_at(pairs: u32, blocks: u32) -> usize {
    block_start_at(pairs) + blocks as usize + 1
}
/// u32 entries of the plan for `pairs` pairs and `blocks` blocks.
pub const fn plan_len(pairs: u32, blocks: u32) -> usize {
    block_first_pair_at(pairs, blocks) + blocks as usize
}

#[cfg(target_arch = "nvptx64")]
pub(in crate::decode) mod dev {
    use super::*;
    use crate::decode::MergeDest;
    use crate::decode::v03_split_k::combine_range;
    use crate::decode::v06_keys_as_rows::Segment;
    use crate::decode::v06_keys_as_rows::dev::{last_to_arrive, segment};
    use crate::decode::v06_keys_as_rows::{COPY_CP_ASYNC, COPY_TMA_PAGES};
    use crate::decode::v09_bulk_copy as v09;
    use crate::decode::v10_tma_pages as v10;
    use crate::decode::v11_one_round_combine as v11;
    use crate::tensor_map::TensorMap;
    use crate::gpu::async_copy::shared_addr;
    use crate::gpu::{shared, sync_threads, thread, warp};

    /// The kernel body at head dim `D` (`KS = D/16`), its combine reading `U` rows at once
    /// (with `WIDE`, v11's `combine_pair` instead), its segments' tiles copied as `COPY`
    /// says (`v06_keys_as_rows::COPY_*`: v08's `cp.async`, v09's bulk rows, v10's and
    /// v11's TMA boxes through `maps`), with that step's `shared_bytes(D)` of shared memory;
    /// `stamps` as [`STAMP_WORDS`] says.
    ///
    /// # Safety
    /// The buffers have decode's shapes (`super::super`); every block-table entry a context
    /// needs is `< num_pages`, every length is in `1..=max_pages·page_size` and cache rows
    /// fit in u32 (host-checked); `plan` is the host's plan for these lengths (`pairs` =
    /// B·Hkv·⌈(Hq/Hkv)/HEADS⌉ pairs, each pair's tiles `⌈len / TILE⌉`, blocks covering the
    /// tiles in order, each from its first pair), the grid its blocks of `THREADS` threads
    /// with `shared_bytes(D)` of dynamic shared memory; the workspace holds the partial
    /// groups the plan numbers (`HEADS` rows of D f32 and as many (m, l) pairs each),
    /// `counters` `pairs` u32, all 0 (each launch leaves them 0), and `stamps` null or
    /// `STAMP_WORDS` zeroed u64 a block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body<
        const D: usize,
        const KS: usize,
        const U: usize,
        const COPY: u32,
        const WIDE: bool,
    >(
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
        plan: *const u32,
        pairs: u32,
        counters: *mut u32,
        maps: [*const TensorMap; 2],
        stamps: *mut u64,
    ) {
        let mbar = COPY != COPY_CP_ASYNC;
        let group = hq / hkv;
        let chunks = group.div_ceil(HEADS);
        let per_seq = hkv * chunks;
        let (blk, blocks) = (thread::block_idx_x(), thread::grid_dim_x());
        // SAFETY: the plan's entries are in range by construction (host): pair indices <
        // `pairs`, tiles < T, partial groups inside the workspace; each segment is a
        // non-empty range of whole tiles of its pair's context (every context has a key).
        unsafe {
            // --timeline: this block's stamps (the launch guarantees room for every block).
            let stamp = if stamps.is_null() || thread::thread_idx_x() != 0 {
                core::ptr::null_mut()
            } else {
                stamps.add(STAMP_WORDS * blk as usize)
            };
            if !stamp.is_null() {
                *stamp.add(STAMP_START) = thread::global_timer_ns();
            }
            let starts = plan;
            let offs = plan.add(part_off_at(pairs));
            let firsts = plan.add(pair_first_block_at(pairs));
            let counts = plan.add(pair_blocks_at(pairs));
            let bs = plan.add(block_start_at(pairs) + blk as usize);
            let (t0, t1) = (*bs, *bs.add(1));
            let mut p = *plan.add(block_first_pair_at(pairs, blocks) + blk as usize);
            // v09, v10: each warp's barriers past the rings, initialized once, and its place
            // in its ring over all the block's segments (a buffer's fills count its
            // barrier's phases).
            let sm = shared_addr(shared::dynamic_shared_mem::<u64>());
            let rings_end = if COPY == COPY_TMA_PAGES {
                v10::rings_at(sm) + v10::rings_bytes(D as u32)
            } else {
                sm + v09::rings_bytes(D as u32)
            };
            let bars = rings_end + 8 * v09::STAGES * (thread::thread_idx_x() / 32);
            let mut pos = 0u32;
            if mbar {
                v09::bulk::init(bars, warp::lane_id());
            }
            loop {
                let (ps, pe) = (*starts.add(p as usize), *starts.add(p as usize + 1));
                let (b, hc) = (p / per_seq, p % per_seq);
                let (kvh, chunk) = (hc / chunks, hc % chunks);
                let len = *context_lens.add(b as usize);
                let begin = (t0.max(ps) - ps) * TILE;
                let end = (((t1.min(pe) - ps) as u64 * TILE as u64).min(len as u64)) as u32;
                // The blocks that share the pair: first .. first + n.
                let (first, n) = (*firsts.add(p as usize), *counts.add(p as usize));
                let group_row = *offs.add(p as usize) as usize * HEADS as usize;
                let dest = if n == 1 {
                    MergeDest { direct: true, base: 0, stride: 0 }
                } else {
                    MergeDest { direct: false, base: group_row + (blk - first) as usize, stride: n as usize }
                };
                pos = segment::<D, KS, true, COPY>(
                    q, k_cache, v_cache, block_table.add(b as usize * max_pages as usize), out,
                    ws_o, ws_ml, hq, hkv, page_size, scale,
                    Segment { b, kvh, chunk, begin, end }, dest, bars, pos, maps,
                    if stamp.is_null() { stamp } else { stamp.add(STAMP_FIRST_DATA) },
                );
                if !stamp.is_null() {
                    *stamp.add(STAMP_TILES_DONE) = thread::global_timer_ns();
                }
                if n > 1 && last_to_arrive(counters.add(p as usize), n) {
                    if WIDE {
                        // v11: every warp, one round of loads (`v11_one_round_combine`).
                        let live = (group - chunk * HEADS).min(HEADS);
                        v11::dev::combine_pair::<D, { v11::ROWS_AT_ONCE }>(
                            ws_o, ws_ml, out, b * hq + kvh * group + chunk * HEADS, live,
                            group_row, n,
                        );
                    } else {
                        let g = thread::thread_idx_x() / 32;
                        let hi = chunk * HEADS + g;
                        if hi < group {
                            combine_range::<U>(
                                ws_o, ws_ml, out, b * hq + kvh * group + hi,
                                group_row + g as usize * n as usize, n, D as u32,
                            );
                        }
                    }
                }
                p += 1;
                if p >= pairs || *starts.add(p as usize) >= t1 {
                    break;
                }
                // The next segment's rings overwrite the merge area and the ticket's flag
                // (v09, v10: written by the copy engine, so these generic writes are fenced).
                if mbar {
                    v09::bulk::fence();
                }
                sync_threads();
            }
            // The block is done when its last warp is (a pair's combine runs on some warps).
            if !stamps.is_null() {
                sync_threads();
                if !stamp.is_null() {
                    *stamp.add(STAMP_END) = thread::global_timer_ns();
                    *stamp.add(STAMP_SM) = thread::sm_id() as u64;
                }
            }
        }
    }
}

/// `stream_k_entry! { /// docs  NAME, D, KS, UNROLL, BLOCKS, COPY[, WIDE] }` (`WIDE`: v11's
/// merge of a pair's rows; without it one warp a head reading `UNROLL` rows at once).
/// Parameters: decode's with the workspace, then the plan, its pair count, the counters, the
/// K and V caches' tensor maps (read by the TMA copies only; v08 and v09 are passed null
/// ones), and the `--timeline` stamps (null but there).
macro_rules! stream_k_entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $ks:literal, $u:expr, $blocks:expr, $copy:expr) => {
        $crate::decode::v08_stream_k::stream_k_entry! {
            $(#[$doc])* $name, $d, $ks, $u, $blocks, $copy, false
        }
    };
    ($(#[$doc:meta])* $name:ident, $d:literal, $ks:literal, $u:expr, $blocks:expr, $copy:expr, $wide:expr) => {
        crate::kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
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
                plan: *const u32,
                pairs: u32,
                counters: *mut u32,
                k_map: *const crate::tensor_map::TensorMap,
                v_map: *const crate::tensor_map::TensorMap,
                stamps: *mut u64,
            ) {
                crate::gpu::launch_bounds::<{ THREADS }, { $blocks }>();
                // SAFETY: forwarded; the host launches the plan's grid with the step's block
                // and shared memory, the workspace and `pairs` zeroed counters, and (v10) the
                // maps of the caches as (D, Hkv, page slots) in 64 × 1 × 16 boxes with the
                // 128-byte swizzle.
                unsafe {
                    $crate::decode::v08_stream_k::dev::body::<$d, $ks, { $u }, { $copy }, { $wide }>(
                        q, k_cache, v_cache, block_table, context_lens, out, ws_o, ws_ml, hq,
                        hkv, page_size, max_pages, scale, plan, pairs, counters,
                        [k_map, v_map], stamps,
                    )
                }
            }
        }
    };
}

stream_k_entry! { /// v08 at head dim 64.
    decode_v08_stream_k_d64, 64, 4, COMBINE_UNROLL, MIN_BLOCKS_D64, crate::decode::v06_keys_as_rows::COPY_CP_ASYNC }
stream_k_entry! { /// v08 at head dim 128.
    decode_v08_stream_k_d128, 128, 8, COMBINE_UNROLL, MIN_BLOCKS_D128, crate::decode::v06_keys_as_rows::COPY_CP_ASYNC }
pub(in crate::decode) use stream_k_entry;
