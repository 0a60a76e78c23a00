//! Inputs, poisoning and comparison for correctness checks.
//!
//! Inputs are fresh random numbers (never zeros: they hide unwritten outputs), drawn from a
//! seed that every failure message prints, so a case can be replayed with `ROOFLAB_SEED`.
//! Outputs are poisoned with NaN before a launch ([`crate::Gpu::poison`]); a NaN never passes.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The seed for this process: `ROOFLAB_SEED` if set, else fresh entropy.
pub fn seed() -> u64 {
    match std::env::var("ROOFLAB_SEED") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("ROOFLAB_SEED={s:?} is not a u64")),
        Err(_) => rand::random(),
    }
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `n` values uniform in [lo, hi). Large arrays are drawn in parallel, chunk `c` from its
/// own generator seeded from `rng` and `c`, so the result depends only on `rng`'s state.
pub fn random_f32(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    const CHUNK: usize = 1 << 20;
    if n <= CHUNK {
        return (0..n).map(|_| rng.random_range(lo..hi)).collect();
    }
    let base: u64 = rng.random();
    let mut out = vec![0.0f32; n];
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(32);
    let chunks: Vec<(usize, &mut [f32])> = out.chunks_mut(CHUNK).enumerate().collect();
    let per = chunks.len().div_ceil(threads);
    let mut groups: Vec<Vec<(usize, &mut [f32])>> = Vec::new();
    let mut it = chunks.into_iter().peekable();
    while it.peek().is_some() {
        groups.push(it.by_ref().take(per).collect());
    }
    std::thread::scope(|s| {
        for group in groups {
            s.spawn(move || {
                for (c, part) in group {
                    let mut r = rand::rngs::SmallRng::seed_from_u64(
                        base ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    );
                    for v in part.iter_mut() {
                        *v = r.random_range(lo..hi);
                    }
                }
            });
        }
    });
    out
}

/// `f(0..n)` computed on all cores (CPU references of large shapes).
pub fn par_map<T: Send + Default + Clone>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(32);
    let mut out = vec![T::default(); n];
    let chunk = n.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (k, o) in part.iter_mut().enumerate() {
                    *o = f(c * chunk + k);
                }
            });
        }
    });
    out
}

/// Compare `got` with `want` element by element: `|got - want| <= abs + rel * |want|`,
/// with `approx`'s relative comparison. NaN or infinity where the reference is finite fails.
/// Returns a message naming the first few bad elements and the count.
pub fn compare_f32(
    what: &str,
    got: &[f32],
    want: &[f32],
    rel: f32,
    abs: f32,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements back, {} expected",
            got.len(),
            want.len()
        ));
    }
    // Large arrays are scanned on all cores, in chunks whose results merge in order.
    const CHUNK: usize = 1 << 22;
    let parts = par_map(got.len().div_ceil(CHUNK), |c| {
        let lo = c * CHUNK;
        let hi = (lo + CHUNK).min(got.len());
        scan(lo, &got[lo..hi], &want[lo..hi], rel, abs)
    });
    let count: usize = parts.iter().map(|p| p.0).sum();
    let bad: Vec<String> = parts.into_iter().flat_map(|p| p.1).take(5).collect();
    if count == 0 {
        Ok(())
    } else {
        Err(format!(
            "{what}: {count} of {} elements wrong (rel tol {rel:e}, abs {abs:e}); first: {}",
            got.len(),
            bad.join(", ")
        ))
    }
}

/// Elements of `got` against `want` (starting at flat index `base`): the count of bad ones
/// and the first five, described.
fn scan(base: usize, got: &[f32], want: &[f32], rel: f32, abs: f32) -> (usize, Vec<String>) {
    let mut bad = Vec::new();
    let mut count = 0usize;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_finite() {
            g.is_finite() && approx::relative_eq!(g, w, epsilon = abs, max_relative = rel)
        } else {
            // A non-finite reference (documented cases only) must be matched exactly in kind.
            (w.is_nan() && g.is_nan()) || g == w
        };
        if !ok {
            count += 1;
            if bad.len() < 5 {
                bad.push(format!("[{}] got {g:e} want {w:e}", base + i));
            }
        }
    }
    (count, bad)
}

