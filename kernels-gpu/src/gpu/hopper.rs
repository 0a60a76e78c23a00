//! Hopper (sm_90a) building blocks: warpgroup MMA (`wgmma`), the tensor copy engine (TMA,
//! `cp.async.bulk.tensor`), transaction-counting `mbarrier`s, `setmaxnreg`, thread-block
//! clusters (the cluster marker, `barrier.cluster`, distributed shared memory through `mapa`
//! and `ld.shared::cluster`), and the launch-bounds marker. Compiled only into the sm_90a PTX (`wgmma` and `setmaxnreg` exist
//! only there; a module holding them would not load on any other GPU).
//!
//! **wgmma.** A *warpgroup* (4 consecutive warps, the first one's index a multiple of 4)
//! multiplies a 64×16 bf16 tile of A by a 16×N tile of B into a 64×N f32 tile held in the
//! 128 threads' registers (N/2 f32 each). A and B are read from shared memory through 64-bit
//! *matrix descriptors* ([`smem_desc_sw128`]). The instruction is asynchronous: issue
//! (`wgmma.fence` first), `commit_group`, and `wait_group::<N>()` before the accumulators or
//! the shared tiles are touched again. Accumulator layout (PTX ISA, "wgmma .m64nNk16
//! register fragment, D"): thread `t` of the warpgroup (warp `w = t / 32`, lane `l`) holds
//! `d[i]` at row `16·w + l / 4 + 8·((i % 4) / 2)`, column `8·(i / 4) + 2·(l % 4) + i % 2`.
//!
//! **128-byte swizzle.** Both operands are K-major (x and W both have K contiguous), stored
//! as rows of 64 bf16 = 128 bytes, in blocks of 8 rows (1024 bytes, 1024-byte aligned), with
//! 16-byte chunk `c` of row `r` at chunk `c ^ (r % 8)` ([`sw128_offset`]): the layout TMA
//! writes with `CU_TENSOR_MAP_SWIZZLE_128B` and the one descriptor mode 1 reads. A K16 step
//! inside the 64-wide row is the descriptor's start address plus 32 bytes per step.
//!
//! **TMA and mbarriers.** One thread issues a 2-D tile copy described by a tensor map (made
//! on the host by `cuTensorMapEncodeTiled`, kept in global memory); the copy engine fetches
//! the box (zero-filling what lies outside the matrix) and, when all bytes have landed,
//! completes them on an mbarrier as a *transaction count*. The consumer waits on the barrier's
//! phase parity. A stage of a ring has two barriers: *full* (the producer's
//! `arrive.expect_tx` plus the bytes) and *empty* (the consumers' arrivals once their
//! wgmmas have finished reading it).
#![allow(clippy::missing_safety_doc)]

use core::arch::asm;

/// Bytes in a row of a 128-byte-swizzled tile (64 bf16).
pub const SW128_ROW_BYTES: u32 = 128;
/// A swizzle atom: 8 rows of 128 bytes. Tiles start on a multiple of it.
pub const SW128_ATOM_BYTES: u32 = 1024;

/// Byte offset of 16-byte chunk `chunk` (< 8) of row `row` in a 128-byte-swizzled tile whose
/// start is 1024-byte aligned.
#[inline(always)]
pub const fn sw128_offset(row: u32, chunk: u32) -> u32 {
    row * SW128_ROW_BYTES + ((chunk ^ (row % 8)) * 16)
}

/// The wgmma matrix descriptor of a K-major, 128-byte-swizzled tile at `.shared` address
/// `addr` (PTX ISA "Matrix Descriptor Format"): start address >> 4 in bits 0-13, leading
/// byte offset >> 4 in 16-29 (unused for swizzled K-major layouts; 1 by convention), stride
/// byte offset >> 4 in 32-45 (1024: from one 8-row atom to the next), base offset 0 (atoms
/// 1024-byte aligned), swizzle mode in 62-63 (1 = 128 bytes).
#[inline(always)]
pub const fn smem_desc_sw128(addr: u32) -> u64 {
    const fn enc(x: u32) -> u64 {
        ((x & 0x3_ffff) >> 4) as u64
    }
    enc(addr) | (enc(16) << 16) | (enc(SW128_ATOM_BYTES) << 32) | (1u64 << 62)
}

