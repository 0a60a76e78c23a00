//! attention/v03_flash_mma — the tensor cores: FlashAttention-2's loop on `mma.sync`.
//!
//! Changed from v02 (same parameters, same online softmax in the log2 domain, same causal
//! stop at the block's last row): both products run on the tensor cores as
//! `mma.sync.m16n8k16` bf16 with f32 accumulators ([`crate::gpu::mma`]), and a warp owns 16
//! query rows instead of one.
//! - Q: the block's `BR` rows come into shared memory once (`cp.async`), then each warp
//!   keeps the A fragments of its 16 rows for all of D in registers (`ldmatrix.x4`) for the
//!   whole loop.
//! - K, V: tiles of `BC` keys through a `STAGES`-deep `cp.async` ring (tile j + 1 lands
//!   while tile j is computed; one barrier per tile). Rows are D bf16 (`D/8` chunks of 16
//!   bytes) stored XOR-swizzled, chunk `c` of row `r` at chunk `c ^ (r & 7)`
//!   ([`swizzled_byte_offset`]): the 8 rows an `ldmatrix` phase reads hit 8 distinct bank
//!   groups. Rows past S are zero-filled (`cp.async` with 0 source bytes), never read.
//! - S = Q·Kᵀ: K rows are n (keys) with k (D) contiguous, exactly the "col" B operand, so
//!   `ldmatrix.x4` (non-transposed) gives two n8 B fragments at once.
//! - Softmax on the S fragments in registers: a lane holds rows `g` and `g + 8` of its
//!   warp's 16 (`g = lane / 4`), 2 keys of every n8 tile; a row's max is taken over the 4
//!   lanes of a quad (`shfl.bfly` 1 and 2); its running sum stays a per-lane partial until
//!   the end. Scores are scaled in the exponent: `p = 2^(s·scale·log2 e − m·scale·log2 e)`,
//!   one FMA and one `ex2.approx`. Keys ≥ S and, causal, keys past the row are -inf: only
//!   the last tile and the diagonal tile test each element (a block-uniform branch).
//! - O += P·V: the C fragments of two adjacent n8 tiles of S are, element for element, the
//!   A fragment of one k16 step of P·V ([`p_source`]), so P never leaves the registers. V is
//!   keys × D with D contiguous — k-major for this product — so its B fragments come from
//!   `ldmatrix.x4.trans`. The family's numerical contract keeps the weights in f32: each
//!   bf16 pair of P is followed by its rounding residual (`P = P_hi + P_lo`, both bf16, off
//!   by ~2^-17 relative) and P·V is two mmas (`P_SPLIT`); a single bf16 P, as
//!   FlashAttention rounds it, is off by up to 2^-9 per weight, which the family's
//!   tolerance refuses at S 4097 (`reference::v03_emulation` shows both).
//! - Epilogue: O = acc / l in bf16, staged through the warp's own rows of the Q tile and
//!   written with 16-byte stores; rows ≥ S are not written.
//!
//! Thread mapping: block (query tile, head) of `WARPS` warps; blocks take the query tiles in
//! reverse order (the longest causal rows first); warp `w` owns rows `q0 + 16·w ..+16`,
//! lane `l` the C-fragment elements at rows `g`, `g + 8` (`g = l / 4`), keys/dims `2·(l % 4)`,
//! `+1` of every n8 tile ([`acc_row_col`]); copies: thread `t` issues 16-byte chunks
//! `t + THREADS·i` of each tile ([`copy_chunk`]).
//!
//! Memory traffic: Q read and O written once; K and V once per block of `BR` queries (S/BR
//! passes over a head's K and V, from L2); shared memory: `shared_bytes(D)` (40 KiB at D 64,
//! 80 KiB at D 128, which the launch opts in to). Per tile and warp: `D/16 · BC/16`
//! `ldmatrix.x4` of K and as many `.trans` of V, for `D/16 · BC/8` mmas of S and twice
//! `BC/16 · D/8` of P·V (the split).
//!
//! Expected bound: `mma.sync` issue (the `ceilings_mma_throughput` row, 624 TFLOP/s on an
//! H200), with the softmax's `ex2`/FMAs and the `ldmatrix`s beside it. The split makes 6·D
//! tensor FLOPs per pair where the cost model counts 4·D, so the tensor-core ceiling of
//! this step is two thirds of `mma.sync`'s, ~415 TFLOP/s; FA2-quality kernels reach 40-55%
//! of theirs.

