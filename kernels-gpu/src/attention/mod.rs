//! Family `attention`: prefill attention, `O = softmax(Q·Kᵀ·D^-½ [+ causal mask])·V`.
//!
//! Q, K, V and O are `[B, H, S, D]` bf16 (the layout of PyTorch's
//! `scaled_dot_product_attention`), row-major, D contiguous: head `bh = b·H + h` starts at
//! element `bh·S·D`. Arithmetic and the softmax statistics are f32. With `causal != 0` query
//! `i` attends to keys `j <= i` only (the masked scores are -inf before the softmax).
//! Head dims: `HEAD_DIMS`; the host refuses any other.
//!
//! The ladder: v01 writes the B·H·S² scores to DRAM and reads them back (three kernels);
//! v02 keeps them on chip with an online softmax (one kernel, no tensor cores); v03 runs both
//! products on the tensor cores (`mma.sync`), FlashAttention-2's loop; v04 (sm_90a) runs them
//! on `wgmma` with TMA copies, a producer warpgroup and two consumers (FlashAttention-3's
//! structure).

pub mod v01_naive;
pub mod v02_fused_simt;
pub mod v03_flash_mma;
pub mod v04_flash_wgmma;

/// The head dims the kernels are built for.
pub const HEAD_DIMS: [u32; 2] = [64, 128];

/// Largest S·D (elements of one head), B·H (heads) the kernels index: u32 on the host side
/// of the checks, 64-bit offsets inside.
pub const MAX_SEQ: u64 = (1 << 31) - 1;

/// A warp's running state over the keys of one query row: the max `m` and sum `l` of the
/// scores seen so far (log2 domain) and the unnormalized output row, lane `l` holding dims
/// `l, l + 32, ..` (`PER = D / 32` of them).
#[cfg(target_arch = "nvptx64")]
pub(crate) struct OnlineRow<const PER: usize> {
    pub m: f32,
    pub l: f32,
    pub acc: [f32; PER],
}

#[cfg(target_arch = "nvptx64")]
impl<const PER: usize> OnlineRow<PER> {
    #[inline(always)]
    pub fn new() -> Self {
        OnlineRow {
            m: f32::NEG_INFINITY,
            l: 0.0,
            acc: [0.0; PER],
        }
    }

    /// One tile of 32 keys staged in shared memory, a lane per key: lane `lane` scores key
    /// `lane` (when `valid`) as `q·k` with `q` the warp's scaled query row `qr` and K's rows
    /// `D + 1` floats apart in `ks`; then the online-softmax update — `corr = 2^(m − m')`
    /// rescales what is held, `p = 2^(s − m')` weighs the new keys, each key's `p` broadcast
    /// to the lanes (`shfl.idx`) times its V row (rows `D` apart in `vs`). A tile whose keys
    /// are all masked, with nothing seen before, changes nothing (2^(−inf − −inf) is NaN).
    ///
    /// # Safety
    /// `qr` holds D floats, `ks` 32 rows of D + 1, `vs` 32 rows of D, all in shared memory;
    /// every lane of the warp calls it (it shuffles).
    #[inline(always)]
    pub unsafe fn tile<const D: usize>(
        &mut self,
        qr: *const f32,
        ks: *const f32,
        vs: *const f32,
        valid: bool,
    ) {
        use crate::gpu::{math, warp};
        const { assert!(D == 32 * PER) };
        let lane = warp::lane_id();
        let dd = D as u32;
        // SAFETY: inside the three shared regions (the caller's contract).
        unsafe {
            let mut s = f32::NEG_INFINITY;
            if valid {
                let kr = ks.add((lane * (dd + 1)) as usize);
                let mut dot = 0.0f32;
                for d in 0..D {
                    dot = math::fma(*qr.add(d), *kr.add(d), dot);
                }
                s = dot;
            }
            let m_new = math::max(self.m, warp::max_f32(s));
            if m_new == f32::NEG_INFINITY {
                return;
            }
            let p = math::exp2(s - m_new);
            let corr = math::exp2(self.m - m_new);
            self.l = math::fma(self.l, corr, warp::sum_f32(p));
            for a in self.acc.iter_mut() {
                *a *= corr;
            }
            for jj in 0..32 {
                let pj = warp::shfl_idx_f32(p, jj);
                let vr = vs.add((jj * dd + lane) as usize);
                for (x, a) in self.acc.iter_mut().enumerate() {
                    *a = math::fma(pj, *vr.add(32 * x), *a);
                }
            }
            self.m = m_new;
        }
    }
}
