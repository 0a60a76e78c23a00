//! attention/v04_flash_wgmma — Hopper's warpgroup MMA fed by the copy engine, in warpgroups
//! with roles (FlashAttention-3's structure; sm_90a only).
//!
//! Changed from v03 (same online softmax in the log2 domain, same P split, same causal stop):
//! - Both products are `wgmma` ([`crate::gpu::hopper`]), 64 query rows a *warpgroup*
//!   instead of 16 a warp: S = Q·Kᵀ is `m64n128k16` with Q (A) and K (B) read from shared
//!   memory through descriptors, both K-major; O += P·V is `m64nDk16` with P (A) straight
//!   from the registers — the S accumulators' layout is, pair for pair, wgmma's A fragment
//!   ([`p_source`]) — and V (B) MN-major from shared memory (`imm-trans-b`, D contiguous),
//!   so nothing is transposed.
//! - Copies by the tensor copy engine (TMA), not by the threads: a *producer* warpgroup
//!   (one thread of it issues, the warpgroup gives its registers away with `setmaxnreg`)
//!   brings Q once and K/V tiles of `BC` keys into a `STAGES`-deep ring; each tile lands in
//!   the 128-byte swizzle wgmma reads, in panels of 64 dims, and completes on an mbarrier
//!   (K and V apart, so S = Q·Kᵀ starts before V has landed). The two *consumer*
//!   warpgroups (64 rows each of the block's 128) release a stage once both products have
//!   read it. 3-D tensor maps over `[B·H, S, D]` zero-fill past S inside each head.
//! - The two consumers share each K/V tile, and while one does its softmax on the CUDA
//!   cores the other's wgmmas can run: the tensor pipe is shared, not idle.
//! - Epilogue: O = acc / l, bf16 pairs stored from the accumulators (rows < S).
//!
//! Thread mapping: block (query tile of `BR` rows, head) of `BLOCK_THREADS` = 3 warpgroups;
//! warpgroup 0 produces; consumer `c` (warpgroup `c + 1`) owns rows `q0 + 64·c ..+64`, thread
//! `t` of it (warp `w`, lane `l`) the accumulator elements at rows `16·w + l/4 (+8)`,
//! columns `8·n + 2·(l % 4) (+1)` of every n8 tile ([`acc_row_col`]). Query tiles are taken
//! in reverse order (the longest causal rows first).
//!
//! Memory traffic: as v03 — Q read and O written once; K and V once per block of `BR`
//! queries (S/BR passes over a head's K and V, from L2); shared memory:
//! [`shared_bytes`] (162 KiB at D 128, 82 KiB at D 64), one block an SM.
//!
//! Expected bound: the tensor pipe (the run's `wgmma` roof, ~970 TFLOP/s on an H200), short
//! of the softmax's `ex2`/FMAs, which this step does not yet overlap with its own
//! warpgroup's wgmmas (FlashAttention-3's intra-warpgroup pipelining), and of the P split,
//! which makes P·V two wgmmas: 6·D tensor FLOPs per pair where the count is 4·D, so the
//! counted ceiling is two thirds of the roof.

/// Consumer warpgroups a block: 64 query rows each.
pub const CONSUMERS: u32 = 2;
/// Query rows per block.
pub const BR: u32 = 64 * CONSUMERS;
/// Keys per K/V tile: the N of S = Q·Kᵀ's `m64n128k16`.
pub const BC: u32 = 128;
/// Threads per block: the producer warpgroup and the consumers.
pub const BLOCK_THREADS: u32 = 128 * (CONSUMERS + 1);
/// K/V tiles in flight.
pub const STAGES: u32 = 2;
/// P·V with P as bf16 hi + lo (two wgmmas, weights within ~2^-17) as in v03.
pub const P_SPLIT: bool = true;
/// Dims of one 128-byte swizzled panel (64 bf16): a tile of D dims is D/64 panels.
pub const PANEL: u32 = 64;
/// Registers a thread of the producer warpgroup keeps, and what each consumer thread grows
/// to: 24·128 + 240·256 = 64512 of the SM's 65536.
pub const PRODUCER_REGS: u32 = 24;
pub const CONSUMER_REGS: u32 = 240;

const _: () = assert!(BR == BC && BC.is_multiple_of(16) && BC == 128 && STAGES >= 2);
const _: () = assert!(PRODUCER_REGS * 128 + CONSUMER_REGS * 128 * CONSUMERS <= 65536);

