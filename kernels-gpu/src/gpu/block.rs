//! Block-wide reductions: every thread of the block contributes a value and every thread
//! gets the block's total.
//!
//! Each warp reduces its 32 lanes with butterfly shuffles, lane 0 of each warp writes the
//! warp's total to shared memory, and then every warp reduces those (at most 32) totals
//! itself, so no broadcast barrier is needed. Requirements, for every function here: the
//! block is a whole number of warps (at most 32 of them), every thread of the block calls
//! it (it contains barriers), and `smem` points to at least 32 f32 of shared memory that
//! nothing else uses during the call. The same `smem` can serve several reductions in a
//! row: each starts with a barrier that keeps the previous one's readers ahead of its
//! writes.

use super::{sync_threads, thread, warp};

/// Max over the block; every thread gets it.
#[inline(always)]
pub unsafe fn max_f32(v: f32, smem: *mut f32) -> f32 {
    // SAFETY: forwarded; see the module docs.
    unsafe { reduce(warp::max_f32(v), smem, f32::NEG_INFINITY, true) }
}

/// Sum over the block; every thread gets it.
#[inline(always)]
pub unsafe fn sum_f32(v: f32, smem: *mut f32) -> f32 {
    // SAFETY: forwarded; see the module docs.
    unsafe { reduce(warp::sum_f32(v), smem, 0.0, false) }
}

/// The second stage: `warp_total` is this warp's reduced value; `identity` fills the lanes
/// past the block's warp count; `max` picks max over sum.
#[inline(always)]
unsafe fn reduce(warp_total: f32, smem: *mut f32, identity: f32, max: bool) -> f32 {
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
