//! Family `fused_elementwise` on the host: `y = gelu(x * scale + bias) + residual`, rows x
//! cols, scale and bias per column, f32 or bf16, GELU in its erf or tanh form.
//!
//! Numerics: the kernels compute in f32; erf is Abramowitz-Stegun 7.1.26 (abs error
//! <= 1.5e-7 exactly, <= 6.5e-7 evaluated in f32: see the unit test), except in v03's bf16
//! entry: `erf_fast`, the logistic of an odd polynomial (abs error <= 3.73e-5), folded into
//! the GELU (`gelu_bf16`; the unit tests sweep it, and the chain rounded to bf16 against the
//! bf16 tolerance below: at worst 0.53 of it, 0.49 with A&S). The tanh form is
//! `u / (1 + e^(-2k))` with `ex2.approx` (a few ulp). The CPU reference is f64 (erf by its
//! all-positive Taylor series, exact to ~1e-15). Tolerances: f32 rel 1e-5 + abs 2e-6 (|y| ~ 1
//! from the residual; erf's 6.5e-7 times |u|/2 <= 1.75); bf16 rel 8e-3 + abs 1e-3 (one final
//! rounding, at most 2^-8 relative); v01 in bf16 rounds every intermediate to bf16, so its reference
//! does too, with abs 2e-2 for a one-ulp flip of an intermediate of magnitude <= 3.5
//! (3.5 * 2^-8 * max gelu' 1.13 = 0.0155).
//!
//! One file per concern: [`launch`] (the variants, their entries and the safe wrapper),
//! [`reference`] (CPU reference), [`cost`] (FLOPs and bytes), [`bench`] (the bench cases),
//! [`tests`] (the GPU correctness tests). The tensor types are in [`crate::tensor`].

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{Gelu, Inputs, Intermediates, LADDER, Variant, gelu_chain};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "fused_elementwise",
    title: "Elementwise fusion",
    cases: bench::cases,
    tests: tests::tests,
};