/// The wgmma matrix descriptor of an *MN-major* (`imm-trans` 1), 128-byte-swizzled operand
/// at `.shared` address `addr`: rows are K (one 128-byte row = 64 consecutive M or N
/// elements), 8 K-rows an atom of 1024 bytes. CUTLASS's canonical form for this layout is
/// `Swizzle<3,4,3> o ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO))`: the leading byte offset is the
/// step from one 64-element MN chunk to the next (`mn_chunk_bytes`, used when N > 64), the
/// stride byte offset the step from 8 K-rows to the next (1024 here). Attention's V, keys ×
/// D with D contiguous, is this layout as the B of P·V.
#[inline(always)]
pub const fn smem_desc_sw128_mn(addr: u32, mn_chunk_bytes: u32) -> u64 {
    const fn enc(x: u32) -> u64 {
        ((x & 0x3_ffff) >> 4) as u64
    }
    enc(addr) | (enc(mn_chunk_bytes) << 16) | (enc(SW128_ATOM_BYTES) << 32) | (1u64 << 62)
}

/// The launch-bounds marker: any architecture's, defined in `gpu` and used here too.
pub use super::launch_bounds;

/// Writes the cluster marker (see `host/build/linker.rs`): the entry gets
/// `.reqnctapercluster CTAS, 1, 1`, as CUDA C++'s `__cluster_dims__(CTAS, 1, 1)`; a plain
/// `cuLaunchKernel` then launches clusters of CTAS consecutive blocks in x (the grid's x a
/// multiple of CTAS).
#[inline(always)]
pub fn cluster_dims<const CTAS: u32>() {
    // SAFETY: a PTX comment; emits no instruction.
    unsafe {
        asm!(
            "// rooflab:cluster_dims {c}",
            c = const CTAS,
            options(nomem, nostack, preserves_flags)
        )
    };
}

