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
//! cannot fill the GPU (what v03 splits).

super::one_launch_entry! {
    /// v02 at head dim 64.
    decode_v02_gqa_grouped_d64, 64, 2
}
super::one_launch_entry! {
    /// v02 at head dim 128.
    decode_v02_gqa_grouped_d128, 128, 4
}
