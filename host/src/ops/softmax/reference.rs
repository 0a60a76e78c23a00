//! softmax: the CPU reference (f64).

use crate::check::par_map;

/// Softmax of each row in f64 with the same contract (all -inf row -> zeros).
pub fn softmax_ref(rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    let per_row = par_map(rows, |r| {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let m = if m == f64::NEG_INFINITY { 0.0 } else { m };
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        row.iter()
            .map(|&v| ((v as f64 - m).exp() * inv) as f32)
            .collect::<Vec<_>>()
    });
    per_row.concat()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn reference_contract() {
        let y = softmax_ref(
            2,
            3,
            &[
                0.0,
                0.0,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
            ],
        );
        assert_eq!(y, vec![0.5, 0.5, 0.0, 0.0, 0.0, 0.0]);
        let y = softmax_ref(1, 2, &[1e4, -1e4]);
        assert_eq!(y, vec![1.0, 0.0]);
    }
}
