//! rooflab's device-support layer, shaped like rust-cuda's `cuda_std` so that switching back
//! to it is a small change (docs/toolchain.md says why rust-cuda's own cannot be used here).
//!
//! Everything is a thin, `#[inline(always)]` wrapper over an NVPTX intrinsic or one PTX
//! instruction, so the PTX that `cargo xtask explain` shows maps line by line to the source.
//! Pointers are generic addresses; on CUDA a `cuMemAlloc` pointer is also a valid `.global`
//! address, which is what lets us use `ld.global`/`st.global` on it.
#![allow(clippy::missing_safety_doc)]

use core::arch::asm;
use core::arch::nvptx;

/// Asynchronous global->shared copies (`cp.async`, sm_80+).
pub mod async_copy;
/// bf16 <-> f32 conversions and packed bf16 access.
pub mod bf16;
/// Block-wide reductions (max, sum) through warp shuffles and 32 f32 of shared memory.
pub mod block;
/// Hopper-only (sm_90a): wgmma, TMA, mbarriers, setmaxnreg, clusters.
#[cfg(target_feature = "sm_90a")]
pub mod hopper;
/// Tensor-core `mma.sync` (m16n8k16 bf16) and `ldmatrix` fragment loads (sm_80+).
pub mod mma;
/// Row tiles: a row held in registers, 16 slots a thread (one block per row).
pub mod row;

/// Writes the launch-bounds marker (see `host/build/linker.rs`): the entry gets
/// `.maxntid THREADS, 1, 1` and `.minnctapersm BLOCKS`, as CUDA C++'s
/// `__launch_bounds__(THREADS, BLOCKS)`. Call once at the top of a kernel body.
#[inline(always)]
pub fn launch_bounds<const THREADS: u32, const BLOCKS: u32>() {
    // SAFETY: a PTX comment; emits no instruction.
    unsafe {
        asm!(
            "// rooflab:launch_bounds {t} {b}",
            t = const THREADS,
            b = const BLOCKS,
            options(nomem, nostack, preserves_flags)
        )
    };
}

/// Thread, block and grid indices (`%tid`, `%ctaid`, `%ntid`, `%nctaid`).
pub mod thread {
    use super::nvptx;

    #[inline(always)]
    pub fn thread_idx_x() -> u32 {
        // SAFETY: reading a special register has no preconditions.
        unsafe { nvptx::_thread_idx_x() }
    }
    #[inline(always)]
    pub fn thread_idx_y() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_thread_idx_y() }
    }
    #[inline(always)]
    pub fn block_idx_x() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_idx_x() }
    }
    #[inline(always)]
    pub fn block_idx_y() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_idx_y() }
    }
    #[inline(always)]
    pub fn block_idx_z() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_idx_z() }
    }
    #[inline(always)]
    pub fn block_dim_x() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_dim_x() }
    }
    #[inline(always)]
    pub fn block_dim_y() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_block_dim_y() }
    }
    #[inline(always)]
    pub fn grid_dim_x() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_grid_dim_x() }
    }
    #[inline(always)]
    pub fn grid_dim_y() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_grid_dim_y() }
    }
    #[inline(always)]
    pub fn grid_dim_z() -> u32 {
        // SAFETY: as above.
        unsafe { nvptx::_grid_dim_z() }
    }

    /// Global 1D index of this thread, in 64 bits so that arrays past 2^32 elements work.
    #[inline(always)]
    pub fn index_1d() -> u64 {
        block_idx_x() as u64 * block_dim_x() as u64 + thread_idx_x() as u64
    }

    /// Global 2D index `(x, y)`: x runs along the fastest-varying (contiguous) dimension.
    #[inline(always)]
    pub fn index_2d() -> (u32, u32) {
        (
            block_idx_x() * block_dim_x() + thread_idx_x(),
            block_idx_y() * block_dim_y() + thread_idx_y(),
        )
    }

    /// Total threads in a 1D grid: the step of a grid-stride loop.
    #[inline(always)]
    pub fn grid_stride_1d() -> u64 {
        grid_dim_x() as u64 * block_dim_x() as u64
    }

    /// Flat thread index inside the block (x fastest).
    #[inline(always)]
    pub fn thread_idx_in_block() -> u32 {
        thread_idx_y() * block_dim_x() + thread_idx_x()
    }

    /// The GPU's nanosecond clock (`%globaltimer`), one clock for every SM, so stamps taken
    /// by different blocks can be put on one timeline (the bench's `--timeline`). Not `pure`:
    /// each read is a new value and must stay where it is written.
    #[inline(always)]
    pub fn global_timer_ns() -> u64 {
        let t: u64;
        // SAFETY: reading a special register has no preconditions.
        unsafe { core::arch::asm!("mov.u64 {0}, %globaltimer;", out(reg64) t, options(nostack)) };
        t
    }

    /// The SM this thread runs on (`%smid`; numbered by the hardware, possibly not
    /// contiguously).
    #[inline(always)]
    pub fn sm_id() -> u32 {
        let s: u32;
        // SAFETY: as above.
        unsafe { core::arch::asm!("mov.u32 {0}, %smid;", out(reg32) s, options(nostack, nomem)) };
        s
    }
}

