//! The cluster-row layout of the kernels that split one long row across a thread-block
//! cluster (softmax v07, norm v06): the cluster `%clusterid.x` owns a row, block `rank` of
//! it the slice `slice(rank, cols, .., cluster)`, which it copies into its shared memory once
//! (16-byte `cp.async`s in `GROUPS` commit groups, folded as each group lands), and the blocks
//! swap one pair of statistics through distributed shared memory. Host-visible, so that the
//! launch geometry and the device code read the same functions; the device half (`dev`,
//! sm_90a) is the read of a unit of the slice back from shared memory. What each kernel
//! folds, which pair it swaps and how it merges them are its own (see its header).
//!
//! The cluster size is the launch's (`cuLaunchKernelEx` with a cluster dimension, chosen by
//! [`cluster_size`] from the row length): the kernels read it from `%cluster_nctarank`, so one
//! entry serves 1, 2, 4 or 8 blocks a row.
//!
//! Softmax v08 and norm v07 keep their slices in registers instead (`reg_cluster_size`,
//! `reg_block_threads`; shared memory: the header only).
//!
//! Shared memory of a block: `HEADER_BYTES` (32 f32 for block reductions, then the block's
//! pair at `PARTIAL_OFFSET`, padded to 16 bytes), then the slice as stored.

/// Most blocks a cluster (8 is the portable maximum): the longest rows are split 8 ways.
pub const MAX_CLUSTER: u32 = 8;
/// The slice a block aims at: [`cluster_size`] takes the fewest blocks a row whose slices
/// are at most this long. Fewer, larger blocks a row mean fewer cluster barriers and
/// distributed-shared-memory exchanges per byte; 32 KiB still leaves room for several
/// blocks an SM, whose copies overlap the others' reductions.
pub const TARGET_SLICE_BYTES: u32 = 32 * 1024;
/// The most shared memory one block may have on sm_90 (227 KiB).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;
/// Most threads a block.
pub const MAX_THREADS: u32 = 1024;
/// 16-byte vectors a thread copies at least (while the block is below `MAX_THREADS`): 64
/// bytes in flight per thread. Not fewer: 2 vectors a thread (twice the threads a block, to
/// fill the warps that ~124 resident clusters of 8 leave idle in bf16) halved the resident
/// f32 blocks and measured slower on the H200 (2026-12-04: norm v06 LayerNorm f32 at
/// 1024x65536 267.4 µs against 182.2, bf16 at 1024x32768 70.2 against 61.1).
pub const MIN_VECTORS: u32 = 4;
/// Commit groups a thread splits its copies into, folding one while the next ones land.
pub const GROUPS: u32 = 4;
/// Dynamic shared memory before the slice: 32 f32 for the block reductions, then the
/// block's pair of statistics for its peers, padded to 16 bytes.
pub const HEADER_BYTES: u32 = 32 * 4 + 16;
/// Byte offset of the block's pair in dynamic shared memory.
pub const PARTIAL_OFFSET: u32 = 32 * 4;

/// Blocks a row for rows of `cols` (`elem_bytes` 4 or 2): the fewest of 1, 2, 4, 8 whose
/// slices hold at most `TARGET_SLICE_BYTES`, else `MAX_CLUSTER`.
pub const fn cluster_size(cols: u32, elem_bytes: u32) -> u32 {
    let mut c = 1;
    while c < MAX_CLUSTER && slice_cols(cols, elem_bytes, c) * elem_bytes > TARGET_SLICE_BYTES {
        c *= 2;
    }
    c
}

/// Elements a block of a cluster of `cluster` owns for rows of `cols` (`elem_bytes` 4 or 2):
/// a share of the row rounded up to whole 16-byte vectors, so every slice starts 16-byte
/// aligned.
pub const fn slice_cols(cols: u32, elem_bytes: u32, cluster: u32) -> u32 {
    let per16 = 16 / elem_bytes;
    cols.div_ceil(cluster).div_ceil(per16) * per16
}

/// `(start, len)` of the slice of a row of `cols` that block `rank` of `cluster` owns (the
/// last slices may be short or empty).
pub const fn slice(rank: u32, cols: u32, elem_bytes: u32, cluster: u32) -> (u32, u32) {
    let s = slice_cols(cols, elem_bytes, cluster);
    let start = rank * s;
    let len = if start >= cols {
        0
    } else if cols - start < s {
        cols - start
    } else {
        s
    };
    (start, len)
}

/// Threads a block for rows of `cols` in clusters of `cluster`: `MIN_VECTORS` vectors of the
/// slice each, whole warps, 32 to `MAX_THREADS`.
pub const fn block_threads(cols: u32, elem_bytes: u32, cluster: u32) -> u32 {
    let vectors = slice_cols(cols, elem_bytes, cluster) / (16 / elem_bytes);
    let t = vectors.div_ceil(MIN_VECTORS).div_ceil(32) * 32;
    if t < 32 {
        32
    } else if t > MAX_THREADS {
        MAX_THREADS
    } else {
        t
    }
}

/// Dynamic shared memory a block for rows of `cols` in clusters of `cluster`: the header and
/// the slice, as stored.
pub const fn shared_bytes(cols: u32, elem_bytes: u32, cluster: u32) -> u32 {
    HEADER_BYTES + slice_cols(cols, elem_bytes, cluster) * elem_bytes
}

/// The register-kept variant of the layout (softmax v08): each block holds its slice in
/// registers, `ROW_ITEMS` (16) elements a thread in the row-in-registers layout of
/// `crate::row_layout`, so a slice is at most `ROW_MAX_COLS` (16384) elements and shared
/// memory holds only the header. The slice a block aims at: `REG_TARGET_SLICE` elements,
/// 512 threads (the block size at which v05 reaches the roof: 8192-element rows).
pub const REG_TARGET_SLICE: u32 = 8192;
/// Longest row of the register-kept layout: `MAX_CLUSTER` slices of `ROW_MAX_COLS`.
pub const REG_MAX_COLS: u32 = MAX_CLUSTER * crate::row_layout::ROW_MAX_COLS;

/// Blocks a row of the register-kept layout for rows of `cols`: the fewest of 1, 2, 4, 8
/// whose slices hold at most `REG_TARGET_SLICE` elements, else `MAX_CLUSTER`.
pub const fn reg_cluster_size(cols: u32, elem_bytes: u32) -> u32 {
    let mut c = 1;
    while c < MAX_CLUSTER && slice_cols(cols, elem_bytes, c) > REG_TARGET_SLICE {
        c *= 2;
    }
    c
}

/// Threads a block of the register-kept layout in clusters of `cluster`: `row_threads` of
/// the slice (16 elements a thread, whole warps).
pub const fn reg_block_threads(cols: u32, elem_bytes: u32, cluster: u32) -> u32 {
    crate::row_layout::row_threads(slice_cols(cols, elem_bytes, cluster))
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub(crate) mod dev {
    use crate::gpu::async_copy::shared_addr;
    use crate::gpu::bf16::Storage;

    /// A unit (one 16-byte vector, or one element in the scalar layout) of the slice in
    /// shared memory, widened into `u[..n]`.
    ///
    /// # Safety
    /// `j` is a unit of the slice at `data`, inside the block's dynamic shared memory.
    #[inline(always)]
    pub unsafe fn read_unit<T: Storage, const VEC: bool>(
        data: *const T,
        j: u32,
        u: &mut [f32; 8],
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            if VEC {
                T::unpack16(crate::gpu::smem::load_u32x4(shared_addr(data) + 16 * j), u);
            } else {
                u[0] = T::load(data.add(j as usize));
            }
        }
    }
}