/// Query rows per block (16 per warp).
pub const BR: u32 = 64;
/// Keys per K/V tile.
pub const BC: u32 = 64;
/// Warps per block: one m16 row tile each.
pub const WARPS: u32 = BR / 16;
/// Threads per block.
pub const THREADS: u32 = WARPS * 32;
/// K/V tiles in flight: tile j + 1 is copied while tile j is computed.
pub const STAGES: u32 = 2;
/// P·V with P as bf16 hi + lo (two mmas, weights within ~2^-17) instead of one bf16 P.
pub const P_SPLIT: bool = true;
/// `.minnctapersm` of the entries (launch bounds): blocks an SM must hold, i.e. registers
/// a thread may have (65536 / (THREADS · blocks)): D 64 at 3 (168; at 4, 128 spilled),
/// D 128 at 2 (255).
pub const MIN_BLOCKS_D64: u32 = 3;
pub const MIN_BLOCKS_D128: u32 = 2;

// The causal mask is element-wise only on the diagonal tile when a query tile and a key
// tile line up; 16-row warps; copies of whole tiles by every thread.
const _: () = assert!(BR == BC && BR.is_multiple_of(16) && BC.is_multiple_of(16));
const _: () = assert!(STAGES == 2);
const _: () =
    assert!((BR * 64 / 8).is_multiple_of(THREADS) && (BC * 64 / 8).is_multiple_of(THREADS));

/// Bytes of the Q tile (`BR` rows of D bf16), at offset 0; O is staged there at the end.
pub const fn q_bytes(d: u32) -> u32 {
    BR * d * 2
}

/// Bytes of one K (or V) tile: `BC` rows of D bf16.
pub const fn kv_bytes(d: u32) -> u32 {
    BC * d * 2
}

/// Dynamic shared memory for head dim `d`: the Q tile, then `STAGES` K tiles, then
/// `STAGES` V tiles.
pub const fn shared_bytes(d: u32) -> u32 {
    q_bytes(d) + 2 * STAGES * kv_bytes(d)
}

/// `.shared` byte offset of K stage `s` (`k == true`) or V stage `s` from the block's base.
pub const fn stage_offset(d: u32, k: bool, s: u32) -> u32 {
    q_bytes(d) + (if k { 0 } else { STAGES }) * kv_bytes(d) + s * kv_bytes(d)
}

/// Byte offset of logical 16-byte chunk `chunk` (0..d/8) of `row` in a swizzled tile of
/// rows of `d` bf16 (d a multiple of 64): chunk `chunk ^ (row & 7)` of the row. A bijection
/// of each row's chunks; the 8 rows `8i..8i+8` at one logical chunk fall on the 8 distinct
/// 16-byte bank groups of a 128-byte window (rows are a multiple of 128 bytes).
pub const fn swizzled_byte_offset(d: u32, row: u32, chunk: u32) -> u32 {
    row * d * 2 + (chunk ^ (row & 7)) * 16
}

/// The (row, chunk) of copy `idx` of a tile of rows of `d` bf16: row-major chunk order.
pub const fn copy_chunk(d: u32, idx: u32) -> (u32, u32) {
    (idx / (d / 8), idx % (d / 8))
}

/// Q's A fragment of k16 step `kk` (dims `16·kk ..`): the (row inside the warp's 16,
/// chunk) whose address lane `lane` gives to `ldmatrix.x4` — matrices rows 0-7/8-15 ×
/// chunk 2kk, then rows 0-7/8-15 × chunk 2kk+1: registers a[0..4] as mma's A wants them.
pub const fn q_lane(lane: u32, kk: u32) -> (u32, u32) {
    (lane % 16, 2 * kk + lane / 16)
}

