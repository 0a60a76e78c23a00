//! decode/v04_vectorized_pipeline — 16-byte asynchronous page copies, warps that never wait
//! for each other, and a split for every shape.
//!
//! Changed from v03: v01-v03 gather K and V into shared memory with 2-byte loads, a page
//! lookup (a division) per element, and two block barriers per 32 keys: at most a few KB in
//! flight per SM, so they run at a few percent of the DRAM roof (H200, 2026-12-03: v03 4.7%
//! at batch 1 × L 32768, v02 4.9% at batch 64 × L 4096). Here:
//! - each warp streams its own tiles of `TILE` keys through a private ring of `STAGES`
//!   shared-memory buffers, a K tile and then a V tile each (8 KB at D = 128), with
//!   `cp.async` of 16 bytes, `STAGES − 1` buffers ahead of its math; the page lookup is one
//!   division per lane per tile (lane `l` finds key `l`'s cache row and the copies take it by
//!   `shfl`); keys past the context are zero-filled, never read;
//! - lanes own dims, not keys: lane `l` holds dims `[PER·l, PER·l + PER)` of every query head
//!   of the block (in registers) and reads the same dims of each K and V row (8 bytes at
//!   D = 128: a conflict-free row read); the 32 keys' partial dot products are summed across
//!   lanes by a reduce-scatter butterfly (`31·GC` shuffles a tile, leaving key `l`'s scores
//!   in lane `l`), the online softmax runs a lane per key, and the weights go through a small
//!   shared buffer to every lane for P·V (unrolled, so later rows' loads overlap earlier
//!   rows' FMAs);
//! - the block's `WARPS` warps take interleaved tiles of its slice and merge their partial
//!   rows in shared memory once at the end: no block barrier in the loop;
//! - every shape is split (`split_len`, chosen by the host from the context lengths and the
//!   blocks the GPU holds at once) into about `BLOCKS_PER_SM_TARGET` blocks per resident
//!   block, however few sequences there are; one split writes the output directly, more go
//!   through v03's combine.
//!
//! One block serves `GC` query heads of one KV head (a chunk of its GQA group, `GC` a power
//! of two up to 8, built per `GC`): each KV byte is read once per chunk — once for groups up
//! to 8.
//!
//! Thread mapping: grid (Hkv · chunks, B, splits), `WARPS` warps a block; warp `w` takes
//! tiles `w, w + WARPS, ..` of the block's slice; lane `l` copies 16-byte pieces of each
//! buffer, holds dims `PER·l..` for the math and scores key `l` of each tile.
//!
//! Memory traffic: the KV bytes the context lengths need, once (for groups up to 8); q and
//! out; with splits, `B·Hq·splits·(D + 2)` f32 partials written and read by the combine.
//!
//! Expected bound: DRAM.

/// Warps a block (each with its own ring).
pub const WARPS: u32 = 8;
/// Keys a tile: one per lane for the softmax.
pub const TILE: u32 = 32;
/// Buffers in each warp's ring, each a K or a V tile: `STAGES − 1` of them in flight while
/// one is used.
pub const STAGES: u32 = 3;
/// Threads a block.
pub const THREADS: u32 = WARPS * 32;
/// Keys a split takes at least (two tiles a warp): shorter slices spend more on pipeline
/// fill and partial rows than on keys.
pub const MIN_SPLIT_KEYS: u32 = WARPS * TILE * 2;
/// Blocks the host aims for, per resident block slot (two waves, so that uneven contexts
/// even out while few blocks pay the pipeline fill).
pub const BLOCKS_PER_SM_TARGET: u32 = 2;
/// Most splits of one context.
pub const MAX_SPLITS: u32 = 1024;

/// The query heads one block serves for a GQA group of `group`: the next power of two, at
/// most 8 (the kernels are built for 1, 2, 4, 8).
pub const fn group_chunk(group: u32) -> u32 {
    if group <= 1 {
        1
    } else if group <= 2 {
        2
    } else if group <= 4 {
        4
    } else {
        8
    }
}

