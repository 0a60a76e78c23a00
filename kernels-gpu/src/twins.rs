//! The constants the CUDA C++ twins (`host/twins/*.cu`) are compiled with: each twinned
//! variant file lists its own as `TWIN_DEFINES` (`#define` name, value), taken from the
//! constants the Rust kernel and its host launcher use, so the twin's tiles, vector widths
//! and launch bounds are the Rust step's by construction. `host/build/twins.rs` passes them
//! to NVRTC as `-DNAME=VALUE`. Names are `FAMILY_VNN_CONST`, so families cannot collide.

/// A twin entry's name is this plus its Rust entry's (`cuda_memory_v03_vectorized_copy`).
pub const ENTRY_PREFIX: &str = "cuda_";
/// The twins' PTX for an arch is this plus the arch (`twins_sm_90`), `.ptx`.
pub const PTX_PREFIX: &str = "twins_";

/// Every twinned variant file (`family/stem`: its kernels have twins) with its
/// `TWIN_DEFINES`: each family's best step.
pub const TWINNED: &[(&str, &[(&str, i64)])] = &[
    (
        "memory/v03_vectorized",
        crate::memory::v03_vectorized::TWIN_DEFINES,
    ),
    (
        "transpose/v04_multi_element_vectorized",
        crate::transpose::v04_multi_element_vectorized::TWIN_DEFINES,
    ),
    (
        "reduce/v07_multi_element",
        crate::reduce::v07_multi_element::TWIN_DEFINES,
    ),
    (
        "gemm/v11_block_256x128",
        crate::gemm::v11_block_256x128::TWIN_DEFINES,
    ),
    (
        "fused_elementwise/v03_fused_vectorized",
        crate::fused_elementwise::v03_fused_vectorized::TWIN_DEFINES,
    ),
    (
        "softmax/v05_row_in_registers",
        crate::softmax::v05_row_in_registers::TWIN_DEFINES,
    ),
    (
        "norm/v03_fused_vectorized",
        crate::norm::v03_fused_vectorized::TWIN_DEFINES,
    ),
];

/// Whether the kernel's variant file is twinned (its kernels have CUDA C++ twins).
pub fn twinned(kernel: crate::kernel::KernelId) -> bool {
    TWINNED
        .iter()
        .any(|(path, _)| path.split_once('/') == Some((kernel.family(), kernel.stem())))
}