/// Compare the values at the flat indices `idx` of a matrix `name` with `cols` columns
/// against `want[t] ± bound[t]`; `got(e)` gives element `e` as f64 and as the text a failure
/// shows. NaN or infinity never passes. Returns a message naming the first few bad elements
/// and the count (the GEMM families' checks, full or sampled).
pub fn compare_at(
    what: &str,
    name: &str,
    cols: usize,
    idx: &[usize],
    want: &[f64],
    bound: &[f64],
    got: impl Fn(usize) -> (f64, String),
) -> std::result::Result<(), String> {
    let mut bad = Vec::new();
    let mut count = 0usize;
    for (t, &e) in idx.iter().enumerate() {
        let (g, shown) = got(e);
        if !(g.is_finite() && (g - want[t]).abs() <= bound[t]) {
            count += 1;
            if bad.len() < 5 {
                bad.push(format!(
                    "{name}[{}][{}] got {shown} want {:e} (bound {:.2e})",
                    e / cols,
                    e % cols,
                    want[t],
                    bound[t]
                ));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(format!(
            "{what}: {count} of {} checked elements wrong; first: {}",
            idx.len(),
            bad.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_never_passes() {
        assert!(compare_f32("x", &[f32::NAN], &[1.0], 1.0, 1.0).is_err());
        assert!(
            compare_f32(
                "x",
                &[f32::from_bits(crate::gpu::POISON_F32_BITS)],
                &[0.5],
                1e-5,
                0.0
            )
            .is_err()
        );
    }

    #[test]
    fn large_comparisons_count_every_chunk() {
        let n = (9 << 20) + 3;
        let want = vec![1.0f32; n];
        let mut got = want.clone();
        for &i in &[5, (4 << 20) + 1, n - 1] {
            got[i] = 2.0;
        }
        let e = compare_f32("x", &got, &want, 1e-5, 0.0).unwrap_err();
        assert!(
            e.contains("3 of") && e.contains("[5]") && e.contains(&format!("[{}]", n - 1)),
            "{e}"
        );
        assert!(compare_f32("x", &want, &want, 1e-5, 0.0).is_ok());
    }

    #[test]
    fn tolerance_and_lengths() {
        assert!(compare_f32("x", &[1.0, 2.0], &[1.0, 2.0 + 1e-6], 1e-5, 0.0).is_ok());
        let e = compare_f32("x", &[1.0, 2.1], &[1.0, 2.0], 1e-5, 0.0).unwrap_err();
        assert!(e.contains("1 of 2") && e.contains("[1]"), "{e}");
        assert!(compare_f32("x", &[1.0], &[1.0, 2.0], 1e-5, 0.0).is_err());
    }

    #[test]
    fn large_random_arrays_replay_and_cover_the_range() {
        let n = (3 << 20) + 17;
        let a = random_f32(&mut rng(9), n, 0.5, 1.5);
        assert_eq!(a, random_f32(&mut rng(9), n, 0.5, 1.5));
        assert!(a.iter().all(|v| (0.5..1.5).contains(v)));
        let mean = a.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        assert!((mean - 1.0).abs() < 1e-3, "{mean}");
        // Chunks are not copies of each other.
        assert_ne!(a[..1000], a[1 << 20..(1 << 20) + 1000]);
    }

    #[test]
    fn par_map_keeps_order() {
        assert_eq!(
            par_map(1000, |i| i * 2),
            (0..1000).map(|i| i * 2).collect::<Vec<_>>()
        );
    }

    #[test]
    fn random_inputs_are_not_zero_and_replay() {
        let a = random_f32(&mut rng(7), 1000, -1.0, 1.0);
        let b = random_f32(&mut rng(7), 1000, -1.0, 1.0);
        assert_eq!(a, b);
        assert!(a.iter().filter(|v| **v == 0.0).count() < 2);
    }
}
