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

super::one_launch_entry! {
    /// v01 at head dim 64.
    decode_v01_block_per_head_d64, 64, 2
}
super::one_launch_entry! {
    /// v01 at head dim 128.
    decode_v01_block_per_head_d128, 128, 4
}
