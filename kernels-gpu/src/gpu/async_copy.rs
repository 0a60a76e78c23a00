//! Asynchronous global-to-shared copies (`cp.async`, sm_80 and newer).
//!
//! A `cp.async` moves bytes from global memory straight into shared memory without passing
//! through registers, and without making the issuing thread wait: the copy completes in the
//! background until the thread asks for it with `cp.async.wait_group`. Copies issued between
//! two `commit_group`s form one group; `wait_group::<N>()` waits until at most `N` groups are
//! still in flight. After the wait each thread sees its *own* copies; a `bar.sync` is still
//! needed before other threads of the block read them.
//!
//! The shared-memory operand is a `.shared` state-space address (32 bits), not a generic
//! pointer: [`shared_addr`] converts one. The `_zfill` forms take a source size in bytes
//! (0 up to the copy size): only that many bytes are read and the rest of the destination is
//! zero-filled, which is how tiles that hang over a matrix edge get their zeros.

use core::arch::asm;

/// The `.shared` state-space address of a generic pointer into shared memory.
#[inline(always)]
// The pointer is only converted (`cvta`), never dereferenced: `nomem` is right.
#[allow(clippy::pointers_in_nomem_asm_block)]
pub fn shared_addr<T>(p: *const T) -> u32 {
    let a: u64;
    // SAFETY: pure address arithmetic; the caller passes a pointer into shared memory.
    unsafe {
        asm!(
            "cvta.to.shared.u64 {0}, {1};",
            out(reg64) a, in(reg64) p,
            options(pure, nomem, nostack)
        )
    };
    // Shared addresses fit in 32 bits (a block has at most 228 KiB).
    a as u32
}

/// Copy 16 bytes from global `src` to shared `dst` (`cp.async.cg`: bypasses L1, caches in
/// L2 only), reading only the first `src_bytes` (0, 4, 8, 12 or 16) and zero-filling the rest.
///
/// # Safety
/// `dst` is a 16-byte-aligned shared address of 16 writable bytes; `src` is a 16-byte-aligned
/// global address whose first `src_bytes` bytes are readable.
#[inline(always)]
pub unsafe fn copy_16_zfill(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "{{",
            ".reg .u64 g;",
            "cvta.to.global.u64 g, {1};",
            "cp.async.cg.shared.global [{0}], [g], 16, {2};",
            "}}",
            in(reg32) dst, in(reg64) src, in(reg32) src_bytes,
            options(nostack)
        )
    };
}

/// Copy 4 bytes from global `src` to shared `dst` (`cp.async.ca`: through L1), reading
/// nothing and writing zero when `src_bytes == 0`.
///
/// # Safety
/// `dst` is a 4-byte-aligned shared address; `src` is a 4-byte-aligned global address,
/// readable when `src_bytes == 4`.
#[inline(always)]
pub unsafe fn copy_4_zfill(dst: u32, src: *const f32, src_bytes: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "{{",
            ".reg .u64 g;",
            "cvta.to.global.u64 g, {1};",
            "cp.async.ca.shared.global [{0}], [g], 4, {2};",
            "}}",
            in(reg32) dst, in(reg64) src, in(reg32) src_bytes,
            options(nostack)
        )
    };
}

/// Close the current group of copies (`cp.async.commit_group`).
#[inline(always)]
pub fn commit_group() {
    // SAFETY: no operands; an empty group is allowed. Not `nomem`: the compiler must keep
    // shared-memory accesses on their side of it.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// Wait until at most `N` committed groups of this thread are still in flight
/// (`cp.async.wait_group N`). Also a compiler barrier for memory accesses.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    // SAFETY: waiting has no preconditions.
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack)) };
}