/// This block's rank in its cluster (`%cluster_ctarank`).
#[inline(always)]
pub fn cluster_ctarank() -> u32 {
    let r: u32;
    // SAFETY: reading a special register.
    unsafe { asm!("mov.u32 {0}, %cluster_ctarank;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// Blocks in this block's cluster (`%cluster_nctarank`): 1 when the launch set no cluster
/// size and the entry carries none (`cluster_dims`), so a kernel that reads its cluster size
/// here runs correctly either way.
#[inline(always)]
pub fn cluster_nctarank() -> u32 {
    let r: u32;
    // SAFETY: reading a special register.
    unsafe { asm!("mov.u32 {0}, %cluster_nctarank;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// This block's cluster's index in x (`%clusterid.x`): `blockIdx.x / cluster size` for
/// clusters laid along x.
#[inline(always)]
pub fn cluster_id_x() -> u32 {
    let r: u32;
    // SAFETY: reading a special register.
    unsafe { asm!("mov.u32 {0}, %clusterid.x;", out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// A barrier across every thread of the cluster (`barrier.cluster.arrive.release` +
/// `wait.acquire`): shared-memory writes before it (mbarrier inits included) are visible to
/// the other blocks after it. Every thread of every block of the cluster executes it. Not
/// `.aligned`: the threads of a warp may arrive from different branches (the producer
/// warp's thread 0 after its loop), which the aligned form does not allow.
#[inline(always)]
pub fn cluster_sync() {
    // SAFETY: all threads execute it (callers keep it out of divergent code).
    unsafe {
        asm!(
            "barrier.cluster.arrive.release;",
            "barrier.cluster.wait.acquire;",
            options(nostack)
        )
    };
}

/// The first half of [`cluster_sync`]: `barrier.cluster.arrive.release` (not `.aligned`, as
/// `cluster_sync`). PTX ISA ("Parallel Synchronization and Communication Instructions:
/// barrier.cluster", PTX 8.0 for the qualifiers, sm_90): the arrival does not wait; the
/// barrier completes when every non-exited thread of the cluster has arrived, and a thread
/// arrives only once per completion. With `.release` (the default), this thread's memory
/// accesses before the arrive (loads included: "requested ... are complete") are complete and
/// visible to every thread whose [`cluster_wait`] returns for that completion. Work between
/// an arrive and its wait is ordered by nothing: the split lets a block do its own work while
/// the others catch up.
#[inline(always)]
pub fn cluster_arrive() {
    // SAFETY: every thread of the cluster arrives once and then waits (callers keep it out of
    // divergent code). Not `nomem`: the compiler must keep memory accesses on their side.
    unsafe { asm!("barrier.cluster.arrive.release;", options(nostack)) };
}

/// The second half: `barrier.cluster.wait.acquire`, which returns once every non-exited
/// thread of the cluster has arrived (see [`cluster_arrive`]); the accesses they made before
/// arriving are then complete and visible to this thread.
#[inline(always)]
pub fn cluster_wait() {
    // SAFETY: as `cluster_arrive`, after this thread's own arrive.
    unsafe { asm!("barrier.cluster.wait.acquire;", options(nostack)) };
}

/// The address in block `rank`'s shared memory of what lies at `.shared::cta` address `addr`
/// in this block's (`mapa.shared::cluster.u32`, PTX ISA "Data Movement and Conversion
/// Instructions: mapa", PTX 7.8, sm_90): a `.shared::cluster` address, for
/// [`load_shared_cluster_f32x2`] (distributed shared memory). Every block of a kernel has the
/// same layout, so one offset names the same variable in each. Address arithmetic only.
#[inline(always)]
pub fn map_shared_rank(addr: u32, rank: u32) -> u32 {
    let out: u32;
    // SAFETY: computes an address, touches no memory.
    unsafe {
        asm!(
            "mapa.shared::cluster.u32 {0}, {1}, {2};",
            out(reg32) out, in(reg32) addr, in(reg32) rank,
            options(pure, nomem, nostack)
        )
    };
    out
}

/// Two f32 from a `.shared::cluster` address (`ld.shared::cluster.v2.f32`, 8-byte aligned),
/// possibly in another block's shared memory ([`map_shared_rank`]). Volatile: never merged,
/// hoisted or removed.
///
/// # Safety
/// The owning block is running and has not exited (a block's shared memory goes when it
/// does): the caller brackets the read between a cluster barrier that follows the owner's
/// write and one that the owner waits on before it exits.
#[inline(always)]
pub unsafe fn load_shared_cluster_f32x2(addr: u32) -> [f32; 2] {
    let (a, b): (f32, f32);
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "ld.shared::cluster.v2.f32 {{{0}, {1}}}, [{2}];",
            out(reg32) a, out(reg32) b, in(reg32) addr,
            options(nostack)
        )
    };
    [a, b]
}

/// One arrival on the mbarrier at `.shared` address `bar` *of block `rank` of the cluster*
/// (`mapa` turns the local address into that block's). Default semantics (release at CTA
/// scope), as CUTLASS's `ClusterBarrier::arrive(cta_id)`: the arrival only says "my reads of
/// the stage are done" (`wgmma.wait_group` has retired them), nothing written needs to be
/// visible to the peer. `.release.cluster` would be correct too but costs a
/// `MEMBAR.ALL.GPU` before every arrival (seen in the SASS), which drained the pipe.
#[inline(always)]
pub unsafe fn mbarrier_arrive_cluster(bar: u32, rank: u32) {
    // SAFETY: forwarded from the caller (an initialized mbarrier at the same offset in the
    // block `rank`, which has not exited).
    unsafe {
        asm!(
            "{{",
            ".reg .u32 remote;",
            "mapa.shared::cluster.u32 remote, {0}, {1};",
            "mbarrier.arrive.shared::cluster.b64 _, [remote];",
            "}}",
            in(reg32) bar, in(reg32) rank,
            options(nostack)
        )
    };
}

/// TMA multicast: as [`tma_load_2d`], but the box lands at `dst` in *every block of the
/// cluster whose bit is set in `mask`*, completing its bytes on the mbarrier at `bar` in
/// each of them (same offsets in every block).
///
/// # Safety
/// As [`tma_load_2d`], for every block in `mask` (alive, its barrier expecting the bytes).
#[inline(always)]
pub unsafe fn tma_load_2d_multicast(
    dst: u32,
    map: *const u8,
    c0: u32,
    c1: u32,
    bar: u32,
    mask: u16,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster \
             [{0}], [{1}, {{{2}, {3}}}], [{4}], {5};",
            in(reg32) dst, in(reg64) map, in(reg32) c0, in(reg32) c1, in(reg32) bar, in(reg16) mask,
            options(nostack)
        )
    };
}

/// Shrink (`setmaxnreg.dec`) this warpgroup's register allocation to `N` per thread: the
/// producer, which needs few, hands its registers back to the pool.
#[inline(always)]
pub fn setmaxnreg_dec<const N: u32>() {
    // SAFETY: all threads of the warpgroup execute it (callers branch per warpgroup).
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// Grow (`setmaxnreg.inc`) this warpgroup's register allocation to `N` per thread.
#[inline(always)]
pub fn setmaxnreg_inc<const N: u32>() {
    // SAFETY: as `setmaxnreg_dec`.
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// Initialize the mbarrier at `.shared` address `bar` (8-byte aligned) for `count` arrivals
/// per phase.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: u32, count: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "mbarrier.init.shared::cta.b64 [{0}], {1};",
            in(reg32) bar, in(reg32) count,
            options(nostack)
        )
    };
}

/// Make initialized mbarriers visible to the copy engine (the async proxy) and to the other
/// threads: every thread passes a block barrier after this.
#[inline(always)]
pub fn fence_mbarrier_init() {
    // SAFETY: fences only.
    unsafe {
        asm!(
            "fence.mbarrier_init.release.cluster;",
            "fence.proxy.async.shared::cta;",
            options(nostack)
        )
    };
}

/// Order this thread's ordinary shared-memory writes (`st.shared`, `cp.async`) before later
/// reads by the async proxy (wgmma, TMA): `fence.proxy.async.shared::cta`.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// Arrive on the mbarrier `bar` and add `bytes` to the transaction count the current phase
/// waits for (`mbarrier.arrive.expect_tx`): what the producer does before issuing the TMA
/// copies that will complete those bytes.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
    // SAFETY: forwarded from the caller (`bar` is an initialized mbarrier).
    unsafe {
        asm!(
            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{0}], {1};",
            in(reg32) bar, in(reg32) bytes,
            options(nostack)
        )
    };
}

/// One arrival on the mbarrier `bar` (release: this thread's earlier accesses happen before
/// the phase completes).
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: u32) {
    // SAFETY: forwarded from the caller.
    unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{0}];", in(reg32) bar, options(nostack)) };
}

