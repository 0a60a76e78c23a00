//! rooflab host side.
//!
//! - [`gpu`]: the `Gpu` handle (context, PTX module, stream, events) over `cust`, device
//!   buffers, and the one launch path every op goes through;
//! - [`error`]: the one error type; every message says what was wrong and what to do;
//! - [`cost`]: FLOPs and bytes as distinct types, the accounting every row reports through;
//! - [`check`]: random inputs, output poisoning and comparison with CPU references;
//! - [`roofline`]: roofs (measured, or datasheet profiles) and each row's accounting;
//! - [`ceilings`]: the micro-benchmarks that measure the roofs in the same run;
//! - [`plot`]: roofline and per-family SVGs;
//! - [`timing`]: warm-up, CUDA-event timing, median and spread;
//! - [`bench`]: bench cases and how one is run; [`report`]: rows, table, JSON, CSV;
//! - [`ops`]: one file per kernel family: safe launch wrappers, CPU references, cost models,
//!   bench cases and correctness tests for every variant;
//! - [`peer`]: in-process peer libraries (cuBLAS), loaded at run time; [`torch_peer`]:
//!   PyTorch eager and torch.compile in their own process, outputs checked;
//! - [`testing`]: GPU tests as data, run by `tests/gpu.rs`; `warp_emulation` (unit tests
//!   only): one warp's `ldmatrix`, `mma`, `movmatrix` and shuffles on the CPU;
//! - [`lab`]: the guided lab's modes: [`explain`] (cost model of one case), [`docs`] (the
//!   guide's generated tables and plots), [`profile`] (one launch under Nsight Compute).

pub mod bench;
pub mod ceilings;
pub mod check;
pub mod cost;
pub mod cuda12;
pub mod docs;
pub mod error;
pub mod explain;
pub mod gpu;
pub mod html;
pub mod lab;
pub mod ops;
pub mod peer;
pub mod plot;
pub mod profile;
pub mod ptx;
pub mod report;
pub mod roofline;
pub mod tensor;
pub mod testing;
pub mod timeline;
pub mod timing;
pub mod tma;
pub mod torch_peer;
#[cfg(test)]
pub(crate) mod warp_emulation;

pub use error::{Error, Result};
pub use gpu::Gpu;
