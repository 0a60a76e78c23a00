//! bf16_gemm/v05_weight_streaming — small M (a GEMV or a few rows): stream W once at DRAM
//! speed, the multiply on the tensor cores with x as a zero-padded A operand.
//!
//! Changed from v04: at M ≤ 8 an MMA tile of 64+ rows is mostly padding and the product is
//! memory-bound by construction (2·M·N·K FLOPs over ~2·N·K weight bytes: AI ≤ M FLOP/B, far
//! under the ridge). So this step drops the shared-memory tiles and streams W straight from
//! global memory into `mma.sync.m16n8k16` B fragments: the block's (≤ `MAX_M`) rows of x are
//! rows 0-7 of the 16-row A operand, rows 8-15 are zero registers. The tensor cores then do
//! the 2·M·N·K FLOPs at no cost to the instruction stream (the CUDA-core version of this
//! step did 8 FMAs, a bf16 unpack and an x reload per 16 bytes of W per row of x, and at
//! M = 8 was issue-bound at 18-21 % of the DRAM roof), and the kernel is a pure W stream:
//! per 16 bytes of W a lane issues one load and two mmas, shared by all rows of x.
//!
//! Fragment trick: the dot product may visit K in any order as long as A and B agree, so
//! lane `l` (g = l >> 2, t = l % 4) loads the 16-byte chunk `t` (8 contiguous K) of its
//! rows: W row (column of y) `g` of an n8 tile and x row `g`. Its four 32-bit words are the
//! `b[0], b[1]` of one mma and the `b[0], b[1]` of a second; the matching x words are
//! `a[0], a[2]` of those mmas (`a[1] = a[3] = 0`, the padding rows). The logical K order of
//! the mma (2t, 2t+1, 2t+8, 2t+9) then maps to 4 contiguous elements of chunk t, the same
//! map for A and B. Result: `c[0], c[1]` = y row g, columns 2t, 2t+1 of the tile; `c[2],
//! c[3]` (rows 8-15) stay zero.
//!
//! Thread mapping: block `(bx, by)` owns rows `by·BM ..` (at most `MAX_M`) and the `BN` =
//! 8·`N_TILES` columns `bx·BN ..` of y; all `WARPS` warps compute all `BN` columns and split K
//! instead: K is cut into groups of `4·UNROLL` 16-byte chunks (128 elements, 256 bytes of a
//! W row) and warp `w` takes groups `w, w + WARPS, ..`. In a group, lane (g, t) loads chunk
//! `4u + t` (u < `UNROLL`) of W rows `bx·BN + 8j + g` (j < `N_TILES`), so one load
//! instruction reads 64 contiguous bytes of 8 rows and the `UNROLL` of them a whole 256-byte
//! piece; all `UNROLL·N_TILES` = 16 W loads of a lane (8 KiB per warp) are written before
//! their mmas (ptxas issues 13 of them before the first HMMA, the rest right after). W loads
//! are `ld.global.nc.L1::no_allocate.L2::256B` (streamed, kept out of L1 so that x stays
//! there); x loads (one per `N_TILES` W loads) go through L1.
//! Columns past N re-read row N - 1 (clamped) and store nothing; x rows past M are zeros.
//! At the end each warp writes its partial sums (`BM × BN` f32) to shared memory, one
//! barrier, and thread `i` adds the `WARPS` partials of y element (i / BN, i % BN) and
//! stores it (bf16, `cvt.rn`, masked at M and N).
//!
//! Any K (`K_MULTIPLE = 1`): the vector path needs K a multiple of 8 and x, W 16-byte
//! aligned (then every row start is); its last partial group (K mod 128) is done with
//! per-chunk checks by the warp whose turn it is. Otherwise the same mapping runs with
//! checked 2-byte loads (chunks of 8 elements zero-filled past K), slower but correct.
//! K = 0 stores zeros (and the host launches it for any M: grid y = ceil(M / BM)).
//!
//! Memory traffic: W's N·K·2 bytes read once from DRAM (the floor); x (M·K·2 bytes) read
//! once per block (each x chunk by one lane-group of one warp), i.e. M/BN = 1/4 of W's bytes
//! at M = 8, from L1 when the SM's earlier blocks left it there (W bypasses L1) or L2; y
//! written once; 8 KiB of shared memory per block for the cross-warp sum.
//!
//! Occupancy and bytes in flight: 128 registers (ptxas, sm_90, no spills) × 256 threads → 2
//! blocks (16 warps) per SM, each warp with up to 8 KiB of W loads outstanding: ~100-128 KiB
//! per SM, well past the ~40 KiB the H200 needs to cover DRAM latency at full bandwidth.
//! N = 8192 gives 256 blocks (one wave on 132 SMs × 2), N = 28672 gives 896 (3.4 waves; the
//! last 104 blocks still keep ~5 MiB in flight).
//!
//! Expected bound: DRAM on the weight bytes, i.e. most of the copy roof at N·K ≫ L2, at any
//! M ≤ 8 alike (the mma count does not depend on M): ~90-95 % of the roof minus the launch
//! and ramp (a few µs, which weighs most at 1×8192×8192: floor 31 µs). Not yet measured.
//! The host refuses M > `MAX_M` (each further group of 8 rows would re-read all of W).

