//! Family `softmax`: `y[r, j] = exp(x[r, j] - max_r) / sum_k exp(x[r, k] - max_r)` over the
//! last dimension of a rows x cols tensor, f32 or bf16 storage (raw u16), f32 arithmetic.
//!
//! Numerical contract (every variant): the max is subtracted before exp, so inputs of any
//! finite magnitude are safe; `-inf` entries give 0; a row that is entirely `-inf` gives all
//! zeros (no NaN: its max is taken as 0 and its sum, 0, is inverted as 0). exp is
//! `ex2.approx` of `(x - max) * log2 e`: relative error ~2^-22 plus the rounding of the
//! product, a few 1e-7 in the range that matters.
//!
//! Also here, device-side: block reductions and the row-in-registers tile that v05 (and
//! norm's v03) use.

pub mod v01_three_kernels;
pub mod v02_block_per_row;
pub mod v03_online;
pub mod v04_warp_per_row;
pub mod v05_row_in_registers;

/// Elements each thread holds in registers in the row-in-registers kernels.
pub const ROW_ITEMS: u32 = 16;
/// Most threads a block of those kernels has.
pub const ROW_MAX_THREADS: u32 = 1024;
/// Longest row held on chip: `ROW_ITEMS * ROW_MAX_THREADS`.
pub const ROW_MAX_COLS: u32 = ROW_ITEMS * ROW_MAX_THREADS;

/// Block size of a row-in-registers kernel for a row of `cols`: enough threads that
/// `ROW_ITEMS` each cover the row, a whole number of warps, at least one.
pub const fn row_threads(cols: u32) -> u32 {
    let t = cols.div_ceil(ROW_ITEMS).div_ceil(32) * 32;
    if t < 32 { 32 } else { t }
}

/// Element of a row that register slot `k` of thread `t` holds (block of `b` threads), or
/// `None` when it falls past `cols`. Vector layout (`per16` elements a 16-byte vector, the
/// row 16-byte aligned): chunk `k / per16` is vector `chunk * b + t`, so a warp's loads are
/// consecutive vectors. Scalar layout (`per16 == 1`): slot k is element `k * b + t`.
pub const fn row_slot(k: u32, t: u32, b: u32, per16: u32, cols: u32) -> Option<u32> {
    let e = ((k / per16) * b + t) * per16 + k % per16;
    if e < cols { Some(e) } else { None }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device {
    use crate::gpu::bf16::Storage;
    use crate::gpu::{math, sync_threads, thread, warp};

    pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

    /// e^(x - m) for a finite-or-(-inf) x and a finite m.
    #[inline(always)]
    pub fn exp_sub(x: f32, m: f32) -> f32 {
        math::exp2((x - m) * LOG2_E)
    }

    /// The max to subtract: a row whose max is -inf (all -inf) uses 0, so that every
    /// exp is exp(-inf) = 0 instead of NaN.
    #[inline(always)]
    pub fn safe_max(m: f32) -> f32 {
        if m == f32::NEG_INFINITY { 0.0 } else { m }
    }

    /// 1 / sum, with an empty sum (all -inf row) giving 0.
    #[inline(always)]
    pub fn safe_inv(s: f32) -> f32 {
        if s > 0.0 { 1.0 / s } else { 0.0 }
    }

    /// One online-softmax step: fold x into the running (max m, sum s of e^(x - m)).
    #[inline(always)]
    pub fn online(m: &mut f32, s: &mut f32, x: f32) {
        let mn = math::max(*m, x);
        if mn != f32::NEG_INFINITY {
            *s = *s * exp_sub(*m, mn) + exp_sub(x, mn);
        }
        *m = mn;
    }

    /// Max over the block; every thread gets it. `smem` holds >= 32 f32; the block is a
    /// whole number of warps and every thread calls this.
    #[inline(always)]
    pub unsafe fn block_max(v: f32, smem: *mut f32) -> f32 {
        // SAFETY: forwarded; see `block_reduce`.
        unsafe { block_reduce(warp::max_f32(v), smem, f32::NEG_INFINITY, true) }
    }

    /// Sum over the block; every thread gets it. As `block_max`.
    #[inline(always)]
    pub unsafe fn block_sum(v: f32, smem: *mut f32) -> f32 {
        // SAFETY: forwarded; see `block_reduce`.
        unsafe { block_reduce(warp::sum_f32(v), smem, 0.0, false) }
    }

    #[inline(always)]
    unsafe fn block_reduce(warp_total: f32, smem: *mut f32, identity: f32, max: bool) -> f32 {
        let lane = warp::lane_id();
        let w = thread::thread_idx_x() / 32;
        let nw = thread::block_dim_x() / 32;
        // The first barrier keeps a previous reduction's readers ahead of these writes.
        sync_threads();
        // SAFETY: w < 32 and smem holds 32 f32.
        unsafe {
            if lane == 0 {
                *smem.add(w as usize) = warp_total;
            }
            sync_threads();
            // Every warp reduces the per-warp totals itself: no broadcast barrier needed.
            let v = if lane < nw {
                *smem.add(lane as usize)
            } else {
                identity
            };
            if max {
                warp::max_f32(v)
            } else {
                warp::sum_f32(v)
            }
        }
    }

    /// Load this thread's `ROW_ITEMS` slots of a row (see `row_slot`); slots past the row get
    /// `fill`. `vec`: the row and all pointers are 16-byte aligned and cols % PER16 == 0.
    #[inline(always)]
    pub unsafe fn load_row<T: Storage>(
        row: *const T,
        cols: u32,
        vec: bool,
        fill: f32,
        v: &mut [f32; 16],
    ) {
        let t = thread::thread_idx_x();
        let b = thread::block_dim_x();
        // SAFETY: every access is to an element < cols (row_slot), vectors whole (cols %
        // PER16 == 0) and aligned (`vec`).
        unsafe {
            if vec {
                let p = T::PER16 as u32;
                for c in 0..(16 / T::PER16) {
                    let e = (c as u32 * b + t) * p;
                    let mut tmp = [fill; 8];
                    if e < cols {
                        T::load16(row.add(e as usize), &mut tmp);
                    }
                    for k in 0..T::PER16 {
                        v[c * T::PER16 + k] = tmp[k];
                    }
                }
            } else {
                for k in 0..16 {
                    let e = k as u32 * b + t;
                    v[k] = if e < cols {
                        T::load(row.add(e as usize))
                    } else {
                        fill
                    };
                }
            }
        }
    }

    /// Store the slots `load_row` loaded (the same layout).
    #[inline(always)]
    pub unsafe fn store_row<T: Storage>(row: *mut T, cols: u32, vec: bool, v: &[f32; 16]) {
        let t = thread::thread_idx_x();
        let b = thread::block_dim_x();
        // SAFETY: as in `load_row`.
        unsafe {
            if vec {
                let p = T::PER16 as u32;
                for c in 0..(16 / T::PER16) {
                    let e = (c as u32 * b + t) * p;
                    if e < cols {
                        let mut tmp = [0.0f32; 8];
                        for k in 0..T::PER16 {
                            tmp[k] = v[c * T::PER16 + k];
                        }
                        T::store16(row.add(e as usize), &tmp);
                    }
                }
            } else {
                for k in 0..16 {
                    let e = k as u32 * b + t;
                    if e < cols {
                        T::store(row.add(e as usize), v[k]);
                    }
                }
            }
        }
    }
}
