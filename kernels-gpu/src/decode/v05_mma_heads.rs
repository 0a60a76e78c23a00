//! decode/v05_mma_heads — the GQA group's query heads as the rows of a tensor-core tile.
//!
//! Changed from v04 (same pipeline: each warp streams its own 32-key tiles through a ring
//! of `STAGES` K-or-V buffers with 16-byte `cp.async`, the block's warps merge once at the
//! end, the same splits and v03's combine): the arithmetic moves to the tensor cores. v04
//! spends ~60 instructions per key and lane (bf16 unpacking, FMAs, a reduce-scatter of
//! shuffles, a shared weights buffer) and ran at 30-40% of the DRAM roof with the SMs
//! issuing, not waiting on memory (ncu, H200, 2026-12-03). Here a block's query heads are
//! the M = 16 rows of `mma.sync.m16n8k16` (heads past the group are zero rows, computed and
//! dropped: the tensor cores have time to spare in decode), exactly as attention v03 treats
//! its 16 query rows a warp:
//! - q: each lane loads its A-fragment words of the block's heads straight from global
//!   memory once (zero for heads past the group);
//! - S = q·Kᵀ: a K tile (32 keys × D) is stored XOR-swizzled (attention v03's layout) and
//!   read by `ldmatrix.x4` as B fragments, 2 key tiles of 8 per instruction;
//! - the online softmax runs on the S fragments in registers (a row's max over a quad of
//!   lanes, two shuffles), keys past the slice masked on the slice's last tile only;
//! - O += P·V: P's A fragments are S's C fragments, split into bf16 hi + lo (the family
//!   keeps f32 weights, see attention v03's `P_SPLIT`), V's B fragments by
//!   `ldmatrix.x4.trans`.
//!
//! Per 32-key tile and warp at D = 128: 16 `ldmatrix` + 32 mmas for S, 16 `ldmatrix` + 64
//! mmas for P·V, ~60 softmax instructions and 32 copies a lane, instead of v04's ~2000. The
//! copies are laid out so that their addresses are a base plus constants (a lane pair per
//! row, see `load`), and the output rows are rescaled only when a max moved.
//!
//! Thread mapping: grid (Hkv · chunks, B, splits) with chunks = ⌈(Hq/Hkv)/16⌉, `WARPS`
//! warps a block; warp `w` takes tiles `w, w + WARPS, ..` of the block's slice; lane `l`
//! holds the C-fragment elements of heads `l/4` and `l/4 + 8` (attention v03's
//! `acc_row_col`), finds key `l`'s cache row, and copies rows `l/2` and `l/2 + 16` of each
//! buffer (chunks `2c + l%2`).
//!
//! Memory traffic: the KV bytes the context lengths need, once for groups up to 16; q and
//! out; with splits, `B·Hq·splits·(D + 2)` f32 partials written and read by the combine.
//!
//! Expected bound: DRAM.

/// v04's pipeline, unchanged: warps a block, keys a tile, buffers a warp's ring, and with
/// them the splits (`v04_vectorized_pipeline::split_len`).
pub use super::v04_vectorized_pipeline::{STAGES, THREADS, TILE, WARPS};
/// Query heads a block: the M of `mma.m16n8k16`.
pub const HEADS: u32 = 16;

/// Dynamic shared memory of a block at head dim `d`: the warps' rings of K or V tiles
/// (bf16), reused at the end for the warps' partial rows (f32) and their (m, l).
pub const fn shared_bytes(d: u32) -> u32 {
    let ring = WARPS * STAGES * TILE * d * 2;
    let merge = WARPS * HEADS * (d + 2) * 4;
    if ring > merge { ring } else { merge }
}

/// Where lane `lane`'s copy `c` of row `lane/2 + 16·j` lands in a K or V buffer: the row's
/// start, plus `chunk_offset(lane, c % 4) + 128·(c / 4)` for chunk `2c + lane % 2` — attention
/// v03's swizzle (`swizzled_byte_offset`: chunk `ch ^ (row & 7)`), whose XOR touches the low
/// 3 bits of the chunk index only, and `row & 7 = (lane/2) & 7` for both of the lane's rows.
pub const fn chunk_offset(lane: u32, i: u32) -> u32 {
    ((2 * i + lane % 2) ^ ((lane / 2) & 7)) * 16
}

