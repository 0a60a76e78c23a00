//! norm/v08_l2_reread — the row is not held on chip at all: statistics in one streaming pass,
//! and the normalization reads the row again, from L2, which still holds it.
//!
//! Changed from v04/v06: v04 holds a row in one block's registers (rows of up to 16384, 1024
//! threads and one block an SM at its longest), v06 in a cluster's shared memory; both pay
//! for holding with occupancy, and a block's phases (load, reduce, reduce, write) then run
//! with nothing else on its SM to overlap them. Here each thread streams its share of the row
//! twice with 16-byte loads, `UNROLL` of them in flight at once: the first pass folds the
//! statistics, the second normalizes. Nothing is kept but a few registers a thread (launch
//! bounds of two 1024-thread blocks an SM: at most 32 registers), so an SM runs 2048 threads
//! of several rows in different phases. The second read is not a DRAM read: the rows
//! resident on the GPU at once fit in L2, and the row was read moments before — if L2 is
//! told so: the first read is marked `evict_last` and the second read and y `evict_first`
//! (`createpolicy` + `.L2::cache_hint`), or the write stream and other rows' reads push the
//! row out first (measured on the H100 without the hints: at 1024 × 32768 f32 ncu showed
//! DRAM 86% busy for 120 µs, some 75 MB more than the 268 MB minimum). The layout, its
//! constants and the hinted loads are `crate::l2_reread`, shared with softmax v09. This is
//! what Inductor's generated LayerNorm does (a Welford loop reading with `evict_last`, then a
//! second loop reading with `evict_first`). Past ~256 KiB of row per SM (2 × 128 KiB: 32768
//! f32, 65536 bf16) the resident rows outgrow L2 and the second pass goes back to DRAM:
//! that is v06's range.
//!
//! Statistics without E[x²] − E[x]² (the family's rule): LayerNorm folds each group of up to
//! `GROUP_VECTORS_F32` vectors (bf16: one) exactly two-pass in registers (its sum, then the squared deviations from
//! its own mean) and merges the group into the thread's (count, sum, M2) by Chan's formula;
//! the block then takes mean = Σ sum_t / n and M2 = Σ (M2_t + n_t·(mean_t − mean)²), two
//! block reductions of non-negative or exact terms. RMSNorm folds Σx², mean 0.
//!
//! Thread mapping: block r owns row r; thread t of `block_threads(cols, ..)` takes the
//! row's 16-byte vectors t, t + b, t + 2b, ... (elements, when the row is not 16-byte
//! aligned), `UNROLL` of them a step; both passes in the same order.
//!
//! Memory traffic: DRAM the minimum, 1 read + 1 write (+ weight and bias, L2-resident);
//! L2 serves x twice.
//!
//! Expected bound: DRAM, at any row length whose resident rows fit in L2.

/// Dynamic shared memory: one f32 per warp for the block reductions.
pub const SHARED_BYTES: u32 = 32 * 4;
/// The streaming layout (shared with softmax v09): `UNROLL` vectors a step in pass 1,
/// `REREAD` in pass 2, `block_threads(cols, ..)` threads, launch bounds of `BOUND_BLOCKS`
/// blocks of `MAX_THREADS` an SM (32 registers).
pub use crate::l2_reread::{BOUND_BLOCKS, MAX_THREADS, MIN_UNITS, REREAD, UNROLL, block_threads};
/// 16-byte vectors LayerNorm's first pass folds two-pass at a time (then merges by Chan), f32:
/// a whole step. bf16 folds one vector (8 elements) at a time: its widened values take two
/// registers a word, and a larger group kept them live between the group's two loops and
/// spilled at 32 registers.
pub const GROUP_VECTORS_F32: u32 = UNROLL;

#[cfg(target_arch = "nvptx64")]
mod dev {
    use super::{GROUP_VECTORS_F32, UNROLL};
    use crate::gpu::bf16::{Storage, each8, store16_hint};
    use crate::gpu::math::rcp;
    use crate::gpu::{block, shared, thread};
    use crate::l2_reread::dev::{Hint, fetch, policy, reread, widen};
    use crate::norm::rsqrt;

    const G: usize = UNROLL as usize;
    // Pass 1's LayerNorm fold splits a step's `G` vectors into whole groups.
    const _: () = assert!(G.is_multiple_of(GROUP_VECTORS_F32 as usize));

