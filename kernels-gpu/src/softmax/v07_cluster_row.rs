//! softmax/v07_cluster_row — long rows (sm_90a): a cluster of blocks holds one row on chip.
//!
//! Changed from v05: v05 holds a row in one block's registers, so rows past 16384 elements go
//! to v03, which reads them twice (41% of the roof at 2048×32768 in f32). Here a thread-block
//! cluster of c blocks shares one row, c = `cluster_size(cols, ..)` of 1, 2, 4 or 8 (the
//! fewest whose slices hold at most `TARGET_SLICE_BYTES`; set at launch, read from
//! `%cluster_nctarank`): block `rank` owns the slice `slice(rank, cols, .., c)` and copies it into
//! its shared memory once, with 16-byte `cp.async`s (all in flight together, in `GROUPS`
//! commit groups), folding the elements into a running (max m, sum of e^(x - m)) per thread
//! as each group lands. The block reduces its threads' pairs, and the c blocks swap theirs
//! through distributed shared memory (`softmax::device::cluster_merge`, shared with v08):
//! after a cluster barrier (`barrier.cluster.arrive.release` / `wait.acquire`: the pairs
//! written before it are visible after it), lanes 0..c-1 of every warp read block l's pair
//! (`mapa` + `ld.shared::cluster`) and the warp combines them with shuffles. Each block then
//! normalizes its slice from shared memory into y. A second cluster barrier, arrived at right
//! after the reads and waited on at the very end, keeps every block alive until the others
//! have read its pair. Rows of up to `MAX_COLS` = 262144 elements in f32 and bf16
//! (128 KiB of shared memory a block in f32); the host refuses longer rows (v03 takes any
//! length) and reports the step unavailable on GPUs other than compute capability 9.0.
//!
//! Thread mapping: the cluster `%clusterid.x` owns that row; block `rank` its slice; the
//! slice's 16-byte vectors (elements, when the rows are not 16-byte aligned) go round-robin
//! over the block's `block_threads(cols, ..)` threads (at least `MIN_VECTORS` vectors each, up
//! to 1024 threads), and each thread reads back from shared memory only what it copied
//! itself, so the copies need no block barrier.
//!
//! Memory traffic: the minimum, 1 read + 1 write; the slice crosses shared memory once in, and
//! twice out (fold, normalize).
//!
//! Expected bound: DRAM; with one 128 KiB block per SM (262144 f32) the reductions and the
//! cluster barrier are not hidden behind another block's loads, only behind other clusters'.

