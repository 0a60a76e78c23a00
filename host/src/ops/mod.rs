//! One module per kernel family. Each offers safe launch wrappers, CPU references, its cost
//! model, bench cases and GPU tests; this file lists them for the bench and the tests.

pub mod fused_elementwise;
pub mod gemm;
pub mod memory;
pub mod norm;
pub mod reduce;
pub mod softmax;
pub mod transpose;

use crate::bench::Case;
use crate::testing::{GpuTest, device_tests};

/// A family: its name, its bench cases (quick?, size override, seed) and its GPU tests.
pub struct Family {
    pub name: &'static str,
    pub cases: fn(bool, Option<u64>, u64) -> Vec<Case>,
    pub tests: fn(u64) -> Vec<GpuTest>,
}

/// Every family, in the order the bench runs and reports them.
pub const FAMILIES: &[Family] = &[
    Family {
        name: memory::FAMILY,
        cases: memory::cases,
        tests: memory::tests,
    },
    Family {
        name: transpose::FAMILY,
        cases: transpose::cases,
        tests: transpose::tests,
    },
    Family {
        name: reduce::FAMILY,
        cases: reduce::cases,
        tests: reduce::tests,
    },
    Family {
        name: gemm::FAMILY,
        cases: gemm::cases,
        tests: gemm::tests,
    },
    Family {
        name: fused_elementwise::FAMILY,
        cases: fused_elementwise::cases,
        tests: fused_elementwise::tests,
    },
    Family {
        name: softmax::FAMILY,
        cases: softmax::cases,
        tests: softmax::tests,
    },
    Family {
        name: norm::FAMILY,
        cases: norm::cases,
        tests: norm::tests,
    },
];

pub fn family_names() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.name).collect()
}

/// All bench cases. `quick` picks smaller sizes; `size` overrides each family's default.
pub fn all_cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    FAMILIES
        .iter()
        .flat_map(|f| (f.cases)(quick, size, seed))
        .collect()
}

/// All GPU correctness tests: the device layer's, then every family's.
pub fn all_tests(seed: u64) -> Vec<GpuTest> {
    let mut out = device_tests();
    for f in FAMILIES {
        out.extend((f.tests)(seed));
    }
    out
}