// Four n8 key tiles a K tile (two k16 steps of P·V); 32 lanes copy whole 16-byte pieces.
const _: () = assert!(TILE == 32 && HEADS == 16);

#[cfg(target_arch = "nvptx64")]
pub(super) mod dev {
    use super::*;
    use crate::attention::v03_flash_mma::{
        acc_row_col, k_lane_offset, k_step_offset, p_source, v_lane_offset, v_step_offset,
    };
    use crate::bf16_gemm::unroll;
    use crate::gpu::async_copy::{commit_group, copy_16_zfill, shared_addr, wait_group};
    use crate::gpu::mma::{ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16, split_bf16x2};
    use crate::gpu::vector::F32x4;
    use crate::gpu::{math, shared, sync_threads, thread, warp};

    /// Issue (not commit) lane `lane`'s copies of a K or V buffer at `.shared` address
    /// `dst`: rows `lane/2 + 16·j` for `j < R` (v05: 2 of its 32-key tiles, v06: 1 of its
    /// 16), whose cache rows are `rows` (`u32::MAX`: past the slice, 0 bytes copied,
    /// zero-filled), chunks `2c + lane % 2` at the swizzled offsets `coff[c % 4] + 128·(c / 4)`
    /// ([`chunk_offset`]).
    ///
    /// # Safety
    /// `cache` has every row in `rows` (other than `u32::MAX`), each of D bf16, 16-byte
    /// aligned; `dst` is a `16·R × D` bf16 buffer in shared memory.
    #[inline(always)]
    pub(in crate::decode) unsafe fn load_rows<const D: usize, const R: usize>(
        cache: *const u16,
        dst: u32,
        rows: [u32; R],
        lane: u32,
        coff: [u32; 4],
    ) {
        let (pair_row, odd) = (lane / 2, lane % 2);
        unroll!(R, j => {
            let ok = rows[j] != u32::MAX;
            // SAFETY: the caller's contract; a row past the slice reads 0 bytes (from the
            // cache's start).
            unsafe {
                let src = if ok { cache.add(rows[j] as usize * D + 8 * odd as usize) } else { cache };
                let n = if ok { 16 } else { 0 };
                let to = dst + (pair_row + 16 * j as u32) * D as u32 * 2;
                unroll!(D / 16, c => {
                    copy_16_zfill(to + coff[c % 4] + 128 * (c / 4) as u32, src.add(16 * c) as *const f32, n);
                });
            }
        });
    }

    /// The kernel body for head dim `D`, `KS = D/16` k16 steps, `NO = D/8` n8 tiles of O.
    ///
    /// # Safety
    /// The buffers have decode's shapes (`super::super`); every block-table entry a context
    /// needs is `< num_pages`, every length is in `1..=max_pages·page_size` and cache rows
    /// (`num_pages·page_size·Hkv`) fit in u32 (host-checked); the launch is grid
    /// (Hkv·chunks, B, splits) with chunks = ⌈(Hq/Hkv)/HEADS⌉, `THREADS` threads and
    /// `shared_bytes(D)` of dynamic shared memory; with `splits > 1` the workspace holds
    /// `B·Hq·splits` rows of D f32 and as many (m, l) pairs, and `split_len` (a multiple of
    /// `TILE`) times `splits` covers the longest context.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn body<const D: usize, const KS: usize, const NO: usize>(
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
        const NT: usize = TILE as usize / 8;
        const { assert!(D == 16 * KS && D == 8 * NO && D.is_multiple_of(64) && NO <= 16) };
        let d = D as u32;
        let tile_bytes = TILE * d * 2;
        let t = thread::thread_idx_x();
        let (w, lane) = (t / 32, warp::lane_id());
        let group = hq / hkv;
        let chunks = thread::grid_dim_x() / hkv;
        let (kvh, chunk) = (thread::block_idx_x() / chunks, thread::block_idx_x() % chunks);
        let b = thread::block_idx_y();
        let z = thread::block_idx_z();
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
            let len = *context_lens.add(b as usize);
            let begin = (z as u64 * split_len as u64).min(len as u64) as u32;
            let end = (begin as u64 + split_len as u64).min(len as u64) as u32;

