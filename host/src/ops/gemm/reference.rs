//! gemm: the CPU reference. f64 accumulation, with an error bound per element derived from
//! the arithmetic; every element, or a sample plus the edges for big shapes.

use rand::Rng;

use super::launch::Dims;
use crate::check::rng;
use crate::error::{Error, Result};

/// The f64 reference of one element and its error bound.
///
/// `want = alpha·Σ a_ik·b_kj + beta·c_ij` in f64. The checks use random inputs, and for those
/// the accumulation error of a K-long f32 dot product in any order (FMA or not, IEEE
/// round-to-nearest: the FP32 SIMT steps and cuBLAS's SGEMM) is bounded with overwhelming
/// probability by `λ·√K·u·Σ|a_ik·b_kj|` (Higham and Mary's probabilistic analysis: the
/// rounding errors are independent and centred; λ = [`LAMBDA`] = 8 puts the failure
/// probability near e^-32 per element), u = 2^-24; the epilogue adds a few roundings of
/// `alpha·acc` and `beta·c`. The bound is
/// `1e-5·|want| + λ·√(K + 4)·u·|alpha|·Σ|a·b| + 4·u·(|alpha|·Σ|a·b| + |beta·c|)`. The
/// worst case grows like K·u·Σ|a·b| instead ([`worst_case_accumulation`]): at K = 8192 it is
/// about 1 for inputs in [-1, 1), more than a typical product, so a dropped k-term would
/// pass; the √K bound is 0.09 there, and a kernel that drops a k index fails at most
/// elements. Typical errors are ~u·Σ|a·b| (random-sign partial sums stay small).
pub const LAMBDA: f64 = 8.0;

/// The first-order worst case of a K-long f32 accumulation, `(K + 4)·u·Σ|a·b|`, valid for
/// any inputs (adversarial ones included); the checks use the √K bound of [`element_ref`].
pub fn worst_case_accumulation(k: usize, sum_abs: f64) -> f64 {
    (k as f64 + 4.0) * (f32::EPSILON as f64 / 2.0) * sum_abs
}

#[allow(clippy::too_many_arguments)]
pub fn element_ref(
    d: Dims,
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c_in: Option<&[f32]>,
    i: usize,
    j: usize,
) -> (f64, f64) {
    let (mut s, mut sa) = (0.0f64, 0.0f64);
    for kk in 0..d.k {
        let p = a[i * d.k + kk] as f64 * b[kk * d.n + j] as f64;
        s += p;
        sa += p.abs();
    }
    finish(d, alpha, beta, c_in.map(|c| c[i * d.n + j]), s, sa)
}

fn finish(d: Dims, alpha: f32, beta: f32, c: Option<f32>, s: f64, sa: f64) -> (f64, f64) {
    let bc = match c {
        Some(c) if beta != 0.0 => beta as f64 * c as f64,
        _ => 0.0,
    };
    let want = alpha as f64 * s + bc;
    let u = f32::EPSILON as f64 / 2.0;
    let products = alpha.abs() as f64 * sa;
    let bound = 1e-5 * want.abs()
        + LAMBDA * (d.k as f64 + 4.0).sqrt() * u * products
        + 4.0 * u * (products + bc.abs());
    (want, bound)
}

/// The whole reference: (want, bound) for every element, row-major. Rows are split over
/// the CPU's threads (f64 accumulation, i-k-j order so the inner loop streams B's rows).
pub fn gemm_ref(
    d: Dims,
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c_in: Option<&[f32]>,
) -> (Vec<f64>, Vec<f64>) {
    let mut want = vec![0.0f64; d.m * d.n];
    let mut bound = vec![0.0f64; d.m * d.n];
    if d.n == 0 {
        return (want, bound);
    }
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1);
    let rows_per = d.m.div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        for (chunk, (w, bd)) in want
            .chunks_mut(rows_per * d.n)
            .zip(bound.chunks_mut(rows_per * d.n))
            .enumerate()
        {
            sc.spawn(move || {
                let mut s = vec![0.0f64; d.n];
                let mut sa = vec![0.0f64; d.n];
                for (r, (wr, br)) in w.chunks_mut(d.n).zip(bd.chunks_mut(d.n)).enumerate() {
                    let i = chunk * rows_per + r;
                    s.fill(0.0);
                    sa.fill(0.0);
                    for kk in 0..d.k {
                        let x = a[i * d.k + kk] as f64;
                        let brow = &b[kk * d.n..(kk + 1) * d.n];
                        for j in 0..d.n {
                            let p = x * brow[j] as f64;
                            s[j] += p;
                            sa[j] += p.abs();
                        }
                    }
                    for j in 0..d.n {
                        (wr[j], br[j]) =
                            finish(d, alpha, beta, c_in.map(|c| c[i * d.n + j]), s[j], sa[j]);
                    }
                }
            });
        }
    });
    (want, bound)
}

