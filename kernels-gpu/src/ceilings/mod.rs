//! Family `ceilings`: micro-benchmarks that measure this GPU's own limits in the same run as
//! the kernels they judge. Not a ladder: each file measures one resource.
//!
//! DRAM bandwidth is measured by the host (`cuMemcpyDtoD`, and the best `memory` copy
//! kernel); the files here cover L2, shared memory, FP32 FMA throughput, BF16 `mma.sync`
//! and `wgmma` (sm_90a) throughput and launch overhead.

pub mod empty_launch;
pub mod fma_throughput;
pub mod l2_read;
pub mod mma_throughput;
pub mod smem_bandwidth;
pub mod wgmma_throughput;
