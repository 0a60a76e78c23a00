//! Row tiles: a row of up to `16 * b` elements held in registers by `b` threads, 16 slots a
//! thread, for kernels that read their row once: one block per row (softmax v05, norm v03:
//! [`load`]/[`store`], `b` = blockDim.x) or a group of lanes per row (softmax v06:
//! [`load_for`]/[`store_for`] with the lane's index in its group and the group's size).
//!
//! Slot layout (the host-visible twin is `crate::row_layout::row_slot`, which the launch geometry and
//! the host's unit tests use): with the vector layout (`per16` elements a 16-byte vector),
//! chunk `k / per16` of thread `t` is vector `chunk * blockDim.x + t`, so a warp's loads are
//! consecutive vectors; with the scalar layout (`per16 == 1`) slot `k` is element
//! `k * blockDim.x + t`. Slots past the row are padding: loaded as a fill value, never
//! stored.

use super::bf16::Storage;
use super::thread;

/// Load this thread's 16 slots of a row (see the module docs); slots past the row get
/// `fill`. `vec`: the row and all pointers are 16-byte aligned and cols % PER16 == 0.
#[inline(always)]
pub unsafe fn load<T: Storage>(row: *const T, cols: u32, vec: bool, fill: f32, v: &mut [f32; 16]) {
    // SAFETY: forwarded.
    unsafe {
        load_for(
            thread::thread_idx_x(),
            thread::block_dim_x(),
            row,
            cols,
            vec,
            fill,
            v,
        )
    }
}

/// [`load`] for thread `t` of `b` threads sharing the row (the slot layout with `b` in place
/// of blockDim.x).
#[inline(always)]
pub unsafe fn load_for<T: Storage>(
    t: u32,
    b: u32,
    row: *const T,
    cols: u32,
    vec: bool,
    fill: f32,
    v: &mut [f32; 16],
) {
    // SAFETY: every access is to an element < cols (the slot layout), vectors whole (cols %
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

/// Store the slots `load` loaded (the same layout); padding slots are not stored.
#[inline(always)]
pub unsafe fn store<T: Storage>(row: *mut T, cols: u32, vec: bool, v: &[f32; 16]) {
    // SAFETY: forwarded.
    unsafe {
        store_for(
            thread::thread_idx_x(),
            thread::block_dim_x(),
            row,
            cols,
            vec,
            v,
        )
    }
}

/// [`store`] for thread `t` of `b` threads sharing the row.
#[inline(always)]
pub unsafe fn store_for<T: Storage>(
    t: u32,
    b: u32,
    row: *mut T,
    cols: u32,
    vec: bool,
    v: &[f32; 16],
) {
    // SAFETY: as in `load`.
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
