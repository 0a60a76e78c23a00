//! decode/v10_tma_pages — v08's packed wave with each tile of 16 keys brought in by the
//! tensor copy engine (TMA): `D/64` box copies a tile, issued by one lane.
//!
//! Changed from v09 (same plan, segments, mbarrier per buffer): v09's bulk copies take
//! uniform-register operands, so ptxas serializes its 16 lanes' copies into a loop (`ELECT`,
//! four `R2UR`, `UBLKCP`, a branch: about 9 instructions a row, 144 a tile, where v08 issued
//! 8 `cp.async` a lane). Here a tile is one box of the cache seen as a 3-D tensor (`D`, Hkv,
//! page slots): when the page size is a multiple of 16, a tile of 16 keys starting at a
//! multiple of 16 lies in one page, so its rows are 16 consecutive slots of one KV head:
//! - lane 0 arms the buffer's barrier and issues `D/64` copies of a 64 × 1 × 16 box (128
//!   bytes × 16 rows, in the 128-byte swizzle), through tensor maps of K and V the host
//!   encodes once per cache; no other lane takes part in the copy;
//! - the buffer is `D/64` swizzled sub-tiles of 16 rows × 128 bytes (2 KiB, 1024-byte
//!   aligned), so `ldmatrix` rows are conflict-free ([`k_lane_offset`], [`v_lane_offset`]);
//! - the box of a segment's last, partial tile reads the page's slots past the context
//!   (anything: a served cache's stale or unwritten rows): the scores of those keys are
//!   masked as before, and their V rows are zeroed in the buffer before `ldmatrix` (a NaN
//!   there would survive a weight of 0), then fenced for the copy engine's next write.
//! - page sizes that are not a multiple of 16 are refused by the host (v08 and v09 take them).
//!
//! Per 16-key tile and warp at D = 128: 2 TMA copies, one `arrive.expect_tx` and an mbarrier
//! wait, against v08's 8 `cp.async` and a shuffle a lane.
//!
//! Thread mapping: v08's; lane 0 of each warp issues its tiles' copies.
//!
//! Memory traffic: v08's (a partial tile's box reads up to 15 rows more, its page's).
//!
//! Expected bound: DRAM. sm_90a only.

pub use super::v06_keys_as_rows::{HEADS, STAGES, THREADS, TILE, WARPS};
pub use super::v08_stream_k::{COMBINE_UNROLL, MIN_BLOCKS_D128, MIN_BLOCKS_D64};

/// Columns of a box: 64 bf16, one 128-byte swizzled row.
pub const BOX_COLS: u32 = 64;
/// Bytes of one swizzled sub-tile (16 rows of 128 bytes).
pub const SUB_TILE_BYTES: u32 = TILE * 128;
/// Alignment of the rings: a 128-byte swizzle atom (8 rows of 128 bytes).
pub const RING_ALIGN: u32 = 1024;
/// The page size must be a multiple of this for a tile to be one box.
pub const PAGE_MULTIPLE: u32 = TILE;

/// Bytes of one warp's buffer (a K or V tile).
pub const fn tile_bytes(d: u32) -> u32 {
    TILE * d * 2
}

/// Bytes of the rings of every warp; the mbarriers follow.
pub const fn rings_bytes(d: u32) -> u32 {
    WARPS * STAGES * tile_bytes(d)
}

/// Dynamic shared memory of a block: slack to align the rings (the dynamic block is only
/// 16-byte aligned), the rings (reused for the merge), one 8-byte mbarrier per buffer.
pub const fn shared_bytes(d: u32) -> u32 {
    RING_ALIGN + rings_bytes(d) + 8 * WARPS * STAGES
}

/// The rings' start in shared memory for a dynamic block at `base`.
pub const fn rings_at(base: u32) -> u32 {
    (base + RING_ALIGN - 1) & !(RING_ALIGN - 1)
}

/// Blocks an SM holds at head dim `d`: this step's shared memory, v08's register caps.
pub const fn resident_blocks(d: u32) -> u32 {
    super::v08_stream_k::resident_blocks_with(shared_bytes(d), d)
}

// As v09: the merge area inside the rings, as many blocks an SM as v08 (one plan serves all).
const _: () = {
    let mut i = 0;
    while i < 2 {
        let d = [64, 128][i];
        assert!(WARPS * HEADS * (d + 2) * 4 <= rings_bytes(d));
        assert!(resident_blocks(d) == super::v08_stream_k::resident_blocks(d));
        assert!(tile_bytes(d).is_multiple_of(RING_ALIGN) && d.is_multiple_of(BOX_COLS));
        i += 1;
    }
};

/// Byte offset of 16-byte chunk `c` (of the row's `D/8`) of row `r` in a buffer: sub-tile
/// `c / 8`, then the 128-byte swizzle (chunk `c % 8` at `(c % 8) ^ (r % 8)`), as TMA writes it.
pub const fn chunk_at(r: u32, c: u32) -> u32 {
    (c / 8) * SUB_TILE_BYTES + r * 128 + ((c % 8) ^ (r % 8)) * 16
}

