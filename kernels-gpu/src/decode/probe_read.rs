//! decode/probe_read — not a step of the ladder: a copy-only probe that reads exactly the
//! K and V bytes a decode step needs, with plain 16-byte loads and nothing else to do, so
//! that its GB/s is what the cache's access pattern allows. The ladder's steps are judged
//! against the DRAM roof (a contiguous copy); this probe tells how much of the gap is the
//! pattern and how much is the steps' own work.
//!
//! Two ways to walk the same rows (the host picks them by `row_vec_shift` and `units`):
//! - head rows (decode's pattern): a block reads one KV head's slice of each row, `D·2`
//!   bytes (256 at D 128) at a stride of `Hkv·D·2` (2 KiB), page after page of its sequence;
//! - page rows: a block reads whole rows (all Hkv heads), so a page is one contiguous
//!   `page_size·Hkv·D·2` bytes (32 KiB).
//!
//! With a block table whose pages follow each other (the host's "linear" probe) page rows
//! are a contiguous stream: the read-only counterpart of the copy roof.
//!
//! Thread mapping: grid (splits, B·units); block `(x, y)` reads rows
//! `[x·rows_per_block, (x+1)·rows_per_block)` of sequence `y / units` (those below its
//! context length), unit `y % units`; `THREADS` threads take its 16-byte vectors round-robin,
//! `UNROLL` K and V loads in flight each.
//!
//! Memory traffic: the K and V rows of the contexts once (as the ladder's floor), the
//! block-table entries, one u32 a block written.
//!
//! Output: per block the wrapping sum of the u32 words it read (K and V), so the host checks
//! every byte was read, and the loads cannot be removed.
//!
//! Expected bound: DRAM.

pub const THREADS: u32 = 256;
pub const WARPS: u32 = THREADS / 32;
/// Vectors in flight a thread (K and V each).
pub const UNROLL: u32 = 4;
/// Blocks an SM the registers are capped for (`UNROLL` × 2 vectors in flight a thread).
pub const MIN_BLOCKS: u32 = 4;
/// Bytes of one cache a block reads (its rows × the bytes it reads of a row).
pub const BLOCK_BYTES: u32 = 32 * 1024;
/// Dynamic shared memory: one u32 a warp for the block's sum.
pub const SHARED_BYTES: u32 = 4 * WARPS;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{bf16, shared, sync_threads, thread, warp};

crate::kernel! {
    /// `out[block]` = the wrapping sum of the u32 words of the K and V bytes the block reads.
    pub unsafe fn decode_probe_read(
        k_cache: *const u16,
        v_cache: *const u16,
        block_table: *const u32,
        context_lens: *const u32,
        out: *mut u32,
        max_pages: u32,
        page_shift: u32,
        row_vec_shift: u32,
        row_stride_vectors: u32,
        units: u32,
        rows_per_block: u32,
    ) {
        crate::gpu::launch_bounds::<THREADS, MIN_BLOCKS>();
        let (x, y) = (thread::block_idx_x(), thread::block_idx_y());
        let (seq, unit) = (y / units, y % units);
        let t = thread::thread_idx_x();
        let block = (y * thread::grid_dim_x() + x) as usize;
        // SAFETY: the host allocates one length a sequence and one u32 a block.
        let len = unsafe { *context_lens.add(seq as usize) };
        let start = x * rows_per_block;
        if start >= len {
            if t == 0 {
                // SAFETY: as above.
                unsafe { *out.add(block) = 0 };
            }
            return;
        }
        let rows = if len - start < rows_per_block { len - start } else { rows_per_block };
        let n = rows << row_vec_shift;
        let col_mask = (1u32 << row_vec_shift) - 1;
        let slot_mask = (1u32 << page_shift) - 1;
        // SAFETY: the table has `max_pages` entries a sequence; the entries of rows below
        // a context length are pages of the cache (checked by the host's PagedKv).
        let table = unsafe { block_table.add((seq * max_pages) as usize) };
        let (k, v) = (k_cache as *const u8, v_cache as *const u8);
        let mut acc = 0u32;
        let mut i = t;
        while i < n {
            let mut at = [0u64; UNROLL as usize];
            let mut live = [false; UNROLL as usize];
            for u in 0..UNROLL as usize {
                let e = i + u as u32 * THREADS;
                live[u] = e < n;
                if live[u] {
                    let row = start + (e >> row_vec_shift);
                    // SAFETY: `row` < len (above), so its entry is a page of the cache.
                    let page = unsafe { *table.add((row >> page_shift) as usize) };
                    let slot = ((page as u64) << page_shift) + (row & slot_mask) as u64;
                    let vec = slot * row_stride_vectors as u64
                        + ((unit << row_vec_shift) + (e & col_mask)) as u64;
                    at[u] = 16 * vec;
                }
            }
            for u in 0..UNROLL as usize {
                if live[u] {
                    // SAFETY: a vector of a row of a cache page (above); nothing writes
                    // the caches during the launch.
                    let (a, b) = unsafe {
                        (bf16::load16_nc(k.add(at[u] as usize)), bf16::load16_nc(v.add(at[u] as usize)))
                    };
                    for w in 0..4 {
                        acc = acc.wrapping_add(a[w]).wrapping_add(b[w]);
                    }
                }
            }
            i += UNROLL * THREADS;
        }
        for m in [16u32, 8, 4, 2, 1] {
            acc = acc.wrapping_add(warp::shfl_idx_u32(acc, (t & 31) ^ m));
        }
        let sums = shared::dynamic_shared_mem::<u32>();
        if t & 31 == 0 {
            // SAFETY: the host launches with SHARED_BYTES (one u32 a warp).
            unsafe { *sums.add((t / 32) as usize) = acc };
        }
        sync_threads();
        if t == 0 {
            let mut s = 0u32;
            for w in 0..WARPS as usize {
                // SAFETY: as above.
                s = s.wrapping_add(unsafe { *sums.add(w) });
            }
            // SAFETY: one u32 a block.
            unsafe { *out.add(block) = s };
        }
    }
}
