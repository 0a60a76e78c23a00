//! Family `memory` on the host: copy, saxpy and the particle update, for every variant in
//! `kernels-gpu/src/memory/`.
//!
//! One file per concern: [`launch`] (the variants, their launch geometry and the safe
//! wrappers), [`reference`] (CPU references), [`cost`] (FLOPs and bytes), [`bench`] (the
//! bench cases), [`tests`] (the GPU correctness tests).

pub mod bench;
pub mod cost;
pub mod launch;
pub mod reference;
pub mod tests;

pub use launch::{LADDER, Op, Variant, copy, particles_aos, particles_soa, saxpy};

/// The family's entry in the registry (`ops::FAMILIES`).
pub const FAMILY: super::Family = super::Family {
    name: "memory",
    title: "Memory access",
    cases: bench::cases,
    tests: tests::tests,
};
