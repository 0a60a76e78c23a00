//! bf16_gemm: the CPU reference (f64 accumulation of the same bf16 inputs) with an error
//! bound per element derived from the arithmetic; every element, or a sample plus the
//! edges for big shapes (as gemm's [`crate::ops::gemm::reference::Reference`]).

use half::bf16;

use super::launch::Dims;
use crate::error::{Error, Result};
use crate::ops::gemm::reference::sample_indices;

/// Above this many multiply-adds the check compares a sample instead of every element.
pub const FULL_CHECK_MAX_MACS: usize = 1 << 30;
/// Random elements in a sampled check (plus the first/last rows and columns).
pub const SAMPLE: usize = 4096;

/// bf16 bits -> f64 (exact).
#[inline(always)]
fn f(bits: u16) -> f64 {
    bf16::from_bits(bits).to_f64()
}

/// The error bound of one element whose exact value is `want` and whose products have
/// absolute sum `sum_abs` (Σ_k |x_ik·w_jk|), for a K-long f32 accumulation rounded once to
/// bf16.
///
/// - Products of two bf16 (8-bit significands) are exact in f32. A K-long f32 sum in any
///   order is within `K·u·Σ|x·w|` of the exact value (first order), u = 2^-24 for
///   round-to-nearest; tensor cores may truncate inside an MMA's adder tree (error under
///   one ulp, 2u), so the accumulation term is `E = (K + 4)·2^-23·Σ|x·w|`.
/// - y is rounded once from the f32 accumulator `a` to bf16 (8-bit significand): at most
///   half an ulp, `2^-8·|a|`, and `|a| ≤ |want| + E`.
///
/// So `|got - want| ≤ 2^-8·|want| + (1 + 2^-8)·E`, plus the smallest normal f32 as an
/// absolute floor (flush-to-zero of a tiny result). Typical accumulation errors are
/// ~√K·u·Σ|x·w|, far inside E; the bf16 rounding dominates where the products do not cancel.
/// E stays linear in K here (gemm's FP32 check uses a √K bound): the tensor cores'
/// truncating adders bias the errors, so the independence that √K rests on does not hold.
/// An index bug (a missing or doubled 16-wide k step) is a sum of 16 products, ~1-2 at
/// inputs in [-1, 1), far outside it. NaN never passes ([`compare_bounded`]).
pub fn bound(k: usize, want: f64, sum_abs: f64) -> f64 {
    let e = (k as f64 + 4.0) * 2f64.powi(-23) * sum_abs;
    2f64.powi(-8) * want.abs() + (1.0 + 2f64.powi(-8)) * e + f32::MIN_POSITIVE as f64
}

/// The f64 reference of y[i][j] = Σ_k x[i][k]·w[j][k] and its bound: a dot product of two
/// contiguous rows.
pub fn element_ref(d: Dims, x: &[u16], w: &[u16], i: usize, j: usize) -> (f64, f64) {
    let xr = &x[i * d.k..(i + 1) * d.k];
    let wr = &w[j * d.k..(j + 1) * d.k];
    let (mut s, mut sa) = (0.0f64, 0.0f64);
    for (&a, &b) in xr.iter().zip(wr) {
        let p = f(a) * f(b);
        s += p;
        sa += p.abs();
    }
    (s, bound(d.k, s, sa))
}

/// (want, bound) at the flat indices `idx` (row-major in y), on all cores.
pub fn reference_at(d: Dims, x: &[u16], w: &[u16], idx: &[usize]) -> (Vec<f64>, Vec<f64>) {
    crate::check::par_map(idx.len(), |t| {
        element_ref(d, x, w, idx[t] / d.n, idx[t] % d.n)
    })
    .into_iter()
    .unzip()
}

/// The f64 reference of one product at the elements a check compares: every element while
/// M·N·K <= [`FULL_CHECK_MAX_MACS`], else [`SAMPLE`] random ones plus the first/last rows
/// and columns (where the edge tiles are).
pub struct Reference {
    idx: Vec<usize>,
    want: Vec<f64>,
    bound: Vec<f64>,
}