/// Weights-buffer floats per key: `gc`, at least 4 (rows read as 16-byte vectors).
pub const fn p_stride(gc: u32) -> u32 {
    if gc < 4 { 4 } else { gc }
}

/// Dynamic shared memory of a block, in bytes, at head dim `d` serving `gc` heads: the warps'
/// rings (K and V tiles, bf16) and their weights buffers. The final merge reuses the rings.
pub const fn shared_bytes(d: u32, gc: u32) -> u32 {
    WARPS * STAGES * TILE * d * 2 + WARPS * TILE * p_stride(gc) * 4
}

/// Blocks of `shared_bytes` bytes of dynamic shared memory an SM holds (of its 227 KiB for
/// blocks, Hopper/Ampere, with the 1 KiB the driver reserves for each): the host's count of
/// resident blocks for v04's and v05's splits.
pub const fn resident_blocks(shared_bytes: u32) -> u32 {
    let n = (227 * 1024) / (shared_bytes + 1024);
    if n == 0 { 1 } else { n }
}

/// Keys per split for contexts `total_keys` long in all (summed over the batch), the
/// longest `max_len`, with `heads` (KV head · chunk) blocks per split and `slots` blocks
/// resident on the GPU at once: enough splits for `BLOCKS_PER_SM_TARGET` blocks a slot,
/// whole tiles, none shorter than `MIN_SPLIT_KEYS`, at most `MAX_SPLITS` per context.
/// Never 0.
pub const fn split_len(total_keys: u64, max_len: u32, heads: u32, slots: u32) -> u32 {
    let want = BLOCKS_PER_SM_TARGET as u64 * slots as u64;
    let per = (total_keys * heads as u64).div_ceil(if want == 0 { 1 } else { want });
    let mut len = per.div_ceil(TILE as u64) * TILE as u64;
    if len < MIN_SPLIT_KEYS as u64 {
        len = MIN_SPLIT_KEYS as u64;
    }
    let floor = (max_len as u64).div_ceil(MAX_SPLITS as u64);
    if len < floor {
        len = floor.div_ceil(TILE as u64) * TILE as u64;
    }
    if len > max_len as u64 {
        len = (max_len as u64).div_ceil(TILE as u64) * TILE as u64;
    }
    if len == 0 { TILE } else { len as u32 }
}

super::pipeline_entry! { /// v04 at head dim 64, one query head a block.
    decode_v04_vectorized_pipeline_d64_g1 => body<64, 2, 1> }
super::pipeline_entry! { /// v04 at head dim 64, two query heads a block.
    decode_v04_vectorized_pipeline_d64_g2 => body<64, 2, 2> }
super::pipeline_entry! { /// v04 at head dim 64, four query heads a block.
    decode_v04_vectorized_pipeline_d64_g4 => body<64, 2, 4> }
super::pipeline_entry! { /// v04 at head dim 64, eight query heads a block.
    decode_v04_vectorized_pipeline_d64_g8 => body<64, 2, 8> }
super::pipeline_entry! { /// v04 at head dim 128, one query head a block.
    decode_v04_vectorized_pipeline_d128_g1 => body<128, 4, 1> }
super::pipeline_entry! { /// v04 at head dim 128, two query heads a block.
    decode_v04_vectorized_pipeline_d128_g2 => body<128, 4, 2> }
super::pipeline_entry! { /// v04 at head dim 128, four query heads a block.
    decode_v04_vectorized_pipeline_d128_g4 => body<128, 4, 4> }
super::pipeline_entry! { /// v04 at head dim 128, eight query heads a block.
    decode_v04_vectorized_pipeline_d128_g8 => body<128, 4, 8> }

#[cfg(target_arch = "nvptx64")]
use crate::bf16_gemm::unroll;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{async_copy, bf16, math, shared, sync_threads, thread, warp};

/// Eight bytes (four bf16) of a row, read as one `ld.shared.v2`.
#[cfg(target_arch = "nvptx64")]
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct U32x2([u32; 2]);

