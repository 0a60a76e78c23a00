//! norm: the CPU reference (f64, two-pass variance).

use super::launch::Kind;
use crate::check::par_map;

/// A row's `(mean, rstd)` in f64, two-pass: the mean (0 for RMSNorm), then
/// `1 / sqrt(mean of squared deviations + eps)`.
pub fn row_stats(k: Kind, row: &[f32], eps: f32) -> (f64, f64) {
    let n = row.len() as f64;
    let mean = if k == Kind::LayerNorm {
        row.iter().map(|&v| v as f64).sum::<f64>() / n
    } else {
        0.0
    };
    let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, 1.0 / (var + eps as f64).sqrt())
}

/// f64 reference, two-pass variance.
pub fn norm_ref(
    k: Kind,
    rows: usize,
    cols: usize,
    x: &[f32],
    w: &[f32],
    b: &[f32],
    eps: f32,
) -> Vec<f32> {
    par_map(rows, |r| {
        let row = &x[r * cols..(r + 1) * cols];
        let (mean, rstd) = row_stats(k, row, eps);
        row.iter()
            .enumerate()
            .map(|(j, &v)| {
                let mut o = (v as f64 - mean) * rstd * w[j] as f64;
                if k == Kind::LayerNorm {
                    o += b[j] as f64;
                }
                o as f32
            })
            .collect::<Vec<_>>()
    })
    .concat()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn reference_is_exact_on_a_hand_case() {
        // Row [1, 3]: mean 2, var 1, rstd = 1/sqrt(1 + 0) -> [-1, 1] * w + b.
        let y = norm_ref(
            Kind::LayerNorm,
            1,
            2,
            &[1.0, 3.0],
            &[2.0, 1.0],
            &[0.5, 0.0],
            0.0,
        );
        assert_eq!(y, vec![-1.5, 1.0]);
        // RMS of [3, 4] over 2: sqrt(12.5).
        let y = norm_ref(
            Kind::RmsNorm,
            1,
            2,
            &[3.0, 4.0],
            &[1.0, 1.0],
            &[0.0, 0.0],
            0.0,
        );
        assert!((y[0] - 3.0 / 12.5f32.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn large_mean_reference_is_stable() {
        // 1000 + small deviations: the f64 two-pass reference keeps unit variance output.
        let x: Vec<f32> = (0..1000)
            .map(|i| 1000.0 + if i % 2 == 0 { 0.5 } else { -0.5 })
            .collect();
        let y = norm_ref(
            Kind::LayerNorm,
            1,
            1000,
            &x,
            &[1.0; 1000],
            &[0.0; 1000],
            0.0,
        );
        assert!(y.iter().all(|v| (v.abs() - 1.0).abs() < 1e-5));
    }
}
