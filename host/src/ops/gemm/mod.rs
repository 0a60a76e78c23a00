//! Family `gemm` on the host: `C = alpha·A·B + beta·C` in f32, row-major, for every variant
//! in `kernels-gpu/src/gemm/`, with cuBLAS SGEMM as the in-process peer.
//!
//! One file per concern: [`launch`] (the variants, their launch geometry from the variant
//! files' constants, the shape checks and the safe wrapper), [`reference`] (the f64 CPU
//! reference with an error bound per element derived from the arithmetic), [`cost`] (FLOPs
//! and bytes), [`bench`] (the bench cases), [`tests`] (the GPU correctness tests).

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{Dims, LADDER, Variant, sgemm, validate};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "gemm",
    title: "SGEMM (beside cuBLAS)",
    cases: bench::cases,
    tests: tests::tests,
};
