//! transpose/v04_multi_element_vectorized — a 4×4 block per thread, 16-byte accesses.
//!
//! Changed from v03: each thread loads a 4×4 block of the input as four 16-byte row pieces
//! (`ld.global.nc.v4.f32`), transposes it in registers, and stores four 16-byte pieces of
//! output rows (`st.global.v4.f32`). A 16-byte piece is half a 32-byte sector and its
//! neighbour lane supplies the other half, so every sector either side is used whole; the
//! tile no longer needs to pass through shared memory (no barrier, no bank conflicts), a
//! quarter of the memory instructions remain, and each thread has 64 bytes in flight.
//!
//! Thread mapping: blocks of `BLOCK_X × BLOCK_Y` threads covering `BLOCK_ROWS × BLOCK_COLS`
//! of the input; thread `(tx, ty)` owns columns `4·(bx·BLOCK_X + tx) ..+4` and the 4-row
//! groups at `by·BLOCK_ROWS + 4·ty + k·SUB_ROWS` for `k < ROW_BLOCKS`, loading all of them
//! before storing any. With `BLOCK_X = 8` a warp is 8 × 4 threads: each load instruction
//! covers 4 input rows × 128 bytes, each store 8 output rows × 64 bytes. Rows past
//! `gridDim.y` are covered by a loop.
//!
//! Vector access needs 16-byte-aligned rows: loads when the input starts on a 16-byte
//! boundary and `n % 4 == 0`, stores when the output does and `m % 4 == 0` (the output's row
//! stride is `m`). Otherwise that side falls back to four scalar accesses (same mapping, so
//! still whole sectors per warp); 4×4 blocks cut by the matrix edge go element by element.
//!
//! Memory traffic: the minimum in DRAM, no shared memory.
//!
//! Expected bound: DRAM, at the copy roof.

/// Threads per block in x (along input columns); a warp is `BLOCK_X × (32 / BLOCK_X)`.
pub const BLOCK_X: u32 = 8;
/// Threads per block in y (along input rows).
pub const BLOCK_Y: u32 = 32;
/// Each thread moves a `VEC × VEC` block (VEC f32 = one 16-byte vector).
pub const VEC: u32 = 4;
/// 4×4 blocks per thread, stacked `SUB_ROWS` rows apart: all their loads are issued before
/// the first store, so a thread has `ROW_BLOCKS · 64` bytes in flight.
pub const ROW_BLOCKS: u32 = 2;
/// Input rows one pass of the block's threads covers.
pub const SUB_ROWS: u32 = BLOCK_Y * VEC;
/// Input columns one block covers.
pub const BLOCK_COLS: u32 = BLOCK_X * VEC;
/// Input rows one block covers.
pub const BLOCK_ROWS: u32 = SUB_ROWS * ROW_BLOCKS;

const _: () = assert!(
    ROW_BLOCKS == 2,
    "the kernel issues exactly two 4x4 blocks a trip"
);

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{BLOCK_ROWS, BLOCK_X, SUB_ROWS, VEC};
    use crate::gpu::{thread, vector};

    /// The 4×4 block at rows `i..i+4`, columns `j0..j0+4` (all inside the matrix).
    #[inline(always)]
    unsafe fn load_block(inp: *const f32, n: usize, i: u32, j0: u32, vec: bool) -> [[f32; 4]; 4] {
        let mut a = [[0.0f32; 4]; 4];
        for (r, row) in a.iter_mut().enumerate() {
            // SAFETY: the caller guarantees the block is inside the matrix and, for `vec`,
            // that rows are 16-byte aligned.
            unsafe {
                let p = inp.add((i as usize + r) * n + j0 as usize);
                if vec {
                    *row = vector::load_f32x4_nc(p).0;
                } else {
                    for (c, x) in row.iter_mut().enumerate() {
                        *x = *p.add(c);
                    }
                }
            }
        }
        a
    }

    /// Store block `a` (rows `i..i+4`, columns `j0..j0+4` of the input) transposed.
    #[inline(always)]
    unsafe fn store_block(out: *mut f32, m: usize, i: u32, j0: u32, a: &[[f32; 4]; 4], vec: bool) {
        for c in 0..4 {
            let col = [a[0][c], a[1][c], a[2][c], a[3][c]];
            // SAFETY: as for `load_block`, on the output side.
            unsafe {
                let q = out.add((j0 as usize + c) * m + i as usize);
                if vec {
                    vector::store_f32x4(q, vector::F32x4(col));
                } else {
                    for (r, &x) in col.iter().enumerate() {
                        *q.add(r) = x;
                    }
                }
            }
        }
    }

    /// The 4×4 block at `(i, j0)` element by element, for blocks cut by the matrix edge.
    #[inline(always)]
    unsafe fn edge_block(inp: *const f32, out: *mut f32, m: u32, n: u32, i: u32, j0: u32) {
        for r in 0..VEC {
            for c in 0..VEC {
                let (i, j) = (i + r, j0 + c);
                if i < m && j < n {
                    // SAFETY: i < m and j < n.
                    unsafe {
                        *out.add(j as usize * m as usize + i as usize) =
                            *inp.add(i as usize * n as usize + j as usize);
                    }
                }
            }
        }
    }

    /// `out[j][i] = inp[i][j]`; `inp` is `m × n`, `out` is `n × m`, both row-major.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn transpose_v04_multi_element_vectorized(
        inp: *const f32,
        out: *mut f32,
        m: u32,
        n: u32,
    ) {
        let j0 = (thread::block_idx_x() * BLOCK_X + thread::thread_idx_x()) * VEC;
        if j0 >= n {
            return;
        }
        // Grid-uniform: every thread takes the same branches below.
        let vec_load = n % VEC == 0 && (inp as u64) % 16 == 0;
        let vec_store = m % VEC == 0 && (out as u64) % 16 == 0;
        let (mu, nu) = (m as usize, n as usize);
        let col_full = j0 + VEC <= n;
        let mut i0 = thread::block_idx_y() * BLOCK_ROWS + thread::thread_idx_y() * VEC;
        let step = thread::grid_dim_y() * BLOCK_ROWS;
        while i0 < m {
            let i1 = i0 + SUB_ROWS;
            let full0 = col_full && i0 + VEC <= m;
            let full1 = col_full && i1 + VEC <= m;
            // SAFETY: whole blocks go the register path only when inside the matrix (full0,
            // full1); vector accesses only when rows are 16-byte aligned (checked above; i
            // and j0 are multiples of 4); the edge path checks every element.
            unsafe {
                // Both blocks' loads before any store: eight 16-byte loads in flight.
                let a0 = if full0 {
                    load_block(inp, nu, i0, j0, vec_load)
                } else {
                    [[0.0; 4]; 4]
                };
                let a1 = if full1 {
                    load_block(inp, nu, i1, j0, vec_load)
                } else {
                    [[0.0; 4]; 4]
                };
                if full0 {
                    store_block(out, mu, i0, j0, &a0, vec_store);
                } else {
                    edge_block(inp, out, m, n, i0, j0);
                }
                if full1 {
                    store_block(out, mu, i1, j0, &a1, vec_store);
                } else {
                    edge_block(inp, out, m, n, i1, j0);
                }
            }
            i0 += step;
        }
    }
}