impl Reference {
    /// `x` (M·K) and `w` (N·K) are the bf16 bits the GPU gets.
    pub fn new(d: Dims, x: &[u16], w: &[u16], seed: u64) -> Reference {
        let idx: Vec<usize> = if d.m == 0 || d.n == 0 {
            Vec::new()
        } else if d.macs() <= FULL_CHECK_MAX_MACS {
            (0..d.m * d.n).collect()
        } else {
            let g = crate::ops::gemm::Dims::new(d.m, d.n, d.k);
            sample_indices(g, SAMPLE, seed)
        };
        let (want, bound) = reference_at(d, x, w, &idx);
        Reference { idx, want, bound }
    }

    /// Whether every element is compared (not a sample).
    pub fn is_full(&self, d: Dims) -> bool {
        self.idx.len() == d.m * d.n
    }

    /// `got` (all of y, bf16 bits) against the reference; `what` names the check.
    pub fn compare(&self, what: &str, d: Dims, got: &[u16]) -> Result<()> {
        if got.len() != d.m * d.n {
            return Err(Error::Mismatch(format!(
                "{what}: {} elements back, {} expected",
                got.len(),
                d.m * d.n
            )));
        }
        let what = if self.is_full(d) {
            what.to_string()
        } else {
            format!("{what} (sampled)")
        };
        compare_bounded(&what, d, got, &self.idx, &self.want, &self.bound).map_err(Error::Mismatch)
    }
}

/// Compare bf16 results with the reference at the flat indices `idx`. NaN or infinity never
/// passes. Returns a message naming the first few bad elements and the count.
pub fn compare_bounded(
    what: &str,
    d: Dims,
    got: &[u16],
    idx: &[usize],
    want: &[f64],
    bound: &[f64],
) -> std::result::Result<(), String> {
    crate::check::compare_at(what, "y", d.n, idx, want, bound, |e| {
        let g = f(got[e]);
        (g, format!("{g:e} (bits {:#06x})", got[e]))
    })
}

