//! attention/v01_naive — the scores in DRAM: three kernels, as the formula reads.
//!
//! Changed from nothing (the first step): `scores` writes `S[bh][i][j] = D^-½ q_i·k_j` (or
//! -inf past the diagonal when causal) for all B·H·S² pairs in f32, `softmax` turns each row
//! of S into probabilities in place, `pv` writes `O[bh][i][d] = Σ_j P[bh][i][j]·V[bh][j][d]`.
//!
//! Thread mapping: `scores`: one thread per score, j fastest (a warp shares its q row and
//! reads 32 different k rows); `softmax`: one warp per row, lanes striding the row; `pv`:
//! one thread per output element, d fastest (a warp reads one row of P, broadcast, and
//! contiguous elements of V).
//!
//! Memory traffic: the scores matrix, 4·B·H·S² bytes, written by `scores`, read and written
//! by `softmax`, read by `pv`: 16·B·H·S² bytes on top of Q, K, V and O (at B 4, H 16,
//! S 4096: 17 GiB against 16 MiB of Q/K/V/O). The host refuses shapes whose scores do not fit
//! in free device memory.
//!
//! Expected bound: DRAM (the scores' round trips), and k rows read through L1/L2 once per
//! query.

/// Threads per block of `scores` and `pv`.
pub const BLOCK_THREADS: u32 = 256;
/// Rows (warps) per block of `softmax`.
pub const SOFTMAX_ROWS: u32 = 8;

#[cfg(target_arch = "nvptx64")]
use crate::gpu::{bf16, math, thread, warp};

crate::kernel! {
    /// `s[bh][i][j] = scale · q_i·k_j` (-inf for j > i when `causal != 0`), one thread each
    /// of the `heads·seq·seq` scores.
    pub unsafe fn attention_v01_naive_scores(
        q: *const u16,
        k: *const u16,
        s: *mut f32,
        heads: u32,
        seq: u32,
        dim: u32,
        scale: f32,
        causal: u32,
    ) {
        let idx = thread::index_1d();
        let n = seq as u64;
        if idx >= heads as u64 * n * n {
            return;
        }
        let (j, i, bh) = (idx % n, (idx / n) % n, idx / (n * n));
        // SAFETY: idx < heads·S², so bh < heads, i, j < S: every row read is inside Q and K
        // (heads·S·D elements) and the store inside S.
        unsafe {
            let out = s.add(idx as usize);
            if causal != 0 && j > i {
                *out = f32::NEG_INFINITY;
                return;
            }
            let qr = q.add(((bh * n + i) * dim as u64) as usize);
            let kr = k.add(((bh * n + j) * dim as u64) as usize);
            let mut acc = 0.0f32;
            for d in 0..dim as usize {
                acc = math::fma(bf16::to_f32(*qr.add(d)), bf16::to_f32(*kr.add(d)), acc);
            }
            *out = scale * acc;
        }
    }
}

crate::kernel! {
    /// Each of the `rows` rows of `seq` scores in `s` becomes its softmax, in place; one
    /// warp per row, `SOFTMAX_ROWS` rows a block.
    pub unsafe fn attention_v01_naive_softmax(s: *mut f32, rows: u64, seq: u32) {
        let row = thread::block_idx_x() as u64 * SOFTMAX_ROWS as u64
            + (thread::thread_idx_x() / warp::WARP_SIZE) as u64;
        if row >= rows {
            return;
        }
        let lane = warp::lane_id();
        // SAFETY: row < rows: the row's seq elements are inside s.
        unsafe {
            let r = s.add((row * seq as u64) as usize);
            let mut m = f32::NEG_INFINITY;
            let mut j = lane;
            while j < seq {
                m = math::max(m, *r.add(j as usize));
                j += warp::WARP_SIZE;
            }
            m = warp::max_f32(m);
            // Every row has a finite score (j = 0 is never masked), so m is finite.
            let mut sum = 0.0f32;
            j = lane;
            while j < seq {
                sum += math::exp2((*r.add(j as usize) - m) * core::f32::consts::LOG2_E);
                j += warp::WARP_SIZE;
            }
            let inv = 1.0 / warp::sum_f32(sum);
            j = lane;
            while j < seq {
                let p = r.add(j as usize);
                *p = math::exp2((*p - m) * core::f32::consts::LOG2_E) * inv;
                j += warp::WARP_SIZE;
            }
        }
    }
}

crate::kernel! {
    /// `o[bh][i][d] = Σ_j p[bh][i][j] · v[bh][j][d]`, rounded to bf16, one thread each of
    /// the `heads·seq·dim` outputs.
    pub unsafe fn attention_v01_naive_pv(
        p: *const f32,
        v: *const u16,
        o: *mut u16,
        heads: u32,
        seq: u32,
        dim: u32,
    ) {
        let idx = thread::index_1d();
        let (n, dd) = (seq as u64, dim as u64);
        if idx >= heads as u64 * n * dd {
            return;
        }
        let (d, i, bh) = (idx % dd, (idx / dd) % n, idx / (dd * n));
        // SAFETY: idx < heads·S·D: the P row (bh, i) and column d of V's head bh are inside
        // their buffers, and the store inside O.
        unsafe {
            let pr = p.add(((bh * n + i) * n) as usize);
            let vc = v.add((bh * n * dd + d) as usize);
            let mut acc = 0.0f32;
            for j in 0..n as usize {
                acc = math::fma(*pr.add(j), bf16::to_f32(*vc.add(j * dim as usize)), acc);
            }
            *o.add(idx as usize) = bf16::from_f32(acc);
        }
    }
}