/// K's B fragments for two n8 tiles (16 keys) at k16 step `kk`: the (key inside the 16,
/// chunk) for lane `lane` of `ldmatrix.x4` — matrices keys 0-7 × chunks 2kk, 2kk+1, then
/// keys 8-15 × the same: registers 0, 1 are the first n8 tile's b, 2, 3 the second's.
pub const fn k_lane(lane: u32, kk: u32) -> (u32, u32) {
    (lane % 8 + (lane / 16) * 8, 2 * kk + (lane / 8) % 2)
}

/// V's B fragments for two n8 tiles (dims `16·np ..`, chunks 2np, 2np+1) over one k16 step
/// of keys: the (key inside the 16, chunk) for lane `lane` of `ldmatrix.x4.trans` —
/// matrices keys 0-7 / 8-15 × chunk 2np, then the same × chunk 2np+1: registers 0, 1 are
/// the first n8 tile's b, 2, 3 the second's.
pub const fn v_lane(lane: u32, np: u32) -> (u32, u32) {
    (lane % 8 + ((lane / 8) % 2) * 8, 2 * np + lane / 16)
}

/// Byte offset (in a K tile) of lane `lane`'s `ldmatrix` row for K16 step `kk` and key pair
/// `p` (keys `16·p ..`): [`k_lane`] through the swizzle, written as the lane's part for
/// `kk % 4` ([`k_lane_offset`], 4 registers) plus a constant ([`k_step_offset`]) that the
/// unrolled loop folds into the instruction's immediate. Hoisting the 32 (D 128) full
/// offsets out of the key loop cost 60 registers and spills; chunks `2·kk + b` with b < 2
/// and `kk = 4j + i` swizzle to `8j + ((2i + b) ^ (row & 7))`, so 4 per lane suffice.
pub const fn k_frag_offset(d: u32, lane: u32, kk: u32, p: u32) -> u32 {
    k_lane_offset(d, lane, kk % 4) + k_step_offset(d, kk, p)
}

/// The lane-dependent part of [`k_frag_offset`], for `i = kk % 4`.
pub const fn k_lane_offset(d: u32, lane: u32, i: u32) -> u32 {
    let (r, c) = k_lane(lane, i);
    swizzled_byte_offset(d, r, c)
}

/// The constant part of [`k_frag_offset`]: key pair `p`'s 16 rows, chunk group `kk / 4`.
pub const fn k_step_offset(d: u32, kk: u32, p: u32) -> u32 {
    16 * p * d * 2 + (kk / 4) * 128
}

/// As [`k_frag_offset`] for V's `ldmatrix.trans` ([`v_lane`]): keys `16·kk ..`, dims
/// `16·np ..`; the lane's part for `np % 4` plus a constant.
pub const fn v_frag_offset(d: u32, lane: u32, kk: u32, np: u32) -> u32 {
    v_lane_offset(d, lane, np % 4) + v_step_offset(d, kk, np)
}

/// The lane-dependent part of [`v_frag_offset`], for `i = np % 4`.
pub const fn v_lane_offset(d: u32, lane: u32, i: u32) -> u32 {
    let (r, c) = v_lane(lane, i);
    swizzled_byte_offset(d, r, c)
}

/// The constant part of [`v_frag_offset`]: key step `kk`'s 16 rows, chunk group `np / 4`.
pub const fn v_step_offset(d: u32, kk: u32, np: u32) -> u32 {
    16 * kk * d * 2 + (np / 4) * 128
}

/// The (row inside the warp's 16, column inside the n8 tile) of C-fragment element `e`
/// (0..4) of lane `lane`, as mma.m16n8k16 lays out C and D.
pub const fn acc_row_col(lane: u32, e: u32) -> (u32, u32) {
    (lane / 4 + 8 * (e / 2), 2 * (lane % 4) + e % 2)
}

/// Where register `i` of P's A fragment at k16 step `kk` comes from: `(n8 tile − 2·kk,
/// first element)` of the S fragments; the register packs that element and the next.
pub const fn p_source(i: usize) -> (usize, usize) {
    (i / 2, 2 * (i % 2))
}

