//! decode/v03_split_k — each context split across blocks, then combined (flash-decoding).
//!
//! Changed from v02: with few sequences there are few (sequence, KV head) blocks — batch 1
//! gives 8 for 132 SMs — and each walks its whole context alone. Here the grid gets a third
//! dimension of `splits` (`splits()`, below: enough for about two blocks an SM): block `z`
//! takes keys `[z·split_len, (z+1)·split_len)` of its sequence and writes its partial row
//! unnormalized, with its max `m` and sum `l`, to a workspace; a second kernel,
//! `decode_v03_split_k_combine`, merges each (sequence, query head)'s partials:
//! `M = max m_z`, `O = Σ 2^(m_z − M)·acc_z / Σ 2^(m_z − M)·l_z`, and writes bf16. With one
//! split (enough blocks already) it is v02, one launch.
//!
//! Thread mapping: the partial kernel as v02 per slice (grid (Hkv, B, splits)); the combine
//! kernel one warp per (sequence, query head), lanes over the splits for the max, the
//! weights and the sums, then over D, with four splits' rows read at once.
//!
//! Memory traffic: v02's, plus the partials: B·Hq·splits·(D + 2) f32 written and read once
//! (at batch 1, L 32768: 33 splits × 32 heads × 130 × 4 B = 0.5 MiB against 128 MiB of KV).
//!
//! Expected bound: DRAM, at every batch size.

/// Keys a split takes at least (8 tiles of 32): shorter slices would spend more on their
/// partial rows and the combine than on keys.
pub const MIN_SPLIT_KEYS: u32 = 256;
/// At most this many splits.
pub const MAX_SPLITS: u32 = 64;
/// Warps (rows) per block of the combine kernel.
pub const COMBINE_ROWS: u32 = 8;

/// How many splits the host launches for `batch · hkv` (sequence, KV head) blocks whose
/// longest context is `max_len`, on `sms` multiprocessors: 1 when the blocks already fill
/// the GPU twice; else enough for about two blocks an SM, none shorter than
/// `MIN_SPLIT_KEYS`, at most `MAX_SPLITS`.
pub const fn splits(batch: u32, hkv: u32, max_len: u32, sms: u32) -> u32 {
    let blocks = batch as u64 * hkv as u64;
    let want = 2 * sms as u64;
    if blocks == 0 || blocks >= want {
        return 1;
    }
    let for_sms = want.div_ceil(blocks);
    let for_len = max_len.div_ceil(MIN_SPLIT_KEYS) as u64;
    let s = if for_sms < for_len { for_sms } else { for_len };
    if s > MAX_SPLITS as u64 {
        MAX_SPLITS
    } else if s < 1 {
        1
    } else {
        s as u32
    }
}

/// Keys per split for `splits` splits of contexts up to `max_len`: whole 32-key tiles.
pub const fn split_len(max_len: u32, splits: u32) -> u32 {
    let s = if splits == 0 { 1 } else { splits };
    max_len.div_ceil(s).div_ceil(super::KEYS) * super::KEYS
}

macro_rules! partial_entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $per:literal) => {
        crate::kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
                q: *const u16,
                k_cache: *const u16,
                v_cache: *const u16,
                block_table: *const u32,
                context_lens: *const u32,
                ws_o: *mut f32,
                ws_ml: *mut f32,
                hq: u32,
                hkv: u32,
                page_size: u32,
                max_pages: u32,
                scale: f32,
                split_len: u32,
            ) {
                // SAFETY: forwarded; the host launches grid (Hkv, B, splits) of Hq/Hkv warps
                // with the workspace for B·Hq·splits partial rows.
                unsafe {
                    super::paged_range::<$d, $per, true>(
                        q,
                        k_cache,
                        v_cache,
                        block_table,
                        context_lens,
                        core::ptr::null_mut(),
                        ws_o,
                        ws_ml,
                        hq,
                        hkv,
                        page_size,
                        max_pages,
                        scale,
                        split_len,
                    )
                }
            }
        }
    };
}

partial_entry! {
    /// v03's partial rows at head dim 64.
    decode_v03_split_k_d64, 64, 2
}
partial_entry! {
    /// v03's partial rows at head dim 128.
    decode_v03_split_k_d128, 128, 4
}

#[cfg(target_arch = "nvptx64")]
use crate::bf16_gemm::unroll;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{bf16, math, thread, warp};
/// Dims a lane of the combine owns: head dims up to 128.
const COMBINE_DIMS_PER_LANE: usize = 4;
/// Splits' rows the combine reads at once.
#[cfg(target_arch = "nvptx64")]
const UNROLL: usize = 4;
const _: () = {
    let mut i = 0;
    while i < super::HEAD_DIMS.len() {
        assert!(super::HEAD_DIMS[i] as usize <= 32 * COMBINE_DIMS_PER_LANE);
        i += 1;
    }
};

