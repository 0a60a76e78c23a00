//! The streaming layout of the steps that read their row twice, the second time from L2
//! (norm v08, softmax v09): one block per row, nothing of the row kept on chip, so that an SM
//! runs 2048 threads of several rows in different phases. Host-visible, so that the launch
//! geometry and the device code read the same constants; the device side (L2 hints, the
//! unit loads) is `dev`.
//!
//! Thread t of a block of `block_threads(cols, ..)` takes the row's 16-byte vectors t, t + b,
//! t + 2b, ... (elements, when the row is not 16-byte aligned or not whole vectors), `UNROLL`
//! of them a step in the first pass and `REREAD` in the second, in the same order.
//!
//! Why the second read is not a DRAM read: the rows resident on the GPU at once (2048 threads
//! × `MIN_UNITS` vectors an SM, 17 MiB on 132 SMs, up to 2 rows an SM at the longest rows)
//! fit in L2, and each row was read moments before — if L2 is told so: the first read is
//! marked `evict_last`, the second read and the output `evict_first` (`createpolicy` +
//! `.L2::cache_hint`); without the hints the output stream and other rows' first reads push
//! the row out (norm v08 on the H100, f32 1024×32768: some 75 MB more than the 268 MB
//! minimum). Past ~256 KiB of row an SM (2 × 128 KiB: 32768 f32, 65536 bf16) the resident
//! rows outgrow L2 and the second pass goes back to DRAM.

/// 16-byte vectors a thread has in flight in each step of the first pass (64 bytes).
pub const UNROLL: u32 = 4;
/// 16-byte vectors a thread has in flight in each step of the second pass (from L2, whose
/// latency is shorter than DRAM's).
pub const REREAD: u32 = 2;
/// Vectors of the row a thread covers at least, while the block is below `MAX_THREADS`:
/// one step of `UNROLL`. More threads a row would spread it thinner; fewer would leave an
/// SM's 2048 threads holding more rows than L2 keeps between the two passes.
pub const MIN_UNITS: u32 = UNROLL;
/// Most threads a block.
pub const MAX_THREADS: u32 = 1024;
/// Launch bounds: at least two `MAX_THREADS` blocks an SM, so ptxas holds every entry to
/// 65536 / 2048 = 32 registers and an SM runs 2048 threads.
pub const BOUND_BLOCKS: u32 = 2;

/// Threads a block for rows of `cols` (`elem_bytes` 4 or 2): `MIN_UNITS` vectors each, whole
/// warps, 32 to `MAX_THREADS` (longer rows: more steps a thread).
pub const fn block_threads(cols: u32, elem_bytes: u32) -> u32 {
    let vectors = cols.div_ceil(16 / elem_bytes);
    let t = vectors.div_ceil(MIN_UNITS).div_ceil(32) * 32;
    if t < 32 {
        32
    } else if t > MAX_THREADS {
        MAX_THREADS
    } else {
        t
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod dev {
    use super::REREAD;
    use crate::gpu::bf16::{L2Policy, Storage, each8, load16_nc, load16_nc_hint};
    use crate::gpu::thread;

    /// L2 hints: how a read asks L2 to treat the line.
    #[derive(Clone, Copy, PartialEq)]
    pub enum Hint {
        /// None (norm's weight and bias, read by every row, stay hot anyway).
        Plain,
        /// Evict last: the row's first read (the second pass reads it again).
        Keep,
        /// Evict first: the row's last read, and the output.
        Leave,
    }

    /// `hint`'s policy (`createpolicy` is pure: LLVM makes each one once and keeps it).
    #[inline(always)]
    pub fn policy(hint: Hint) -> L2Policy {
        if hint == Hint::Keep { L2Policy::evict_last() } else { L2Policy::evict_first() }
    }

    /// Unit `j` of `p` raw: a 16-byte vector (`VEC`; under `hint`) or one element widened to
    /// f32 bits (the unaligned path takes no hint: plain loads).
    ///
    /// # Safety
    /// Unit j lies inside p's row (VEC: p 16-byte aligned and the row whole vectors).
    #[inline(always)]
    pub unsafe fn fetch<T: Storage, const VEC: bool>(p: *const T, j: u32, hint: Hint) -> [u32; 4] {
        // SAFETY: the caller's contract.
        unsafe {
            let v = p.add(j as usize * T::PER16).cast();
            match (VEC, hint) {
                (true, Hint::Plain) => load16_nc(v),
                (true, _) => load16_nc_hint(v, policy(hint)),
                _ => [T::load(p.add(j as usize)).to_bits(), 0, 0, 0],
            }
        }
    }

    /// A raw unit's elements as f32 into `u[..per]` (`per` = `T::PER16`, or 1 when not `VEC`).
    #[inline(always)]
    pub fn widen<T: Storage, const VEC: bool>(r: [u32; 4], u: &mut [f32; 8]) {
        if VEC {
            T::unpack16(r, u)
        } else {
            u[0] = f32::from_bits(r[0])
        }
    }

    /// The second pass's walk over a row of `units` units: thread t takes units t, t + b, ..,
    /// `REREAD` a step, fetching the step's units from `x` under `evict_first` first, then
    /// calling `each(j, raw)` for each unit j < units with its raw bits.
    ///
    /// # Safety
    /// `x` holds the row's `units` units (as [`fetch`]); `each` must be sound for every
    /// unit j < units.
    #[inline(always)]
    pub unsafe fn reread<T: Storage, const VEC: bool>(
        x: *const T,
        units: u32,
        mut each: impl FnMut(u32, [u32; 4]),
    ) {
        const R: usize = REREAD as usize;
        let (t, b) = (thread::thread_idx_x(), thread::block_dim_x());
        let mut j0 = t;
        while j0 < units {
            let mut raw = [[0u32; 4]; R];
            each8(R, |g| {
                let j = j0 + g as u32 * b;
                if j < units {
                    // SAFETY: unit j < units of the row (the caller's contract).
                    raw[g] = unsafe { fetch::<T, VEC>(x, j, Hint::Leave) };
                }
            });
            each8(R, |g| {
                let j = j0 + g as u32 * b;
                if j < units {
                    each(j, raw[g]);
                }
            });
            j0 += REREAD * b;
        }
    }
}