    /// The thread's running LayerNorm statistics: count, sum, Σ squared deviations.
    struct Stats {
        n: f32,
        s: f32,
        m2: f32,
    }

    /// Folds `raw[lo..lo + hl]` (`hl` >= 1 units) into `st`: the group's sum, then its
    /// squared deviations from its own mean (exact two-pass in registers), merged by Chan.
    #[inline(always)]
    fn fold_group<T: Storage, const VEC: bool>(raw: &[[u32; 4]; G], lo: usize, hl: usize, st: &mut Stats) {
        let per = if VEC { T::PER16 } else { 1 };
        let mut u = [0.0f32; 8];
        let cnt = (hl * per) as f32;
        let mut gs = 0.0f32;
        // `each8`: written-out calls, so that `raw` is indexed by constants and stays in
        // registers (a loop the unroller gave up on put it in local memory).
        each8(G, |g| {
            if g >= lo && g < lo + hl {
                widen::<T, VEC>(raw[g], &mut u);
                for k in 0..per {
                    gs += u[k];
                }
            }
        });
        let gm = gs * rcp(cnt);
        let mut gq = 0.0f32;
        each8(G, |g| {
            if g >= lo && g < lo + hl {
                widen::<T, VEC>(raw[g], &mut u);
                for k in 0..per {
                    let d = u[k] - gm;
                    gq += d * d;
                }
            }
        });
        // Chan: M2 += M2_g + d²·n·cnt / (n + cnt), d the difference of the means (0 on the
        // first group, where n = 0).
        let mt = if st.n > 0.0 { st.s * rcp(st.n) } else { gm };
        let d = gm - mt;
        st.m2 += gq + d * d * (st.n * cnt * rcp(st.n + cnt));
        st.s += gs;
        st.n += cnt;
    }

    /// One step of pass 1: units j0, j0 + b, .. (`UNROLL` of them, those < `units` unless
    /// `FULL`, where all are) loaded with `evict_last`, then folded into `st`.
    #[inline(always)]
    unsafe fn step1<T: Storage, const LAYER: bool, const VEC: bool, const FULL: bool>(
        x: *const T,
        j0: u32,
        b: u32,
        units: u32,
        st: &mut Stats,
    ) {
        let per = if VEC { T::PER16 } else { 1 };
        let inside = |g: usize| FULL || j0 + g as u32 * b < units;
        let mut raw = [[0u32; 4]; G];
        each8(G, |g| {
            if inside(g) {
                // SAFETY: unit j0 + g·b < units of the row (the caller's contract when FULL).
                raw[g] = unsafe { fetch::<T, VEC>(x, j0 + g as u32 * b, Hint::Keep) };
            }
        });
        // Units of this step inside the row (>= 1: j0 < units).
        let mut live = 0usize;
        each8(G, |g| {
            if inside(g) {
                live += 1;
            }
        });
        if LAYER {
            // Groups of `vpg` units (f32: `GROUP_VECTORS_F32`, bf16: one vector, scalar: the
            // step's units).
            let vpg = match (VEC, T::PER16) {
                (true, 4) => GROUP_VECTORS_F32 as usize,
                (true, _) => 1,
                _ => G,
            };
            each8(G / vpg, |h| {
                let lo = h * vpg;
                if lo < live {
                    fold_group::<T, VEC>(&raw, lo, (live - lo).min(vpg), st);
                }
            });
        } else {
            let mut u = [0.0f32; 8];
            each8(G, |g| {
                if g < live {
                    widen::<T, VEC>(raw[g], &mut u);
                    for k in 0..per {
                        st.m2 += u[k] * u[k];
                    }
                }
            });
        }
    }

    #[inline(always)]
    pub unsafe fn run<T: Storage, const LAYER: bool>(
        x: *const T,
        w: *const T,
        bias: *const T,
        y: *mut T,
        cols: u32,
        eps: f32,
    ) {
        let vec = crate::norm::vector_layout::<T, LAYER>(x, w, bias, y, cols);
        let off = thread::block_idx_x() as usize * cols as usize;
        // SAFETY: block r < rows: the row starts inside x and y; forwarded.
        unsafe {
            let (x, y) = (x.add(off), y.add(off));
            if vec {
                rows::<T, LAYER, true>(x, w, bias, y, cols / T::PER16 as u32, cols, eps)
            } else {
                rows::<T, LAYER, false>(x, w, bias, y, cols, cols, eps)
            }
        }
    }