/// Block-level synchronization (`bar.sync 0`).
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: every thread of the block must reach it; callers keep barriers out of
    // divergent branches.
    unsafe { nvptx::_syncthreads() }
}

/// Dynamic shared memory, sized by the host at launch (`sharedMemBytes`).
pub mod shared {
    /// Pointer to the block's dynamic shared memory, viewed as `T`s. All calls in a kernel
    /// return the same address; the host is responsible for launching with enough bytes.
    #[inline(always)]
    pub fn dynamic_shared_mem<T>() -> *mut T {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
    }
}

/// Shared-memory addressing and explicit shared loads/stores.
pub mod smem {
    use super::asm;
    use super::vector::F32x4;

    /// The `.shared` window address of a generic pointer into shared memory (what `ld.shared`,
    /// `st.shared` and `cp.async` take).
    #[inline(always)]
    // The pointer is only converted (`cvta`), never dereferenced: `nomem` is right.
    #[allow(clippy::pointers_in_nomem_asm_block)]
    pub fn shared_addr<T>(p: *const T) -> u32 {
        let a: u64;
        // SAFETY: address arithmetic only.
        unsafe {
            asm!("cvta.to.shared.u64 {0}, {1};", out(reg64) a, in(reg64) p, options(pure, nomem, nostack))
        };
        a as u32
    }

    /// `ld.shared.v4.f32`, never merged or removed by the compiler (volatile asm).
    #[inline(always)]
    pub unsafe fn load_f32x4(addr: u32) -> F32x4 {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: the caller guarantees a 16-byte-aligned shared address inside the block's
        // allocation.
        unsafe {
            asm!(
                "ld.shared.v4.f32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) addr,
                options(nostack)
            )
        };
        F32x4([a, b, c, d])
    }

    /// `ld.shared.v4.u32`: 16 raw bytes (any element type), never merged or removed.
    #[inline(always)]
    pub unsafe fn load_u32x4(addr: u32) -> [u32; 4] {
        let (a, b, c, d): (u32, u32, u32, u32);
        // SAFETY: as `load_f32x4`.
        unsafe {
            asm!(
                "ld.shared.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) addr,
                options(nostack)
            )
        };
        [a, b, c, d]
    }

    /// `st.shared.v4.f32`.
    #[inline(always)]
    pub unsafe fn store_f32x4(addr: u32, v: F32x4) {
        let [a, b, c, d] = v.0;
        // SAFETY: as `load_f32x4`.
        unsafe {
            asm!(
                "st.shared.v4.f32 [{0}], {{{1}, {2}, {3}, {4}}};",
                in(reg32) addr, in(reg32) a, in(reg32) b, in(reg32) c, in(reg32) d,
                options(nostack)
            )
        };
    }
}

/// Warp-level primitives. All take the full-warp mask: callers keep all 32 lanes active.
pub mod warp {
    use super::asm;

    pub const WARP_SIZE: u32 = 32;
    const FULL_MASK: u32 = 0xffff_ffff;

    /// This thread's lane in its warp (`%laneid`).
    #[inline(always)]
    pub fn lane_id() -> u32 {
        let lane: u32;
        // SAFETY: reads a special register.
        unsafe { asm!("mov.u32 {0}, %laneid;", out(reg32) lane, options(pure, nomem, nostack)) };
        lane
    }

    /// `bar.warp.sync` over the whole warp: the lanes wait for each other, and their shared
    /// and global memory accesses before it are ordered before those after it (what a warp
    /// needs between writing shared memory and reading what other lanes wrote).
    #[inline(always)]
    pub fn sync() {
        // SAFETY: all 32 lanes reach it (FULL_MASK).
        unsafe { asm!("bar.warp.sync {0};", in(reg32) FULL_MASK, options(nostack)) };
    }

