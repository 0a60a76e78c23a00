//! Family `decode`: one decoding step of attention over a paged KV cache (vLLM's layout),
//! with grouped-query attention.
//!
//! Per step: queries `q[B][Hq][D]` bf16; the caches `k_cache`, `v_cache` as pages
//! `[num_pages][page_size][Hkv][D]` bf16; a block table `[B][max_pages]` of page indices (a
//! sequence's pages need not be contiguous or in order) and context lengths `[B]`. Query
//! head `h` reads KV head `h / (Hq / Hkv)`. Output `out[B][Hq][D]` bf16:
//! `softmax(q·Kᵀ/√D)·V` over the sequence's first `context_lens[b]` keys. Arithmetic in f32.
//!
//! The two steps share [`paged_attention`]: a block of `W` warps takes `W` query heads of
//! one sequence that read the same KV head, walks the context in tiles of `KEYS` keys
//! (gathered through the block table into shared memory), and keeps each head's output row
//! in registers with an online softmax (as `attention::v02_fused_simt`). What differs is the
//! launch: v01 gives each query head its own block (W = 1: a KV head's bytes are read once
//! per query head of its group), v02 one block per KV head with its whole group (W = Hq/Hkv:
//! each KV byte read once).

pub mod v01_block_per_head;
pub mod v02_gqa_grouped;
pub mod v03_split_k;
pub mod v04_vectorized_pipeline;
pub mod v05_mma_heads;
pub mod v06_keys_as_rows;
pub mod v07_fused_combine;
pub mod v08_stream_k;
pub mod v09_bulk_copy;
pub mod v10_tma_pages;
pub mod v11_one_round_combine;
/// Not a step: a copy-only read of the cache's bytes in decode's access pattern.
pub mod probe_read;

/// The head dims the kernels are built for.
pub const HEAD_DIMS: [u32; 2] = [64, 128];
/// Keys per tile: one per lane.
pub const KEYS: u32 = 32;
/// Most query heads a block serves (v02: the GQA group), 16 warps.
pub const MAX_GROUP: u32 = 16;

/// Dynamic shared memory, in f32, of a block serving `warps` query heads at head dim `d`:
/// the scaled query rows, the K tile (rows padded by one word) and the V tile.
pub const fn shared_f32(warps: u32, d: u32) -> u32 {
    warps * d + KEYS * (d + 1) + KEYS * d
}

/// `one_launch_entry! { /// docs  NAME, D, PER }`: a v01/v02 entry (the decode parameters)
/// running [`paged_attention`] at head dim D; v01 and v02 differ only in their launch.
macro_rules! one_launch_entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $per:literal) => {
        crate::kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
                q: *const u16,
                k_cache: *const u16,
                v_cache: *const u16,
                block_table: *const u32,
                context_lens: *const u32,
                out: *mut u16,
                hq: u32,
                hkv: u32,
                page_size: u32,
                max_pages: u32,
                scale: f32,
            ) {
                // SAFETY: forwarded; the host launches the grid the step's header says,
                // which `paged_attention` requires.
                unsafe {
                    super::paged_attention::<$d, $per>(
                        q,
                        k_cache,
                        v_cache,
                        block_table,
                        context_lens,
                        out,
                        hq,
                        hkv,
                        page_size,
                        max_pages,
                        scale,
                    )
                }
            }
        }
    };
}
pub(crate) use one_launch_entry;

/// `pipeline_entry! { /// docs  NAME => BODY::<GENERICS> [, launch_bounds(THREADS[, BLOCKS])] }`:
/// a v04-v06 entry (the decode parameters with `out` and the split workspace, then the split
/// length) calling the step's body with its compile-time shape; `BLOCKS` (default 1) is the
/// `.minnctapersm` the registers are capped for.
macro_rules! pipeline_entry {
    ($(#[$doc:meta])* $name:ident => $($body:ident)::+ <$($g:literal),*>
        $(, launch_bounds($threads:expr $(, $blocks:expr)?))?) => {
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
                split_len: u32,
            ) {
                $(crate::gpu::launch_bounds::<{ $threads }, { 1 $(* $blocks)? }>();)?
                // SAFETY: forwarded; the host launches the grid and shared memory of the
                // step's header (see its `body`).
                unsafe {
                    $($body)::+::<$($g),*>(
                        q, k_cache, v_cache, block_table, context_lens, out, ws_o, ws_ml, hq,
                        hkv, page_size, max_pages, scale, split_len,
                    )
                }
            }
        }
    };
}
pub(crate) use pipeline_entry;

