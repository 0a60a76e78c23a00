//! transpose/v04_multi_element_vectorized — a 4×4 block per thread, 16-byte accesses.
//!
//! Changed from v03: each thread loads a 4×4 block of the input as four 16-byte row pieces
//! (`ld.global.nc.v4.f32`), transposes it in registers, and stores four 16-byte pieces of
//! output rows (`st.global.v4.f32`). A 16-byte piece is half a 32-byte sector and its
//! neighbour lane supplies the other half, so every sector either side is used whole; the
//! tile no longer needs to pass through shared memory (no barrier, no bank conflicts), a
//! quarter of the memory instructions remain, and each thread has 64 bytes in flight.
//! Two choices about DRAM on top, each measured on the H200:
//! - Blocks are launched down the input's rows first (grid x = row blocks): blocks resident
//!   together then write neighbouring 512-byte pieces of the same output rows, so the writes
//!   reach DRAM as long runs instead of 32 rows × 512 bytes per block scattered over the
//!   matrix. 144 -> 139 µs at 8192².
//! - The loads carry an L2 256-byte prefetch hint (`ld.global.nc.L2::256B`): a block reads
//!   128 bytes of each of its rows and the column block beside it, resident at the same
//!   time, reads the next 128; with the hint one DRAM fetch can serve both (that is the
//!   intent; what was measured: 139 -> 136 µs with the order above, under 1% alone).
//!
//! Thread mapping: blocks of `BLOCK_X × BLOCK_Y` threads; block `(bx, by)` covers input rows
//! `bx·BLOCK_ROWS ..` and columns `by·BLOCK_COLS ..`; thread `(tx, ty)` owns input rows
//! `4·(bx·BLOCK_Y + ty) ..+4` and columns `4·(by·BLOCK_X + tx) ..+4`. With `BLOCK_X = 8` a
//! warp is 8 × 4 threads: each load instruction covers 4 input rows × 128 bytes, each store
//! 8 output rows × 64 bytes. Column blocks past `gridDim.y` are covered by a loop.
//!
//! Vector access needs 16-byte-aligned rows: loads when the input starts on a 16-byte
//! boundary and `n % 4 == 0`, stores when the output does and `m % 4 == 0` (the output's row
//! stride is `m`). Otherwise that side falls back to four scalar accesses (same mapping, so
//! still whole sectors per warp); 4×4 blocks cut by the matrix edge go element by element.
//!
//! Memory traffic: the minimum in DRAM, no shared memory.
//!
//! Expected bound: DRAM. Measured on the H200 at 8192² (2026-12-02 15:15): 136.1 µs,
//! 3.94 TB/s, 91.9% of the DRAM roof (a copy of the same 512 MiB, at 15:05: 129 µs). Tried
//! and slower or no better there: two 4×4 blocks per thread with all eight loads first
//! (148 µs, 64 registers), streaming (`.cs`) stores (150 µs), a grouped block order for
//! squarer resident patches (145-148 µs), 4×64 / 16×16 / 8×16 thread blocks (145-152 µs),
//! a 40-register cap for 6 blocks per SM instead of 5 (145 µs), all with the earlier
//! column-blocks-first order (144 µs).

/// The constants the CUDA C++ twin (`host/twins/transpose.cu`) is compiled with (`crate::twins`).
#[cfg(not(target_arch = "nvptx64"))]
pub const TWIN_DEFINES: &[(&str, i64)] = &[
    ("TRANSPOSE_V04_BLOCK_X", BLOCK_X as i64),
    ("TRANSPOSE_V04_BLOCK_Y", BLOCK_Y as i64),
    ("TRANSPOSE_V04_VEC", VEC as i64),
];

/// Threads per block in x (along input columns); a warp is `BLOCK_X × (32 / BLOCK_X)`.
pub const BLOCK_X: u32 = 8;
/// Threads per block in y (along input rows).
pub const BLOCK_Y: u32 = 32;
/// Each thread moves a `VEC × VEC` block (VEC f32 = one 16-byte vector).
pub const VEC: u32 = 4;
/// Input columns one block covers.
pub const BLOCK_COLS: u32 = BLOCK_X * VEC;
/// Input rows one block covers.
pub const BLOCK_ROWS: u32 = BLOCK_Y * VEC;
/// Grid x runs over row blocks and grid y over column blocks (the other variants have it
/// the other way round): blocks walk down the input first (see the header). The host's
/// launch geometry reads this.
pub const ROWS_ON_GRID_X: bool = true;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{thread, vector};

crate::kernel! {
    /// `out[j][i] = inp[i][j]`; `inp` is `m × n`, `out` is `n × m`, both row-major.
    pub unsafe fn transpose_v04_multi_element_vectorized(
        inp: *const f32,
        out: *mut f32,
        m: u32,
        n: u32,
    ) {
        // Rows on grid x: consecutive blocks walk down the input (see the header).
        let i0 = (thread::block_idx_x() * BLOCK_Y + thread::thread_idx_y()) * VEC;
        if i0 >= m {
            return;
        }
        // Grid-uniform: every thread takes the same branches below.
        let vec_load = n.is_multiple_of(VEC) && (inp as u64).is_multiple_of(16);
        let vec_store = m.is_multiple_of(VEC) && (out as u64).is_multiple_of(16);
        let (mu, nu) = (m as usize, n as usize);
        let mut j0 = (thread::block_idx_y() * BLOCK_X + thread::thread_idx_x()) * VEC;
        let step = thread::grid_dim_y() * BLOCK_X * VEC;
        while j0 < n {
            // SAFETY: (whole block) the full-block path runs only when rows i0..i0+4 and
            // columns j0..j0+4 are inside the matrix; vector accesses only when rows are
            // 16-byte aligned (checked above, and i0, j0 are multiples of 4); the edge path
            // checks every element.
            unsafe {
                if i0 + VEC <= m && j0 + VEC <= n {
                    let mut a = [[0.0f32; 4]; 4];
                    for (r, row) in a.iter_mut().enumerate() {
                        let p = inp.add((i0 as usize + r) * nu + j0 as usize);
                        if vec_load {
                            *row = vector::load_f32x4_nc_l2_256b(p).0;
                        } else {
                            for (c, x) in row.iter_mut().enumerate() {
                                *x = *p.add(c);
                            }
                        }
                    }
                    for c in 0..4 {
                        let q = out.add((j0 as usize + c) * mu + i0 as usize);
                        let col = [a[0][c], a[1][c], a[2][c], a[3][c]];
                        if vec_store {
                            vector::store_f32x4(q, vector::F32x4(col));
                        } else {
                            for (r, &x) in col.iter().enumerate() {
                                *q.add(r) = x;
                            }
                        }
                    }
                } else {
                    for r in 0..VEC {
                        for c in 0..VEC {
                            let (i, j) = (i0 + r, j0 + c);
                            if i < m && j < n {
                                *out.add(j as usize * mu + i as usize) =
                                    *inp.add(i as usize * nu + j as usize);
                            }
                        }
                    }
                }
            }
            j0 += step;
        }
    }
}