/// Byte offset of lane `lane`'s `ldmatrix.x4` row for Sᵀ's A fragment at k16 step `kk = 4j +
/// i` (v06's rows and chunks, this layout): this for `i`, plus `SUB_TILE_BYTES·j`.
pub const fn k_lane_offset(lane: u32, i: u32) -> u32 {
    let (r, c) = crate::attention::v03_flash_mma::q_lane(lane, i);
    chunk_at(r, c)
}

/// Byte offset of lane `lane`'s `ldmatrix.x4.trans` row for Vᵀ's A fragment of dims `16·(4j
/// + i) ..` (v06's rows and chunks, this layout): this for `i`, plus `SUB_TILE_BYTES·j`.
pub const fn v_lane_offset(lane: u32, i: u32) -> u32 {
    chunk_at(lane % 8 + (lane / 16) * 8, 2 * i + (lane / 8) % 2)
}

/// 16-byte pieces [`tma::zero_rows`] writes to clear rows `valid..16` of a buffer at head
/// dim `d`, and the byte offset of piece `i` of them (rows are 128 contiguous bytes in every
/// sub-tile, whatever the swizzle: 8 pieces a row a sub-tile).
pub const fn zero_pieces(valid: u32, d: u32) -> u32 {
    (TILE - valid) * 8 * (d / BOX_COLS)
}
pub const fn zero_piece_at(valid: u32, i: u32, d: u32) -> u32 {
    let per_row = 8 * (d / BOX_COLS);
    let (r, k) = (valid + i / per_row, i % per_row);
    (k / 8) * SUB_TILE_BYTES + r * 128 + (k % 8) * 16
}

/// The tile copies and the clean-up of a partial tile, called from v06's `segment` in v10's
/// form; unreachable on targets without TMA (as v09's `bulk`).
#[cfg(target_arch = "nvptx64")]
pub(in crate::decode) mod tma {
    #[cfg(target_feature = "sm_90a")]
    use crate::gpu::hopper;
    use crate::tensor_map::TensorMap;

    /// Lane 0 arms the barrier `bar` with a tile's bytes and copies the tile of KV head
    /// `kvh` whose first key is page slot `slot` (page · page size + place) into `dst`:
    /// `D/64` boxes of 64 columns.
    ///
    /// # Safety
    /// `map` is the cache's map (64 × 1 × 16 boxes, 128-byte swizzle), `dst` 1024-byte
    /// aligned with `2·16·D` bytes free, `bar`'s previous phase completed.
    #[inline(always)]
    pub unsafe fn fill<const D: usize>(map: *const TensorMap, dst: u32, bar: u32, slot: u32, kvh: u32, lane: u32) {
        #[cfg(target_feature = "sm_90a")]
        // SAFETY: the caller's contract.
        unsafe {
            if lane == 0 {
                hopper::mbarrier_arrive_expect_tx(bar, super::tile_bytes(D as u32));
                for h in 0..D as u32 / super::BOX_COLS {
                    hopper::tma_load_3d(
                        dst + h * super::SUB_TILE_BYTES, map as *const u8, h * super::BOX_COLS, kvh, slot, bar,
                    );
                }
            }
        }
        #[cfg(not(target_feature = "sm_90a"))]
        // SAFETY: never reached (v09's `bulk` docs).
        unsafe {
            let _ = (map, dst, bar, slot, kvh, lane);
            core::hint::unreachable_unchecked()
        }
    }

    /// Zero rows `valid..16` of the V buffer at `buf` (each row is 128 contiguous bytes in
    /// every sub-tile, whatever the swizzle), then fence the writes for the copy engine.
    ///
    /// # Safety
    /// The buffer's fill has completed; every lane of the warp calls it; a `warp::sync`
    /// follows before the rows are read.
    #[inline(always)]
    pub unsafe fn zero_rows<const D: usize>(buf: u32, valid: u32, lane: u32) {
        let n = super::zero_pieces(valid, D as u32);
        let mut i = lane;
        while i < n {
            let at = buf + super::zero_piece_at(valid, i, D as u32);
            // SAFETY: inside the buffer (the caller's contract).
            unsafe { crate::gpu::smem::store_f32x4(at, crate::gpu::vector::F32x4([0.0; 4])) };
            i += 32;
        }
        super::super::v09_bulk_copy::bulk::fence();
    }
}

super::v08_stream_k::stream_k_entry! { /// v10 at head dim 64 (sm_90a only).
    #[cfg(target_feature = "sm_90a")]
    decode_v10_tma_pages_d64, 64, 4, COMBINE_UNROLL, MIN_BLOCKS_D64, super::v06_keys_as_rows::COPY_TMA_PAGES }
super::v08_stream_k::stream_k_entry! { /// v10 at head dim 128 (sm_90a only).
    #[cfg(target_feature = "sm_90a")]
    decode_v10_tma_pages_d128, 128, 8, COMBINE_UNROLL, MIN_BLOCKS_D128, super::v06_keys_as_rows::COPY_TMA_PAGES }
