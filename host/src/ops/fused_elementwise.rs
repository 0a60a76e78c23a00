//! Family `fused_elementwise` on the host (being written).

use crate::bench::Case;
use crate::testing::GpuTest;

pub const FAMILY: &str = "fused_elementwise";

pub fn cases(_quick: bool, _size: Option<u64>, _seed: u64) -> Vec<Case> {
    Vec::new()
}

pub fn tests(_seed: u64) -> Vec<GpuTest> {
    Vec::new()
}
