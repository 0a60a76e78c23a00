//! fused_elementwise: the CPU reference (f64).

use super::launch::Gelu;
use crate::check::par_map;

/// erf in f64: `2/sqrt(pi) e^(-x^2) sum_k 2^k x^(2k+1) / (1*3*..*(2k+1))`, all terms positive
/// (no cancellation), to ~1e-15; +-1 past |x| = 6 (erfc(6) = 2e-17).
pub fn erf64(x: f64) -> f64 {
    let a = x.abs();
    if a >= 6.0 {
        return x.signum();
    }
    let (mut term, mut sum, mut k) = (a, a, 0.0f64);
    while term > sum * 1e-17 {
        k += 1.0;
        term *= 2.0 * a * a / (2.0 * k + 1.0);
        sum += term;
    }
    let r = 2.0 / std::f64::consts::PI.sqrt() * (-a * a).exp() * sum;
    r.copysign(x)
}

pub fn gelu64(u: f64, g: Gelu) -> f64 {
    match g {
        Gelu::Erf => 0.5 * u * (1.0 + erf64(u / std::f64::consts::SQRT_2)),
        Gelu::Tanh => {
            let k = (2.0 / std::f64::consts::PI).sqrt() * (u + 0.044715 * u * u * u);
            0.5 * u * (1.0 + k.tanh())
        }
    }
}

