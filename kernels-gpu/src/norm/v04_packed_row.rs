//! norm/v04_packed_row — the row held in registers in its storage type, widened on use.
//!
//! Changed from v03: v03 widens its 16 elements to f32 as it loads them and keeps weight and
//! bias for all 16 too, so 48 values are live at the end and ptxas gives it 54-64 registers:
//! 4 blocks of 256 threads an SM, and in bf16 each thread has only 32 bytes of the row in
//! flight. Here the row stays as the raw 16-byte vectors it was loaded as (bf16: two elements
//! a 32-bit register, 8 registers for 16 elements), widened again at each of the three uses
//! (sum, squared deviations, output: a shift or a mask per element), and weight and bias are
//! read one vector at a time just before the output vector that needs them is stored. Fewer
//! registers, more blocks an SM, more bytes in flight. Rows that are not 16-byte aligned take
//! a scalar path that reads the row three times (from L1 after the first) instead of holding
//! it: registers are allotted for a kernel's hungriest path.
//!
//! Thread mapping: as v03 (block r owns row r; vector c of thread t is vector `c * blockDim +
//! t` of the row, `row_layout::row_slot`).
//!
//! Memory traffic: the minimum, 1 read + 1 write (+ weight and bias, L2-resident).
//!
//! Expected bound: DRAM, near the copy roof in bf16 as in f32.

/// Dynamic shared memory: one f32 per warp for the block reduction.
pub const SHARED_BYTES: u32 = 32 * 4;

/// Launch bounds of the bf16 RMSNorm entry (see the entries below for the others): blocks of up to `ROW_MAX_THREADS` (1024), at least this
/// many an SM, so ptxas holds a thread to 65536 / (1024 · 2) = 32 registers: 8 blocks of 256
/// threads (rows of 4096) fit an SM, where v03's 54 registers allowed 4.
pub const BOUND_BLOCKS: u32 = 2;

/// The longest row and the block size for a row of `cols`: v03's row-in-registers layout.
pub use crate::row_layout::{ROW_MAX_COLS, row_threads};

#[cfg(target_arch = "nvptx64")]
use crate::gpu::bf16::{Storage, load16_nc};
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{block, shared, thread};
#[cfg(target_arch = "nvptx64")]
use crate::norm::rsqrt;
#[cfg(target_arch = "nvptx64")]
use crate::row_layout::ROW_ITEMS;

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<T: Storage, const LAYER: bool>(
    x: *const T,
    w: *const T,
    bias: *const T,
    y: *mut T,
    cols: u32,
    eps: f32,
) {
    let off = thread::block_idx_x() as usize * cols as usize;
    let smem = shared::dynamic_shared_mem::<f32>();
    let vec = crate::norm::vector_layout::<T, LAYER>(x, w, bias, y, cols);
    let n = cols as f32;
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    // SAFETY: block r < rows: the row starts inside x and y.
    let (x, y) = unsafe { (x.add(off), y.add(off)) };
    if !vec {
        // SAFETY: as v03's scalar path: every access is an element < cols of the row.
        unsafe { scalar::<T, LAYER>(x, w, bias, y, cols, eps, n, smem) };
        return;
    }
    let p = T::PER16 as u32;
    let chunks = ROW_ITEMS as usize / T::PER16;
    // Element of the row where this thread's vector c starts (past the row: not loaded).
    let start = |c: usize| (c as u32 * b + t) * p;
    // The row's vectors, raw: 4 in f32, 2 in bf16 (the rest unused).
    let mut raw = [[0u32; 4]; 4];
    for c in 0..chunks {
        if start(c) < cols {
            // SAFETY: a whole vector inside the row (cols % PER16 == 0), 16-byte aligned.
            raw[c] = unsafe { load16_nc(x.add(start(c) as usize).cast()) };
        }
    }
    let mut f = [0.0f32; 8];
    let mut mean = 0.0f32;
    if LAYER {
        let mut s = 0.0f32;
        for c in 0..chunks {
            if start(c) < cols {
                T::unpack16(raw[c], &mut f);
                for k in 0..T::PER16 {
                    s += f[k];
                }
            }
        }
        // SAFETY: smem has 32 f32 (SHARED_BYTES).
        mean = unsafe { block::sum_f32(s, smem) } / n;
    }
    let mut q = 0.0f32;
    for c in 0..chunks {
        if start(c) < cols {
            T::unpack16(raw[c], &mut f);
            for k in 0..T::PER16 {
                let d = f[k] - mean;
                q += d * d;
            }
        }
    }
    // SAFETY: as above.
    let rs = rsqrt(unsafe { block::sum_f32(q, smem) } / n + eps);
    let (mut wt, mut bt, mut o) = ([0.0f32; 8], [0.0f32; 8], [0.0f32; 8]);
    for c in 0..chunks {
        let e = start(c);
        if e < cols {
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
            // SAFETY: inside the row, aligned.
            unsafe { T::store16(y.add(e as usize), &o) };
        }
    }
}

