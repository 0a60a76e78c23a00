//! decode/v09_bulk_copy — v08's packed wave with each cache row brought in by one bulk copy
//! (`cp.async.bulk`, Hopper's copy engine) in place of sixteen 16-byte `cp.async` a row.
//!
//! Changed from v08 (same plan, same segments, same Sᵀ, softmax, Oᵀ, merge and combine):
//! ncu put v08's warps waiting on the MIO queue (stalls per instruction at batch 1 × L
//! 32768: short scoreboard 11.3, MIO throttle 7.2 of 29.4; H100, 2026-12-07), which every
//! `cp.async`, `ldmatrix`, `movmatrix`, shuffle and `MUFU` goes through. At D 128 v08 issues
//! 8 `cp.async` a lane per K or V tile, plus a shuffle to pass each row's slot. Here:
//! - lane `l` < 16 of the warp looks up key `l` of the tile (v08's block-table read a tile
//!   ahead) and issues **one** `cp.async.bulk` of its whole row (`2·D` bytes) into the warp's
//!   buffer; lane 0 arms the buffer's mbarrier with the tile's bytes first
//!   (`arrive.expect_tx`) and the warp waits on the barrier's phase before reading it;
//! - the copy engine does not swizzle, so the buffer's rows are padded to `2·D + 16` bytes
//!   ([`row_bytes`]): eight consecutive rows then start 4 banks apart and every `ldmatrix`
//!   (8 rows × 16 bytes, the same chunk) is conflict-free;
//! - a bulk copy cannot zero-fill, so keys past the segment's end (its last tile only)
//!   copy the segment's last key again: finite values that the masked scores weight by 0;
//! - between segments every thread fences its generic shared-memory writes (merge area,
//!   ticket flag) before the copy engine writes the rings again (`fence.proxy.async`).
//!
//! Per 16-key tile and warp at D = 128: 16 bulk copies (one PTX instruction, 16 lanes) and
//! an `arrive.expect_tx` in place of 8 `cp.async` and a shuffle a lane; the rest as v06. But
//! the bulk copy's SASS (`UBLKCP`) takes uniform registers, so ptxas serializes the lanes'
//! copies into a loop (`ELECT`, four `R2UR`, `UBLKCP`, a branch: ~9 instructions a row):
//! v10 issues a tile as one TMA box instead.
//!
//! Thread mapping: v08's (grid of the plan's blocks; warp `w` takes a segment's tiles `w, w
//! + WARPS, ..`; lane `l` < 16 copies the tile's key `l`).
//!
//! Memory traffic: v08's; the last tile of a segment reads its last key up to 15 more
//! times (from L2).
//!
//! Expected bound: DRAM. sm_90a only (the bulk copy and its mbarrier transaction count).

pub use super::v06_keys_as_rows::{HEADS, STAGES, THREADS, TILE, WARPS};
pub use super::v08_stream_k::{COMBINE_UNROLL, MIN_BLOCKS_D128, MIN_BLOCKS_D64};

/// Bytes of one key's row in a ring buffer: the cache row (`2·D`) plus 16 bytes of padding,
/// so that row `r` starts `4·r` banks (mod 32) from row 0.
pub const fn row_bytes(d: u32) -> u32 {
    2 * d + 16
}

/// Bytes of one warp's buffer (a K or V tile).
pub const fn tile_bytes(d: u32) -> u32 {
    TILE * row_bytes(d)
}

/// Bytes of the rings of every warp; the mbarriers follow.
pub const fn rings_bytes(d: u32) -> u32 {
    WARPS * STAGES * tile_bytes(d)
}

/// Dynamic shared memory of a block at head dim `d`: the rings (reused at the end of each
/// segment for the warps' partial rows and their (m, l), as v06), then one 8-byte mbarrier
/// per buffer.
pub const fn shared_bytes(d: u32) -> u32 {
    rings_bytes(d) + 8 * WARPS * STAGES
}

/// Blocks an SM holds at head dim `d`: this step's shared memory, v08's register caps.
pub const fn resident_blocks(d: u32) -> u32 {
    super::v08_stream_k::resident_blocks_with(shared_bytes(d), d)
}

// The merge area fits inside the rings (the barriers past them survive every segment), and
// v09 holds as many blocks an SM as v08: one plan (`PagedKv::stream_plan`) serves both.
const _: () = {
    let mut i = 0;
    while i < 2 {
        let d = [64, 128][i];
        assert!(WARPS * HEADS * (d + 2) * 4 <= rings_bytes(d));
        assert!(resident_blocks(d) == super::v08_stream_k::resident_blocks(d));
        assert!(row_bytes(d).is_multiple_of(16) && (row_bytes(d) / 4) % 32 == 4);
        i += 1;
    }
};

/// Byte offset in a padded K buffer of lane `lane`'s `ldmatrix.x4` row for Sᵀ's A fragment
/// at k16 step `kk = 4j + i` (v06's `k_lane_offset`, unswizzled and padded): this for `i`,
/// plus `128·j`.
pub const fn k_lane_offset(d: u32, lane: u32, i: u32) -> u32 {
    let (r, c) = crate::attention::v03_flash_mma::q_lane(lane, i);
    r * row_bytes(d) + 16 * c
}

