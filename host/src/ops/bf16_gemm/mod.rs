//! Family `bf16_gemm` on the host: `y = x·Wᵀ` as `torch.nn.functional.linear` (x M×K, W N×K,
//! y M×N, all row-major bf16, f32 accumulation, y rounded to nearest even), for every
//! variant in `kernels-gpu/src/bf16_gemm/`, with cuBLAS's BF16 GemmEx as the in-process peer.
//! v01-v04 climb the tensor-core ladder (mma.sync, ldmatrix, cp.async pipeline, swizzled
//! shared memory); v05 streams the weights for small M, where the product is memory-bound.
//!
//! One file per concern: [`launch`] (the variants, their launch geometry from the variant
//! files' constants, the shape checks and the safe wrapper [`linear`]), [`reference`] (the
//! f64 CPU reference with an error bound per element derived from the arithmetic), [`cost`]
//! (FLOPs and bytes), [`bench`] (the ladder, the M sweep and the peer), [`tests`] (the GPU
//! correctness tests).

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{Dims, LADDER, Variant, linear, validate};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "bf16_gemm",
    title: "BF16 GEMM on the tensor cores (beside cuBLAS)",
    cases: bench::cases,
    tests: tests::tests,
};