/// One `mbarrier.try_wait.parity` on the mbarrier `bar`: true once the phase of parity
/// `parity` (0 or 1) has completed. The instruction itself waits a while in hardware before
/// it answers false. A barrier still in its first phase counts its "previous phase" (parity
/// 1) as complete, which is what lets a producer wait on empty stages from the start.
#[inline(always)]
pub unsafe fn mbarrier_try_wait(bar: u32, parity: u32) -> bool {
    let done: u32;
    // SAFETY: forwarded from the caller. No label inside the asm: inlined copies would
    // clash; the callers' loops are Rust's.
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "mbarrier.try_wait.parity.shared::cta.b64 p, [{1}], {2};",
            "selp.u32 {0}, 1, 0, p;",
            "}}",
            out(reg32) done, in(reg32) bar, in(reg32) parity,
            options(nostack)
        )
    };
    done != 0
}

/// Wait until the phase of parity `parity` of the mbarrier `bar` has completed
/// ([`mbarrier_try_wait`] until it answers true).
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: u32, parity: u32) {
    // SAFETY: forwarded from the caller.
    while !unsafe { mbarrier_try_wait(bar, parity) } {}
}

/// [`mbarrier_wait`] that gives up: after `tries` unsuccessful `try_wait`s (each of which
/// already waits a while in hardware) it traps, so a phase that never completes (a copy
/// that never arrived, a wrong parity) ends the launch with an error the host reports
/// instead of hanging the GPU. `tries` is far past any wait a correct kernel sees.
#[inline(always)]
pub unsafe fn mbarrier_wait_or_trap(bar: u32, parity: u32, tries: u32) {
    let mut n = 0u32;
    // SAFETY: forwarded from the caller.
    while !unsafe { mbarrier_try_wait(bar, parity) } {
        n += 1;
        if n >= tries {
            // SAFETY: `trap` ends the kernel.
            unsafe { core::arch::nvptx::trap() }
        }
    }
}

