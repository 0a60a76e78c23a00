//! Family `attention` on the host: prefill attention over `[B, H, S, D]` bf16 tensors,
//! `O = softmax(Q·Kᵀ/√D [+ causal mask])·V`, head dims 64 and 128 (see
//! `kernels-gpu/src/attention/mod.rs` for the layout and the ladder).
//!
//! Numerical contract: bf16 inputs, f32 products, sums and softmax statistics, the output
//! rounded to bf16 once; `ex2.approx` for the exponential. Checked against an f64 reference
//! of the same bf16 inputs with rel 4e-3 (one bf16 rounding, at most 2^-9, twice over) or abs
//! 2e-5 (outputs near 0: the f32 sums' error is ~1e-7). Outputs are weighted means of V in
//! [-1, 1], about 0.02 at S 4096, and a key dropped from a row of 4097 moves them by ~1e-4:
//! a unit test (`reference::tolerance_tests`) checks that an f32 model of the kernels passes
//! and that a dropped key or a zeroed element fails. Zero B, H or S: nothing to do, nothing
//! launched.
//!
//! One file per concern: [`launch`] (variants, shapes, checks, the safe wrapper),
//! [`reference`] (CPU reference), [`cost`] (FLOPs and bytes), [`bench`] (bench cases),
//! [`tests`] (GPU tests).

pub mod bench;
pub mod cost;
pub mod launch;
pub mod peer;
pub mod reference;
pub mod tests;

pub use launch::{Attn, LADDER, Variant, attention};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "attention",
    title: "Attention (prefill)",
    cases: bench::cases,
    tests: tests::tests,
};
