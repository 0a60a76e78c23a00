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
    use rooflab_kernels::fused_elementwise::{GELU_ERF, GELU_TANH, erf_as, gelu};

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
        let ulp = |d: i32| {
            move |v: f32| {
                let r = 1.0 / v;
                if r == 0.0 || !r.is_finite() {
                    r
                } else {
                    f32::from_bits((r.to_bits() as i32 + d) as u32)
                }
            }
        };
        for d in [0, 1, -1] {
            let rcp = ulp(d);
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
