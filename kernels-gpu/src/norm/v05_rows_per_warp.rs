//! norm/v05_rows_per_warp — short rows: a group of lanes per row, 64 bytes of it a lane.
//!
//! Changed from v04: v04 gives every row a block of `row_threads(cols)` threads (a single warp
//! for rows of up to 512) and two block reductions through shared memory with their barriers;
//! at 128 columns a warp-sized block holds one row of 512 (f32) or 256 (bf16) bytes, each
//! thread has one 16-byte vector in flight, and the per-row fixed costs (block launch, two
//! barrier round trips, weight and bias loads) dominate: 39% of the roof in f32, 19.5% in
//! bf16 LayerNorm. Here a group of `G = row_lanes(cols, ..)` lanes owns a row (softmax v06's
//! idea), so a warp serves `32 / G` rows and a block of `BLOCK_THREADS` serves `256 / G`.
//! Each lane holds `LANE_VECTORS` = 4 raw 16-byte vectors of its row (64 bytes in flight in
//! either dtype: 16 f32 or 32 bf16, where softmax v06's 16 elements a lane leave bf16 with
//! 32 bytes), kept packed as v04 keeps them and widened at each use. Mean and variance are
//! butterfly shuffles with masks below `G`, which never leave the group: no shared memory,
//! no barrier. Variance is two-pass around the mean, from the registers. Rows of up to
//! `MAX_COLS` = 512 (32 lanes × 16 f32; bf16 rows of 512 take 16 lanes); the host refuses
//! longer rows for this step. Rows that are not 16-byte aligned take a scalar path that reads
//! the row three times (L1 after the first), as v04's does.
//!
//! Thread mapping: group `g` of the block (threads `g·G .. g·G + G`, inside one warp) owns
//! row `blockIdx.x · (BLOCK_THREADS / G) + g`; vector `c` of lane `q` of the group is the
//! row's vector `c·G + q`, so a group reads `G·16` contiguous bytes per instruction (scalar
//! layout: element `k·G + q`). Weight and bias are read in the same layout, one vector at a
//! time, just before the output vector that needs them (L1 hits after the first group).
//!
//! Memory traffic: the minimum, 1 read + 1 write (+ weight and bias, L1/L2-resident).
//!
//! Expected bound: DRAM, near the copy roof at 128-512 columns in f32 and bf16.

/// Threads per block (8 warps): `BLOCK_THREADS / row_lanes(cols, ..)` rows a block.
pub const BLOCK_THREADS: u32 = 256;
/// 16-byte vectors a lane holds: 64 bytes in flight a lane in f32 and bf16 alike.
pub const LANE_VECTORS: u32 = 4;
/// Longest row: a whole warp at 16 f32 a lane (`32 · LANE_VECTORS · 4`). The same limit in
/// bf16 (16 lanes at 32 elements), so that the step and `auto` take the same lengths in both.
pub const MAX_COLS: u32 = 32 * LANE_VECTORS * 4;

/// Elements a lane holds for `elem_bytes`-byte elements (4 or 2): 16 in f32, 32 in bf16.
pub const fn lane_cols(elem_bytes: u32) -> u32 {
    LANE_VECTORS * (16 / elem_bytes)
}