/// Most rows of x (and y) one block computes, and the most the host accepts for this step:
/// the 8 rows g of the mma's A operand that are not padding.
pub const MAX_M: u32 = 8;
/// Warps per block; they split K (every warp computes all `BN` columns).
pub const WARPS: u32 = 8;
/// n8 mma tiles (8 columns of y, 8 rows of W each) per warp: the x chunk a lane loads
/// serves them all.
pub const N_TILES: u32 = 4;
/// 16-byte chunks of each W row a lane loads per group (all before any mma).
pub const UNROLL: u32 = 4;
/// Threads per block.
pub const BLOCK_THREADS: u32 = 32 * WARPS;
/// Rows of y per block (grid y = ceil(M / BM)).
pub const BM: u32 = MAX_M;
/// Columns of y per block (grid x = ceil(N / BN)).
pub const BN: u32 = 8 * N_TILES;
/// Dynamic shared memory: every warp's `BM × BN` f32 partial sums, for the cross-warp sum.
pub const SHARED_BYTES: u32 = WARPS * BM * BN * 4;
/// Any K (the checked path takes what the vector path cannot).
pub const K_MULTIPLE: u32 = 1;

// The final sum gives each thread one element of the block's tile of y.
const _: () = assert!(BM * BN == BLOCK_THREADS);

#[cfg(target_arch = "nvptx64")]
mod dev {
    use super::{BLOCK_THREADS, BM, BN, N_TILES, UNROLL, WARPS};
    use crate::gpu::bf16::{aligned16, from_f32, load16_nc};
    use crate::gpu::mma::{mma_m16n8k16_bf16, pair_bf16};
    use crate::gpu::{shared, sync_threads, thread, warp};
    use core::arch::asm;

    const NT: usize = N_TILES as usize;
    const U: usize = UNROLL as usize;
    const NW: usize = WARPS as usize;
    /// bf16 elements in one 16-byte chunk.
    const PER16: usize = 8;
    /// 16-byte chunks per K group (per row): 4 lanes (t) × `UNROLL`.
    const GROUP: usize = 4 * U;

    /// Per lane: the four f32 of each n8 tile's mma (`c[0], c[1]` are y row g, columns
    /// 2t, 2t+1; `c[2], c[3]` the zero padding rows).
    type Acc = [[f32; 4]; NT];

    /// 16 bytes of W: `ld.global.nc.L1::no_allocate.L2::256B.v4.u32`, read once, so not
    /// allocated in L1 (x stays there), with a hint that L2 fetch the aligned 256 bytes
    /// around it (the warp's `UNROLL` loads of a row cover exactly those).
    ///
    /// # Safety
    /// 16 readable, 16-byte-aligned global bytes at `p` that no thread of this grid writes.
    #[inline(always)]
    unsafe fn load_w(p: *const u16) -> [u32; 4] {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: forwarded from the caller; the cache hints change no values.
        unsafe {
            asm!(
                "ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
                options(readonly, nostack, pure)
            )
        };
        [a, b, c, d]
    }

    /// Elements `kk .. kk + 8` of the row at `p` (a row of K elements) as four packed bf16
    /// pairs, each element read on its own (2-byte loads, any alignment), zero past K.
    ///
    /// # Safety
    /// `p` is a row of `k` readable bf16 that no thread of this grid writes.
    #[inline(always)]
    unsafe fn load8_checked(p: *const u16, k: usize, kk: usize) -> [u32; 4] {
        let mut e = [0u16; PER16];
        unroll!(PER16, i => {
            if kk + i < k {
                // SAFETY: kk + i < k: inside the row.
                e[i] = unsafe { *p.add(kk + i) };
            }
        });
        [
            pair_bf16(e[0], e[1]),
            pair_bf16(e[2], e[3]),
            pair_bf16(e[4], e[5]),
            pair_bf16(e[6], e[7]),
        ]
    }

    /// `acc[j] += x chunk · W chunk of tile j` over one 16-byte chunk (8 K) per lane, i.e.
    /// 32 K per warp: two m16n8k16 per tile (words 0,1 then 2,3 of the chunks; see the
    /// module docs for why that is a consistent K order).
    #[inline(always)]
    fn mma_chunk(acc: &mut Acc, xv: &[u32; 4], wv: &[[u32; 4]; NT]) {
        unroll!(NT, j => {
            acc[j] = mma_m16n8k16_bf16([xv[0], 0, xv[1], 0], [wv[j][0], wv[j][1]], acc[j]);
            acc[j] = mma_m16n8k16_bf16([xv[2], 0, xv[3], 0], [wv[j][2], wv[j][3]], acc[j]);
        });
    }

