//! Inputs, poisoning and comparison for correctness checks.
//!
//! Inputs are fresh random numbers (never zeros: they hide unwritten outputs), drawn from a
//! seed that every failure message prints, so a case can be replayed with `ROOFLAB_SEED`.
//! Outputs are poisoned with NaN before a launch ([`crate::Gpu::poison`]); a NaN never passes.

use rand::rngs::{SmallRng, StdRng};
use rand::{Rng, RngCore, SeedableRng};

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

/// Arrays longer than this are drawn in parallel chunks of it.
const CHUNK: usize = 1 << 20;

/// `n` values uniform in [lo, hi). Large arrays are drawn in parallel, chunk `c` from its
/// own generator seeded from `rng` and `c`, so the result depends only on `rng`'s state.
pub fn random_f32(rng: &mut StdRng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    if n <= CHUNK {
        return (0..n).map(|_| rng.random_range(lo..hi)).collect();
    }
    let mut out = vec![0.0f32; n];
    fill_parallel(rng.random(), &mut out, |r, part| {
        for v in part {
            *v = uniform(r, lo, hi);
        }
    });
    out
}

/// `n` integers (as f32) uniform over `-m..=-1` and `1..=m`, `m` a power of two: both signs
/// equally often, never 0 (so never an all-zero array). Drawn as [`random_f32`]'s large
/// arrays are, at any length; 5-bit fields of one 64-bit draw make 12 values for `m = 16`.
pub fn random_small_integers(rng: &mut StdRng, n: usize, m: u32) -> Vec<f32> {
    assert!(m.is_power_of_two() && m <= 1 << 20, "m = {m}");
    let bits = m.trailing_zeros() + 1;
    let per_draw = (64 / bits) as usize;
    let mut out = vec![0.0f32; n];
    fill_parallel(rng.random(), &mut out, |r, part| {
        for group in part.chunks_mut(per_draw) {
            let mut u = r.next_u64();
            for v in group {
                // A field is 0..2m: 0..m-1 become -m..-1, m..2m-1 become 1..m.
                let k = (u & ((1 << bits) - 1)) as i32 - m as i32;
                *v = (if k < 0 { k } else { k + 1 }) as f32;
                u >>= bits;
            }
        }
    });
    out
}

/// Fill `out` on all cores, chunk `c` of [`CHUNK`] elements by `fill` with its own generator
/// seeded from `base` and `c`: the result depends only on `base`.
fn fill_parallel<T: Send>(base: u64, out: &mut [T], fill: impl Fn(&mut SmallRng, &mut [T]) + Sync) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .min(32);
    let chunks: Vec<(usize, &mut [T])> = out.chunks_mut(CHUNK).enumerate().collect();
    let per = chunks.len().div_ceil(threads).max(1);
    let mut groups: Vec<Vec<(usize, &mut [T])>> = Vec::new();
    let mut it = chunks.into_iter().peekable();
    while it.peek().is_some() {
        groups.push(it.by_ref().take(per).collect());
    }
    let fill = &fill;
    std::thread::scope(|s| {
        for group in groups {
            s.spawn(move || {
                for (c, part) in group {
                    let mut r = SmallRng::seed_from_u64(
                        base ^ (c as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    );
                    fill(&mut r, part);
                }
            });
        }
    });
}

/// `r.random_range(lo..hi)` written out, the same value from the same state (rand 0.9's
/// algorithm: 23 random bits as a float in [1, 2), less 1, times `hi - lo`, plus `lo`): debug
/// builds do not inline rand's generic layers, which made drawing 2^28 values take a minute;
/// this takes seconds. `written_out_uniform_is_rands` holds it to rand's values.
#[inline(always)]
fn uniform(r: &mut SmallRng, lo: f32, hi: f32) -> f32 {
    let one_two = f32::from_bits((r.next_u32() >> 9) | 0x3f80_0000);
    (one_two - 1.0) * (hi - lo) + lo
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
    fn small_integers_cover_the_range_without_zero() {
        for n in [1, 13, (2 << 20) + 5] {
            let a = random_small_integers(&mut rng(4), n, 16);
            assert_eq!(a, random_small_integers(&mut rng(4), n, 16));
            assert!(
                a.iter()
                    .all(|&v| v != 0.0 && v.fract() == 0.0 && v.abs() <= 16.0)
            );
        }
        let a = random_small_integers(&mut rng(5), 1 << 21, 16);
        let mut counts = [0usize; 33];
        for &v in &a {
            counts[(v + 16.0) as usize] += 1;
        }
        // Every value but 0, each about 1/32 of the draws.
        let expect = a.len() / 32;
        for (i, &c) in counts.iter().enumerate() {
            if i == 16 {
                assert_eq!(c, 0);
            } else {
                assert!(
                    c.abs_diff(expect) < expect / 20,
                    "{} drawn {c} times",
                    i as i32 - 16
                );
            }
        }
        // Chunks are not copies of each other.
        assert_ne!(a[..1000], a[1 << 20..(1 << 20) + 1000]);
        assert!(
            random_small_integers(&mut rng(6), 1000, 1)
                .iter()
                .all(|v| v.abs() == 1.0)
        );
    }

    #[test]
    fn written_out_uniform_is_rands() {
        for (lo, hi) in [(0.5f32, 1.5f32), (-1.0, 1.0), (0.0, 32.0), (-3.0e-3, 7.0e5)] {
            let mut a = SmallRng::seed_from_u64(11);
            let mut b = a.clone();
            for _ in 0..100_000 {
                assert_eq!(
                    uniform(&mut a, lo, hi).to_bits(),
                    b.random_range(lo..hi).to_bits()
                );
            }
        }
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
