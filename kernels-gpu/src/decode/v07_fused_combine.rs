//! decode/v07_fused_combine — v06 with the combine done by the last block of each head.
//!
//! Changed from v06 (the same kernel body): with several splits, v03-v06 end with a second
//! kernel that merges each (sequence, query head)'s split rows — at batch 1 × L 32768 on
//! an H200, 7 µs of v05's 59 (ncu, 2026-12-03), a launch and a pass over a few MB that the
//! first kernel's tail could hide. Here each block, after writing its split rows, fences
//! them and takes a ticket from a per-(sequence, KV head, chunk) counter; the block that
//! takes the last ticket merges that chunk's heads (one warp a head, v03's `combine_row`)
//! and sets the counter back to 0, so each launch finds them 0 (the host zeroes them once,
//! when it allocates them). One split writes `out` directly, as before.
//!
//! Thread mapping: v06's; in the last block, warp `w` merges head `8·chunk + w`.
//!
//! Memory traffic: v06's; the partial rows are written and read once, as with the combine
//! kernel, but the reads start as soon as a head's last split is done.
//!
//! Expected bound: DRAM.

pub use super::v06_keys_as_rows::{
    HEADS, MIN_BLOCKS_D128, MIN_BLOCKS_D64, THREADS, TILE, WARPS, resident_blocks, shared_bytes,
};

// One warp merges one head of the block's chunk.
const _: () = assert!(WARPS == HEADS);

/// `fused_entry! { /// docs  NAME, D, KS, BLOCKS }`: the pipeline parameters plus the
/// counters, running v06's body with the combine fused.
macro_rules! fused_entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $ks:literal, $blocks:expr) => {
        crate::kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
                q: *const u16,
                k_cache: *const u16,
                v_cache: *const u16,
                block_table: *const u32,
                context_lens: *const u32,
                out: *mut u16,
                ws_o: *mut f32,
                ws_ml: *mut f32,
                hq: u32,
                hkv: u32,
                page_size: u32,
                max_pages: u32,
                scale: f32,
                split_len: u32,
                counters: *mut u32,
            ) {
                crate::gpu::launch_bounds::<{ THREADS }, { $blocks }>();
                // SAFETY: forwarded; the host launches v06's grid and shared memory, with
                // `B·gridDim.x` zeroed counters when it splits.
                unsafe {
                    super::v06_keys_as_rows::dev::body_with::<$d, $ks, true>(
                        q, k_cache, v_cache, block_table, context_lens, out, ws_o, ws_ml, hq,
                        hkv, page_size, max_pages, scale, split_len, counters,
                    )
                }
            }
        }
    };
}

fused_entry! { /// v07 at head dim 64.
    decode_v07_fused_combine_d64, 64, 4, MIN_BLOCKS_D64 }
fused_entry! { /// v07 at head dim 128.
    decode_v07_fused_combine_d128, 128, 8, MIN_BLOCKS_D128 }