    /// Both passes over one row of `units` units (vectors, or elements when not `VEC`).
    #[inline(always)]
    unsafe fn rows<T: Storage, const LAYER: bool, const VEC: bool>(
        x: *const T,
        w: *const T,
        bias: *const T,
        y: *mut T,
        units: u32,
        cols: u32,
        eps: f32,
    ) {
        let per = if VEC { T::PER16 } else { 1 };
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let smem = shared::dynamic_shared_mem::<f32>();
        let n_row = cols as f32;
        // The row's first read asks L2 to keep it (pass 2 reads it again); the second read
        // and y ask to leave first, so that they do not push out rows still to be re-read.
        let mut u = [0.0f32; 8];
        // Pass 1: the thread's (count, sum, M2) (LayerNorm) or Σx² (RMSNorm). Full steps
        // first, whose `UNROLL` units all lie inside the row (no bounds tests and a constant
        // count: counting each step's units in the loop held registers across the fold and
        // spilled at 32, bf16 LayerNorm on sm_90a and f32 on sm_80), then at most one
        // partial step.
        let mut st = Stats { n: 0.0, s: 0.0, m2: 0.0 };
        let mut j0 = t;
        while j0 + (UNROLL - 1) * b < units {
            // SAFETY: units j0 .. j0 + 3b < units of the row.
            unsafe { step1::<T, LAYER, VEC, true>(x, j0, b, units, &mut st) };
            j0 += UNROLL * b;
        }
        if j0 < units {
            // SAFETY: the loads test j < units.
            unsafe { step1::<T, LAYER, VEC, false>(x, j0, b, units, &mut st) };
        }
        let Stats { n, s, m2 } = st;
        // SAFETY: smem holds 32 f32 (SHARED_BYTES); every thread of the block calls these.
        let (mean, rs) = unsafe {
            if LAYER {
                let mean = block::sum_f32(s, smem) / n_row;
                let dm = if n > 0.0 { s * rcp(n) - mean } else { 0.0 };
                let q = block::sum_f32(m2 + n * dm * dm, smem);
                (mean, rsqrt(q / n_row + eps))
            } else {
                (0.0, rsqrt(block::sum_f32(m2, smem) / n_row + eps))
            }
        };
        // Pass 2: the row again (from L2), weight and bias beside it, normalized into y;
        // `REREAD` units a step: L2's latency is shorter than DRAM's, and each unit brings
        // its weight and bias vectors too.
        let (mut wt, mut bt, mut o) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
        // SAFETY: x holds the row's units; unit j of weight and bias (cols elements each),
        // and of y's row.
        unsafe {
            reread::<T, VEC>(x, units, |j, raw| {
                widen::<T, VEC>(fetch::<T, VEC>(w, j, Hint::Plain), &mut wt);
                if LAYER {
                    widen::<T, VEC>(fetch::<T, VEC>(bias, j, Hint::Plain), &mut bt);
                }
                widen::<T, VEC>(raw, &mut u);
                for k in 0..per {
                    o[k] = (u[k] - mean) * rs * wt[k] + bt[k];
                }
                if VEC {
                    store16_hint(y.add(j as usize * T::PER16).cast(), T::pack16(&o), policy(Hint::Leave));
                } else {
                    T::store(y.add(j as usize), o[0]);
                }
            })
        }
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident) => {
        crate::kernel! {
            /// One row per block, streamed twice (statistics, then normalize from L2), any
            /// row length.
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
                eps: f32,
            ) {
                crate::gpu::launch_bounds::<{ MAX_THREADS }, { BOUND_BLOCKS }>();
                // SAFETY: forwarded from the host wrapper's checks (grid = rows,
                // block = block_threads(cols, ..) <= MAX_THREADS, SHARED_BYTES).
                unsafe { dev::run::<$t, $layer>(x, w, bias, y, cols, eps) }
            }
        }
    };
}

entry!(f32, true, norm_v08_l2_reread_layernorm_f32);
entry!(u16, true, norm_v08_l2_reread_layernorm_bf16);
entry!(f32, false, norm_v08_l2_reread_rmsnorm_f32);
entry!(u16, false, norm_v08_l2_reread_rmsnorm_bf16);
