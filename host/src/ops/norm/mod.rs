//! Family `norm` on the host: LayerNorm and RMSNorm over the last dimension of rows x cols,
//! f32 or bf16, weight (and bias for LayerNorm) per column, eps a parameter. Eight variants
//! and [`auto`], which picks one by row length, dtype and GPU: v05 (a group of lanes per row)
//! up to 256 elements, v04 (a block's registers) up to 16384, for bf16 v08 (a block per row,
//! the row read twice, the second time from L2) up to 32768, v06 (a cluster of blocks, their
//! shared memory; sm_90a only) up to 393216, and v08 beyond or without clusters. Not v07 (a
//! cluster of blocks, their registers; sm_90a only, up to 131072): it measured slower than v06.
//! v03-v07 refuse rows longer than they hold, saying what takes them.
//!
//! Variance is two-pass around the mean in every variant (see `kernels-gpu/src/norm/mod.rs`;
//! v06 and v07: two-pass within each block of the cluster, the blocks merged by Chan's
//! formula);
//! the tests include inputs of 1000 + U(-1, 1), where `E[x^2] - E[x]^2` in f32 would lose
//! every digit. Tolerances: f32 rel 1e-5 + a term for the row sums (chain of cols/32 terms,
//! 2^-24 each) and abs 1e-5 (outputs are O(1)); for the large-mean inputs the f32 mean itself
//! drifts by a random walk of 2^-24 * 1000 steps, which shifts every output: abs
//! 1.6e-4 * sqrt(cols / 32 + 10) (1.9e-3 at 4096) there; bf16 rel 8e-3 and abs 2e-2 (one
//! rounding of an output of magnitude up to ~4).
//!
//! One file per concern: [`launch`] (the variants, their entries, launch geometry and the
//! safe wrapper), [`reference`] (CPU reference), [`cost`] (FLOPs and bytes), [`bench`] (the
//! bench cases), [`tests`] (the GPU correctness tests). The tensor types are in
//! [`crate::tensor`].

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{Kind, LADDER, NormArgs, Variant, auto, auto_choice, clusters_available, norm};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "norm",
    title: "Normalization",
    cases: bench::cases,
    tests: tests::tests,
};
