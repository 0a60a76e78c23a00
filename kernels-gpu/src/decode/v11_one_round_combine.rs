//! decode/v11_one_round_combine — v10, with a long pair's partial rows merged by every warp
//! of its last block in one round of loads.
//!
//! Changed from v10 (same plan, TMA tiles, segments, tickets): a pair cut across `n` blocks
//! leaves `n` partial rows a head, and the block that finishes it last merges them, after
//! every other block of the pair is done. At batch 1 × L 32768 that is 32 rows a head for
//! each of the 8 pairs, and the last of those merges is the end of the launch (v10 there:
//! 59.3 µs where the copy-only probe reads the same bytes in 49.2; H100, 2026-12-08). v08-v10
//! merge with one warp a head: a pass over the rows' maxima, then `⌈n / 8⌉` rounds of 8 rows,
//! each waited for before the next is issued (five dependent rounds of L2 latency for 32
//! rows), and a GQA group of 4 leaves 4 of the 8 warps idle. Here ([`dev::combine_pair`]):
//! - the chunk's live heads share the block's warps, [`warps_per_head`] each (2 for a group
//!   of 4); warp part `j` of a head takes its rows `j, j + per, ..`;
//! - a warp reads up to [`ROWS_AT_ONCE`] rows in one round: lane `k` loads row `k`'s (m, l),
//!   every lane its `D/32` consecutive dims of each row (one 16-byte load a row at D 128);
//!   the round's max, weights and sum come from shuffles, and rounds past the first rescale
//!   what came before (an online merge, as the softmax does);
//! - the warps of a head meet in shared memory: each leaves its (max, sum, D f32), and after
//!   a barrier the head's first warp merges them and writes the bf16 row.
//!
//! At batch 1 × L 32768 (32 rows a head, 2 warps of 16): one round of loads, then one of
//! shared memory, in place of five of L2.
//!
//! Thread mapping: v10's; in a pair's last block warp `w` is part `w % per` of the chunk's
//! head `w / per` (warps past `live · per` only meet the barrier).
//!
//! Memory traffic: v10's (the partial rows are read once, now all at once).
//!
//! Expected bound: DRAM; the merge is latency, at the end of the launch. sm_90a only.

pub use super::v10_tma_pages::{
    COMBINE_UNROLL, HEADS, MIN_BLOCKS_D128, MIN_BLOCKS_D64, STAGES, THREADS, TILE, WARPS,
    resident_blocks, shared_bytes,
};

/// Partial rows a warp reads in one round (`ROWS_AT_ONCE · D/32` f32 of registers a lane:
/// 64 at D 128, under the step's cap of 128 a thread).
pub const ROWS_AT_ONCE: usize = 16;

/// Warps that merge one head's rows when the chunk has `live` heads of the group (1 to
/// `HEADS`): the largest power of two with `live · per ≤ WARPS` (8, 4, 2, 2, 1, 1, 1, 1).
pub const fn warps_per_head(live: u32) -> u32 {
    let q = WARPS / if live == 0 { 1 } else { live };
    1 << (31 - q.leading_zeros())
}

/// The meeting area in shared memory, in f32 from the dynamic block's start: past the
/// ticket's flag (word 0, still read by other threads when the first warp arrives here),
/// each warp's (max, sum, two unused, D dims).
pub const MEET_AT: usize = 4;
pub const fn meet_row(d: u32) -> u32 {
    d + 4
}

// The meeting area fits in the step's shared memory; a head's warps are whole parts of the
// block.
const _: () = {
    assert!(WARPS == HEADS && WARPS.is_power_of_two());
    let mut i = 0;
    while i < 2 {
        let d = [64, 128][i];
        assert!((MEET_AT as u32 + WARPS * meet_row(d)) * 4 <= shared_bytes(d));
        i += 1;
    }
};

#[cfg(target_arch = "nvptx64")]
pub(in crate::decode) mod dev {
    use super::*;
    use crate::bf16_gemm::unroll;
    use crate::gpu::vector::load_f32x4;
    use crate::gpu::{bf16, math, shared, sync_threads, thread, warp};