/// Four f32, read as one `ld.shared.v4`.
#[cfg(target_arch = "nvptx64")]
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct F32x4([f32; 4]);

/// `PER` values of the bf16 row at `row` (shared), from element `at` (`PER` = 2 or 4).
///
/// # Safety
/// `row + at` is in shared memory, `2·PER`-byte aligned.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dims<const PER: usize>(row: *const u16, at: usize) -> [f32; PER] {
    let mut v = [0.0f32; PER];
    // SAFETY: the caller's contract; PER is 2 (one u32) or 4 (two).
    unsafe {
        let words: [u32; 2] = if PER == 4 {
            (*(row.add(at) as *const U32x2)).0
        } else {
            [*(row.add(at) as *const u32), 0]
        };
        for (i, x) in v.iter_mut().enumerate() {
            let w = words[i / 2];
            *x = f32::from_bits(if i % 2 == 0 { w << 16 } else { w & 0xffff_0000 });
        }
    }
    v
}

/// One step of the reduce-scatter: values `j` and `j + N` of each head, lanes with bit `N`
/// keep the upper half and send the lower (the others the opposite), and add their
/// partner's (`lane ^ N`) sent half to what they keep.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn scatter_step<const N: usize, const GC: usize>(v: &mut [[f32; GC]; 16], lane: u32) {
    let upper = lane & N as u32 != 0;
    unroll!(N, j => {
        for g in 0..GC {
            let (keep, send) = if upper {
                (v[j + N][g], v[j][g])
            } else {
                (v[j][g], v[j + N][g])
            };
            v[j][g] = keep + warp::shfl_xor_f32(send, N as u32);
        }
    });
}