/// The kernel body shared by v01 and v02 (see the module docs): the whole context, the
/// normalized output row.
///
/// # Safety
/// As [`paged_range`] with `gridDim.z = 1`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn paged_attention<const D: usize, const PER: usize>(
    q: *const u16,
    k_cache: *const u16,
    v_cache: *const u16,
    block_table: *const u32,
    context_lens: *const u32,
    out: *mut u16,
    hq: u32,
    hkv: u32,
    page_size: u32,
    max_pages: u32,
    scale: f32,
) {
    // SAFETY: forwarded; one split as long as any context.
    unsafe {
        paged_range::<D, PER, false>(
            q,
            k_cache,
            v_cache,
            block_table,
            context_lens,
            out,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            hq,
            hkv,
            page_size,
            max_pages,
            scale,
            u32::MAX,
        )
    }
}

/// The body over block `z`'s slice of each context: keys `[z·split_len, (z+1)·split_len)`
/// cut to the context length. `PARTIAL == false` (one slice): the normalized row to `out`.
/// `PARTIAL == true` (v03): the unnormalized row, its max `m` (log2 domain) and sum `l` to
/// the workspace, `((b·Hq + h)·gridDim.z + z)`-th row of `ws_o` (D f32) and pair of `ws_ml`;
/// an empty slice writes `m = -inf, l = 0` and zeros.
///
/// # Safety
/// The buffers have the shapes of the module docs; every block-table entry a context needs
/// is `< num_pages` and every context length is in `1..=max_pages·page_size` (the host checks
/// both); the launch has `blockDim.x = 32·W` with `W` dividing `Hq/Hkv` (or `W = 1`), grid
/// `(Hq / W, B, splits)` and `4·shared_f32(W, D)` bytes of dynamic shared memory; with
/// `PARTIAL`, the workspace holds `B·Hq·splits` rows of D f32 and pairs of f32.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn paged_range<const D: usize, const PER: usize, const PARTIAL: bool>(
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
    use crate::attention::OnlineRow;
    use crate::gpu::{bf16, shared, sync_threads, thread, warp};
    // One key per lane: `OnlineRow::tile` takes tiles of 32.
    const { assert!(D == 32 * PER && KEYS == 32) };
    let t = thread::thread_idx_x();
    let warps = thread::block_dim_x() / warp::WARP_SIZE;
    let (w, lane) = (t / warp::WARP_SIZE, warp::lane_id());
    let b = thread::block_idx_y();
    let h = thread::block_idx_x() * warps + w;
    // The block's query heads share one KV head (W divides the group, or W = 1).
    let kvh = thread::block_idx_x() * warps / (hq / hkv);
    let dd = D as u32;
    let smem = shared::dynamic_shared_mem::<f32>();
    let sl = scale * core::f32::consts::LOG2_E;
    // SAFETY: (whole body) q/out rows are (b, h) with h < hq; cache rows are gathered from
    // pages the block table names for keys < context length (host-checked in bounds);
    // shared accesses stay in the three regions of `shared_f32(W, D)`; every thread reaches
    // every barrier (the loop bound is the same for the whole block).
    unsafe {
        let len = *context_lens.add(b as usize);
        let z = thread::block_idx_z();
        // 64-bit: z·split_len passes 2^32 when split_len is u32::MAX (one split).
        let begin = (z as u64 * split_len as u64).min(len as u64) as u32;
        let end = (begin as u64 + split_len as u64).min(len as u64) as u32;
        let (qs, ks) = (smem, smem.add((warps * dd) as usize));
        let vs = ks.add((KEYS * (dd + 1)) as usize);
        let mut e = t;
        while e < warps * dd {
            let (r, d) = (e / dd, e % dd);
            let head = thread::block_idx_x() * warps + r;
            *qs.add(e as usize) = bf16::to_f32(*q.add(((b * hq + head) * dd + d) as usize)) * sl;
            e += thread::block_dim_x();
        }
        let table = block_table.add(b as usize * max_pages as usize);
        let mut row = OnlineRow::<PER>::new();
        let mut j0 = begin;
        while j0 < end {
            sync_threads();
            let mut e = t;
            while e < KEYS * dd {
                let (r, d) = (e / dd, e % dd);
                let j = j0 + r;
                let (kv, vv) = if j < end {
                    let page = *table.add((j / page_size) as usize) as u64;
                    let slot = (page * page_size as u64 + (j % page_size) as u64) * hkv as u64;
                    let at = ((slot + kvh as u64) * D as u64) as usize + d as usize;
                    (
                        bf16::to_f32(*k_cache.add(at)),
                        bf16::to_f32(*v_cache.add(at)),
                    )
                } else {
                    (0.0, 0.0)
                };
                *ks.add((r * (dd + 1) + d) as usize) = kv;
                *vs.add(e as usize) = vv;
                e += thread::block_dim_x();
            }
            sync_threads();
            row.tile::<D>(qs.add(w as usize * D), ks, vs, j0 + lane < end);
            j0 += KEYS;
        }
        if PARTIAL {
            let at = (b as u64 * hq as u64 + h as u64) * thread::grid_dim_z() as u64 + z as u64;
            let o = ws_o.add((at * D as u64) as usize + lane as usize);
            for (x, a) in row.acc.iter().enumerate() {
                *o.add(32 * x) = *a;
            }
            if lane == 0 {
                *ws_ml.add(2 * at as usize) = row.m;
                *ws_ml.add(2 * at as usize + 1) = row.l;
            }
        } else {
            // l >= 1: the row's max key contributes 2^0.
            let inv = 1.0 / row.l;
            let o = out.add(((b * hq + h) * dd + lane) as usize);
            for (x, a) in row.acc.iter().enumerate() {
                *o.add(32 * x) = bf16::from_f32(*a * inv);
            }
        }
    }
}