/// Hint the tensor map at generic address `map` into the cache (`prefetch.tensormap`).
#[inline(always)]
pub unsafe fn prefetch_tensormap(map: *const u8) {
    // SAFETY: a prefetch of a valid global address.
    unsafe { asm!("prefetch.tensormap [{0}];", in(reg64) map, options(nostack, readonly)) };
}

/// TMA: copy the 2-D box at coordinates (`c0` along the contiguous dimension, `c1` rows) of
/// the tensor described by the map at generic address `map` into shared memory at `dst`,
/// completing its bytes on the mbarrier `bar`. Parts of the box outside the tensor are
/// filled with zeros (and still counted as bytes).
///
/// # Safety
/// `map` points to a valid CUtensorMap in global memory (64-byte aligned) whose box fits at
/// `dst` (1024-byte aligned for the 128-byte swizzle); `bar` expects the bytes.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u8, c0: u32, c1: u32, bar: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             [{0}], [{1}, {{{2}, {3}}}], [{4}];",
            in(reg32) dst, in(reg64) map, in(reg32) c0, in(reg32) c1, in(reg32) bar,
            options(nostack)
        )
    };
}

/// TMA: as [`tma_load_2d`] for a 3-D tensor, coordinates (`c0` contiguous, `c1`, `c2`):
/// attention's `[B·H, S, D]` tensors, a box per head that the copy engine zero-fills past S
/// instead of reading the next head's rows.
///
/// # Safety
/// As [`tma_load_2d`].
#[inline(always)]
pub unsafe fn tma_load_3d(dst: u32, map: *const u8, c0: u32, c1: u32, c2: u32, bar: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes \
             [{0}], [{1}, {{{2}, {3}, {4}}}], [{5}];",
            in(reg32) dst, in(reg64) map, in(reg32) c0, in(reg32) c1, in(reg32) c2, in(reg32) bar,
            options(nostack)
        )
    };
}

/// Bulk copy (no tensor map): `bytes` contiguous bytes from global `src` to shared `dst`
/// (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`), completed on the
/// mbarrier `bar` as a transaction count. One instruction per row however long, where a
/// `cp.async` moves 16 bytes a lane: decode v09's paged rows.
///
/// # Safety
/// `dst` and `src` 16-byte aligned, `bytes` a multiple of 16, the range inside the
/// allocation and the block's shared memory; `bar` an initialized mbarrier expecting the bytes.
#[inline(always)]
pub unsafe fn bulk_copy_g2s(dst: u32, src: *const u8, bytes: u32, bar: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes \
             [{0}], [{1}], {2}, [{3}];",
            in(reg32) dst, in(reg64) src, in(reg32) bytes, in(reg32) bar,
            options(nostack)
        )
    };
}

/// `wgmma.fence`: order earlier register writes of the accumulators (and shared-memory
/// writes of the operands) before the wgmmas that follow. Before the first wgmma of a batch.
#[inline(always)]
pub fn wgmma_fence() {
    // SAFETY: all threads of the warpgroup execute it.
    unsafe { asm!("wgmma.fence.sync.aligned;", options(nostack)) };
}

/// Close the wgmmas issued since the last commit into one group.
#[inline(always)]
pub fn wgmma_commit() {
    // SAFETY: as `wgmma_fence`.
    unsafe { asm!("wgmma.commit_group.sync.aligned;", options(nostack)) };
}

/// Wait until at most `N` committed wgmma groups are still running.
#[inline(always)]
pub fn wgmma_wait<const N: u32>() {
    // SAFETY: as `wgmma_fence`.
    unsafe { asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack)) };
}