    /// Butterfly shuffle: the value of lane `lane ^ mask`.
    #[inline(always)]
    pub fn shfl_xor_f32(value: f32, mask: u32) -> f32 {
        let out: f32;
        // SAFETY: all 32 lanes participate (FULL_MASK); c = 0x1f is the whole-warp clamp.
        unsafe {
            asm!(
                "shfl.sync.bfly.b32 {0}, {1}, {2}, 0x1f, {3};",
                out(reg32) out, in(reg32) value, in(reg32) mask, in(reg32) FULL_MASK,
                options(nomem, nostack)
            )
        };
        out
    }

    /// Shuffle down: the value of lane `lane + delta` (own value past the end of the warp).
    #[inline(always)]
    pub fn shfl_down_f32(value: f32, delta: u32) -> f32 {
        let out: f32;
        // SAFETY: as for `shfl_xor_f32`.
        unsafe {
            asm!(
                "shfl.sync.down.b32 {0}, {1}, {2}, 0x1f, {3};",
                out(reg32) out, in(reg32) value, in(reg32) delta, in(reg32) FULL_MASK,
                options(nomem, nostack)
            )
        };
        out
    }

    /// Broadcast: the value of lane `src` (0..32) to every lane.
    #[inline(always)]
    pub fn shfl_idx_f32(value: f32, src: u32) -> f32 {
        let out: f32;
        // SAFETY: as for `shfl_xor_f32`.
        unsafe {
            asm!(
                "shfl.sync.idx.b32 {0}, {1}, {2}, 0x1f, {3};",
                out(reg32) out, in(reg32) value, in(reg32) src, in(reg32) FULL_MASK,
                options(nomem, nostack)
            )
        };
        out
    }

    /// Broadcast of 32 bits: the value of lane `src` (0..32) to every lane.
    #[inline(always)]
    pub fn shfl_idx_u32(value: u32, src: u32) -> u32 {
        let out: u32;
        // SAFETY: as for `shfl_xor_f32`.
        unsafe {
            asm!(
                "shfl.sync.idx.b32 {0}, {1}, {2}, 0x1f, {3};",
                out(reg32) out, in(reg32) value, in(reg32) src, in(reg32) FULL_MASK,
                options(nomem, nostack)
            )
        };
        out
    }

    /// Whether `pred` holds in any of the 32 lanes (`vote.sync.any.pred`); every lane gets
    /// the answer, so a branch on it is warp-uniform.
    #[inline(always)]
    pub fn any(pred: bool) -> bool {
        let out: u32;
        // SAFETY: all 32 lanes participate (FULL_MASK).
        unsafe {
            asm!(
                "{{ .reg .pred p, q; setp.ne.u32 p, {1}, 0; vote.sync.any.pred q, p, {2}; selp.u32 {0}, 1, 0, q; }}",
                out(reg32) out, in(reg32) pred as u32, in(reg32) FULL_MASK,
                options(nomem, nostack)
            )
        };
        out != 0
    }

    /// Sum over the 32 lanes; every lane gets the total (butterfly reduction).
    #[inline(always)]
    pub fn sum_f32(mut v: f32) -> f32 {
        let mut m = 16;
        while m > 0 {
            v += shfl_xor_f32(v, m);
            m >>= 1;
        }
        v
    }

    /// Maximum over the 32 lanes; every lane gets it.
    #[inline(always)]
    pub fn max_f32(mut v: f32) -> f32 {
        let mut m = 16;
        while m > 0 {
            v = super::math::max(v, shfl_xor_f32(v, m));
            m >>= 1;
        }
        v
    }

    /// Sum over each aligned group of `width` lanes (a power of two, 1 to 32, the same in
    /// every lane); every lane gets its group's total. Butterfly masks below `width` never
    /// leave the group. Each step sits behind a warp-uniform test, so all 32 lanes take the
    /// same shuffles (the full-mask contract).
    #[inline(always)]
    pub fn sum_f32_in(v: f32, width: u32) -> f32 {
        group_steps(v, width, |a, b| a + b)
    }

    /// Maximum over each aligned group of `width` lanes (see [`sum_f32_in`]).
    #[inline(always)]
    pub fn max_f32_in(v: f32, width: u32) -> f32 {
        group_steps(v, width, super::math::max)
    }