/// Lanes that share one row of `cols`: the fewest that hold it at `lane_cols` elements a
/// lane, rounded up to a power of two so that groups tile the warp and butterfly masks below
/// it stay inside a group (1 for the shortest rows, 8 for 128 f32, 4 for 128 bf16, 32 for
/// 512 f32). An empty row still gets one lane.
pub const fn row_lanes(cols: u32, elem_bytes: u32) -> u32 {
    cols.div_ceil(lane_cols(elem_bytes)).next_power_of_two()
}

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::{Storage, load16_nc};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{thread, warp};
#[cfg(target_arch = "nvptx64")]
use crate::norm::rsqrt;

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn run<T: Storage, const LAYER: bool>(
    x: *const T,
    w: *const T,
    bias: *const T,
    y: *mut T,
    rows: u32,
    cols: u32,
    eps: f32,
) {
    // The same function the host sized the grid with; a power of two, so the divisions by it
    // are shifts.
    let g = row_lanes(cols, 16 / T::PER16 as u32);
    let lg = g.trailing_zeros();
    let tid = thread::thread_idx_x();
    let first = thread::block_idx_x() * (BLOCK_THREADS >> lg);
    // A warp whose first row is past the end leaves whole; in a warp that stays every lane
    // takes part in the shuffles (full mask), and lanes past the last row only skip memory.
    if first + ((tid & !31) >> lg) >= rows {
        return;
    }
    let r = first + (tid >> lg);
    let live = r < rows;
    let q = tid & (g - 1);
    let off = r as usize * cols as usize;
    let n = cols as f32;
    let vec = crate::norm::vector_layout::<T, LAYER>(x, w, bias, y, cols);
    if !vec {
        // SAFETY: forwarded; a live lane's row is x[off .. off + cols], r < rows.
        unsafe { scalar::<T, LAYER>(x, w, bias, y, live, off, g, q, cols, eps, n) };
        return;
    }
    let p = T::PER16 as u32;
    // Element where this lane's vector c starts (at or past cols: padding, never touched).
    let start = |c: usize| (c as u32 * g + q) * p;
    let mut raw = [[0u32; 4]; LANE_VECTORS as usize];
    for c in 0..LANE_VECTORS as usize {
        if live && start(c) < cols {
            // SAFETY: a whole vector inside row r (cols % PER16 == 0), 16-byte aligned.
            raw[c] = unsafe { load16_nc(x.add(off + start(c) as usize).cast()) };
        }
    }
    let mut f = [0.0f32; 8];
    let mut mean = 0.0f32;
    if LAYER {
        let mut s = 0.0f32;
        for c in 0..LANE_VECTORS as usize {
            // Padding vectors are zero: they add nothing to the sum.
            T::unpack16(raw[c], &mut f);
            for k in 0..T::PER16 {
                s += f[k];
            }
        }
        mean = warp::sum_f32_in(s, g) / n;
    }
    let mut sq = 0.0f32;
    for c in 0..LANE_VECTORS as usize {
        // Padding would add mean^2: skipped.
        if start(c) < cols {
            T::unpack16(raw[c], &mut f);
            for k in 0..T::PER16 {
                let d = f[k] - mean;
                sq += d * d;
            }
        }
    }
    let rs = rsqrt(warp::sum_f32_in(sq, g) / n + eps);
    let (mut wt, mut bt, mut o) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
    for c in 0..LANE_VECTORS as usize {
        let e = start(c);
        if live && e < cols {
            // SAFETY: weight and bias hold cols elements; the vector is inside them, aligned.
            let (wr, br) = unsafe {
                (
                    load16_nc(w.add(e as usize).cast()),
                    if LAYER {
                        load16_nc(bias.add(e as usize).cast())
                    } else {
                        [0; 4]
                    },
                )
            };
            T::unpack16(raw[c], &mut f);
            T::unpack16(wr, &mut wt);
            T::unpack16(br, &mut bt);
            for k in 0..T::PER16 {
                o[k] = (f[k] - mean) * rs * wt[k] + bt[k];
            }
            // SAFETY: inside row r, aligned.
            unsafe { T::store16(y.add(off + e as usize), &o) };
        }
    }
}

/// Rows that are not 16-byte aligned: three scalar passes over the lane's elements `q, q + G,
/// ..` (sum, squared deviations, output), the second and third from L1. Not held in
/// registers: registers are allotted for a kernel's hungriest path, and this rare one must
/// not cost the vector path its occupancy. Every lane of the warp runs the shuffles.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scalar<T: Storage, const LAYER: bool>(
    x: *const T,
    w: *const T,
    bias: *const T,
    y: *mut T,
    live: bool,
    off: usize,
    g: u32,
    q: u32,
    cols: u32,
    eps: f32,
    n: f32,
) {
    // A lane past the last row walks no element (its row would be outside x).
    let (end, base) = if live { (cols, off) } else { (0, 0) };
    // SAFETY: forwarded from `run`: x[off..off + cols] and y[off..off + cols] are the lane's
    // row when live; w, bias hold cols elements; every access is to an element e < end.
    unsafe {
        let (x, y) = (x.add(base), y.add(base));
        let mut mean = 0.0f32;
        if LAYER {
            let mut s = 0.0f32;
            let mut e = q;
            while e < end {
                s += T::load(x.add(e as usize));
                e += g;
            }
            mean = warp::sum_f32_in(s, g) / n;
        }
        let mut sq = 0.0f32;
        let mut e = q;
        while e < end {
            let d = T::load(x.add(e as usize)) - mean;
            sq += d * d;
            e += g;
        }
        let rs = rsqrt(warp::sum_f32_in(sq, g) / n + eps);
        let mut e = q;
        while e < end {
            let i = e as usize;
            let bk = if LAYER { T::load(bias.add(i)) } else { 0.0 };
            T::store(
                y.add(i),
                (T::load(x.add(i)) - mean) * rs * T::load(w.add(i)) + bk,
            );
            e += g;
        }
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident) => {
        crate::kernel! {
            /// A group of `row_lanes(cols, ..)` lanes per row, the row in registers, rows of up
            /// to 512.
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                rows: u32,
                cols: u32,
                eps: f32,
            ) {
                crate::gpu::launch_bounds::<{ BLOCK_THREADS }, 1>();
                // SAFETY: forwarded from the host wrapper's checks (cols <= MAX_COLS; grid =
                // rows · row_lanes(cols, ..) threads in blocks of BLOCK_THREADS).
                unsafe { run::<$t, $layer>(x, w, bias, y, rows, cols, eps) }
            }
        }
    };
}

entry!(f32, true, norm_v05_rows_per_warp_layernorm_f32);
entry!(u16, true, norm_v05_rows_per_warp_layernorm_bf16);
entry!(f32, false, norm_v05_rows_per_warp_rmsnorm_f32);
entry!(u16, false, norm_v05_rows_per_warp_rmsnorm_bf16);
