//! Family `softmax` on the host: softmax over the last dimension of rows x cols, f32 or
//! bf16, seven variants and [`auto`], which picks one by row length and GPU: v06 (a group of
//! lanes per row) up to 512 elements, v05 (a block's registers) up to 16384, v07 (a cluster
//! of 8 blocks, sm_90a only) up to 262144, v03 (online, two reads) beyond or without
//! clusters. v05, v06 and v07 refuse rows longer than they hold, saying what takes them.
//!
//! Numerical contract (see `kernels-gpu/src/softmax/mod.rs`): max-subtracted, safe for any
//! finite input; -inf entries give 0; **a row entirely -inf gives all zeros** (NaN-free).
//! Tolerances: exp is `ex2.approx` of `(x - max) log2 e` (~2^-22 relative plus the product's
//! rounding, a few 1e-7 where exp is not negligible); the row sum is a per-thread chain of
//! up to cols / 32 terms plus a tree (v07: shorter chains, trees over the block and the
//! cluster, each block's sum rescaled by one more exp), each step 2^-24:
//! f32 rel = 4e-6 + 6e-8 * (cols/32 + 10) (cols = 4096: 1.2e-5); bf16 rel 8e-3 (one final rounding, at most 2^-8 relative) plus
//! the f32 error; both with an absolute floor of 4 × f32's smallest normal, for outputs that
//! underflow (ftz), so that every other output is checked relatively.
//!
//! One file per concern: [`launch`] (the variants, their entries, launch geometry and the
//! safe wrappers), [`reference`] (CPU reference), [`cost`] (FLOPs and bytes), [`bench`] (the
//! bench cases), [`tests`] (the GPU correctness tests). The tensor types are in
//! [`crate::tensor`].

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{LADDER, Variant, auto, auto_choice, clusters_available, softmax};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "softmax",
    title: "Softmax",
    cases: bench::cases,
    tests: tests::tests,
};
