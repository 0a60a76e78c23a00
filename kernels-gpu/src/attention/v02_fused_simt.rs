//! attention/v02_fused_simt — one kernel, the scores never leave the chip.
//!
//! Changed from v01: a block takes `ROWS` query rows of one head and walks the keys in tiles
//! of `KEYS`, K and V staged in shared memory (as f32, K rows padded by one word so that 32
//! lanes reading 32 different rows hit 32 banks). For each tile a warp (one query row) scores
//! 32 keys at once — lane `l` computes the whole dot product `q·k_l` — and updates its running
//! max `m`, its running sum `l` and its output with the online softmax: `corr = 2^(m - m')`
//! rescales what was accumulated, `p_l = 2^(s_l - m')` weighs the new keys (the scores are
//! pre-multiplied by `log2 e` so that `ex2` is the exponential). The output row stays in
//! registers, lane `l` holding dims `l, l + 32, ..`; each key's `p` is broadcast from its
//! lane (`shfl.idx`). Causal blocks stop at their last row's diagonal. No tensor cores.
//!
//! Thread mapping: block (query tile x, head y) of `ROWS` warps; warp `w` owns query row
//! `x·ROWS + w`; lane `l` scores key `j0 + l` of the tile and accumulates dims `l + 32·t`.
//!
//! Memory traffic: Q and O once; K and V once per block of `ROWS` queries, mostly from L2
//! (S/ROWS passes over the head's K and V); no scores in DRAM: memory O(S), not O(S²).
//!
//! Expected bound: FP32 issue (2·D FMAs per score and key on the CUDA cores, plus the
//! shuffles and shared-memory reads that feed them).

/// Query rows (one warp each) per block.
pub const ROWS: u32 = 8;
/// Keys per tile: one per lane.
pub const KEYS: u32 = 32;
/// Threads per block.
pub const THREADS: u32 = ROWS * 32;

/// Dynamic shared memory of the block for head dim `d`, in f32: the scaled Q rows
/// (ROWS × d), the K tile (KEYS × (d + 1), padded) and the V tile (KEYS × d).
pub const fn shared_f32(d: u32) -> u32 {
    ROWS * d + KEYS * (d + 1) + KEYS * d
}

#[cfg(target_arch = "nvptx64")]
use super::OnlineRow;
#[cfg(target_arch = "nvptx64")]
use crate::gpu::{bf16, shared, sync_threads, thread, warp};

/// The kernel body for head dim `D` (a multiple of 32).
///
/// # Safety
/// Q, K, V, O are `gridDim.y` heads of `seq × D` bf16; the launch has `THREADS` threads,
/// `gridDim.x = ceil(seq / ROWS)` and `4 · shared_f32(D)` bytes of dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn run<const D: usize, const PER: usize>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    o: *mut u16,
    seq: u32,
    scale: f32,
    causal: u32,
) {
    // One key per lane: `OnlineRow::tile` takes tiles of 32.
    const { assert!(D == 32 * PER && KEYS == 32) };
    let t = thread::thread_idx_x();
    let (w, lane) = (t / warp::WARP_SIZE, warp::lane_id());
    let q0 = thread::block_idx_x() * ROWS;
    let i = q0 + w;
    let n = seq as u64;
    let head = thread::block_idx_y() as u64 * n * D as u64;
    let smem = shared::dynamic_shared_mem::<f32>();
    let dd = D as u32;
    // Scores in the log2 domain: 2^(s·log2 e) = e^s.
    let sl = scale * core::f32::consts::LOG2_E;
    // SAFETY: (whole body) global reads are of rows < seq of this head (checked), shared
    // accesses stay inside the three regions of `shared_f32(D)` f32; the barriers are
    // reached by every thread of the block (the `i < seq` tests only skip arithmetic).
    unsafe {
        let (qs, ks) = (smem, smem.add((ROWS * dd) as usize));
        let vs = ks.add((KEYS * (dd + 1)) as usize);
        let mut e = t;
        while e < ROWS * dd {
            let (r, d) = (e / dd, e % dd);
            let row = q0 + r;
            *qs.add(e as usize) = if row < seq {
                bf16::to_f32(*q.add((head + row as u64 * D as u64) as usize + d as usize)) * sl
            } else {
                0.0
            };
            e += THREADS;
        }
        let mut row = OnlineRow::<PER>::new();
        // Keys a row of this block can see: causal blocks stop after their last row.
        let end = if causal != 0 { seq.min(q0 + ROWS) } else { seq };
        let mut j0 = 0;
        while j0 < end {
            // The last tile's readers are done (and, the first time, Q is in place).
            sync_threads();
            let mut e = t;
            while e < KEYS * dd {
                let (r, d) = (e / dd, e % dd);
                let j = j0 + r;
                let (kv, vv) = if j < seq {
                    let at = (head + j as u64 * D as u64) as usize + d as usize;
                    (bf16::to_f32(*k.add(at)), bf16::to_f32(*v.add(at)))
                } else {
                    (0.0, 0.0)
                };
                *ks.add((r * (dd + 1) + d) as usize) = kv;
                *vs.add(e as usize) = vv;
                e += THREADS;
            }
            sync_threads();
            if i < seq {
                let j = j0 + lane;
                let valid = j < seq && (causal == 0 || j <= i);
                row.tile::<D>(qs.add(w as usize * D), ks, vs, valid);
            }
            j0 += KEYS;
        }
        if i < seq {
            // l >= 1: the row's max key contributes 2^0.
            let inv = 1.0 / row.l;
            let out = o.add((head + i as u64 * D as u64) as usize + lane as usize);
            for (x, a) in row.acc.iter().enumerate() {
                *out.add(32 * x) = bf16::from_f32(*a * inv);
            }
        }
    }
}

macro_rules! entry {
    ($(#[$doc:meta])* $name:ident, $d:literal, $per:literal) => {
        crate::kernel! {
            $(#[$doc])*
            pub unsafe fn $name(
                q: *const u16,
                k: *const u16,
                v: *const u16,
                o: *mut u16,
                seq: u32,
                scale: f32,
                causal: u32,
            ) {
                // SAFETY: forwarded; the host launches it as `run` requires, with this D.
                unsafe { run::<$d, $per>(q, k, v, o, seq, scale, causal) }
            }
        }
    };
}

entry! {
    /// v02 at head dim 64.
    attention_v02_fused_simt_d64, 64, 2
}
entry! {
    /// v02 at head dim 128.
    attention_v02_fused_simt_d128, 128, 4
}
