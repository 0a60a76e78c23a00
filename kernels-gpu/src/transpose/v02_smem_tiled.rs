//! transpose/v02_smem_tiled — stage a 32×32 tile in shared memory.
//!
//! Changed from v01: a block reads a `TILE × TILE` tile with coalesced row reads into shared
//! memory, synchronizes, and writes the tile's columns as coalesced output rows. Both global
//! sides now use whole 128-byte lines. The cost moves into shared memory: the write phase
//! reads a tile *column* (`tile[tx][r]`, stride `TILE` = 32 floats), so all 32 lanes of a
//! warp hit the same bank: a 32-way bank conflict on every read.
//!
//! Thread mapping: blocks of `TILE × BLOCK_ROWS` threads; each thread moves
//! `TILE / BLOCK_ROWS` elements in and out (rows `ty, ty + BLOCK_ROWS, ...`). Tiles past
//! `gridDim.y` in y are covered by a loop.
//!
//! Memory traffic: the minimum in DRAM; `TILE²·4` bytes of dynamic shared memory per block.
//!
//! Expected bound: shared-memory bank conflicts (32 serialized wavefronts per warp read).

/// Tile edge in elements.
pub const TILE: u32 = 32;
/// Thread rows per block; each thread handles `TILE / BLOCK_ROWS` rows of the tile.
pub const BLOCK_ROWS: u32 = 8;
/// Row pitch of the shared tile, in f32: no padding here (hence the conflicts).
pub const PITCH: u32 = TILE;
/// Dynamic shared memory per block, in bytes.
pub const SHARED_BYTES: u32 = TILE * PITCH * 4;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{shared, sync_threads, thread};

crate::kernel! {
    /// `out[j][i] = inp[i][j]`; `inp` is `m × n`, `out` is `n × m`, both row-major.
    pub unsafe fn transpose_v02_smem_tiled(
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
        // The loop bound depends only on block indices: every thread of the block runs the
        // same iterations, so the barriers inside are not divergent.
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
                // Output row = input column col0 + r, output column = input row row0 + tx.
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
                // Nobody refills the tile until every thread has read it.
                sync_threads();
            }
            by += thread::grid_dim_y();
        }
    }
}