/// `n` bf16 bits of values uniform in [lo, hi), rounded to nearest even.
pub fn random_bf16(r: &mut rand::rngs::StdRng, n: usize, lo: f32, hi: f32) -> Vec<u16> {
    crate::check::random_f32(r, n, lo, hi)
        .into_iter()
        .map(|v| bf16::from_f32(v).to_bits())
        .collect()
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::check::rng;
    use crate::tensor::POISON_BF16_BITS;

    fn bits(v: &[f32]) -> Vec<u16> {
        v.iter().map(|&x| bf16::from_f32(x).to_bits()).collect()
    }

    /// The f32-accumulated, bf16-rounded product a correct kernel could return.
    fn f32_linear(d: Dims, x: &[u16], w: &[u16]) -> Vec<u16> {
        let mut y = vec![0u16; d.m * d.n];
        for i in 0..d.m {
            for j in 0..d.n {
                let mut s = 0.0f32;
                for kk in 0..d.k {
                    let (a, b) = (
                        bf16::from_bits(x[i * d.k + kk]),
                        bf16::from_bits(w[j * d.k + kk]),
                    );
                    s = a.to_f32().mul_add(b.to_f32(), s);
                }
                y[i * d.n + j] = bf16::from_f32(s).to_bits();
            }
        }
        y
    }

    #[test]
    fn reference_small_exact() {
        // x = [1 2; 3 4] (2×2), W = [5 6; 7 8; 1 -1] (3×2): y = x·Wᵀ = [17 23 -1; 39 53 -1].
        let d = Dims::new(2, 3, 2);
        let x = bits(&[1.0, 2.0, 3.0, 4.0]);
        let w = bits(&[5.0, 6.0, 7.0, 8.0, 1.0, -1.0]);
        let idx: Vec<usize> = (0..6).collect();
        let (want, bd) = reference_at(d, &x, &w, &idx);
        assert_eq!(want, vec![17.0, 23.0, -1.0, 39.0, 53.0, -1.0]);
        // The bound: 2^-8·|want| + (1 + 2^-8)·(K + 4)·2^-23·Σ|x·w| (+ a tiny floor).
        let e = 6.0 * 2f64.powi(-23) * 17.0;
        assert!((bd[0] - (17.0 / 256.0 + (1.0 + 1.0 / 256.0) * e)).abs() < 1e-30 + 1e-37);
        let r = Reference::new(d, &x, &w, 1);
        assert!(r.is_full(d));
        // 17, 23, -1, 39, 53, -1 are all exact in bf16.
        r.compare("exact", d, &bits(&[17.0, 23.0, -1.0, 39.0, 53.0, -1.0]))
            .unwrap();
        let e = r
            .compare("off", d, &bits(&[17.0, 23.0, -1.0, 39.0, 54.0, -1.0]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 of 6") && e.contains("y[1][1]"), "{e}");
    }

    #[test]
    fn tolerance_accepts_f32_accumulation_and_rejects_wrong() {
        // Inputs in [-1, 1) as the GPU tests draw them; K = 4096 with a ragged tail.
        let d = Dims::new(3, 7, 4096);
        let mut r = rng(11);
        let x = random_bf16(&mut r, d.m * d.k, -1.0, 1.0);
        let w = random_bf16(&mut r, d.n * d.k, -1.0, 1.0);
        let refr = Reference::new(d, &x, &w, 1);
        let mut got = f32_linear(d, &x, &w);
        refr.compare("f32", d, &got).unwrap();
        // NaN (the poison) never passes, nor infinity.
        got[5] = POISON_BF16_BITS;
        assert!(refr.compare("nan", d, &got).is_err());
        got[5] = bf16::INFINITY.to_bits();
        assert!(refr.compare("inf", d, &got).is_err());
        // A dropped 16-wide k step (what a tile-index bug does) is outside the bound.
        let mut dropped = f32_linear(d, &x, &w);
        for i in 0..d.m {
            for j in 0..d.n {
                let mut s = 0.0f32;
                for kk in (0..d.k).filter(|kk| !(2048..2064).contains(kk)) {
                    s = bf16::from_bits(x[i * d.k + kk])
                        .to_f32()
                        .mul_add(bf16::from_bits(w[j * d.k + kk]).to_f32(), s);
                }
                dropped[i * d.n + j] = bf16::from_f32(s).to_bits();
            }
        }
        let e = refr
            .compare("dropped", d, &dropped)
            .unwrap_err()
            .to_string();
        assert!(e.contains("of 21"), "{e}");
    }

    #[test]
    fn tolerance_rejects_one_percent_at_k_4096() {
        // Products that do not cancel (inputs in [0, 1)): |want| = Σ|x·w| ≈ K/4, the bound
        // is ~2^-8 + 4100·2^-23 ≈ 0.44% of it, so a 1% error fails everywhere while the
        // f32-accumulated, bf16-rounded result passes.
        let d = Dims::new(2, 5, 4096);
        let mut r = rng(12);
        let x = random_bf16(&mut r, d.m * d.k, 0.0, 1.0);
        let w = random_bf16(&mut r, d.n * d.k, 0.0, 1.0);
        let refr = Reference::new(d, &x, &w, 1);
        let good = f32_linear(d, &x, &w);
        refr.compare("f32", d, &good).unwrap();
        let (want, _) = reference_at(d, &x, &w, &(0..10).collect::<Vec<_>>());
        for sign in [1.0, -1.0] {
            let off: Vec<u16> = want
                .iter()
                .map(|&v| bf16::from_f64(v * (1.0 + sign * 0.01)).to_bits())
                .collect();
            let e = refr.compare("1%", d, &off).unwrap_err().to_string();
            assert!(e.contains("10 of 10"), "{e}");
        }
    }

    #[test]
    fn sampled_reference_matches_full_at_its_indices() {
        let d = Dims::new(5, 9, 16);
        let mut r = rng(3);
        let x = random_bf16(&mut r, d.m * d.k, -1.0, 1.0);
        let w = random_bf16(&mut r, d.n * d.k, -1.0, 1.0);
        let full = Reference::new(d, &x, &w, 1);
        let g = crate::ops::gemm::Dims::new(d.m, d.n, d.k);
        let idx = sample_indices(g, 7, 2);
        let (want, bd) = reference_at(d, &x, &w, &idx);
        for (t, &e) in idx.iter().enumerate() {
            assert_eq!(want[t], full.want[e]);
            assert_eq!(bd[t], full.bound[e]);
        }
        // Zero rows or columns: nothing to compare, nothing wrong.
        let z = Dims::new(0, 4, 3);
        Reference::new(z, &[], &w[..12], 1)
            .compare("empty", z, &[])
            .unwrap();
    }
}
