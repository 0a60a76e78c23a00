//! rooflab's device code.
//!
//! Compiled for `nvptx64-nvidia-cuda` this crate is the kernels; compiled for the host it is
//! only the launch geometry (block sizes, tiles, vector widths) so that host and device read
//! the same constants. Every kernel lives in a variant file `FAMILY/vNN_name.rs` whose
//! entry point is `FAMILY_vNN_name[_op]`.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_gpu_kernel,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        asm_experimental_arch
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(target_arch = "nvptx64")]
pub mod gpu;

pub mod kernel;

pub mod attention;
pub mod bf16_gemm;
pub mod ceilings;
pub mod cluster_row;
pub mod decode;
pub mod fused_elementwise;
pub mod gemm;
pub mod l2_reread;
pub mod memory;
pub mod norm;
pub mod reduce;
pub mod row_layout;
pub mod softmax;
pub mod tensor_map;
pub mod testing;
pub mod transpose;
#[cfg(not(target_arch = "nvptx64"))]
pub mod twins;

/// A kernel trapped on the device (for example a `panic!`): abort the whole grid.
/// The host sees `CUDA_ERROR_LAUNCH_FAILED`/`ILLEGAL_INSTRUCTION` at the next sync.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` ends the kernel; nothing runs after it.
    unsafe { core::arch::nvptx::trap() }
}
