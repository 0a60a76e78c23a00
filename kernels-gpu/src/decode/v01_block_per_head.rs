//! decode/v01_block_per_head — one block per (sequence, query head) over the whole context.
//!
//! Changed from nothing (the first step): the obvious mapping. A block is one warp serving
//! one query head: it gathers its KV head's keys and values through the block table, 32 at
//! a time, into shared memory, scores them (a lane per key), and keeps the output row in
//! registers with an online softmax ([`super::paged_attention`]).
//!
//! Thread mapping: grid (Hq, B), one warp a block; lane `l` scores key `j0 + l` and holds
//! output dims `l, l + 32, ..`.
//!
//! Memory traffic: every query head reads its KV head's whole context: the KV bytes the
//! context lengths need, times the GQA group (Hq/Hkv = 4 at Hq 32, Hkv 8), partly from L2.
//!
//! Expected bound: DRAM and latency: one warp a block, a tile's loads and then its math, one
//! after the other.

/// Threads per block: one warp.
pub const THREADS: u32 = 32;

crate::kernel! {
    /// v01 at head dim 64.
    pub unsafe fn decode_v01_block_per_head_d64(
        q: *const u16,
        k_cache: *const u16,
        v_cache: *const u16,
        block_table: *const u32,
        context_lens: *const u32,
        out: *mut u16,
        hq: u32,
        hkv: u32,
        page_size: u32,
        max_pages: u32,
        scale: f32,
    ) {
        // SAFETY: forwarded; the host launches grid (Hq, B) of one warp, as the body needs.
        unsafe {
            super::paged_attention::<64, 2>(
                q, k_cache, v_cache, block_table, context_lens, out, hq, hkv, page_size,
                max_pages, scale,
            )
        }
    }
}

crate::kernel! {
    /// v01 at head dim 128.
    pub unsafe fn decode_v01_block_per_head_d128(
        q: *const u16,
        k_cache: *const u16,
        v_cache: *const u16,
        block_table: *const u32,
        context_lens: *const u32,
        out: *mut u16,
        hq: u32,
        hkv: u32,
        page_size: u32,
        max_pages: u32,
        scale: f32,
    ) {
        // SAFETY: as the d64 entry.
        unsafe {
            super::paged_attention::<128, 4>(
                q, k_cache, v_cache, block_table, context_lens, out, hq, hkv, page_size,
                max_pages, scale,
            )
        }
    }
}
