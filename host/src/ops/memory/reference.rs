//! memory: CPU references.

use rooflab_kernels::memory::PARTICLE_F32S;

/// `y = a*x + y`, in f64 then rounded: the GPU's fused multiply-add rounds once too.
pub fn saxpy_ref(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter()
        .zip(y)
        .map(|(&x, &y)| (a as f64 * x as f64 + y as f64) as f32)
        .collect()
}

/// The particle update on AoS data.
pub fn particles_ref(aos: &[f32], dt: f32) -> Vec<f32> {
    let mut out = aos.to_vec();
    for p in out.chunks_exact_mut(PARTICLE_F32S) {
        for k in 0..3 {
            p[k] = (p[3 + k] as f64 * dt as f64 + p[k] as f64) as f32;
        }
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn references() {
        assert_eq!(saxpy_ref(2.0, &[1.0, -1.0], &[0.5, 0.5]), vec![2.5, -1.5]);
        let p = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 5.0, 6.0];
        assert_eq!(
            particles_ref(&p, 0.5),
            vec![6.0, 12.0, 18.0, 10.0, 20.0, 30.0, 5.0, 6.0]
        );
    }
}
