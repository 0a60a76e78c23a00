//! Kernels that exist only for rooflab's own fault tests. Not a family, never benchmarked.

crate::kernel! {
    /// Traps on the device on purpose (as a kernel bug or a failed device-side check would):
    /// the host must report the fault, naming this kernel, and exit cleanly.
    pub unsafe fn testing_trap(flag: u32) {
        if flag != 0 {
            // SAFETY: ending the kernel abnormally is the point of this kernel.
            unsafe { core::arch::nvptx::trap() }
        }
    }
}

crate::kernel! {
    /// Declared for the host but compiled into no PTX (`cfg(any())` is never true): the
    /// kernel of the test that a launch of an entry the loaded module lacks (host and PTX out
    /// of step) is refused with its name.
    #[cfg(any())]
    pub unsafe fn testing_not_in_ptx() {}
}
