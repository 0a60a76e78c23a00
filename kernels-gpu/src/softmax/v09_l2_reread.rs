//! softmax/v09_l2_reread — the row is not held on chip at all: the running max and sum in one
//! streaming pass, and the output from a second read of the row, from L2, which still holds it.
//!
//! Changed from v03/v07: v03 already reads each row twice with nothing held, but one scalar
//! load at a time from 256 threads, so little of the row is in flight and nothing tells L2
//! to keep the row for the second read. v07 holds a long row in a cluster's shared memory,
//! and pays for holding with occupancy and two cluster barriers a row, whose phases (load,
//! exchange, write) then have little else on the SM to overlap them. Here each thread
//! streams its share of the row with 16-byte loads, `UNROLL` of them in flight a step, marked
//! `evict_last`, and folds them into a running (max, sum) an element at a time, rescaling the
//! sum when an element raises the max (LLVM if-converts that rare branch, so pass 1 issues
//! two `ex2.approx` an element, as v03's online update does; at 16 a clock an SM the MUFU
//! unit is not what binds). The block then merges the threads' (max, sum) as v03 does, and
//! the second pass re-reads the row under `evict_first`, `REREAD` vectors a step, and writes
//! y under `evict_first`. Launch bounds of two 1024-thread blocks an SM (32 registers), so
//! an SM runs 2048 threads of several rows in different phases. Norm v08 is the same pattern
//! (the layout and the hinted loads are `crate::l2_reread`, shared by both).
//!
//! Thread mapping: block r owns row r; thread t of `block_threads(cols, ..)` takes the row's
//! 16-byte vectors t, t + b, t + 2b, ... (elements, when the rows are not 16-byte aligned or
//! not whole vectors), both passes in the same order.
//!
//! Memory traffic: DRAM the minimum, 1 read + 1 write, while the rows resident at once fit
//! in L2 (up to 2 rows an SM: 32768 f32, 65536 bf16 on the H100/H200); L2 serves x twice.
//!
//! Expected bound: DRAM, at any row length whose resident rows fit in L2.

/// Dynamic shared memory: one f32 per warp for the block reductions.
pub const SHARED_BYTES: u32 = 32 * 4;
/// The streaming layout (shared with norm v08): `UNROLL` vectors a step in pass 1, `REREAD`
/// in pass 2, `block_threads(cols, ..)` threads, launch bounds of `BOUND_BLOCKS` blocks of
/// `MAX_THREADS` an SM (32 registers).
pub use crate::l2_reread::{BOUND_BLOCKS, MAX_THREADS, MIN_UNITS, REREAD, UNROLL, block_threads};

#[cfg(target_arch = "nvptx64")]
mod dev {
    use super::UNROLL;
    use crate::gpu::bf16::{Storage, aligned16, each8, store16_hint};
    use crate::gpu::{block, shared, thread};
    use crate::l2_reread::dev::{Hint, fetch, policy, reread, widen};
    use crate::softmax::device::{exp_sub, safe_inv, safe_max};

    const G: usize = UNROLL as usize;

    /// One step of pass 1: units j0, j0 + b, .. (`UNROLL` of them, those < `units` unless
    /// `FULL`, where all are) loaded with `evict_last`, then folded into the running max `m`
    /// and sum `s` of e^(x − m) an element at a time.
    #[inline(always)]
    unsafe fn step1<T: Storage, const VEC: bool, const FULL: bool>(
        x: *const T,
        j0: u32,
        b: u32,
        units: u32,
        m: &mut f32,
        s: &mut f32,
    ) {
        let per = if VEC { T::PER16 } else { 1 };
        let inside = |g: usize| FULL || j0 + g as u32 * b < units;
        let mut raw = [[0u32; 4]; G];
        // `each8`: written-out calls, so that `raw` is indexed by constants and stays in
        // registers.
        each8(G, |g| {
            if inside(g) {
                // SAFETY: unit j0 + g·b < units of the row (the caller's contract when FULL).
                raw[g] = unsafe { fetch::<T, VEC>(x, j0 + g as u32 * b, Hint::Keep) };
            }
        });
        // Folded an element at a time, so that each widened value dies at once (a vector's
        // max taken first, to rescale once a vector, kept all 8 widened values live and
        // spilled at 32 registers in bf16).
        let mut u = [0.0f32; 8];
        each8(G, |g| {
            if inside(g) {
                widen::<T, VEC>(raw[g], &mut u);
                for k in 0..per {
                    let v = u[k];
                    if v > *m {
                        // e^(m − v) is 0 while m is -inf (s is 0 then too).
                        *s *= exp_sub(*m, v);
                        *m = v;
                    }
                    // -inf adds 0, and would be NaN against a max still -inf.
                    if v != f32::NEG_INFINITY {
                        *s += exp_sub(v, *m);
                    }
                }
            }
        });
    }

