//! One module per kernel family. Each offers safe launch wrappers, CPU references, its cost
//! model, bench cases and correctness checks; this file lists them for the bench and tests.

pub mod memory;

use crate::bench::Case;
use crate::testing::{GpuTest, device_tests};

/// Every family, in the order the bench runs and reports them.
pub const FAMILIES: &[&str] = &[memory::FAMILY];

/// All bench cases. `quick` picks smaller sizes; `size` overrides each family's default.
pub fn all_cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let mut out = Vec::new();
    out.extend(memory::cases(quick, size, seed));
    out
}

/// All GPU correctness tests: the device layer's, then every family's.
pub fn all_tests(seed: u64) -> Vec<GpuTest> {
    let mut out = device_tests();
    out.extend(memory::tests(seed));
    out
}