crate::kernel! {
    /// Merges the `splits` partial rows of each of the `rows` (sequence, query head) rows
    /// into `out` (bf16), one warp a row, `COMBINE_ROWS` rows a block.
    pub unsafe fn decode_v03_split_k_combine(
        ws_o: *const f32,
        ws_ml: *const f32,
        out: *mut u16,
        rows: u32,
        splits: u32,
        dim: u32,
    ) {
        let row = thread::block_idx_x() * COMBINE_ROWS + thread::thread_idx_x() / warp::WARP_SIZE;
        if row >= rows {
            return;
        }
        // SAFETY: row < rows; the caller's contract is the entry's.
        unsafe { combine_row(ws_o, ws_ml, out, row, splits, dim) }
    }
}

/// One warp merges the `splits` partial rows of row `row` (a (sequence, query head)) into
/// `out`: v03's combine kernel, and the last block of v07's splits.
///
/// # Safety
/// As [`combine_range`] with the rows `row·splits .. (row + 1)·splits`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn combine_row(
    ws_o: *const f32,
    ws_ml: *const f32,
    out: *mut u16,
    row: u32,
    splits: u32,
    dim: u32,
) {
    // SAFETY: forwarded.
    unsafe {
        combine_range::<UNROLL>(ws_o, ws_ml, out, row, row as usize * splits as usize, splits, dim)
    }
}

/// One warp merges the `splits` partial rows `base .. base + splits` of the workspace into
/// row `row` of `out`, reading `U` rows at once (v03 and v07: 4; v08, whose last blocks
/// merge a few dozen rows a head at the end of the launch: 8).
///
/// # Safety
/// The whole warp calls it with the same arguments; the workspace holds those rows of `dim`
/// f32 and as many (m, l) pairs, the first non-empty; `out` holds row `row` of `dim` bf16;
/// `dim` is a head dim (at most 32·COMBINE_DIMS_PER_LANE).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) unsafe fn combine_range<const U: usize>(
    ws_o: *const f32,
    ws_ml: *const f32,
    out: *mut u16,
    row: u32,
    base: usize,
    splits: u32,
    dim: u32,
) {
    let lane = warp::lane_id();
    let dim_us = dim as usize;
    // SAFETY: the caller's contract.
    unsafe {
        let mut mx = f32::NEG_INFINITY;
        let mut z = lane;
        while z < splits {
            mx = math::max(mx, *ws_ml.add(2 * (base + z as usize)));
            z += warp::WARP_SIZE;
        }
        // Split 0 holds the context's first key: mx is finite.
        let mx = warp::max_f32(mx);
        // Lane l owns dims l, l + 32, ..; the splits go 32 at a time: each lane weighs
        // split z0 + l, the weights reach every lane by shuffle, and each step reads
        // `U` splits' rows at once (independent loads in flight: read one split
        // after another, each load waited for before the next was issued, a row of 32
        // splits took 28 µs on an H200).
        let mut o = [0.0f32; COMBINE_DIMS_PER_LANE];
        let mut l = 0.0f32;
        let mut z0 = 0u32;
        while z0 < splits {
            let mine = z0 + lane;
            let w = if mine < splits {
                let p = base + mine as usize;
                let w = math::exp2(*ws_ml.add(2 * p) - mx);
                l = math::fma(*ws_ml.add(2 * p + 1), w, l);
                w
            } else {
                0.0
            };
            let n = (splits - z0).min(warp::WARP_SIZE);
            let mut u = 0u32;
            while u < n {
                let mut vals = [[0.0f32; COMBINE_DIMS_PER_LANE]; U];
                let mut ws = [0.0f32; U];
                unroll!(U, k => {
                    let uu = u + k as u32;
                    // Every lane shuffles (uu is warp-uniform); past n the weight is 0.
                    ws[k] = warp::shfl_idx_f32(w, uu % warp::WARP_SIZE);
                    if uu < n {
                        let row = ws_o.add((base + (z0 + uu) as usize) * dim_us);
                        unroll!(COMBINE_DIMS_PER_LANE, i => {
                            let d = lane as usize + 32 * i;
                            if d < dim_us {
                                vals[k][i] = *row.add(d);
                            }
                        });
                    }
                });
                unroll!(U, k => {
                    unroll!(COMBINE_DIMS_PER_LANE, i => {
                        o[i] = math::fma(vals[k][i], ws[k], o[i]);
                    });
                });
                u += U as u32;
            }
            z0 += warp::WARP_SIZE;
        }
        let inv = 1.0 / warp::sum_f32(l);
        unroll!(COMBINE_DIMS_PER_LANE, i => {
            let d = lane as usize + 32 * i;
            if d < dim_us {
                *out.add(row as usize * dim_us + d) = bf16::from_f32(o[i] * inv);
            }
        });
    }
}