/// Where [`merge_warps`] leaves a block's merged rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeDest {
    /// The block's slice is the whole context: normalized bf16 rows straight to `out`.
    pub direct: bool,
    /// Otherwise head `g` of the block's chunk goes to workspace row `base + g·stride`.
    pub base: usize,
    pub stride: usize,
}

impl MergeDest {
    /// v04-v07's layout, split `z` of `splits` of each (sequence, query head) row `r` at
    /// workspace row `r·splits + z`: the chunk's first head is query head `first_head` of
    /// sequence `b`; one split writes `out`.
    pub const fn of_splits(b: u32, hq: u32, first_head: u32, z: u32, splits: u32) -> MergeDest {
        MergeDest {
            direct: splits == 1,
            base: (b as usize * hq as usize + first_head as usize) * splits as usize + z as usize,
            stride: splits as usize,
        }
    }
}

/// The end of v04-v08: the block's `WARPS` warps have left their partial rows in shared
/// memory, `mo[w][g][D]` (f32, unnormalized) and `ml[w][g]` = (max in the log2 domain, sum),
/// for the block's `GC` heads; merge them per head (heads past the GQA group skipped) and
/// write the normalized bf16 row to `out` (`dest.direct`) or the unnormalized row and its
/// (m, l) to workspace row `dest.base + g·dest.stride`. An empty slice (past a short
/// context) leaves m = -inf, l = 0 and zeros.
///
/// # Safety
/// Every thread of the block calls it, after a barrier that follows the warps' writes;
/// `mo`/`ml` hold `WARPS·GC` rows; the block is (KV head `kvh`, chunk `chunk` of `GC`
/// heads, sequence `b`); the workspace holds the rows `dest` names for the chunk's heads.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn merge_warps<const D: usize, const GC: usize, const WARPS: usize>(
    mo: *const f32,
    ml: *const f32,
    out: *mut u16,
    ws_o: *mut f32,
    ws_ml: *mut f32,
    hq: u32,
    group: u32,
    kvh: u32,
    chunk: u32,
    b: u32,
    dest: MergeDest,
) {
    use crate::gpu::{bf16, math, thread};
    let (t, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
    // SAFETY: shared reads inside the WARPS·GC rows; global writes to rows (b, h < Hq) of
    // out, or the workspace rows `dest` names (sized by the host).
    unsafe {
        let mut e = t;
        while e < GC * D {
            let (g, d) = (e / D, e % D);
            let hi = chunk * GC as u32 + g as u32;
            if hi < group {
                let h = kvh * group + hi;
                let mut mx = f32::NEG_INFINITY;
                for ww in 0..WARPS {
                    mx = math::max(mx, *ml.add(2 * (ww * GC + g)));
                }
                let (mut o, mut l) = (0.0f32, 0.0f32);
                if mx != f32::NEG_INFINITY {
                    for ww in 0..WARPS {
                        let c = math::exp2(*ml.add(2 * (ww * GC + g)) - mx);
                        l = math::fma(*ml.add(2 * (ww * GC + g) + 1), c, l);
                        o = math::fma(*mo.add((ww * GC + g) * D + d), c, o);
                    }
                }
                if dest.direct {
                    // The whole context: l >= 1 (its max key weighs 2^0).
                    *out.add((b * hq + h) as usize * D + d) = bf16::from_f32(o / l);
                } else {
                    let at = dest.base + g * dest.stride;
                    *ws_o.add(at * D + d) = o;
                    if d == 0 {
                        *ws_ml.add(2 * at) = mx;
                        *ws_ml.add(2 * at + 1) = l;
                    }
                }
            }
            e += threads;
        }
    }
}