/// Byte offset in a padded V buffer of lane `lane`'s `ldmatrix.x4.trans` row for Vᵀ's A
/// fragment of dims `16·(4j + i) ..` (v06's `v_lane_offset`, unswizzled and padded): this
/// for `i`, plus `128·j`.
pub const fn v_lane_offset(d: u32, lane: u32, i: u32) -> u32 {
    (lane % 8 + (lane / 16) * 8) * row_bytes(d) + 16 * (2 * i + (lane / 8) % 2)
}

/// `try_wait`s before a ring's wait (v09, v10) is taken for a hang and the kernel traps:
/// each waits up to a hardware time limit, so this is far past the microseconds a tile's
/// copy takes.
pub const WAIT_TRIES: u32 = 1 << 24;

/// The ring's bulk copies and barriers, called from v06's `segment` when it runs v09's
/// form (`BULK`). On a target without them (sm_80, sm_90 without `a`) the branches that
/// call them are never instantiated with `BULK` on; their bodies there are unreachable.
#[cfg(target_arch = "nvptx64")]
pub(in crate::decode) mod bulk {
    #[cfg(target_feature = "sm_90a")]
    use crate::gpu::hopper;

    /// Lane 0 initializes the warp's `STAGES` barriers at `bars` (one arrival a phase: its
    /// own `arrive.expect_tx`) and makes them visible to the copy engine and the warp.
    ///
    /// # Safety
    /// `bars` is 8-byte aligned shared memory of `8·STAGES` bytes no one else uses; every
    /// lane of the warp calls it, once per kernel.
    #[inline(always)]
    pub unsafe fn init(bars: u32, lane: u32) {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe {
            if lane == 0 {
                for s in 0..super::STAGES {
                    hopper::mbarrier_init(bars + 8 * s, 1);
                }
                hopper::fence_mbarrier_init();
            }
            crate::gpu::warp::sync();
        }
        #[cfg(not(target_feature = "sm_90a"))]
        // SAFETY: never reached (module docs).
        unsafe {
            let _ = (bars, lane);
            core::hint::unreachable_unchecked()
        }
    }

    /// Fill the buffer at `dst` (barrier `bar`) with a tile: lane 0 arms the barrier with
    /// `TILE` rows of `row` bytes, lanes below `TILE` copy their key's cache row (`slot`) to
    /// row `lane` of the buffer.
    ///
    /// # Safety
    /// `bar`'s previous phase has completed (the buffer is free); lanes below `TILE` pass
    /// valid slots of `cache`; every lane of the warp calls it.
    #[inline(always)]
    pub unsafe fn fill<const D: usize>(cache: *const u16, dst: u32, bar: u32, slot: u32, lane: u32) {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract; rows are 16-byte aligned (2·D a multiple of 16).
        unsafe {
            let row = 2 * D as u32;
            if lane == 0 {
                hopper::mbarrier_arrive_expect_tx(bar, super::TILE * row);
            }
            if lane < super::TILE {
                let src = cache.add(slot as usize * D) as *const u8;
                hopper::bulk_copy_g2s(dst + lane * super::row_bytes(D as u32), src, row, bar);
            }
        }
        #[cfg(not(target_feature = "sm_90a"))]
        // SAFETY: never reached (module docs).
        unsafe {
            let _ = (cache, dst, bar, slot, lane);
            core::hint::unreachable_unchecked()
        }
    }

    /// Wait until the buffer of barrier `bar` holds its `round`-th fill (parity `round % 2`);
    /// a fill that never completes traps (the host reports a launch failure) rather than
    /// hanging the GPU.
    ///
    /// # Safety
    /// `bar` is an initialized barrier whose `round`-th phase was armed.
    #[inline(always)]
    pub unsafe fn wait(bar: u32, round: u32) {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe {
            hopper::mbarrier_wait_or_trap(bar, round & 1, super::WAIT_TRIES)
        }
        #[cfg(not(target_feature = "sm_90a"))]
        // SAFETY: never reached (module docs).
        unsafe {
            let _ = (bar, round);
            core::hint::unreachable_unchecked()
        }
    }

    /// Order this thread's generic shared-memory writes before the copy engine's next ones.
    #[inline(always)]
    pub fn fence() {
        #[cfg(target_feature = "sm_90a")]
        hopper::fence_proxy_async_shared();
        #[cfg(not(target_feature = "sm_90a"))]
        // SAFETY: never reached (module docs).
        unsafe {
            core::hint::unreachable_unchecked()
        }
    }
}

super::v08_stream_k::stream_k_entry! { /// v09 at head dim 64 (sm_90a only).
    #[cfg(target_feature = "sm_90a")]
    decode_v09_bulk_copy_d64, 64, 4, COMBINE_UNROLL, MIN_BLOCKS_D64, super::v06_keys_as_rows::COPY_BULK_ROWS }
super::v08_stream_k::stream_k_entry! { /// v09 at head dim 128 (sm_90a only).
    #[cfg(target_feature = "sm_90a")]
    decode_v09_bulk_copy_d128, 128, 8, COMBINE_UNROLL, MIN_BLOCKS_D128, super::v06_keys_as_rows::COPY_BULK_ROWS }