/// The chain in f64. `round` is applied to every intermediate (identity for the fused
/// variants; the storage rounding for v01, which stores them).
pub fn chain_ref(
    g: Gelu,
    cols: usize,
    x: &[f32],
    scale: &[f32],
    bias: &[f32],
    res: &[f32],
    round: impl Fn(f64) -> f64 + Sync,
) -> Vec<f32> {
    par_map(x.len(), |i| {
        let c = i % cols;
        let t1 = round(x[i] as f64 * scale[c] as f64);
        let t2 = round(t1 + bias[c] as f64);
        let t3 = round(gelu64(t2, g));
        (t3 + res[i] as f64) as f32
    })
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::tensor::Dtype;
    use rooflab_kernels::fused_elementwise::{
        GELU_ERF, GELU_TANH, erf_as, erf_fast, gelu, gelu_bf16,
    };

    #[test]
    fn erf64_matches_known_values() {
        // erf(0.5), erf(1), erf(2), erf(3) from tables.
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
        ] {
            assert!((erf64(x) - want).abs() < 1e-14, "erf({x})");
            assert!((erf64(-x) + want).abs() < 1e-14);
        }
        assert_eq!(erf64(0.0), 0.0);
        assert_eq!(erf64(7.0), 1.0);
    }

    #[test]
    fn device_gelu_formulas_are_accurate() {
        // The kernels' formulas with an exact exp2, evaluated in f32 as on the device: the
        // approximation's 1.5e-7 plus the polynomial's f32 rounding (measured 6.4e-7, worst
        // near 0 where 1 - poly * e^(-x^2) cancels); GELU within the f32 tolerance of the GPU
        // tests (abs 2e-6 over |u| <= 3.5). The reciprocal as the device's `rcp.approx` may
        // give it: exact, or 1 ulp off either way.
        let exp2 = |v: f32| (v as f64).exp2() as f32;
        for (d, rcp) in [0, 1, -1].into_iter().zip(rcps()) {
            let mut worst = (0.0f64, 0.0f64);
            for i in -40_000..=40_000 {
                let u = i as f32 * 2e-4;
                let e = (erf_as(u, exp2, rcp) as f64 - erf64(u as f64)).abs();
                worst.0 = worst.0.max(e);
                for (g, mode) in [(Gelu::Erf, GELU_ERF), (Gelu::Tanh, GELU_TANH)] {
                    let d = (gelu(u, mode, exp2, rcp) as f64 - gelu64(u as f64, g)).abs();
                    worst.1 = worst.1.max(d);
                }
            }
            // Measured: 6.4e-7 with an exact reciprocal, 9.0e-7 with one 1 ulp low.
            assert!(worst.0 < 1e-6, "erf error {} (rcp {d:+} ulp)", worst.0);
            assert!(worst.1 < 1e-6, "gelu error {} (rcp {d:+} ulp)", worst.1);
            // Extremes: no NaN, the right limits (to the reciprocal's ulp).
            for mode in [GELU_ERF, GELU_TANH] {
                assert_eq!(gelu(-100.0, mode, exp2, rcp), 0.0);
                let top = gelu(100.0, mode, exp2, rcp);
                assert!((top - 100.0).abs() <= 2.0 * 100.0 * f32::EPSILON, "{top}");
            }
        }
    }

    /// The reciprocals `rcp.approx` may give (exact, 1 ulp up, 1 ulp down) and the `ex2`s
    /// `ex2.approx` may give (exact, or 2^-22 relative off either way: its documented bound).
    fn rcps() -> [impl Fn(f32) -> f32 + Copy; 3] {
        [0i32, 1, -1].map(|d| {
            move |v: f32| {
                let r = 1.0 / v;
                if r == 0.0 || !r.is_finite() {
                    r
                } else {
                    f32::from_bits((r.to_bits() as i32 + d) as u32)
                }
            }
        })
    }
    fn exp2s() -> [impl Fn(f32) -> f32 + Copy; 3] {
        [0.0f64, 1.0, -1.0]
            .map(|s| move |v: f32| ((v as f64).exp2() * (1.0 + s * 2f64.powi(-22))) as f32)
    }
    /// Every 1e-4 in [-8, 8] (as f32: the first `GRID` values), then every 4096th f32 bit
    /// pattern of either sign up to 1.7e38 (denormals, the tiny, every binade, the huge), and
    /// the clamp's edge |x| = 4 with its neighbours.
    const GRID: usize = 160_001;
    fn sweep() -> Vec<f32> {
        let mut v: Vec<f32> = (-80_000..=80_000).map(|i| i as f32 * 1e-4).collect();
        for b in (0..0x7f00_0000u32).step_by(4096) {
            v.push(f32::from_bits(b));
            v.push(-f32::from_bits(b));
        }
        for b in [0x407f_ffffu32, 0x4080_0000, 0x4080_0001] {
            v.extend([f32::from_bits(b), -f32::from_bits(b)]);
        }
        v
    }

    #[test]
    fn erf_fast_is_within_3_7e_5() {
        let xs = sweep();
        let want: Vec<f64> = xs.iter().map(|&x| erf64(x as f64)).collect();
        let mut worst = (0.0f64, 0.0f32);
        for exp2 in exp2s() {
            for rcp in rcps() {
                for (&x, &w) in xs.iter().zip(&want) {
                    let e = (erf_fast(x, exp2, rcp, f32::mul_add) as f64 - w).abs();
                    assert!(e.is_finite(), "erf_fast({x}) is not finite");
                    if e > worst.0 {
                        worst = (e, x);
                    }
                }
                // +-1 at +-inf (to the reciprocal's ulp: 1 - 2 rcp(1) for -inf).
                assert_eq!(erf_fast(f32::INFINITY, exp2, rcp, f32::mul_add), 1.0);
                let bottom = erf_fast(f32::NEG_INFINITY, exp2, rcp, f32::mul_add);
                assert!((bottom + 1.0).abs() <= 2.0 * f32::EPSILON, "{bottom}");
                assert!(erf_fast(f32::NAN, exp2, rcp, f32::mul_add).is_nan());
            }
        }
        eprintln!("erf_fast: max abs error {:.4e} at x = {}", worst.0, worst.1);
        assert!(
            worst.0 < 3.75e-5,
            "erf_fast error {:e} at {}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn gelu_bf16_stays_within_the_bf16_tolerance() {
        use super::super::launch::Variant;
        use super::super::tests::tolerance;
        let us = sweep();
        let want: Vec<f64> = us.iter().map(|&u| gelu64(u as f64, Gelu::Erf)).collect();
        // The GELU itself, as the kernel computes it (f32, fma), against the f64 exact erf form:
        // the error is 0.5 |u| times erf_fast's.
        let mut worst = (0.0f64, 0.0f32);
        for exp2 in exp2s() {
            for rcp in rcps() {
                for (&u, &w) in us.iter().zip(&want) {
                    let g = gelu_bf16(u, GELU_ERF, exp2, rcp, f32::mul_add) as f64;
                    let e = (g - w).abs();
                    // Relative for |u| > 8 (there the exact GELU is u or -0 to 1e-14).
                    let e = if u.abs() > 8.0 {
                        e / (u.abs() as f64)
                    } else {
                        e
                    };
                    assert!(e.is_finite(), "gelu_bf16({u}) = {g}");
                    if e > worst.0 {
                        worst = (e, u);
                    }
                    assert!(
                        e <= 0.5 * (u.abs() as f64).min(8.0) * 3.75e-5 + 2e-7,
                        "gelu_bf16({u}): {e:e}"
                    );
                }
                // The tanh form is `gelu`'s, bit for bit.
                for &u in &us[..GRID] {
                    assert_eq!(
                        gelu_bf16(u, GELU_TANH, exp2, rcp, f32::mul_add).to_bits(),
                        gelu(u, GELU_TANH, exp2, rcp).to_bits()
                    );
                }
                // Extremes as `gelu`'s erf form gives them: -0 below, u above, NaN in NaN
                // out; -inf gives NaN (-inf * 0) in both.
                for u in [
                    -100.0,
                    100.0,
                    -1e30,
                    1e30,
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                    f32::NAN,
                ] {
                    let (fast, slow) = (
                        gelu_bf16(u, GELU_ERF, exp2, rcp, f32::mul_add),
                        gelu(u, GELU_ERF, exp2, rcp),
                    );
                    assert_eq!(fast.is_nan(), slow.is_nan(), "gelu({u}): {fast} vs {slow}");
                    if slow.is_infinite() {
                        assert_eq!(fast, slow);
                    } else if !slow.is_nan() {
                        assert!(
                            (fast - slow).abs() <= 2.0 * slow.abs() * f32::EPSILON,
                            "{u}"
                        );
                    }
                }
            }
        }
        eprintln!(
            "gelu_bf16: max abs error {:.4e} at u = {} (|u| <= 8)",
            worst.0, worst.1
        );
        // What the GPU tests check: y = gelu(u) + r rounded to bf16 against the f64 chain,
        // with the bf16 tolerance, for residuals across [-1, 1] (bf16 values). The accurate
        // erf (`gelu`, the f32 entries' one) beside it, to show what the cheap one costs.
        let (rel, abs) = tolerance(Variant::V03FusedVectorized, Dtype::Bf16);
        let rs: Vec<f32> = (-128..=128)
            .map(|k| k as f32 / 128.0)
            .chain((0..64).map(|k| Dtype::Bf16.quantize(-1.0 + k as f32 * 0.031_7 + 0.003)))
            .collect();
        let exact = |v: f32| (v as f64).exp2() as f32;
        let mut fraction = [(0.0f64, 0.0f32, 0.0f32); 2];
        for (&u, &w) in us[..GRID].iter().zip(&want) {
            for (slot, g) in [
                gelu_bf16(u, GELU_ERF, exact, |v| 1.0 / v, f32::mul_add),
                gelu(u, GELU_ERF, exact, |v| 1.0 / v),
            ]
            .into_iter()
            .enumerate()
            {
                let (f, r) = bf16_fraction(g, w, &rs, rel, abs);
                if f > fraction[slot].0 {
                    fraction[slot] = (f, u, r);
                }
            }
        }
        eprintln!(
            "bf16 y = gelu(u) + r: worst |error| / tolerance {:.3} (u = {}, r = {}) with erf_fast, \
             {:.3} (u = {}, r = {}) with erf_as",
            fraction[0].0,
            fraction[0].1,
            fraction[0].2,
            fraction[1].0,
            fraction[1].1,
            fraction[1].2
        );
        assert!(
            fraction[0].0 <= 1.0,
            "erf_fast's GELU leaves the bf16 tolerance"
        );
    }

    /// The largest `|error| / allowed` of `bf16(g + r)` against `(w + r) as f32` over the
    /// residuals `rs` (`allowed` as `check::compare_f32` reads the tolerance: abs, or rel of
    /// the larger magnitude), and the residual where it is.
    fn bf16_fraction(g: f32, w: f64, rs: &[f32], rel: f32, abs: f32) -> (f64, f32) {
        let mut worst = (0.0f64, 0.0f32);
        for &r in rs {
            let got = Dtype::Bf16.quantize(g + r);
            let want = (w + r as f64) as f32;
            let ok = approx::relative_eq!(got, want, epsilon = abs, max_relative = rel);
            let allowed = (abs as f64).max(rel as f64 * got.abs().max(want.abs()) as f64);
            let f = (got as f64 - want as f64).abs() / allowed;
            assert!(ok || f > 1.0);
            if f > worst.0 {
                worst = (f, r);
            }
        }
        worst
    }

    #[test]
    fn reference_applies_intermediate_rounding() {
        let (x, s, b, r) = ([1.0f32], [1.0f32], [0.0f32], [0.5f32]);
        let plain = chain_ref(Gelu::Tanh, 1, &x, &s, &b, &r, |u| u)[0] as f64;
        assert!((plain - (gelu64(1.0, Gelu::Tanh) + 0.5)).abs() < 1e-7);
        let rounded = chain_ref(Gelu::Tanh, 1, &x, &s, &b, &r, |u| {
            Dtype::Bf16.quantize(u as f32) as f64
        })[0];
        assert_eq!(
            rounded,
            (Dtype::Bf16.quantize(gelu64(1.0, Gelu::Tanh) as f32) as f64 + 0.5) as f32
        );
    }
}
