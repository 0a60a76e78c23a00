//! Kernels that exist only for rooflab's own fault tests. Not a family, never benchmarked.

#[cfg(target_arch = "nvptx64")]
mod kernels {
    /// Traps on the device on purpose (as a kernel bug or a failed device-side check would):
    /// the host must report the fault, naming this kernel, and exit cleanly.
    #[unsafe(no_mangle)]
    pub unsafe extern "gpu-kernel" fn testing_trap(flag: u32) {
        if flag != 0 {
            // SAFETY: ending the kernel abnormally is the point of this kernel.
            unsafe { core::arch::nvptx::trap() }
        }
    }
}
