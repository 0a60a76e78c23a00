//! Family `transpose` on the host: `out = inᵀ`, f32, row-major `m × n` in, `n × m` out, for
//! every variant in `kernels-gpu/src/transpose/`. A transpose only moves bits, so every
//! check demands exact equality.
//!
//! One file per concern: [`launch`] (the variants, their launch geometry and the safe
//! wrapper), [`reference`] (the CPU reference), [`cost`] (FLOPs and bytes), [`bench`] (the
//! bench cases), [`tests`] (the GPU correctness tests).

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{LADDER, Variant, transpose};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "transpose",
    title: "Transpose",
    cases: bench::cases,
    tests: tests::tests,
};