/// Writes out `wgmma.mma_async.sync.aligned.m64n{N}k16.f32.bf16.bf16` with its N/2
/// accumulator registers as in-out operands (the descriptors and the immediates after them).
macro_rules! wgmma_bf16 {
    ($name:ident, $n:literal, $len:literal; $first:literal $($i:literal)*) => {
        #[doc = concat!("`d += A·B` for a 64×", stringify!($n), " f32 tile: one ",
            "`wgmma.mma_async.m64n", stringify!($n), "k16.f32.bf16.bf16` with A (64×16) and B ",
            "(", stringify!($n), "×16, K-major) read from shared memory through the ",
            "descriptors. Asynchronous: see the module docs.")]
        ///
        /// # Safety
        /// All 128 threads of a warpgroup execute it together, between `wgmma_fence` and a
        /// `wgmma_commit`/`wgmma_wait` before `d` is read or the tiles are overwritten; the
        /// descriptors describe live, swizzled tiles of shared memory.
        #[inline(always)]
        pub unsafe fn $name(d: &mut [f32; $len], a_desc: u64, b_desc: u64) {
            // SAFETY: forwarded from the caller.
            unsafe {
                asm!(
                    concat!(
                        "wgmma.mma_async.sync.aligned.m64n", stringify!($n),
                        "k16.f32.bf16.bf16 {{",
                        "{", stringify!($first), "}",
                        $( ", {", stringify!($i), "}", )*
                        "}}, {a}, {b}, 1, 1, 1, 0, 0;"
                    ),
                    inout(reg32) d[$first],
                    $( inout(reg32) d[$i], )*
                    a = in(reg64) a_desc,
                    b = in(reg64) b_desc,
                    options(nostack)
                )
            };
        }
    };
}

wgmma_bf16!(wgmma_m64n128k16_bf16, 128, 64;
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63);

wgmma_bf16!(wgmma_m64n256k16_bf16, 256, 128;
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91
    92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115
    116 117 118 119 120 121 122 123 124 125 126 127);

/// Writes out `wgmma.mma_async.sync.aligned.m64n{N}k16.f32.bf16.bf16` with A in registers
/// (four `.b32` of bf16 pairs a thread, laid out as `mma.m16n8k16`'s A fragment for the
/// warp's 16 rows of the 64) and B MN-major in shared memory (`imm-trans-b` 1).
macro_rules! wgmma_bf16_rs_tb {
    ($name:ident, $n:literal, $len:literal; $first:literal $($i:literal)*) => {
        #[doc = concat!("`d += A·B` for a 64×", stringify!($n), " f32 tile: one ",
            "`wgmma.mma_async.m64n", stringify!($n), "k16.f32.bf16.bf16` with A (64×16) from ",
            "the registers `a` and B (16×", stringify!($n), ", N contiguous: MN-major, ",
            "[`smem_desc_sw128_mn`]) from shared memory. Asynchronous: `a` and `d` must not ",
            "change until the group is waited for.")]
        ///
        /// # Safety
        /// As the shared-memory wgmmas; `a` holds this thread's A fragment.
        #[inline(always)]
        pub unsafe fn $name(d: &mut [f32; $len], a: [u32; 4], b_desc: u64) {
            // SAFETY: forwarded from the caller.
            unsafe {
                asm!(
                    concat!(
                        "wgmma.mma_async.sync.aligned.m64n", stringify!($n),
                        "k16.f32.bf16.bf16 {{",
                        "{", stringify!($first), "}",
                        $( ", {", stringify!($i), "}", )*
                        "}}, {{{a0}, {a1}, {a2}, {a3}}}, {b}, 1, 1, 1, 1;"
                    ),
                    inout(reg32) d[$first],
                    $( inout(reg32) d[$i], )*
                    a0 = in(reg32) a[0],
                    a1 = in(reg32) a[1],
                    a2 = in(reg32) a[2],
                    a3 = in(reg32) a[3],
                    b = in(reg64) b_desc,
                    options(nostack)
                )
            };
        }
    };
}

wgmma_bf16_rs_tb!(wgmma_m64n64k16_bf16_rs_tb, 64, 32;
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);

wgmma_bf16_rs_tb!(wgmma_m64n128k16_bf16_rs_tb, 128, 64;
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63);