    /// The butterfly steps with masks 16, 8, 4, 2, 1 that are below `width`, written out: a
    /// loop over a mask array was left rolled with the array in local memory.
    #[inline(always)]
    fn group_steps(mut v: f32, width: u32, op: impl Fn(f32, f32) -> f32) -> f32 {
        if width > 16 {
            v = op(v, shfl_xor_f32(v, 16));
        }
        if width > 8 {
            v = op(v, shfl_xor_f32(v, 8));
        }
        if width > 4 {
            v = op(v, shfl_xor_f32(v, 4));
        }
        if width > 2 {
            v = op(v, shfl_xor_f32(v, 2));
        }
        if width > 1 {
            v = op(v, shfl_xor_f32(v, 1));
        }
        v
    }
}

/// Global-memory atomics.
pub mod atomic {
    use super::asm;

    /// `*p += v` atomically, result unused (`red.global.add.f32`).
    #[inline(always)]
    pub unsafe fn add_f32(p: *mut f32, v: f32) {
        // SAFETY: the caller guarantees `p` is a valid, 4-byte-aligned global address.
        unsafe {
            asm!("red.global.add.f32 [{0}], {1};", in(reg64) p, in(reg32) v, options(nostack))
        };
    }

    /// `*p += v` atomically, returning the old value (`atom.relaxed.gpu.global.add.u32`):
    /// the ticket of the "last block to arrive" pattern, between [`fence_gpu`]s.
    #[inline(always)]
    pub unsafe fn fetch_add_u32(p: *mut u32, v: u32) -> u32 {
        let old: u32;
        // SAFETY: the caller guarantees `p` is a valid, 4-byte-aligned global address.
        unsafe {
            asm!(
                "atom.relaxed.gpu.global.add.u32 {0}, [{1}], {2};",
                out(reg32) old, in(reg64) p, in(reg32) v,
                options(nostack)
            )
        };
        old
    }

    /// `*p = v` (`st.relaxed.gpu.global.u32`), for a counter the last block resets.
    #[inline(always)]
    pub unsafe fn store_u32(p: *mut u32, v: u32) {
        // SAFETY: the caller guarantees `p` is a valid, 4-byte-aligned global address.
        unsafe {
            asm!("st.relaxed.gpu.global.u32 [{0}], {1};", in(reg64) p, in(reg32) v, options(nostack))
        };
    }

    /// `fence.acq_rel.gpu` (CUDA's `__threadfence()`): this thread's writes before it are
    /// seen by any thread of the GPU that observes a later atomic, and its reads after it
    /// see what the writers fenced before theirs.
    #[inline(always)]
    pub fn fence_gpu() {
        // SAFETY: a fence; no operands. Not `nomem`: it orders the memory accesses around it.
        unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
    }

    /// `*p += v` atomically on a 64-bit unsigned integer (`red.global.add.u64`).
    #[inline(always)]
    pub unsafe fn add_u64(p: *mut u64, v: u64) {
        // SAFETY: the caller guarantees `p` is a valid, 8-byte-aligned global address.
        unsafe {
            asm!("red.global.add.u64 [{0}], {1};", in(reg64) p, in(reg64) v, options(nostack))
        };
    }
}

/// 16-byte vector access to global memory. Addresses must be 16-byte aligned.
pub mod vector {
    use super::asm;

    /// Four f32 in one 16-byte transaction.
    #[derive(Clone, Copy)]
    #[repr(C, align(16))]
    pub struct F32x4(pub [f32; 4]);

    /// `ld.global.v4.f32`.
    #[inline(always)]
    pub unsafe fn load_f32x4(p: *const f32) -> F32x4 {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: the caller guarantees 16 readable, 16-byte-aligned global bytes at `p`.
        unsafe {
            asm!(
                "ld.global.v4.f32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
                options(readonly, nostack, pure)
            )
        };
        F32x4([a, b, c, d])
    }

    /// `ld.global.nc.v4.f32`: through the read-only (non-coherent) path, for inputs the
    /// kernel never writes.
    #[inline(always)]
    pub unsafe fn load_f32x4_nc(p: *const f32) -> F32x4 {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: as `load_f32x4`, and no thread of this grid writes these bytes.
        unsafe {
            asm!(
                "ld.global.nc.v4.f32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
                options(readonly, nostack, pure)
            )
        };
        F32x4([a, b, c, d])
    }

