//! Family `decode` on the host: one decoding step over a paged KV cache with grouped-query
//! attention (the layout in `kernels-gpu/src/decode/mod.rs`). A [`PagedKv`] is checked once
//! when it is made (block-table entries inside the cache, context lengths inside the table's
//! capacity, shapes); launches then reuse it.
//!
//! A context length of 0 is refused (a sequence with nothing to attend to has no defined
//! output; drop it from the batch). Numerical contract and tolerance as `attention`'s (bf16
//! in and out, f32 inside, against an f64 reference).
//!
//! One file per concern: [`launch`], [`reference`], [`cost`], [`bench`], [`tests`]; [`probe`]
//! is the copy-only read of the same bytes the bench shows beside the ladder.

pub mod bench;
pub mod cost;
pub mod launch;
pub mod peer;
pub mod probe;
pub mod reference;
pub mod tests;

pub use launch::{DecodeShape, LADDER, PagedKv, Variant, decode};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "decode",
    title: "Decode (paged KV cache)",
    cases: bench::cases,
    tests: tests::tests,
};