    #[inline(always)]
    pub unsafe fn run<T: Storage>(x: *const T, y: *mut T, cols: u32) {
        let vec = aligned16(x) && aligned16(y) && cols.is_multiple_of(T::PER16 as u32);
        let off = thread::block_idx_x() as usize * cols as usize;
        // SAFETY: block r < rows: the row starts inside x and y; forwarded.
        unsafe {
            let (x, y) = (x.add(off), y.add(off));
            if vec {
                row::<T, true>(x, y, cols / T::PER16 as u32)
            } else {
                row::<T, false>(x, y, cols)
            }
        }
    }

    /// Both passes over one row of `units` units (vectors, or elements when not `VEC`).
    #[inline(always)]
    unsafe fn row<T: Storage, const VEC: bool>(x: *const T, y: *mut T, units: u32) {
        let per = if VEC { T::PER16 } else { 1 };
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let smem = shared::dynamic_shared_mem::<f32>();
        // Pass 1: the thread's running (max, sum). Full steps first, whose `UNROLL` units all
        // lie inside the row (no bounds tests), then at most one partial step (norm v08's
        // shape, which holds it to 32 registers without spills).
        let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
        let mut j0 = t;
        while j0 + (UNROLL - 1) * b < units {
            // SAFETY: units j0 .. j0 + 3b < units of the row.
            unsafe { step1::<T, VEC, true>(x, j0, b, units, &mut m, &mut s) };
            j0 += UNROLL * b;
        }
        if j0 < units {
            // SAFETY: the loads test j < units.
            unsafe { step1::<T, VEC, false>(x, j0, b, units, &mut m, &mut s) };
        }
        // SAFETY: smem holds 32 f32 (SHARED_BYTES); every thread of the block calls these.
        let (mb, inv) = unsafe {
            let mb = safe_max(block::max_f32(m, smem));
            // A thread with no finite element has s = 0 and contributes 0.
            let mine = if s > 0.0 { s * exp_sub(m, mb) } else { 0.0 };
            (mb, safe_inv(block::sum_f32(mine, smem)))
        };
        // Pass 2: the row again (from L2), normalized into y, `REREAD` units a step.
        let (mut u, mut o) = ([0.0f32; 8], [0.0f32; 8]);
        // SAFETY: x holds the row's units; unit j of y's row.
        unsafe {
            reread::<T, VEC>(x, units, |j, raw| {
                widen::<T, VEC>(raw, &mut u);
                for k in 0..per {
                    o[k] = exp_sub(u[k], mb) * inv;
                }
                if VEC {
                    let p = y.add(j as usize * T::PER16).cast();
                    store16_hint(p, T::pack16(&o), policy(Hint::Leave));
                } else {
                    T::store(y.add(j as usize), o[0]);
                }
            })
        }
    }
}

macro_rules! entry {
    ($t:ty, $name:ident) => {
        crate::kernel! {
            /// Softmax of each row of x into y, one row per block, streamed twice (max and
            /// sum, then the output from L2), any row length.
            pub unsafe fn $name(x: *const $t, y: *mut $t, cols: u32) {
                crate::gpu::launch_bounds::<{ MAX_THREADS }, { BOUND_BLOCKS }>();
                // SAFETY: forwarded from the host wrapper's checks (grid = rows,
                // block = block_threads(cols, ..) <= MAX_THREADS, SHARED_BYTES).
                unsafe { dev::run::<$t>(x, y, cols) }
            }
        }
    };
}

entry!(f32, softmax_v09_l2_reread_f32);
entry!(u16, softmax_v09_l2_reread_bf16);
