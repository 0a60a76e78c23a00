//! bf16_gemm/v05_weight_streaming — small M (a GEMV or a few rows): stream W once at DRAM
//! speed, no tensor cores.
//!
//! Changed from v04: at M ≤ 8 an MMA tile of 64+ rows is mostly padding and the product is
//! memory-bound by construction (2·M·N·K FLOPs over ~2·N·K weight bytes: AI ≤ M FLOP/B, far
//! under the ridge). So this step forgets the tile machinery: each warp owns
//! `COLS_PER_WARP` columns of y (rows of W) and streams those rows of W with 16-byte
//! `ld.global.nc.v4` loads, `UNROLL` loads per column in flight per lane, multiplying each
//! 8-element chunk with the same chunk of the block's (≤ `MAX_M`) rows of x, which are small
//! and stay in L1/L2. The f32 accumulators (`MAX_M × COLS_PER_WARP` per lane) are summed
//! over the warp with butterfly shuffles and lane 0 stores the bf16 results (`cvt.rn`).
//!
//! Thread mapping: block `(bx, by)` computes rows `by·BM ..` (at most `MAX_M`) and columns
//! `bx·BN ..` of y; warp `w` of the block owns columns `bx·BN + w·COLS_PER_WARP + c`; lane
//! `l` takes the 16-byte chunks `l, l + 32, l + 64, ..` of K. A column past N re-reads the
//! last row of W (clamped address) and stores nothing, so the warp never diverges around
//! its shuffles.
//!
//! Any K (`K_MULTIPLE = 1`): the vector path needs K a multiple of 8 and x, W 16-byte
//! aligned (then every row start is); otherwise the same mapping runs with scalar 2-byte
//! loads (lane `l` takes elements `l, l + 32, ..`), slower but correct. K = 0 stores zeros.
//!
//! Memory traffic: W's N·K·2 bytes read once from DRAM (the floor); x (M·K·2 bytes) read
//! by every block, from L1 (the block's 8 warps read the same chunks) or L2; y written once.
//!
//! Expected bound: DRAM on the weight bytes, i.e. most of the copy roof at N·K ≫ L2. The
//! host refuses M > `MAX_M` (each further group of 8 rows would re-read all of W).

/// Most rows of x (and y) one block computes, and the most the host accepts for this step.
pub const MAX_M: u32 = 8;
/// Warps per block.
pub const WARPS: u32 = 8;
/// Columns of y (rows of W) each warp computes: the x chunk it loads serves them all.
pub const COLS_PER_WARP: u32 = 2;
/// 16-byte chunks per column each lane loads before using any (loads in flight).
pub const UNROLL: u32 = 2;
/// Threads per block.
pub const BLOCK_THREADS: u32 = 32 * WARPS;
/// Rows of y per block (grid y = ceil(M / BM)).
pub const BM: u32 = MAX_M;
/// Columns of y per block (grid x = ceil(N / BN)).
pub const BN: u32 = WARPS * COLS_PER_WARP;
/// No shared memory.
pub const SHARED_BYTES: u32 = 0;
/// Any K (the scalar path takes what the vector path cannot).
pub const K_MULTIPLE: u32 = 1;

#[cfg(target_arch = "nvptx64")]
mod dev {
    use super::{BM, BN, COLS_PER_WARP, UNROLL};
    use crate::gpu::bf16::{aligned16, from_f32, load16_nc, to_f32};
    use crate::gpu::math::fma;
    use crate::gpu::{thread, warp};

    const MM: usize = BM as usize;
    const C: usize = COLS_PER_WARP as usize;
    const U: usize = UNROLL as usize;
    /// bf16 elements in one 16-byte chunk.
    const PER16: usize = 8;

    type Acc = [[f32; C]; MM];

    /// The bf16 in the low half of a packed word (the lower address), as f32.
    #[inline(always)]
    fn lo(w: u32) -> f32 {
        f32::from_bits(w << 16)
    }

    /// The bf16 in the high half, as f32.
    #[inline(always)]
    fn hi(w: u32) -> f32 {
        f32::from_bits(w & 0xffff_0000)
    }