    /// `ld.global.nc.L2::256B.v4.f32`: as [`load_f32x4_nc`], with a hint that L2 fetch the
    /// whole aligned 256 bytes around the address from DRAM (the neighbouring 128-byte line
    /// comes in the same DRAM access, for a block that will read it soon). PTX ISA 7.4, sm_75.
    #[inline(always)]
    pub unsafe fn load_f32x4_nc_l2_256b(p: *const f32) -> F32x4 {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: as `load_f32x4_nc`; the prefetch size is a hint and reads nothing more.
        unsafe {
            asm!(
                "ld.global.nc.L2::256B.v4.f32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
                options(readonly, nostack, pure)
            )
        };
        F32x4([a, b, c, d])
    }

    /// `st.global.v4.f32`.
    #[inline(always)]
    pub unsafe fn store_f32x4(p: *mut f32, v: F32x4) {
        let [a, b, c, d] = v.0;
        // SAFETY: the caller guarantees 16 writable, 16-byte-aligned global bytes at `p`.
        unsafe {
            asm!(
                "st.global.v4.f32 [{0}], {{{1}, {2}, {3}, {4}}};",
                in(reg64) p, in(reg32) a, in(reg32) b, in(reg32) c, in(reg32) d,
                options(nostack)
            )
        };
    }

    /// `ld.global.cg.v4.f32`: cached in L2 only (not L1), for measuring L2 itself.
    #[inline(always)]
    pub unsafe fn load_f32x4_cg(p: *const f32) -> F32x4 {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: as `load_f32x4`. Not `pure`: repeated reads of one address must all happen.
        unsafe {
            asm!(
                "ld.global.cg.v4.f32 {{{0}, {1}, {2}, {3}}}, [{4}];",
                out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
                options(readonly, nostack)
            )
        };
        F32x4([a, b, c, d])
    }

    /// Number of leading f32 elements before `p` reaches a 16-byte boundary (0 to 3).
    #[inline(always)]
    pub fn misalignment_f32(p: *const f32) -> u64 {
        ((16 - (p as u64 & 15)) & 15) / 4
    }
}

/// Fast math on the special-function unit. Approximate: see the PTX ISA for error bounds.
pub mod math {
    use super::asm;

    /// `a * b + c` with one rounding (`fma.rn.f32`).
    #[inline(always)]
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        core::intrinsics::fmaf32(a, b, c)
    }

    #[inline(always)]
    pub fn max(a: f32, b: f32) -> f32 {
        a.max(b)
    }

    #[inline(always)]
    pub fn min(a: f32, b: f32) -> f32 {
        a.min(b)
    }

    /// 2^x (`ex2.approx.ftz.f32`).
    #[inline(always)]
    pub fn exp2(x: f32) -> f32 {
        let y: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("ex2.approx.ftz.f32 {0}, {1};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack))
        };
        y
    }

    /// 1/x (`rcp.approx.ftz.f32`: within 1 ulp, 1/inf = 0): one special-function
    /// instruction where `1.0 / x` compiles to an IEEE division (`div.rn.f32`, a reciprocal
    /// refined by FMAs and a range check, about ten instructions).
    #[inline(always)]
    pub fn rcp(x: f32) -> f32 {
        let y: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("rcp.approx.ftz.f32 {0}, {1};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack))
        };
        y
    }

    /// log2(x) (`lg2.approx.ftz.f32`).
    #[inline(always)]
    pub fn log2(x: f32) -> f32 {
        let y: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("lg2.approx.ftz.f32 {0}, {1};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack))
        };
        y
    }

    /// e^x through 2^(x·log2 e).
    #[inline(always)]
    pub fn exp(x: f32) -> f32 {
        exp2(x * core::f32::consts::LOG2_E)
    }

    /// 1/sqrt(x) (`rsqrt.approx.f32`).
    #[inline(always)]
    pub fn rsqrt(x: f32) -> f32 {
        let y: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("rsqrt.approx.f32 {0}, {1};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack))
        };
        y
    }

    /// tanh(x) (`tanh.approx.f32`, sm_75 and newer).
    #[inline(always)]
    pub fn tanh(x: f32) -> f32 {
        let y: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("tanh.approx.f32 {0}, {1};", out(reg32) y, in(reg32) x, options(pure, nomem, nostack))
        };
        y
    }
}
