//! transpose/v03_padded — the v02 tile with one float of padding per row.
//!
//! Changed from v02: the shared tile's row pitch is `TILE + 1` = 33 floats. Element
//! `tile[r][c]` sits in bank `(33·r + c) mod 32 = (r + c) mod 32`, so the 32 lanes reading a
//! column (fixed c, r = 0..31) hit 32 different banks: the write phase's shared reads are
//! conflict-free, and the row-wise stores into the tile stay conflict-free too.
//!
//! Thread mapping: as v02 (`TILE × BLOCK_ROWS` threads, `TILE / BLOCK_ROWS` elements each,
//! a loop over tile rows past `gridDim.y`).
//!
//! Memory traffic: the minimum in DRAM; `TILE·(TILE+1)·4` bytes of shared memory per block.
//!
//! Expected bound: DRAM, close to the copy roof; what remains is one 4-byte access per
//! element and instruction each side (v04 widens them).

/// Tile edge in elements.
pub const TILE: u32 = 32;
/// Thread rows per block; each thread handles `TILE / BLOCK_ROWS` rows of the tile.
pub const BLOCK_ROWS: u32 = 8;
/// Row pitch of the shared tile, in f32: one float of padding breaks the bank alignment.
pub const PITCH: u32 = TILE + 1;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = TILE * PITCH * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    /// `out[j][i] = inp[i][j]`; `inp` is `m × n`, `out` is `n × m`, both row-major.
    pub unsafe fn transpose_v03_padded(
        inp: *const f32,
        out: *mut f32,
        m: u32,
        n: u32,
    ) {
        let tile = shared::dynamic_shared_mem::<f32>();
        let (tx, ty) = (thread::thread_idx_x(), thread::thread_idx_y());
        let col0 = thread::block_idx_x() * TILE;
        let tiles_y = m.div_ceil(TILE);
        let mut by = thread::block_idx_y();
        // Block-uniform loop bound: the barriers inside are not divergent.
        while by < tiles_y {
            let row0 = by * TILE;
            // SAFETY: (whole block) global offsets are guarded by `< m` / `< n`; shared
            // offsets are below TILE·PITCH, the size the host launches with.
            unsafe {
                let j = col0 + tx;
                let mut r = ty;
                while r < TILE {
                    let i = row0 + r;
                    if i < m && j < n {
                        *tile.add((r * PITCH + tx) as usize) =
                            *inp.add(i as usize * n as usize + j as usize);
                    }
                    r += BLOCK_ROWS;
                }
                sync_threads();
                let oc = row0 + tx;
                let mut r = ty;
                while r < TILE {
                    let orow = col0 + r;
                    if orow < n && oc < m {
                        *out.add(orow as usize * m as usize + oc as usize) =
                            *tile.add((tx * PITCH + r) as usize);
                    }
                    r += BLOCK_ROWS;
                }
                sync_threads();
            }
            by += thread::grid_dim_y();
        }
    }
}