    /// The merge of a pair's `n` partial rows a head by the whole block (module docs): head
    /// `g < live` of the chunk has workspace rows `group_row + g·n ..+ n` (f32 rows of `D`,
    /// and their (m, l)), and its output is `out` row `out_row0 + g`.
    ///
    /// # Safety
    /// Every thread of the block calls it, after `last_to_arrive` said this block is the
    /// pair's last (so every row is written and visible); the rows are non-empty (finite
    /// m); `n ≥ 1`, `1 ≤ live ≤ HEADS`; the block's dynamic shared memory past the first
    /// word is free; `D` is 64 or 128.
    #[inline(always)]
    pub unsafe fn combine_pair<const D: usize, const R: usize>(
        ws_o: *const f32,
        ws_ml: *const f32,
        out: *mut u16,
        out_row0: u32,
        live: u32,
        group_row: usize,
        n: u32,
    ) {
        const { assert!(D == 64 || D == 128) };
        let dpl = D / 32;
        let (w, lane) = (thread::thread_idx_x() / 32, warp::lane_id());
        let per = warps_per_head(live);
        let (g, part) = (w / per, w % per);
        let base = group_row + g as usize * n as usize;
        // This warp's rows of its head: part, part + per, .. (none past `live · per`).
        let mine = if g < live && part < n { (n - part).div_ceil(per) } else { 0 };
        let row_of = |k: u32| base + (part + k * per) as usize;
        let at = lane as usize * dpl;
        // SAFETY: (whole body) global reads of the rows the caller's contract names; shared
        // accesses inside `MEET_AT + WARPS·meet_row(D)` f32; every thread reaches the barrier.
        unsafe {
            let mut mx = f32::NEG_INFINITY;
            let mut l = 0.0f32;
            let mut o = [0.0f32; 4];
            let mut k0 = 0u32;
            while k0 < mine {
                let cnt = (mine - k0).min(R as u32);
                // Every load of the round before any is used: one round of L2 latency.
                let (m_k, l_k) = if lane < cnt {
                    let r = row_of(k0 + lane);
                    (*ws_ml.add(2 * r), *ws_ml.add(2 * r + 1))
                } else {
                    (f32::NEG_INFINITY, 0.0)
                };
                let mut vals = [[0.0f32; 4]; R];
                unroll!(R, k => {
                    if (k as u32) < cnt {
                        let row = ws_o.add(row_of(k0 + k as u32) * D + at);
                        if D == 128 {
                            vals[k] = load_f32x4(row).0;
                        } else {
                            vals[k][0] = *row;
                            vals[k][1] = *row.add(1);
                        }
                    }
                });
                // The round's rows are finite (non-empty partials): so is the new max.
                let new_mx = math::max(mx, warp::max_f32(m_k));
                let corr = math::exp2(mx - new_mx);
                let wk = if lane < cnt { math::exp2(m_k - new_mx) } else { 0.0 };
                l = math::fma(l, corr, warp::sum_f32(l_k * wk));
                unroll!(4, i => {
                    o[i] *= corr;
                });
                unroll!(R, k => {
                    // Every lane shuffles (k is uniform); past `cnt` the weight is 0.
                    let c = warp::shfl_idx_f32(wk, k as u32);
                    unroll!(4, i => {
                        o[i] = math::fma(vals[k][i], c, o[i]);
                    });
                });
                mx = new_mx;
                k0 += R as u32;
            }
            // Meet: warp w's (max, sum, dims) at row w of the area.
            let meet = shared::dynamic_shared_mem::<f32>().add(MEET_AT);
            let mine_at = meet.add(w as usize * meet_row(D as u32) as usize);
            if lane == 0 {
                *mine_at = mx;
                *mine_at.add(1) = l;
            }
            unroll!(4, i => {
                if i < dpl {
                    *mine_at.add(4 + at + i) = o[i];
                }
            });
            sync_threads();
            if g < live && part == 0 {
                // The head's warps g·per ..: a part with no rows left m = -inf, weight 0.
                let first = meet.add((g * per) as usize * meet_row(D as u32) as usize);
                let mut big = f32::NEG_INFINITY;
                for j in 0..per as usize {
                    big = math::max(big, *first.add(j * meet_row(D as u32) as usize));
                }
                let (mut sum, mut acc) = (0.0f32, [0.0f32; 4]);
                for j in 0..per as usize {
                    let r = first.add(j * meet_row(D as u32) as usize);
                    let c = math::exp2(*r - big);
                    sum = math::fma(*r.add(1), c, sum);
                    unroll!(4, i => {
                        if i < dpl {
                            acc[i] = math::fma(*r.add(4 + at + i), c, acc[i]);
                        }
                    });
                }
                // Part 0 holds the context's first key's row: sum ≥ its weight > 0.
                let inv = 1.0 / sum;
                let dst = out.add((out_row0 + g) as usize * D + at);
                unroll!(4, i => {
                    if i < dpl {
                        *dst.add(i) = bf16::from_f32(acc[i] * inv);
                    }
                });
            }
        }
    }
}

super::v08_stream_k::stream_k_entry! { /// v11 at head dim 64 (sm_90a only).
    #[cfg(target_feature = "sm_90a")]
    decode_v11_one_round_combine_d64, 64, 4, COMBINE_UNROLL, MIN_BLOCKS_D64,
    super::v06_keys_as_rows::COPY_TMA_PAGES, true }
super::v08_stream_k::stream_k_entry! { /// v11 at head dim 128 (sm_90a only).
    #[cfg(target_feature = "sm_90a")]
    decode_v11_one_round_combine_d128, 128, 8, COMBINE_UNROLL, MIN_BLOCKS_D128,
    super::v06_keys_as_rows::COPY_TMA_PAGES, true }