            // q's A fragments (PTX ISA, m16n8k16 A: a0 row g, a1 row g+8, a2/a3 the same
            // rows 8 dims on), raw bf16 pairs; heads past the group stay zero.
            let g = lane / 4;
            let h0 = chunk * HEADS;
            let mut qf = [[0u32; 4]; KS];
            unroll!(4, i => {
                let r = g + 8 * (i as u32 % 2);
                if h0 + r < group {
                    let row = q.add((b * hq + kvh * group + h0 + r) as usize * D);
                    let at = 2 * (lane % 4) as usize + 8 * (i / 2);
                    unroll!(KS, kk => {
                        qf[kk][i] = *(row.add(16 * kk + at) as *const u32);
                    });
                }
            });

            let ring = sm + w * STAGES * tile_bytes;
            let table = block_table.add(b as usize * max_pages as usize);
            // Warp w's tiles: w, w + WARPS, .. of [begin, end); its chunks K0, V0, K1, V1, ..
            let tiles = (end - begin).div_ceil(TILE);
            let mine = if w < tiles { (tiles - w).div_ceil(WARPS) } else { 0 };
            let start_of = |i: u32| begin + (w + i * WARPS) * TILE;
            // Lane l's key of the tile starting at `j0`: its cache row (u32::MAX past the
            // slice).
            let slot_of = |j0: u32| {
                let j = j0 + lane;
                if j < end {
                    let page = *table.add((j / page_size) as usize) as u64;
                    ((page * page_size as u64 + (j % page_size) as u64) * hkv as u64
                        + kvh as u64) as u32
                } else {
                    u32::MAX
                }
            };
            // Copies: a lane pair per row, 16 rows an instruction (32 contiguous bytes a
            // pair: whole sectors), so lane l copies rows l/2 and l/2 + 16 of each buffer,
            // chunks 2c + l%2. Its rows' cache rows come from the lanes that looked them up
            // (two shuffles a buffer, outside any branch); its swizzled chunk offsets are
            // `coff[c % 4] + 128·(c / 4)` (the XOR with the row's low bits, r & 7, touches
            // the low 3 bits of the chunk index only), so the copies' addresses are a base
            // plus constants.
            let pair_row = lane / 2;
            let coff: [u32; 4] = core::array::from_fn(|i| chunk_offset(lane, i as u32));
            let rows_of = |slot: u32| {
                [warp::shfl_idx_u32(slot, pair_row), warp::shfl_idx_u32(slot, pair_row + 16)]
            };
            // The cache chunk `c` copies from: tile c/2's K rows when c is even, V rows when
            // odd. (The copies are a function, `load_rows`, not a closure here: LLVM left such
            // a closure out of line and its captures went to local memory.)
            let cache_of = |c: u32| if c.is_multiple_of(2) { k_cache } else { v_cache };

            let chunks_mine = 2 * mine;
            // The slot of the tile whose K chunk was issued last (its V chunk follows).
            let mut slot = 0u32;
            for c in 0..STAGES - 1 {
                if c < chunks_mine && c.is_multiple_of(2) {
                    slot = slot_of(start_of(c / 2));
                }
                let rows = rows_of(slot);
                if c < chunks_mine {
                    load_rows::<D, 2>(cache_of(c), ring + c * tile_bytes, rows, lane, coff);
                }
                commit_group();
            }