    /// `acc[m][c] += x[m][kk..kk+8] · w_c[kk..kk+8]` for the block's `rows` rows.
    ///
    /// # Safety
    /// `x + m·k + kk` is 16-byte aligned and 16 readable bytes for every `m < rows`.
    #[inline(always)]
    unsafe fn chunk(
        acc: &mut Acc,
        rows: usize,
        x: *const u16,
        k: usize,
        kk: usize,
        wv: &[[u32; 4]; C],
    ) {
        unroll!(MM, r => {
            if r < rows {
                // SAFETY: forwarded from the caller.
                let xv = unsafe { load16_nc(x.add(r * k + kk).cast()) };
                unroll!(C, c => {
                    let mut a = acc[r][c];
                    unroll!(4, q => {
                        a = fma(lo(xv[q]), lo(wv[c][q]), a);
                        a = fma(hi(xv[q]), hi(wv[c][q]), a);
                    });
                    acc[r][c] = a;
                });
            }
        });
    }

    /// The whole kernel (see the module docs).
    ///
    /// # Safety
    /// x holds M·K, W N·K and y M·N bf16; M, N > 0; grid x·BN ≥ N, grid y·BM ≥ M, block
    /// `BLOCK_THREADS` threads in x.
    #[inline(always)]
    pub unsafe fn run(m: u32, n: u32, k: u32, x: *const u16, w: *const u16, y: *mut u16) {
        let lane = warp::lane_id() as usize;
        let warp_id = thread::thread_idx_x() / 32;
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let m0 = thread::block_idx_y() as usize * MM;
        if m0 >= m {
            return;
        }
        let rows = (m - m0).min(MM);
        let n0 = (thread::block_idx_x() * BN + warp_id * COLS_PER_WARP) as usize;
        // SAFETY: row offsets stay below M·K and N·K (columns clamped to N - 1, rows below
        // M), chunk and element indices below K; x and W are never written by the kernel;
        // y is written at rows < M, columns < N only.
        unsafe {
            let x = x.add(m0 * k);
            let mut wrow = [w; C];
            unroll!(C, c => {
                wrow[c] = w.add((n0 + c).min(n - 1) * k);
            });
            let mut acc: Acc = [[0.0; C]; MM];
            if k.is_multiple_of(PER16) && aligned16(x) && aligned16(w) {
                let chunks = k / PER16;
                let mut c0 = 0;
                while c0 + 32 * U <= chunks {
                    // All U·C loads of W issued before the math that uses them.
                    let mut wv = [[[0u32; 4]; C]; U];
                    unroll!(U, u => {
                        unroll!(C, c => {
                            wv[u][c] = load16_nc(wrow[c].add((c0 + u * 32 + lane) * PER16).cast());
                        });
                    });
                    unroll!(U, u => {
                        chunk(&mut acc, rows, x, k, (c0 + u * 32 + lane) * PER16, &wv[u]);
                    });
                    c0 += 32 * U;
                }
                let mut cc = c0 + lane;
                while cc < chunks {
                    let mut wv = [[0u32; 4]; C];
                    unroll!(C, c => {
                        wv[c] = load16_nc(wrow[c].add(cc * PER16).cast());
                    });
                    chunk(&mut acc, rows, x, k, cc * PER16, &wv);
                    cc += 32;
                }
            } else {
                let mut kk = lane;
                while kk < k {
                    let mut wv = [0.0f32; C];
                    unroll!(C, c => {
                        wv[c] = to_f32(*wrow[c].add(kk));
                    });
                    unroll!(MM, r => {
                        if r < rows {
                            let xv = to_f32(*x.add(r * k + kk));
                            unroll!(C, c => {
                                acc[r][c] = fma(xv, wv[c], acc[r][c]);
                            });
                        }
                    });
                    kk += 32;
                }
            }
            // Every lane takes part in every sum; lane 0 stores the ones inside y.
            unroll!(MM, r => {
                unroll!(C, c => {
                    let s = warp::sum_f32(acc[r][c]);
                    if lane == 0 && r < rows && n0 + c < n {
                        *y.add((m0 + r) * n + n0 + c) = from_f32(s);
                    }
                });
            });
        }
    }
}

crate::kernel! {
    /// `y = x·Wᵀ` in bf16 (f32 accumulation) for small M: W streamed once, one warp per
    /// `COLS_PER_WARP` columns.
    pub unsafe fn bf16_gemm_v05_weight_streaming(
        m: u32,
        n: u32,
        k: u32,
        x: *const u16,
        w: *const u16,
        y: *mut u16,
    ) {
        // SAFETY: forwarded from the host wrapper's checks (lengths, grid, block).
        unsafe { dev::run(m, n, k, x, w, y) }
    }
}