/// The f64 reference of one product at the elements a check compares: every element while
/// M·N·K <= FULL_CHECK_MAX_MACS, else a sample plus the first/last rows and columns.
pub struct Reference {
    idx: Vec<usize>,
    want: Vec<f64>,
    bound: Vec<f64>,
}

impl Reference {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        d: Dims,
        alpha: f32,
        a: &[f32],
        b: &[f32],
        beta: f32,
        c_in: Option<&[f32]>,
        seed: u64,
    ) -> Reference {
        let macs = d.m.saturating_mul(d.n).saturating_mul(d.k);
        let (idx, (want, bound)) = if macs <= FULL_CHECK_MAX_MACS {
            (
                (0..d.m * d.n).collect(),
                gemm_ref(d, alpha, a, b, beta, c_in),
            )
        } else {
            let idx = sample_indices(d, SAMPLE, seed);
            let r = sampled_ref(d, alpha, a, b, beta, c_in, &idx);
            (idx, r)
        };
        Reference { idx, want, bound }
    }

    /// `got` (all of C) against the reference; `what` names the check in the message.
    pub fn compare(&self, what: &str, d: Dims, got: &[f32]) -> Result<()> {
        let what = if self.idx.len() < d.m * d.n {
            format!("{what} (sampled)")
        } else {
            what.to_string()
        };
        compare_bounded(&what, d, got, &self.idx, &self.want, &self.bound).map_err(Error::Mismatch)
    }
}

/// (want, bound) at the flat indices `idx` only, on all cores (each element is a K-long
/// dot product down a column of B: seconds for 8192² when done one by one).
#[allow(clippy::too_many_arguments)]
pub fn sampled_ref(
    d: Dims,
    alpha: f32,
    a: &[f32],
    b: &[f32],
    beta: f32,
    c_in: Option<&[f32]>,
    idx: &[usize],
) -> (Vec<f64>, Vec<f64>) {
    crate::check::par_map(idx.len(), |t| {
        element_ref(d, alpha, a, b, beta, c_in, idx[t] / d.n, idx[t] % d.n)
    })
    .into_iter()
    .unzip()
}

/// Compare GPU results with reference values at the given flat indices. NaN or infinity
/// never passes. Returns a message naming the first few bad elements and the count.
pub fn compare_bounded(
    what: &str,
    d: Dims,
    got: &[f32],
    idx: &[usize],
    want: &[f64],
    bound: &[f64],
) -> std::result::Result<(), String> {
    crate::check::compare_at(what, "C", d.n, idx, want, bound, |e| {
        (got[e] as f64, format!("{:e}", got[e]))
    })
}