/// Rows that are not 16-byte aligned: three scalar passes over the row (sum, squared
/// deviations, output), the second and third from L1. Not held in registers: registers are
/// allotted for a kernel's hungriest path, and this rare one must not cost the vector path
/// its occupancy.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scalar<T: Storage, const LAYER: bool>(
    x: *const T,
    w: *const T,
    bias: *const T,
    y: *mut T,
    cols: u32,
    eps: f32,
    n: f32,
    smem: *mut f32,
) {
    let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
    // SAFETY: forwarded from `run`: x, y are the row; w, bias hold cols elements; smem 32 f32;
    // every access is to an element e < cols.
    unsafe {
        let mut mean = 0.0f32;
        if LAYER {
            let mut s = 0.0f32;
            let mut e = t;
            while e < cols {
                s += T::load(x.add(e as usize));
                e += b;
            }
            mean = block::sum_f32(s, smem) / n;
        }
        let mut q = 0.0f32;
        let mut e = t;
        while e < cols {
            let d = T::load(x.add(e as usize)) - mean;
            q += d * d;
            e += b;
        }
        let rs = rsqrt(block::sum_f32(q, smem) / n + eps);
        let mut e = t;
        while e < cols {
            let i = e as usize;
            let bk = if LAYER { T::load(bias.add(i)) } else { 0.0 };
            T::store(
                y.add(i),
                (T::load(x.add(i)) - mean) * rs * T::load(w.add(i)) + bk,
            );
            e += b;
        }
    }
}

macro_rules! entry {
    ($t:ty, $layer:literal, $name:ident, $bound:literal) => {
        crate::kernel! {
            /// One row per block held in registers in its storage type, rows of up to 16384.
            pub unsafe fn $name(
                x: *const $t,
                w: *const $t,
                bias: *const $t,
                y: *mut $t,
                cols: u32,
                eps: f32,
            ) {
                if $bound {
                    crate::gpu::launch_bounds::<{ crate::row_layout::ROW_MAX_THREADS }, { BOUND_BLOCKS }>();
                }
                // SAFETY: forwarded from the host wrapper's checks (grid = rows,
                // block = row_threads(cols) <= ROW_MAX_THREADS).
                unsafe { run::<$t, $layer>(x, w, bias, y, cols, eps) }
            }
        }
    };
}

// f32 is its own storage: packing frees nothing there and 32 registers would spill, so only
// bf16 RMSNorm is bounded; bf16 LayerNorm keeps its mean and bias live as well and would spill
// 12 bytes at 32 registers (ptxas 12.9), so it runs at its own ~40: 6 blocks of 256 an SM.
entry!(f32, true, norm_v04_packed_row_layernorm_f32, false);
entry!(u16, true, norm_v04_packed_row_layernorm_bf16, false);
entry!(f32, false, norm_v04_packed_row_rmsnorm_f32, false);
entry!(u16, false, norm_v04_packed_row_rmsnorm_bf16, true);