    /// The whole kernel (see the module docs).
    ///
    /// # Safety
    /// x holds M·K, W N·K and y M·N bf16; M, N > 0; grid x·BN ≥ N, grid y·BM ≥ M, block
    /// `BLOCK_THREADS` threads in x, `SHARED_BYTES` of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn run(m: u32, n: u32, k: u32, x: *const u16, w: *const u16, y: *mut u16) {
        let tid = thread::thread_idx_x() as usize;
        let lane = warp::lane_id() as usize;
        let warp_id = tid / 32;
        let (g, t) = (lane >> 2, lane & 3);
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let m0 = thread::block_idx_y() as usize * BM as usize;
        if m0 >= m {
            // Whole block (block-uniform): never reaches the barrier.
            return;
        }
        let rows = (m - m0).min(BM as usize);
        let n0 = thread::block_idx_x() as usize * BN as usize;
        let has_x = g < rows;
        let mut acc: Acc = [[0.0; 4]; NT];
        // SAFETY: row offsets stay below M·K and N·K (x rows clamped to M - 1, W rows to
        // N - 1), chunk and element indices below K; x and W are never written by the
        // kernel. y is written at rows < M, columns < N only; shared memory below
        // SHARED_BYTES (warp_id < WARPS, rows < BM, columns < BN).
        unsafe {
            let xrow = x.add((m0 + g.min(rows - 1)) * k);
            let mut wrow = [w; NT];
            unroll!(NT, j => {
                wrow[j] = w.add((n0 + 8 * j + g).min(n - 1) * k);
            });
            if k.is_multiple_of(PER16) && aligned16(x) && aligned16(w) {
                let chunks = k / PER16;
                let groups = chunks / GROUP;
                let mut grp = warp_id;
                while grp < groups {
                    let c = grp * GROUP + t;
                    // All UNROLL·N_TILES W loads (and the x loads) before any mma.
                    let mut wv = [[[0u32; 4]; NT]; U];
                    unroll!(U, u => {
                        unroll!(NT, j => {
                            wv[u][j] = load_w(wrow[j].add((c + 4 * u) * PER16));
                        });
                    });
                    let mut xv = [[0u32; 4]; U];
                    if has_x {
                        unroll!(U, u => {
                            xv[u] = load16_nc(xrow.add((c + 4 * u) * PER16).cast());
                        });
                    }
                    unroll!(U, u => {
                        mma_chunk(&mut acc, &xv[u], &wv[u]);
                    });
                    grp += NW;
                }
                // The last, partial group (chunks mod GROUP): one warp, each chunk checked.
                if grp == groups && groups * GROUP < chunks {
                    let c = groups * GROUP + t;
                    let mut wv = [[[0u32; 4]; NT]; U];
                    let mut xv = [[0u32; 4]; U];
                    unroll!(U, u => {
                        if c + 4 * u < chunks {
                            unroll!(NT, j => {
                                wv[u][j] = load_w(wrow[j].add((c + 4 * u) * PER16));
                            });
                            if has_x {
                                xv[u] = load16_nc(xrow.add((c + 4 * u) * PER16).cast());
                            }
                        }
                    });
                    unroll!(U, u => {
                        mma_chunk(&mut acc, &xv[u], &wv[u]);
                    });
                }
            } else {
                // Checked path: chunks of 8 elements (the last one zero-filled past K), one
                // chunk per lane per step, groups of 4 chunks (32 K) a warp, interleaved
                // over the warps as above.
                let chunks = k.div_ceil(PER16);
                let mut c0 = warp_id * 4;
                while c0 < chunks {
                    let kk = (c0 + t) * PER16;
                    let mut wv = [[0u32; 4]; NT];
                    unroll!(NT, j => {
                        wv[j] = load8_checked(wrow[j], k, kk);
                    });
                    let xv = if has_x {
                        load8_checked(xrow, k, kk)
                    } else {
                        [0; 4]
                    };
                    mma_chunk(&mut acc, &xv, &wv);
                    c0 += 4 * NW;
                }
            }
            // Cross-warp sum: partials of warp w at red[(w·BM + row)·BN + column].
            let red = shared::dynamic_shared_mem::<f32>();
            let bn = BN as usize;
            unroll!(NT, j => {
                let p = red.add((warp_id * BM as usize + g) * bn + 8 * j + 2 * t);
                *p = acc[j][0];
                *p.add(1) = acc[j][1];
            });
            sync_threads();
            let (r, col) = (tid / bn, tid % bn);
            const { assert!(BM * BN == BLOCK_THREADS) };
            let mut s = 0.0f32;
            unroll!(NW, wi => {
                s += *red.add((wi * BM as usize + r) * bn + col);
            });
            if r < rows && n0 + col < n {
                *y.add((m0 + r) * n + n0 + col) = from_f32(s);
            }
        }
    }
}

crate::kernel! {
    /// `y = x·Wᵀ` in bf16 (f32 accumulation) for small M: W streamed once into mma.sync B
    /// fragments, x the zero-padded A operand; a block per `BN` columns, its warps split K.
    pub unsafe fn bf16_gemm_v05_weight_streaming(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // SAFETY: forwarded from the host wrapper's checks (lengths, grid, block, shared
        // memory).
        unsafe { dev::run(m, n, k, x, w, y) }
    }
}