#[cfg(target_arch = "nvptx64")]
mod dev {
    use super::*;
    use crate::bf16_gemm::unroll;
    use crate::gpu::async_copy::{commit_group, copy_16_zfill, shared_addr, wait_group};
    use crate::gpu::mma::{
        ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16, pack_bf16x2, split_bf16x2,
    };
    use crate::gpu::vector::F32x4;
    use crate::gpu::{bf16, math, shared, smem, sync_threads, thread, warp};

    /// Issue (not commit) the `cp.async` copies of `ROWS` rows of D bf16 of one head,
    /// rows `r0 ..`, into the swizzled tile at `.shared` address `dst`; rows ≥ `seq` copy 0
    /// bytes (from the head's start) and are zero-filled.
    ///
    /// # Safety
    /// `head` is 16-byte aligned with `seq` rows of D; `dst` a 16-byte-aligned tile of ROWS
    /// rows of D bf16 in shared memory; every thread of the block calls it with its `t`.
    #[inline(always)]
    unsafe fn copy_tile<const D: usize, const ROWS: u32>(
        head: *const u16,
        seq: u32,
        r0: u32,
        dst: u32,
        t: u32,
    ) {
        let d = D as u32;
        unroll!(ROWS as usize * D / 8 / THREADS as usize, i => {
            let (r, c) = copy_chunk(d, t + i as u32 * THREADS);
            let row = r0 + r;
            let inside = row < seq;
            // SAFETY: an inside chunk is 16 readable bytes of row `row` < seq (16-byte
            // aligned: D·2 and 16·c are multiples of 16); an outside one reads nothing. The
            // destination is inside the tile (r < ROWS, c < D/8).
            unsafe {
                let src = if inside { head.add(row as usize * D + 8 * c as usize) } else { head };
                copy_16_zfill(
                    dst + swizzled_byte_offset(d, r, c),
                    src.cast::<f32>(),
                    if inside { 16 } else { 0 },
                );
            }
        });
    }