/// Bytes of the Q tile: `BR` rows of D bf16, as D/64 panels of `BR` rows of 128 bytes.
pub const fn q_bytes(d: u32) -> u32 {
    BR * d * 2
}

/// Bytes of one K (or V) tile: `BC` rows of D bf16, as D/64 panels.
pub const fn kv_bytes(d: u32) -> u32 {
    BC * d * 2
}

/// Offset (from the 1024-byte-aligned base) of K stage `s` (`k`) or V stage `s`: Q, then
/// for each stage its K tile and its V tile.
pub const fn stage_offset(d: u32, k: bool, s: u32) -> u32 {
    q_bytes(d) + s * 2 * kv_bytes(d) + if k { 0 } else { kv_bytes(d) }
}

/// Offset of the mbarriers: `q_full`, then `k_full[s]`, `v_full[s]`, `empty[s]`, 8 bytes each.
pub const fn barriers_offset(d: u32) -> u32 {
    q_bytes(d) + STAGES * 2 * kv_bytes(d)
}

/// Dynamic shared memory for head dim `d`: the tiles, 1024 bytes to align them (the dynamic
/// block is only 16-byte aligned) and the barriers.
pub const fn shared_bytes(d: u32) -> u32 {
    barriers_offset(d) + 1024 + 8 * (1 + 3 * STAGES)
}

/// Byte offset, inside a tile of `rows` rows stored as 64-dim panels, of the 128-byte row
/// `row` of panel `panel` (before the swizzle, which TMA and wgmma apply by address).
pub const fn panel_row(rows: u32, panel: u32, row: u32) -> u32 {
    panel * rows * 128 + row * 128
}

/// The descriptor start (offset in a tile of `rows` rows) of K16 step `ks` of a K-major
/// operand's rows `row ..`: dims `16·ks ..` are panel `ks / 4`, 32 bytes per step inside it.
pub const fn k_major_step(rows: u32, row: u32, ks: u32) -> u32 {
    panel_row(rows, ks / 4, row) + (ks % 4) * 32
}

/// The descriptor start (offset in a V tile) of P·V's K16 step `kk`: keys `16·kk ..`, two
/// 8-row atoms of every panel (the descriptor's leading offset steps across panels).
pub const fn v_step(kk: u32) -> u32 {
    panel_row(BC, 0, 16 * kk)
}

/// The (row inside the warpgroup's 64, column inside the n8 tile `i / 4`) of accumulator
/// element `i` of thread `t` (0..128), as wgmma lays out D.
pub const fn acc_row_col(t: u32, i: u32) -> (u32, u32) {
    (
        16 * (t / 32) + (t % 32) / 4 + 8 * ((i % 4) / 2),
        8 * (i / 4) + 2 * (t % 4) + i % 2,
    )
}

/// Where register `r` of P's A fragment at K16 step `kk` comes from: element `2·kk·4 +
/// p_source(r)` and the next one of the S accumulators (n8 tiles 2kk and 2kk + 1).
pub const fn p_source(r: u32) -> u32 {
    4 * (r / 2) + 2 * (r % 2)
}

/// The first query row of block `x` of a grid of `grid_x` query tiles: the last tile
/// first (with causal masking its rows see the most keys, so they start earliest).
pub const fn block_q0(grid_x: u32, x: u32) -> u32 {
    (grid_x - 1 - x) * BR
}

/// Key tiles a block starting at query `q0` reads: every key up to S, or, causal, up to its
/// last row.
pub const fn key_tiles(seq: u32, q0: u32, causal: bool) -> u32 {
    let end = if causal && q0 + BR < seq {
        q0 + BR
    } else {
        seq
    };
    end.div_ceil(BC)
}

/// Whether key tile `j0 ..+BC` holds a key some row `r0 ..+64` of a consumer must not see
/// (past S, or causal, past the row), so that the consumer masks it.
pub const fn tile_has_masked(j0: u32, r0: u32, seq: u32, causal: bool) -> bool {
    j0 + BC > seq || (causal && j0 + BC > r0 + 1)
}

