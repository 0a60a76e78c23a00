//! transpose: the CPU reference.

/// `inᵀ` for a row-major `m × n` matrix.
pub fn transpose_ref(inp: &[f32], m: usize, n: usize) -> Vec<f32> {
    assert_eq!(inp.len(), m * n);
    let mut out = vec![0.0; m * n];
    // Blocked so the reference of a 8192² matrix takes a fraction of a second.
    const B: usize = 64;
    for i0 in (0..m).step_by(B) {
        for j0 in (0..n).step_by(B) {
            for i in i0..(i0 + B).min(m) {
                for j in j0..(j0 + B).min(n) {
                    out[j * m + i] = inp[i * n + j];
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn reference_small() {
        // [[1 2 3] [4 5 6]] -> [[1 4] [2 5] [3 6]]
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(transpose_ref(&x, 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        // Twice is the identity, across block edges of the blocked reference.
        let x: Vec<f32> = (0..130 * 67).map(|i| i as f32).collect();
        assert_eq!(transpose_ref(&transpose_ref(&x, 130, 67), 67, 130), x);
    }
}