            let klo: [u32; 4] = core::array::from_fn(|i| k_lane_offset(d, lane, i as u32));
            let vlo: [u32; 4] = core::array::from_fn(|i| v_lane_offset(d, lane, i as u32));
            let mut acc = [[0.0f32; 4]; NO];
            // Running max (raw scores) and per-lane partial sums of heads g, g + 8.
            let mut m = [f32::NEG_INFINITY; 2];
            let mut l = [0.0f32; 2];
            // The last K tile's weights, for its V tile.
            let mut s = [[0.0f32; 4]; NT];
            for c in 0..chunks_mine {
                let next = c + STAGES - 1;
                if next < chunks_mine && next.is_multiple_of(2) {
                    slot = slot_of(start_of(next / 2));
                }
                let rows = rows_of(slot);
                if next < chunks_mine {
                    let dst = ring + (next % STAGES) * tile_bytes;
                    load_rows::<D, 2>(cache_of(next), dst, rows, lane, coff);
                }
                commit_group();
                wait_group::<{ STAGES - 1 }>();
                warp::sync();
                let buf = ring + (c % STAGES) * tile_bytes;

                if c.is_multiple_of(2) {
                    // S = q·Kᵀ for the block's 16 heads and the tile's 32 keys, the even and
                    // odd k16 steps into separate accumulators: chains of D/32 dependent
                    // mmas instead of D/16 (a warp has few neighbours to hide latency).
                    s = [[0.0f32; 4]; NT];
                    let mut s_odd = [[0.0f32; 4]; NT];
                    unroll!(KS, kk => {
                        let acc_s = if kk.is_multiple_of(2) { &mut s } else { &mut s_odd };
                        unroll!(NT / 2, p => {
                            let at = klo[kk % 4] + k_step_offset(d, kk as u32, p as u32);
                            let kb = ldmatrix_x4(buf + at);
                            acc_s[2 * p] =
                                mma_m16n8k16_bf16(qf[kk], [kb[0], kb[1]], acc_s[2 * p]);
                            acc_s[2 * p + 1] =
                                mma_m16n8k16_bf16(qf[kk], [kb[2], kb[3]], acc_s[2 * p + 1]);
                        });
                    });
                    unroll!(NT, n => {
                        unroll!(4, e => {
                            s[n][e] += s_odd[n][e];
                        });
                    });
                    // Keys past the slice (its last tile only; zero-filled rows).
                    let j0 = start_of(c / 2);
                    if j0 + TILE > end {
                        unroll!(NT, n => {
                            unroll!(4, e => {
                                let (_, col) = acc_row_col(lane, e as u32);
                                if j0 + 8 * n as u32 + col >= end {
                                    s[n][e] = f32::NEG_INFINITY;
                                }
                            });
                        });
                    }
                    // Online softmax. Key j0 is inside the slice, so every head's max is
                    // finite (heads past the group score 0).
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
                        msc[r] = mx[r] * sl;
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
                    // The output rows need rescaling only when a max moved (rarely, after
                    // the first tiles): one vote instead of D/2 multiplies.
                    if warp::any(corr[0] != 1.0 || corr[1] != 1.0) {
                        unroll!(NO, n => {
                            unroll!(4, e => {
                                acc[n][e] *= corr[e / 2];
                            });
                        });
                    }
                } else {
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
                            let vb = ldmatrix_x4_trans(buf + at);
                            acc[2 * np] = mma_m16n8k16_bf16(hi, [vb[0], vb[1]], acc[2 * np]);
                            acc[2 * np + 1] =
                                mma_m16n8k16_bf16(hi, [vb[2], vb[3]], acc[2 * np + 1]);
                            acc[2 * np] = mma_m16n8k16_bf16(lo, [vb[0], vb[1]], acc[2 * np]);
                            acc[2 * np + 1] =
                                mma_m16n8k16_bf16(lo, [vb[2], vb[3]], acc[2 * np + 1]);
                        });
                    });
                }
                // Every lane is done with this buffer before it is refilled.
                warp::sync();
            }
            wait_group::<0>();

            // The warps' partial rows into the merge area (over the rings, after every
            // warp's loop): acc [w][head][D] f32, then (m in the log2 domain, l) [w][head].
            sync_threads();
            let mo = base as *mut f32;
            let ml = mo.add((WARPS * HEADS) as usize * D);
            let hw = (w * HEADS) as usize;
            unroll!(NO, n => {
                unroll!(4, e => {
                    let (r, col) = acc_row_col(lane, e as u32);
                    *mo.add((hw + r as usize) * D + 8 * n + col as usize) = acc[n][e];
                });
            });
            unroll!(2, r => {
                l[r] += warp::shfl_xor_f32(l[r], 1);
                l[r] += warp::shfl_xor_f32(l[r], 2);
                if lane % 4 == 0 {
                    let at = 2 * (hw + (g + 8 * r as u32) as usize);
                    *ml.add(at) = m[r] * sl;
                    *ml.add(at + 1) = l[r];
                }
            });
            sync_threads();
            super::super::merge_warps::<D, { HEADS as usize }, { WARPS as usize }>(
                mo, ml, out, ws_o, ws_ml, hq, group, kvh, chunk, b,
                super::super::MergeDest::of_splits(b, hq, kvh * group + chunk * HEADS, z, thread::grid_dim_z()),
            );
        }
    }
}

super::pipeline_entry! { /// v05 at head dim 64.
    decode_v05_mma_heads_d64 => dev::body<64, 4, 8>, launch_bounds(THREADS) }
super::pipeline_entry! { /// v05 at head dim 128.
    decode_v05_mma_heads_d128 => dev::body<128, 8, 16>, launch_bounds(THREADS) }
