//! reduce: the f64 CPU reference and the accuracy bound a GPU sum is held to.
//!
//! A GPU sum is a tree whose longest chain of dependent f32 adds has `h` links (`h = n` for
//! v01's running atomic sum; one block tree per pass for v02–v05; per-thread chain plus tree
//! plus blocks for v06). Each add rounds by at most `u = 2^-24` of a partial sum bounded by
//! `A = Σ|x|`. Worst case that is `h·u·A`; rounding errors are close to independent, so the
//! error grows like `√h·u·A`. The check allows `8·√h·u·A` (≥ the worst case for `h ≤ 64`,
//! several standard deviations beyond it for long chains) against an f64 reference (see
//! [`tolerance`]). Relative to the sum itself this is tight for the positive inputs
//! ([0.5, 1.5): `A ≈ |sum|`) and still meaningful for the mixed-sign ones. It does not cover
//! v01 past ~2^24 elements of mean 1: once the running sum reaches 2^25 every addend is
//! below half an ulp and the sum stops growing (not a random walk any more), which is why
//! v01 is tested and benched at most at 2^24.

use rooflab_kernels::reduce::{v02_tree_divergent, v04_first_add_on_load, v06_multi_element};

use super::launch::{Variant, pass_lengths};
use crate::error::{Error, Result};

/// `(Σ x, Σ |x|)` accumulated in f64.
pub fn sum_ref(x: &[f32]) -> (f64, f64) {
    x.iter().fold((0.0, 0.0), |(s, a), &v| {
        (s + v as f64, a + (v as f64).abs())
    })
}

/// Length of the longest chain of dependent f32 adds in variant `v`'s summation of `n`
/// elements, with `blocks` the grid (v06 only; others compute theirs).
pub fn chain_len(v: Variant, n: u64, blocks: u64) -> u64 {
    let lg = |b: u32| b.trailing_zeros() as u64;
    match v {
        Variant::V01Atomic => n,
        Variant::V02TreeDivergent | Variant::V03TreeSequential => {
            pass_lengths(v, n).len() as u64 * lg(v02_tree_divergent::BLOCK_THREADS)
        }
        Variant::V04FirstAddOnLoad | Variant::V05WarpShuffle => {
            pass_lengths(v, n).len() as u64 * (lg(v04_first_add_on_load::BLOCK_THREADS) + 1)
        }
        Variant::V06MultiElement { deterministic } => {
            use v06_multi_element as k;
            let threads = blocks.max(1) * k::BLOCK_THREADS as u64;
            // Per-accumulator chain, 16 accumulators + head/tail, warp and block trees.
            let per_thread = n.div_ceil(4 * threads) + 6;
            let trees = 5 + lg(k::BLOCK_THREADS / 32);
            let across = if deterministic {
                blocks.div_ceil(k::FINAL_THREADS as u64) + 5 + lg(k::FINAL_THREADS / 32)
            } else {
                blocks
            };
            per_thread + trees + across
        }
    }
}

/// Allowed `|gpu - Σx|` for a chain of `h` adds over inputs with `Σ|x| = abs_sum`:
/// `8·√h·u·A` with `u = 2^-24` (see the module comment).
pub fn tolerance(h: u64, abs_sum: f64) -> f64 {
    8.0 * (h.max(1) as f64).sqrt() * (f32::EPSILON as f64 / 2.0) * abs_sum
}

/// Whether `got` passes against the reference sum `want` of values whose Σ|x| is `abs_sum`
/// after a chain of `h` adds (the rule of [`compare_sum`]).
pub fn passes(got: f32, want: f64, abs_sum: f64, h: u64) -> bool {
    got.is_finite() && (got as f64 - want).abs() <= tolerance(h, abs_sum)
}

/// Compare a GPU sum with the f64 reference; NaN (the poison) and infinities fail.
pub fn compare_sum(what: &str, got: f32, x: &[f32], h: u64) -> Result<()> {
    let (want, abs) = sum_ref(x);
    compare_sum_to(what, got, want, abs, h)
}

/// [`compare_sum`] against a reference already computed: `want` and `abs_sum` from
/// [`sum_ref`] (for inputs large enough that computing it once matters).
pub fn compare_sum_to(what: &str, got: f32, want: f64, abs_sum: f64, h: u64) -> Result<()> {
    let tol = tolerance(h, abs_sum);
    let err = (got as f64 - want).abs();
    if passes(got, want, abs_sum, h) {
        Ok(())
    } else {
        Err(Error::Mismatch(format!(
            "{what}: got {got:e}, want {want:e} (error {err:e}, allowed {tol:e} for a chain \
             of {h} adds over Σ|x| = {abs_sum:e})"
        )))
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::ops::reduce::tests::{Inputs, inputs};

    #[test]
    fn reference_and_tolerance() {
        assert_eq!(sum_ref(&[1.0, -2.0, 0.5]), (-0.5, 3.5));
        // Exact for one element; grows like sqrt(h).
        assert_eq!(tolerance(1, 1.0), 8.0 * 2f64.powi(-24));
        assert!((tolerance(1 << 20, 1.0) / tolerance(1 << 18, 1.0) - 2.0).abs() < 1e-12);
        // A plain f32 running sum of 2^20 values in [0.5, 1.5) stays inside v01's bound;
        // the poison and an error of 1% do not pass.
        let x = inputs(3, 1 << 20, Inputs::Positive);
        let seq: f32 = x.iter().sum();
        compare_sum("seq", seq, &x, chain_len(Variant::V01Atomic, 1 << 20, 0)).unwrap();
        let poison = f32::from_bits(crate::gpu::POISON_F32_BITS);
        assert!(compare_sum("p", poison, &x, 1 << 20).is_err());
        assert!(compare_sum("1%", seq * 1.01, &x, 1 << 20).is_err());
    }
}