    /// The kernel body for head dim `D`, `KS = D/16` k16 steps, `NO = D/8` n8 tiles of O.
    ///
    /// # Safety
    /// Q, K, V, O are `gridDim.y` heads of `seq × D` bf16, 16-byte aligned; the launch has
    /// `THREADS` threads, `gridDim.x = ceil(seq / BR)` and `shared_bytes(D)` bytes of
    /// dynamic shared memory.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body<const D: usize, const KS: usize, const NO: usize>(
        q: *const u16,
        k: *const u16,
        v: *const u16,
        o: *mut u16,
        seq: u32,
        scale: f32,
        causal: u32,
    ) {
        const NT: usize = (BC / 8) as usize;
        const { assert!(D == 16 * KS && D == 8 * NO && D.is_multiple_of(64) && NO <= 16) };
        let d = D as u32;
        let t = thread::thread_idx_x();
        let (w, lane) = (t / 32, warp::lane_id());
        // The longest (causal) query tiles first.
        let q0 = (thread::grid_dim_x() - 1 - thread::block_idx_x()) * BR;
        let head = thread::block_idx_y() as usize * seq as usize * D;
        // Asked for as F32x4 so the shared block is declared 16-byte aligned.
        let base = shared::dynamic_shared_mem::<F32x4>();
        let sm = shared_addr(base);
        let (qh, kh, vh) = (
            q.wrapping_add(head),
            k.wrapping_add(head),
            v.wrapping_add(head),
        );
        let oh = o.wrapping_add(head);
        let causal = causal != 0;
        // Keys a row of this block can see: causal blocks stop after their last row.
        let end = if causal { seq.min(q0 + BR) } else { seq };
        let tiles = end.div_ceil(BC);
        let sl = scale * core::f32::consts::LOG2_E;
        let wr = 16 * w;
        // SAFETY: (whole body) global reads are of rows < seq of this head (copy_tile), the
        // stores of rows < seq; shared accesses stay inside shared_bytes(D) (tiles of BR or
        // BC rows at the offsets above, swizzled inside their rows); every thread reaches
        // every barrier and every warp-wide instruction (no early exit; the branches around
        // them are block-uniform).
        unsafe {
            copy_tile::<D, BR>(qh, seq, q0, sm, t);
            copy_tile::<D, BC>(kh, seq, 0, sm + stage_offset(d, true, 0), t);
            copy_tile::<D, BC>(vh, seq, 0, sm + stage_offset(d, false, 0), t);
            commit_group();
            wait_group::<0>();
            sync_threads();
            let mut qf = [[0u32; 4]; KS];
            unroll!(KS, kk => {
                let (r, c) = q_lane(lane, kk as u32);
                qf[kk] = ldmatrix_x4(sm + swizzled_byte_offset(d, wr + r, c));
            });
            let klo: [u32; 4] = core::array::from_fn(|i| k_lane_offset(d, lane, i as u32));
            let vlo: [u32; 4] = core::array::from_fn(|i| v_lane_offset(d, lane, i as u32));
            let mut acc = [[0.0f32; 4]; NO];
            // Running max (raw scores) and per-lane partial sums of rows g, g + 8.
            let mut m = [f32::NEG_INFINITY; 2];
            let mut l = [0.0f32; 2];
            let (rg, _) = acc_row_col(lane, 0);
            let rows = [q0 + wr + rg, q0 + wr + rg + 8];
            let mut jt = 0;
            while jt < tiles {
                if jt > 0 {
                    // Tile jt has landed (this thread's copies) and is visible (everyone's);
                    // every warp is done with tile jt - 1, whose stage is refilled below.
                    wait_group::<0>();
                    sync_threads();
                }
                if jt + 1 < tiles {
                    let s = (jt + 1) % STAGES;
                    copy_tile::<D, BC>(kh, seq, (jt + 1) * BC, sm + stage_offset(d, true, s), t);
                    copy_tile::<D, BC>(vh, seq, (jt + 1) * BC, sm + stage_offset(d, false, s), t);
                }
                commit_group();
                let (kb, vb) = (
                    sm + stage_offset(d, true, jt % STAGES),
                    sm + stage_offset(d, false, jt % STAGES),
                );
                let j0 = jt * BC;
                // S = Q·Kᵀ for the warp's 16 rows and the tile's BC keys.
                let mut s = [[0.0f32; 4]; NT];
                unroll!(KS, kk => {
                    unroll!(NT / 2, p => {
                        let at = klo[kk % 4] + k_step_offset(d, kk as u32, p as u32);
                        let b = ldmatrix_x4(kb + at);
                        s[2 * p] = mma_m16n8k16_bf16(qf[kk], [b[0], b[1]], s[2 * p]);
                        s[2 * p + 1] = mma_m16n8k16_bf16(qf[kk], [b[2], b[3]], s[2 * p + 1]);
                    });
                });
                // Keys past S (last tile) or past a row (the causal diagonal tile).
                if j0 + BC > seq || (causal && j0 + BC > q0 + 1) {
                    unroll!(NT, n => {
                        unroll!(4, e => {
                            let (_, col) = acc_row_col(lane, e as u32);
                            let key = j0 + 8 * n as u32 + col;
                            if key >= seq || (causal && key > rows[e / 2]) {
                                s[n][e] = f32::NEG_INFINITY;
                            }
                        });
                    });
                }
                // Online softmax: the rows' new max over the quad, the correction of what
                // is held, the weights.
                let mut mx = m;
                unroll!(NT, n => {
                    mx[0] = math::max(mx[0], math::max(s[n][0], s[n][1]));
                    mx[1] = math::max(mx[1], math::max(s[n][2], s[n][3]));
                });
                let mut corr = [0.0f32; 2];
                let mut msc = [0.0f32; 2];
                unroll!(2, r => {
                    mx[r] = math::max(mx[r], warp::shfl_xor_f32(mx[r], 1));
                    mx[r] = math::max(mx[r], warp::shfl_xor_f32(mx[r], 2));
                    // A row with every key so far masked keeps 0 weights, not NaN.
                    msc[r] = if mx[r] == f32::NEG_INFINITY { 0.0 } else { mx[r] * sl };
                    corr[r] = math::exp2(m[r] * sl - msc[r]);
                    m[r] = mx[r];
                });
                let mut rs = [0.0f32; 2];
                unroll!(NT, n => {
                    unroll!(4, e => {
                        s[n][e] = math::exp2(math::fma(s[n][e], sl, -msc[e / 2]));
                        rs[e / 2] += s[n][e];
                    });
                });
                unroll!(2, r => {
                    l[r] = math::fma(l[r], corr[r], rs[r]);
                });
                unroll!(NO, n => {
                    unroll!(4, e => {
                        acc[n][e] *= corr[e / 2];
                    });
                });
                // O += P·V, P's A fragments straight from the S fragments.
                unroll!(NT / 2, kk => {
                    let mut hi = [0u32; 4];
                    let mut lo = [0u32; 4];
                    unroll!(4, i => {
                        let (tn, e) = p_source(i);
                        let x = s[2 * kk + tn];
                        (hi[i], lo[i]) = split_bf16x2(x[e], x[e + 1]);
                    });
                    unroll!(NO / 2, np => {
                        let at = vlo[np % 4] + v_step_offset(d, kk as u32, np as u32);
                        let b = ldmatrix_x4_trans(vb + at);
                        acc[2 * np] = mma_m16n8k16_bf16(hi, [b[0], b[1]], acc[2 * np]);
                        acc[2 * np + 1] = mma_m16n8k16_bf16(hi, [b[2], b[3]], acc[2 * np + 1]);
                        if P_SPLIT {
                            acc[2 * np] = mma_m16n8k16_bf16(lo, [b[0], b[1]], acc[2 * np]);
                            acc[2 * np + 1] =
                                mma_m16n8k16_bf16(lo, [b[2], b[3]], acc[2 * np + 1]);
                        }
                    });
                });
                jt += 1;
            }
            // The rows' sums over their quads; l ≥ 1 (the row max contributes 2^0).
            let mut inv = [0.0f32; 2];
            unroll!(2, r => {
                l[r] += warp::shfl_xor_f32(l[r], 1);
                l[r] += warp::shfl_xor_f32(l[r], 2);
                inv[r] = 1.0 / l[r];
            });
            // Stage O in bf16 in the warp's own 16 rows of the Q tile (only this warp ever
            // read them, before the loop's barriers), then 16-byte stores of whole rows.
            let words = base.cast::<u32>();
            // The lanes' `ldmatrix` reads of these rows and their writes below are by
            // different lanes: with a single key tile no block barrier lies between them, so
            // the warp orders them itself (racecheck reported the hazard on the H200).
            warp::sync();
            unroll!(NO, n => {
                unroll!(2, h => {
                    let (r, c) = acc_row_col(lane, 2 * h as u32);
                    let at = swizzled_byte_offset(d, wr + r, n as u32) + 2 * c;
                    *words.add((at / 4) as usize) =
                        pack_bf16x2(acc[n][2 * h] * inv[h], acc[n][2 * h + 1] * inv[h]);
                });
            });
            sync_threads();
            unroll!(BR as usize * D / 8 / THREADS as usize, i => {
                let (r, c) = copy_chunk(d, t + i as u32 * THREADS);
                if q0 + r < seq {
                    let x = smem::load_u32x4(sm + swizzled_byte_offset(d, r, c));
                    bf16::store16(oh.add((q0 + r) as usize * D + 8 * c as usize).cast(), x);
                }
            });
        }
    }
}

macro_rules! entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $ks:literal, $no:literal, $blocks:expr) => {
        crate::kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
                q: *const u16,
                k: *const u16,
                v: *const u16,
                o: *mut u16,
                seq: u32,
                scale: f32,
                causal: u32,
            ) {
                crate::gpu::launch_bounds::<THREADS, { $blocks }>();
                // SAFETY: forwarded; the host launches it as `body` requires, with this D.
                unsafe { dev::body::<$d, $ks, $no>(q, k, v, o, seq, scale, causal) }
            }
        }
    };
}

entry! {
    /// v03 at head dim 64.
    attention_v03_flash_mma_d64, 64, 4, 8, MIN_BLOCKS_D64
}
entry! {
    /// v03 at head dim 128.
    attention_v03_flash_mma_d128, 128, 8, 16, MIN_BLOCKS_D128
}