/// Whether `row` must not see `key`.
pub const fn masked(key: u32, row: u32, seq: u32, causal: bool) -> bool {
    key >= seq || (causal && key > row)
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::*;
    use crate::bf16_gemm::unroll;
    use crate::gpu::async_copy::shared_addr;
    use crate::gpu::hopper::{
        fence_mbarrier_init, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
        mbarrier_wait, prefetch_tensormap, setmaxnreg_dec, setmaxnreg_inc, smem_desc_sw128,
        smem_desc_sw128_mn, tma_load_3d, wgmma_commit, wgmma_fence, wgmma_m64n128k16_bf16,
        wgmma_wait,
    };
    use crate::gpu::mma::split_bf16x2;
    use crate::gpu::vector::F32x4;
    use crate::gpu::{math, shared, sync_threads, thread, warp};
    use crate::tensor_map::TensorMap;

    /// `acc += A·V` for the O accumulators of head dim `2·NO` (`m64n64k16` or `m64n128k16`,
    /// A from registers, V MN-major).
    ///
    /// # Safety
    /// As `wgmma_m64n*k16_bf16_rs_tb`.
    #[inline(always)]
    unsafe fn pv<const NO: usize>(acc: &mut [f32; NO], a: [u32; 4], b_desc: u64) {
        use crate::gpu::hopper::{wgmma_m64n64k16_bf16_rs_tb, wgmma_m64n128k16_bf16_rs_tb};
        const { assert!(NO == 32 || NO == 64) };
        // SAFETY: forwarded; the casts are to the array's own length (NO).
        unsafe {
            let p = acc as *mut [f32; NO];
            if NO == 32 {
                wgmma_m64n64k16_bf16_rs_tb(&mut *p.cast::<[f32; 32]>(), a, b_desc)
            } else {
                wgmma_m64n128k16_bf16_rs_tb(&mut *p.cast::<[f32; 64]>(), a, b_desc)
            }
        }
    }

    /// Shared-memory addresses of the tiles and barriers (module docs, [`stage_offset`]).
    #[derive(Clone, Copy)]
    struct Smem {
        base: u32,
        d: u32,
    }

    impl Smem {
        fn q(self) -> u32 {
            self.base
        }
        fn k(self, j: u32) -> u32 {
            self.base + stage_offset(self.d, true, j % STAGES)
        }
        fn v(self, j: u32) -> u32 {
            self.base + stage_offset(self.d, false, j % STAGES)
        }
        fn q_full(self) -> u32 {
            self.base + barriers_offset(self.d)
        }
        fn k_full(self, j: u32) -> u32 {
            self.q_full() + 8 * (1 + j % STAGES)
        }
        fn v_full(self, j: u32) -> u32 {
            self.k_full(j) + 8 * STAGES
        }
        fn empty(self, j: u32) -> u32 {
            self.v_full(j) + 8 * STAGES
        }
    }

    /// Ring position `j`'s round parity.
    fn parity(j: u32) -> u32 {
        (j / STAGES) & 1
    }

    /// The kernel body for head dim `D`, `NO = D/2` O accumulators a thread.
    ///
    /// # Safety
    /// The maps describe Q, K, V as `[heads, seq, D]` bf16 with boxes of 64 dims × 128 rows
    /// × 1 head and the 128-byte swizzle; O is `heads × seq × D` bf16; the launch has
    /// `BLOCK_THREADS` threads, grid `(ceil(seq / BR), heads)` and `shared_bytes(D)` bytes of
    /// dynamic shared memory.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body<const D: usize, const NO: usize>(
        qmap: *const TensorMap,
        kmap: *const TensorMap,
        vmap: *const TensorMap,
        o: *mut u16,
        seq: u32,
        scale: f32,
        causal: u32,
    ) {
        let d = D as u32;
        let panels = d / PANEL;
        let t = thread::thread_idx_x();
        let wg = t / 128;
        let bh = thread::block_idx_y();
        let q0 = block_q0(thread::grid_dim_x(), thread::block_idx_x());
        let causal = causal != 0;
        let tiles = key_tiles(seq, q0, causal);
        let sm = Smem {
            base: (shared_addr(shared::dynamic_shared_mem::<F32x4>()) + 1023) & !1023,
            d,
        };
        if t == 0 {
            // SAFETY: the barriers lie past the tiles, inside the dynamic shared memory.
            unsafe {
                prefetch_tensormap(qmap.cast());
                prefetch_tensormap(kmap.cast());
                prefetch_tensormap(vmap.cast());
                mbarrier_init(sm.q_full(), 1);
                for s in 0..STAGES {
                    mbarrier_init(sm.k_full(s), 1);
                    mbarrier_init(sm.v_full(s), 1);
                    mbarrier_init(sm.empty(s), 4 * CONSUMERS);
                }
            }
            fence_mbarrier_init();
        }
        sync_threads();
        if wg == 0 {
            setmaxnreg_dec::<PRODUCER_REGS>();
            if t == 0 {
                // SAFETY: one thread; the maps and tiles as the body's contract (each box
                // is 64 dims × 128 rows, PANEL·BR·2 = PANEL·BC·2 bytes).
                unsafe {
                    mbarrier_arrive_expect_tx(sm.q_full(), q_bytes(d));
                    for p in 0..panels {
                        tma_load_3d(
                            sm.q() + panel_row(BR, p, 0),
                            qmap.cast(),
                            p * PANEL,
                            q0,
                            bh,
                            sm.q_full(),
                        );
                    }
                    for j in 0..tiles {
                        mbarrier_wait(sm.empty(j), parity(j) ^ 1);
                        mbarrier_arrive_expect_tx(sm.k_full(j), kv_bytes(d));
                        for p in 0..panels {
                            let at = panel_row(BC, p, 0);
                            tma_load_3d(
                                sm.k(j) + at,
                                kmap.cast(),
                                p * PANEL,
                                j * BC,
                                bh,
                                sm.k_full(j),
                            );
                        }
                        mbarrier_arrive_expect_tx(sm.v_full(j), kv_bytes(d));
                        for p in 0..panels {
                            let at = panel_row(BC, p, 0);
                            tma_load_3d(
                                sm.v(j) + at,
                                vmap.cast(),
                                p * PANEL,
                                j * BC,
                                bh,
                                sm.v_full(j),
                            );
                        }
                    }
                }
            }
        } else {
            setmaxnreg_inc::<CONSUMER_REGS>();
            // SAFETY: forwarded.
            unsafe { consume::<D, NO>(sm, o, seq, scale, causal, q0, tiles, wg - 1) };
        }
    }

    /// One consumer warpgroup's part of [`body`]: rows `q0 + 64·c ..` over `tiles` key tiles.
    ///
    /// # Safety
    /// As [`body`]; all 128 threads of warpgroup `c + 1` call it.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn consume<const D: usize, const NO: usize>(
        sm: Smem,
        o: *mut u16,
        seq: u32,
        scale: f32,
        causal: bool,
        q0: u32,
        tiles: u32,
        c: u32,
    ) {
        const NT: usize = (BC / 8) as usize;
        let ct = thread::thread_idx_x() % 128;
        let lane = warp::lane_id();
        let sl = scale * core::f32::consts::LOG2_E;
        let r0 = q0 + 64 * c;
        let (rg, _) = acc_row_col(ct, 0);
        let rows = [r0 + rg, r0 + rg + 8];
        const { assert!(2 * NO == D) };
        let mut acc = [0.0f32; NO];
        // Running max (raw scores) and per-lane partial sums of rows g, g + 8.
        let mut m = [f32::NEG_INFINITY; 2];
        let mut l = [0.0f32; 2];
        // SAFETY: (whole loop) the barriers are initialized; a stage is read only between
        // its full barriers' completion and this warp's arrival on its empty barrier; every
        // wgmma is issued by the whole warpgroup (the branches around them are uniform in
        // it) and waited for before its registers or tiles are touched again.
        unsafe {
            mbarrier_wait(sm.q_full(), 0);
            let mut j = 0;
            while j < tiles {
                let j0 = j * BC;
                mbarrier_wait(sm.k_full(j), parity(j));
                // S = Q·Kᵀ: the warpgroup's 64 rows × BC keys, D/16 K16 steps.
                let mut s = [0.0f32; 64];
                wgmma_fence();
                unroll!(D / 16, ks => {
                    let a = smem_desc_sw128(sm.q() + k_major_step(BR, 64 * c, ks as u32));
                    let b = smem_desc_sw128(sm.k(j) + k_major_step(BC, 0, ks as u32));
                    wgmma_m64n128k16_bf16(&mut s, a, b);
                });
                wgmma_commit();
                wgmma_wait::<0>();
                // Keys past S (last tile) or past a row (causal tiles reaching past r0).
                if tile_has_masked(j0, r0, seq, causal) {
                    unroll!(NT, n => {
                        unroll!(4, e => {
                            let i = 4 * n + e;
                            // col is the key inside the tile (the n8 tile included).
                            let (_, col) = acc_row_col(ct, i as u32);
                            if masked(j0 + col, rows[e / 2], seq, causal) {
                                s[i] = f32::NEG_INFINITY;
                            }
                        });
                    });
                }
                // Online softmax, as v03: the rows' max over the quad, the correction, the
                // weights.
                let mut mx = m;
                unroll!(NT, n => {
                    mx[0] = math::max(mx[0], math::max(s[4 * n], s[4 * n + 1]));
                    mx[1] = math::max(mx[1], math::max(s[4 * n + 2], s[4 * n + 3]));
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
                        let i = 4 * n + e;
                        s[i] = math::exp2(math::fma(s[i], sl, -msc[e / 2]));
                        rs[e / 2] += s[i];
                    });
                });
                unroll!(2, r => {
                    l[r] = math::fma(l[r], corr[r], rs[r]);
                });
                unroll!(NO / 4, n => {
                    unroll!(4, e => {
                        acc[4 * n + e] *= corr[e / 2];
                    });
                });
                // P's A fragments, straight from the S accumulators.
                let mut hi = [[0u32; 4]; NT / 2];
                let mut lo = [[0u32; 4]; NT / 2];
                unroll!(NT / 2, kk => {
                    unroll!(4, r => {
                        let i = 8 * kk + p_source(r as u32) as usize;
                        (hi[kk][r], lo[kk][r]) = split_bf16x2(s[i], s[i + 1]);
                    });
                });
                // O += P·V.
                mbarrier_wait(sm.v_full(j), parity(j));
                wgmma_fence();
                unroll!(NT / 2, kk => {
                    let b = smem_desc_sw128_mn(sm.v(j) + v_step(kk as u32), BC * 128);
                    pv(&mut acc, hi[kk], b);
                    if P_SPLIT {
                        pv(&mut acc, lo[kk], b);
                    }
                });
                wgmma_commit();
                wgmma_wait::<0>();
                if lane == 0 {
                    mbarrier_arrive(sm.empty(j));
                }
                j += 1;
            }
            // The rows' sums over their quads; l ≥ 1 (the row max contributes 2^0).
            let mut inv = [0.0f32; 2];
            unroll!(2, r => {
                l[r] += warp::shfl_xor_f32(l[r], 1);
                l[r] += warp::shfl_xor_f32(l[r], 2);
                inv[r] = 1.0 / l[r];
            });
            let oh = o.wrapping_add(thread::block_idx_y() as usize * seq as usize * D);
            let words = oh.cast::<u32>();
            unroll!(NO / 4, n => {
                unroll!(2, h => {
                    let (r, col) = acc_row_col(ct, (4 * n + 2 * h) as u32);
                    let row = r0 + r;
                    if row < seq {
                        let at = row as usize * D + col as usize;
                        *words.add(at / 2) = crate::gpu::mma::pack_bf16x2(
                            acc[4 * n + 2 * h] * inv[h],
                            acc[4 * n + 2 * h + 1] * inv[h],
                        );
                    }
                });
            });
        }
    }
}

macro_rules! entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $no:literal) => {
        crate::kernel! {
            $(#[$doc])*
            #[cfg(target_feature = "sm_90a")]
            pub unsafe fn $name(
                q_map: *const crate::tensor_map::TensorMap,
                k_map: *const crate::tensor_map::TensorMap,
                v_map: *const crate::tensor_map::TensorMap,
                o: *mut u16,
                seq: u32,
                scale: f32,
                causal: u32,
            ) {
                crate::gpu::hopper::launch_bounds::<BLOCK_THREADS, 1>();
                // SAFETY: forwarded; the host encodes the maps over [B·H, S, D] with boxes of
                // 64 dims × 128 rows and the 128-byte swizzle, and launches this geometry.
                unsafe {
                    dev::body::<$d, $no>(q_map, k_map, v_map, o, seq, scale, causal)
                }
            }
        }
    };
}

entry! {
    /// v04 at head dim 64 (sm_90a).
    attention_v04_flash_wgmma_d64, 64, 32
}
entry! {
    /// v04 at head dim 128 (sm_90a).
    attention_v04_flash_wgmma_d128, 128, 64
}
