//! The row-in-registers layout of the one-block-per-row kernels that read their row once
//! (softmax v05, norm v03): how many threads a row gets and which element each register slot
//! holds. Host-visible, so that launch geometry and device code read the same functions; the
//! device-side loads and stores of this layout are `crate::gpu::row`.

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