/// Elements checked when the full reference would be too slow: `n` random ones plus the
/// whole first and last row and column (where the edge tiles are).
pub fn sample_indices(d: Dims, n: usize, seed: u64) -> Vec<usize> {
    let mut r = rng(seed ^ 0x5eed);
    let mut v: Vec<usize> = (0..n)
        .map(|_| r.random_range(0..d.m) * d.n + r.random_range(0..d.n))
        .collect();
    for j in 0..d.n {
        v.push(j);
        v.push((d.m - 1) * d.n + j);
    }
    for i in 0..d.m {
        v.push(i * d.n);
        v.push(i * d.n + d.n - 1);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Above this many multiply-adds the check compares a sample instead of every element.
pub const FULL_CHECK_MAX_MACS: usize = 1 << 30;
/// Random elements in a sampled check.
pub const SAMPLE: usize = 4096;

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::check::random_f32;

    #[test]
    fn reference_small_exact() {
        // [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]; alpha 2, beta 0.5 on C = 1.
        let d = Dims::new(2, 2, 2);
        let (a, b, c) = ([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [1.0; 4]);
        let (w, bound) = gemm_ref(d, 2.0, &a, &b, 0.5, Some(&c));
        assert_eq!(w, vec![38.5, 44.5, 86.5, 100.5]);
        assert!(bound.iter().all(|&x| x > 0.0 && x < 1e-2));
        for i in 0..2 {
            for j in 0..2 {
                let (e, _) = element_ref(d, 2.0, &a, &b, 0.5, Some(&c), i, j);
                assert_eq!(e, w[i * 2 + j]);
            }
        }
        // beta == 0 ignores C even if it is NaN.
        let (w, _) = gemm_ref(d, 1.0, &a, &b, 0.0, Some(&[f32::NAN; 4]));
        assert_eq!(w, vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn bound_accepts_f32_and_rejects_wrong() {
        // An f32 sequential dot product is within the bound; an off-by-one-term one is not.
        let d = Dims::new(3, 5, 4097);
        let mut r = rng(3);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let (want, bound) = gemm_ref(d, 1.0, &a, &b, 0.0, None);
        let mut got = vec![0.0f32; d.m * d.n];
        for i in 0..d.m {
            for j in 0..d.n {
                let mut s = 0.0f32;
                for kk in 0..d.k {
                    s = a[i * d.k + kk].mul_add(b[kk * d.n + j], s);
                }
                got[i * d.n + j] = s;
            }
        }
        let idx: Vec<usize> = (0..d.m * d.n).collect();
        compare_bounded("f32", d, &got, &idx, &want, &bound).unwrap();
        // One product too many (|a·b| up to 1) is outside: the bound here is ~0.03.
        got[7] += 1.0;
        let e = compare_bounded("x", d, &got, &idx, &want, &bound).unwrap_err();
        assert!(e.contains("1 of 15") && e.contains("C[1][2]"), "{e}");
        got[7] = f32::NAN;
        assert!(compare_bounded("x", d, &got, &idx, &want, &bound).is_err());
    }

    /// The planted bug the linear-in-K bound let through: a kernel that drops one k index
    /// (every product a_ik·b_kj of it, for all i, j) at K = 8192. The old bound (K·u·Σ|a·b|,
    /// ~1 here) passed every element; the √K bound refuses most of them. An f32 FMA chain
    /// (the order of a naive kernel) still passes.
    #[test]
    fn a_dropped_k_index_fails_at_k_8192() {
        let d = Dims::new(4, 6, 8192);
        let mut r = rng(17);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let (want, bound) = gemm_ref(d, 1.0, &a, &b, 0.0, None);
        let idx: Vec<usize> = (0..d.m * d.n).collect();
        let dropped = 1234;
        let mut planted = vec![0.0f32; d.m * d.n];
        let mut fma = vec![0.0f32; d.m * d.n];
        let mut old_passes = 0;
        for i in 0..d.m {
            for j in 0..d.n {
                let (mut s, mut t, mut sa) = (0.0f32, 0.0f32, 0.0f64);
                for kk in 0..d.k {
                    let (x, y) = (a[i * d.k + kk], b[kk * d.n + j]);
                    t = x.mul_add(y, t);
                    sa += (x as f64 * y as f64).abs();
                    if kk != dropped {
                        s = x.mul_add(y, s);
                    }
                }
                let e = i * d.n + j;
                planted[e] = s;
                fma[e] = t;
                let old = 1e-5 * want[e].abs() + worst_case_accumulation(d.k, sa);
                old_passes += ((s as f64 - want[e]).abs() <= old) as usize;
            }
        }
        assert_eq!(old_passes, d.m * d.n, "the old bound passed the planted bug everywhere");
        compare_bounded("fma", d, &fma, &idx, &want, &bound).unwrap();
        let e = compare_bounded("planted", d, &planted, &idx, &want, &bound).unwrap_err();
        let failing: usize = e.split(" of ").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
        assert!(failing * 2 > d.m * d.n, "{e}");
    }

    #[test]
    fn threaded_reference_matches_elementwise() {
        let d = Dims::new(37, 19, 23);
        let mut r = rng(5);
        let a = random_f32(&mut r, d.m * d.k, -1.0, 1.0);
        let b = random_f32(&mut r, d.k * d.n, -1.0, 1.0);
        let c = random_f32(&mut r, d.m * d.n, -1.0, 1.0);
        let (w, bd) = gemm_ref(d, 0.7, &a, &b, -0.3, Some(&c));
        for i in 0..d.m {
            for j in 0..d.n {
                let (e, eb) = element_ref(d, 0.7, &a, &b, -0.3, Some(&c), i, j);
                assert!((e - w[i * d.n + j]).abs() < 1e-12);
                assert!((eb - bd[i * d.n + j]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn samples_include_edges() {
        let d = Dims::new(10, 7, 3);
        let s = sample_indices(d, 5, 1);
        assert!(s.contains(&0) && s.contains(&69) && s.contains(&6) && s.contains(&63));
        assert!(s.iter().all(|&e| e < 70));
    }
}
