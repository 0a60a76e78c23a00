//! Family `reduce` on the host: the sum of an f32 array into one f32, for every variant in
//! `kernels-gpu/src/reduce/`.
//!
//! One file per concern: [`launch`] (the variants, their launch geometry, the workspace
//! and the safe wrapper), [`reference`] (the f64 CPU reference and the accuracy bound a GPU
//! sum is held to), [`cost`] (FLOPs and bytes), [`bench`] (the bench cases), [`tests`] (the
//! GPU correctness tests).

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{LADDER, Variant, sum, workspace_len};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "reduce",
    title: "Reduction",
    cases: bench::cases,
    tests: tests::tests,
};
