//! decode/v02_gqa_grouped — one block per (sequence, KV head) serving its query heads.
//!
//! Changed from v01: the block holds one warp per query head of a GQA group (Hq/Hkv warps),
//! so each tile of keys and values is gathered into shared memory once and scored by every
//! head that reads it: each KV byte crosses DRAM once, not once per query head. The body is
//! v01's ([`super::paged_attention`]); only the launch changes.
//!
//! Thread mapping: grid (Hkv, B), Hq/Hkv warps a block; warp `w` serves query head
//! `kv·(Hq/Hkv) + w`, lanes as in v01.
//!
//! Memory traffic: the KV bytes the context lengths need, once; Q and O.
//!
//! Expected bound: DRAM where there are enough blocks (B·Hkv); at batch 1 a handful of blocks
//! cannot fill the GPU (what a split-K step would fix).

crate::kernel! {
    /// v02 at head dim 64.
    pub unsafe fn decode_v02_gqa_grouped_d64(
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
        // SAFETY: forwarded; the host launches grid (Hkv, B) of Hq/Hkv warps.
        unsafe {
            super::paged_attention::<64, 2>(
                q, k_cache, v_cache, block_table, context_lens, out, hq, hkv, page_size,
                max_pages, scale,
            )
        }
    }
}

crate::kernel! {
    /// v02 at head dim 128.
    pub unsafe fn decode_v02_gqa_grouped_d128(
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
