//! The row-in-registers layout of the kernels that read their row once: one block per row
//! (softmax v05, norm v03), or a group of lanes per row (softmax v06): how many threads a row
//! gets and which element each register slot holds. Host-visible, so that launch geometry and
//! device code read the same functions; the device-side loads and stores of this layout are
//! `crate::gpu::row`.
//!
//! The layout is the same for both: `ROW_ITEMS` slots a thread, `b` threads on a row (v05: the
//! block, `row_threads(cols)`; v06: a group of `warp_row_lanes(cols)` lanes of one warp),
//! thread `t` of them holding the elements `row_slot(k, t, b, ..)`.

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
/// `None` when it falls past `cols` (the layout `crate::gpu::row` loads and stores).
/// Vector layout (`per16` elements a 16-byte vector, the
/// row 16-byte aligned): chunk `k / per16` is vector `chunk * b + t`, so a warp's loads are
/// consecutive vectors. Scalar layout (`per16 == 1`): slot k is element `k * b + t`.
pub const fn row_slot(k: u32, t: u32, b: u32, per16: u32, cols: u32) -> Option<u32> {
    let e = ((k / per16) * b + t) * per16 + k % per16;
    if e < cols { Some(e) } else { None }
}

/// Longest row of the rows-per-warp kernel (softmax v06): a whole warp (32 lanes) on one row,
/// `ROW_ITEMS` elements a lane. Longer rows go to the one-block-per-row kernels.
pub const WARP_ROW_MAX_COLS: u32 = ROW_ITEMS * 32;

/// Lanes of a warp that share one row of `cols` in the rows-per-warp kernel (softmax v06): the
/// fewest that hold the row at `ROW_ITEMS` a lane, rounded up to a power of two so that groups
/// tile the warp and butterfly shuffles with masks below it stay inside a group. 1 for rows of
/// up to 16 elements, 8 for 128, 32 from 257 to `WARP_ROW_MAX_COLS`; a warp serves
/// `32 / warp_row_lanes(cols)` rows. Lane `q` of a group holds `row_slot(k, q, lanes, ..)`.
pub const fn warp_row_lanes(cols: u32) -> u32 {
    // next_power_of_two(0) = 1: an empty row still gets one lane.
    cols.div_ceil(ROW_ITEMS).next_power_of_two()
}