/// The kernel body (see the module docs).
///
/// # Safety
/// The buffers have decode's shapes (`super`); every block-table entry a context needs is
/// `< num_pages`, every length is in `1..=max_pages·page_size` and cache rows
/// (`num_pages·page_size·Hkv`) fit in u32 (host-checked); the launch is grid
/// (Hkv·chunks, B, splits) with chunks = ⌈(Hq/Hkv)/GC⌉, `THREADS` threads and
/// `shared_bytes(D, GC)` of dynamic shared memory; with `splits > 1` the workspace holds
/// `B·Hq·splits` rows of D f32 and as many (m, l) pairs, and `split_len·splits` covers the
/// longest context.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn body<const D: usize, const PER: usize, const GC: usize>(
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
    const { assert!(D == 32 * PER && (PER == 2 || PER == 4) && TILE == 32) };
    // 16-byte pieces of a row, and of a tile (K or V).
    let row_chunks: u32 = D as u32 / 8;
    let tile_chunks: u32 = TILE * row_chunks;
    let chunk_elems = TILE as usize * D; // a K or a V tile, bf16
    let ps = p_stride(GC as u32) as usize;

    let t = thread::thread_idx_x();
    let (w, lane) = (t / 32, warp::lane_id());
    let group = hq / hkv;
    let chunks = thread::grid_dim_x() / hkv;
    let (kvh, chunk) = (thread::block_idx_x() / chunks, thread::block_idx_x() % chunks);
    let b = thread::block_idx_y();
    let z = thread::block_idx_z();
    let sl = scale * core::f32::consts::LOG2_E;
    let smem = shared::dynamic_shared_mem::<u16>();
    // SAFETY: (whole body) global rows are (b, head < hq) of q/out and cache rows of pages
    // the table names for keys < the context length, zero-filled past it; shared accesses
    // stay in `shared_bytes(D, GC)`: warp w's ring and weights buffer, then (after the
    // barrier ending every warp's loop) the merge area; every thread reaches both barriers.
    unsafe {
        let len = *context_lens.add(b as usize);
        let begin = (z as u64 * split_len as u64).min(len as u64) as u32;
        let end = (begin as u64 + split_len as u64).min(len as u64) as u32;

        // This lane's dims of the block's query heads, pre-scaled into the log2 domain.
        let mut qr = [[0.0f32; PER]; GC];
        for (g, qg) in qr.iter_mut().enumerate() {
            let hi = chunk * GC as u32 + g as u32;
            if hi < group {
                let row = q.add((((b * hq + kvh * group + hi) as usize) * D) + PER * lane as usize);
                for (x, v) in qg.iter_mut().enumerate() {
                    *v = bf16::to_f32(*row.add(x)) * sl;
                }
            }
        }

        let ring = smem.add(w as usize * STAGES as usize * chunk_elems);
        let pbuf = (smem.add((WARPS * STAGES) as usize * chunk_elems) as *mut f32)
            .add(w as usize * TILE as usize * ps);
        let table = block_table.add(b as usize * max_pages as usize);
        // Warp w's tiles: w, w + WARPS, .. of [begin, end); its chunks K0, V0, K1, V1, ..
        let tiles = (end - begin).div_ceil(TILE);
        let mine = if w < tiles { (tiles - w).div_ceil(WARPS) } else { 0 };
        let start_of = |i: u32| begin + (w + i * WARPS) * TILE;

        // Lane l's key of the tile starting at `j0`: its cache row (u32::MAX past the slice).
        let slot_of = |j0: u32| {
            let j = j0 + lane;
            if j < end {
                let page = *table.add((j / page_size) as usize) as u64;
                ((page * page_size as u64 + (j % page_size) as u64) * hkv as u64 + kvh as u64) as u32
            } else {
                u32::MAX
            }
        };
        // Issue the copies of chunk `c` (tile c/2's K rows when c is even, V rows when odd)
        // into ring buffer `s`; `slot` is this lane's key's row (`slot_of` of the tile).
        let load = |s: u32, c: u32, slot: u32| {
            let dst = ring.add(s as usize * chunk_elems);
            let cache = if c.is_multiple_of(2) { k_cache } else { v_cache };
            let mut e = lane;
            while e < tile_chunks {
                let (r, ch) = (e / row_chunks, e % row_chunks);
                let row = warp::shfl_idx_u32(slot, r);
                let to = async_copy::shared_addr(dst.add(r as usize * D + 8 * ch as usize));
                if row != u32::MAX {
                    let src = cache.add(row as usize * D + 8 * ch as usize);
                    async_copy::copy_16_zfill(to, src as *const f32, 16);
                } else {
                    async_copy::copy_16_zfill(to, cache as *const f32, 0);
                }
                e += 32;
            }
        };

        let chunks_mine = 2 * mine;
        // The slot of the tile whose K chunk was issued last (its V chunk follows).
        let mut slot = 0u32;
        for c in 0..STAGES - 1 {
            if c < chunks_mine {
                if c.is_multiple_of(2) {
                    slot = slot_of(start_of(c / 2));
                }
                load(c, c, slot);
            }
            async_copy::commit_group();
        }

        let mut m = [f32::NEG_INFINITY; GC];
        let mut l_part = [0.0f32; GC];
        let mut acc = [[0.0f32; PER]; GC];
        let mine_dims = PER * lane as usize;
        for c in 0..chunks_mine {
            let next = c + STAGES - 1;
            if next < chunks_mine {
                if next.is_multiple_of(2) {
                    slot = slot_of(start_of(next / 2));
                }
                load(next % STAGES, next, slot);
            }
            async_copy::commit_group();
            async_copy::wait_group::<{ STAGES - 1 }>();
            warp::sync();
            let buf = ring.add((c % STAGES) as usize * chunk_elems) as *const u16;

            if c.is_multiple_of(2) {
                // K chunk: partial dot products of keys j and j + 16, folded into 16 by the
                // first step of the reduce-scatter.
                let kt = buf;
                let j0 = start_of(c / 2);
                let mut part = [[0.0f32; GC]; 16];
                let upper = lane & 16 != 0;
                unroll!(16, j => {
                    let klo = dims::<PER>(kt, j * D + mine_dims);
                    let khi = dims::<PER>(kt, (j + 16) * D + mine_dims);
                    for g in 0..GC {
                        let (mut a, mut c) = (0.0f32, 0.0f32);
                        for x in 0..PER {
                            a = math::fma(qr[g][x], klo[x], a);
                            c = math::fma(qr[g][x], khi[x], c);
                        }
                        let (keep, send) = if upper { (c, a) } else { (a, c) };
                        part[j][g] = keep + warp::shfl_xor_f32(send, 16);
                    }
                });
                scatter_step::<8, GC>(&mut part, lane);
                scatter_step::<4, GC>(&mut part, lane);
                scatter_step::<2, GC>(&mut part, lane);
                scatter_step::<1, GC>(&mut part, lane);
                // part[0][g]: head g's score of key j0 + lane.
                let valid = j0 + lane < end;
                let pw = pbuf.add(lane as usize * ps);
                unroll!(GC, g => {
                    let s = if valid { part[0][g] } else { f32::NEG_INFINITY };
                    // Key j0 is valid in every tile: the max is finite.
                    let m_new = math::max(m[g], warp::max_f32(s));
                    let corr = math::exp2(m[g] - m_new);
                    let p = math::exp2(s - m_new);
                    l_part[g] = math::fma(l_part[g], corr, p);
                    for a in acc[g].iter_mut() {
                        *a *= corr;
                    }
                    m[g] = m_new;
                    *pw.add(g) = p;
                });
            } else {
                // V chunk: every key's weights (broadcast from the buffer, written by the K
                // chunk before the barrier above) times this lane's dims; unrolled so that
                // the shared loads of later keys are in flight during earlier keys' FMAs.
                let vt = buf;
                unroll!(16, jj => {
                    // Keys jj and jj + 16 (each `unroll!` writes out 16 guarded copies of
                    // its body, so nesting is kept to one level; the loops over heads and
                    // dims are short, and LLVM unrolls them itself). A range, not an array
                    // `[jj, jj + 16]`: iterating an array kept it in local memory.
                    for half in 0..2 {
                        let j = jj + 16 * half;
                        let v = dims::<PER>(vt, j * D + mine_dims);
                        let prow = pbuf.add(j * ps) as *const F32x4;
                        let mut pw = [0.0f32; GC];
                        for h in 0..GC.div_ceil(4) {
                            let pv = (*prow.add(h)).0;
                            // Indexed, not `pv.into_iter()`: iterating an array by
                            // value kept it in local memory.
                            #[allow(clippy::needless_range_loop)]
                            for i in 0..4 {
                                if 4 * h + i < GC {
                                    pw[4 * h + i] = pv[i];
                                }
                            }
                        }
                        unroll!(GC, g => {
                            for x in 0..PER {
                                acc[g][x] = math::fma(pw[g], v[x], acc[g][x]);
                            }
                        });
                    }
                });
            }
            // Every lane is done with this buffer (and, after a V chunk, the weights) before
            // either is refilled.
            warp::sync();
        }
        async_copy::wait_group::<0>();

        // Merge the warps' partial rows: acc [w][g][D], then m and l [w][g].
        sync_threads();
        let mo = smem as *mut f32;
        let ml = mo.add((WARPS as usize) * GC * D);
        unroll!(GC, g => {
            let l = warp::sum_f32(l_part[g]);
            for x in 0..PER {
                *mo.add((w as usize * GC + g) * D + mine_dims + x) = acc[g][x];
            }
            if lane == 0 {
                *ml.add(2 * (w as usize * GC + g)) = m[g];
                *ml.add(2 * (w as usize * GC + g) + 1) = l;
            }
        });
        sync_threads();
        super::merge_warps::<D, GC, { WARPS as usize }>(
            mo, ml, out, ws_o, ws_ml, hq, group, kvh, chunk, b,
            super::MergeDest::of_splits(b, hq, kvh * group + chunk * GC as u32, z, thread::grid_dim_z()),
        );
    }
}