/// The cluster-row layout (blocks per cluster, threads, slices, shared memory), shared with
/// norm v06.
pub use crate::cluster_row::{
    GROUPS, HEADER_BYTES, MAX_CLUSTER, MAX_THREADS, MIN_VECTORS, PARTIAL_OFFSET,
    TARGET_SLICE_BYTES, block_threads, cluster_size, shared_bytes, slice, slice_cols,
};
/// Longest row: 8 blocks of 32768 f32 (128 KiB of shared memory each, 64 KiB in bf16).
pub const MAX_COLS: u32 = 262144;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::{GROUPS, HEADER_BYTES, PARTIAL_OFFSET, slice};
    use crate::cluster_row::dev::read_unit;
    use crate::gpu::async_copy::{self, shared_addr};
    use crate::gpu::bf16::{Storage, aligned16};
    use crate::gpu::vector::F32x4;
    use crate::gpu::{block, hopper, math, shared, thread};
    use crate::softmax::device::{cluster_merge, exp_sub};

    const _: () = assert!(GROUPS == 4, "the waits below are written for 4 groups");

    #[inline(always)]
    unsafe fn body<T: Storage, const VEC: bool>(x: *const T, y: *mut T, cols: u32) {
        let n = if VEC { T::PER16 } else { 1 };
        let (rank, cluster) = (hopper::cluster_ctarank(), hopper::cluster_nctarank());
        let (start, len) = slice(rank, cols, 16 / T::PER16 as u32, cluster);
        let units = len / n as u32;
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let off = hopper::cluster_id_x() as usize * cols as usize + start as usize;
        let base = shared::dynamic_shared_mem::<F32x4>() as *mut u8;
        // SAFETY: (whole body) the host launches rows clusters of `cluster` blocks of `b`
        // threads with `shared_bytes(cols, .., cluster)` bytes, so the header and the slice
        // fit; every unit j <
        // units lies inside this block's slice of its row (x and y hold rows · cols); with
        // VEC the rows are 16-byte aligned and slices start on a vector.
        unsafe {
            let scratch = base as *mut f32;
            let partial = base.add(PARTIAL_OFFSET as usize) as *mut f32;
            let data = base.add(HEADER_BYTES as usize) as *mut T;
            let (xs, ys) = (x.add(off), y.add(off));
            // Thread t's units are j = i·b + t; the i's split into GROUPS runs.
            let per_group = units.div_ceil(b).div_ceil(GROUPS);
            for g in 0..GROUPS {
                let mut i = g * per_group;
                while i < (g + 1) * per_group && i * b + t < units {
                    let j = i * b + t;
                    if VEC {
                        let src = xs.add(j as usize * n).cast::<f32>();
                        async_copy::copy_16_zfill(shared_addr(data) + 16 * j, src, 16);
                    } else {
                        // Unaligned rows: a plain element copy (cp.async has no 2-byte form).
                        data.add(j as usize).write(xs.add(j as usize).read());
                    }
                    i += 1;
                }
                async_copy::commit_group();
            }
            // Fold each group as it lands: this thread reads only what it copied, so its own
            // wait is enough (no block barrier).
            let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
            let mut fold = |g: u32| {
                let mut i = g * per_group;
                while i < (g + 1) * per_group && i * b + t < units {
                    let mut u = [0.0f32; 8];
                    read_unit::<T, VEC>(data, i * b + t, &mut u);
                    let mut um = u[0];
                    for k in 1..n {
                        um = math::max(um, u[k]);
                    }
                    // One rescale per unit whose max is new, not one per element.
                    if um > m {
                        if s > 0.0 {
                            s *= exp_sub(m, um);
                        }
                        m = um;
                    }
                    if m != f32::NEG_INFINITY {
                        for k in 0..n {
                            s += exp_sub(u[k], m);
                        }
                    }
                    i += 1;
                }
            };
            async_copy::wait_group::<3>();
            fold(0);
            async_copy::wait_group::<2>();
            fold(1);
            async_copy::wait_group::<1>();
            fold(2);
            async_copy::wait_group::<0>();
            fold(3);

            // The block's pair, then the cluster's.
            let mb = block::max_f32(m, scratch);
            let mine = if s > 0.0 { s * exp_sub(m, mb) } else { 0.0 };
            let sb = block::sum_f32(mine, scratch);
            let (mc, inv) = cluster_merge(mb, sb, partial);

            let mut i = 0;
            while i * b + t < units {
                let j = i * b + t;
                let mut u = [0.0f32; 8];
                read_unit::<T, VEC>(data, j, &mut u);
                for k in 0..n {
                    u[k] = exp_sub(u[k], mc) * inv;
                }
                if VEC {
                    T::store16(ys.add(j as usize * n), &u);
                } else {
                    T::store(ys.add(j as usize), u[0]);
                }
                i += 1;
            }
            // No block leaves while a peer may still read its pair.
            hopper::cluster_wait();
        }
    }

    /// The kernel body: the vector layout when x, y and the rows are 16-byte aligned, the
    /// element layout otherwise (uniform over the grid).
    #[inline(always)]
    pub unsafe fn run<T: Storage>(x: *const T, y: *mut T, cols: u32) {
        // SAFETY: forwarded.
        unsafe {
            if aligned16(x) && aligned16(y) && cols.is_multiple_of(T::PER16 as u32) {
                body::<T, true>(x, y, cols)
            } else {
                body::<T, false>(x, y, cols)
            }
        }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (f32), rows of up to 262144, a cluster of blocks a
    /// row (the launch's cluster size). sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn softmax_v07_cluster_row_f32(
        x: *const f32,
        y: *mut f32,
        cols: u32,
    ) {
        // SAFETY: forwarded from the host wrapper's checks (cols <= MAX_COLS; grid = rows
        // clusters of c = cluster_size(cols, 4) blocks of block_threads(cols, 4, c) threads,
        // shared_bytes(cols, 4, c) of shared memory).
        unsafe { dev::run::<f32>(x, y, cols) }
    }
}

crate::kernel! {
    /// Softmax of each row of x into y (bf16), as the f32 entry. sm_90a only.
    #[cfg(target_feature = "sm_90a")]
    pub unsafe fn softmax_v07_cluster_row_bf16(
        x: *const u16,
        y: *mut u16,
        cols: u32,
    ) {
        // SAFETY: as above, with 2-byte elements.
        unsafe { dev::run::<u16>(x, y, cols) }
    }
}
