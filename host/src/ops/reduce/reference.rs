//! reduce: the f64 CPU reference and the accuracy bound a GPU sum is held to, and the exact
//! check for integer-valued inputs.
//!
//! A GPU sum is a tree whose longest chain of dependent f32 adds has `h` links (`h = n` for
//! v01's running atomic sum; one block tree per pass for v02–v06; per-thread chain plus tree
//! plus blocks for v07). Each add rounds by at most `u = 2^-24` of a partial sum bounded by
//! `A = Σ|x|`. Worst case that is `h·u·A`; rounding errors are close to independent, so the
//! error grows like `√h·u·A`. The check allows `8·√h·u·A` (≥ the worst case for `h ≤ 64`,
//! several standard deviations beyond it for long chains) against an f64 reference (see
//! [`tolerance`]). Relative to the sum itself this is tight for the positive inputs
//! ([0.5, 1.5): `A ≈ |sum|`) and still meaningful for the mixed-sign ones. It does not cover
//! v01 past ~2^24 elements of mean 1: once the running sum reaches 2^25 every addend is
//! below half an ulp and the sum stops growing (not a random walk any more), which is why
//! v01 is tested and benched at most at 2^24.
//!
//! That bound cannot see one missing block at 2^28: it allows ~700 there, and a v02–v06 block
//! of positive inputs sums to ~256–512. Hence the exact check ([`exact_sum`],
//! [`compare_exact`]): on integer-valued inputs, f32 arithmetic is exact as long as every
//! value it forms is an integer of magnitude at most 2^24 (all of those are f32s, so no add
//! rounds), and then the GPU must return the exact i64 sum bit for bit. Every partial sum a
//! variant forms is the sum of some subset of one group of values: of one block's elements
//! (v02–v06's trees in any addressing, v05's add on load, v06's butterfly, everything inside
//! one v07 block: its threads' accumulators, butterflies and block sum), of one block's worth
//! of the previous pass's block sums (v02–v06's later passes), of all v07 block sums (its
//! atomics in any order, or its final pass), or of all elements (v01's atomics in any
//! order). A subset sum lies between −Σ|negatives| and Σpositives of its group, so
//! `max(Σpositives, Σ|negatives|)` of every group, computed in i64 for the actual input with
//! the variant's real grouping, bounds every partial sum (by induction over the passes, each
//! pass's inputs being the exact sums of the one before). Contiguous prefix sums would not
//! do: sequential addressing (v04–v06) and v07's grid stride add elements far apart. The
//! check refuses to run (an error, not a pass) when that bound reaches 2^24. For the
//! integer inputs the tests use (uniform over ±1..=16) at 2^28 the largest group bound is
//! ~0.3M for v02–v04, ~1.1M for v05/v06 (a third-pass block: 512 block sums of 2^18 elements
//! each) and ~2.2M for v07 on an H200 (1056 block sums of ~2^18 elements, growing as
//! √blocks): 7× or more below 2^24.

use rooflab_kernels::reduce::v07_multi_element;

use super::launch::{Variant, elems_per_block, pass_lengths};
use crate::check::par_map;
use crate::error::{Error, Result};

/// `(Σ x, Σ |x|)` accumulated in f64, on all cores: chunks of a fixed size summed in
/// order, so the result does not depend on the machine.
pub fn sum_ref(x: &[f32]) -> (f64, f64) {
    const CHUNK: usize = 1 << 20;
    let part = |c: &[f32]| {
        c.iter().fold((0.0, 0.0), |(s, a), &v| {
            (s + v as f64, a + (v as f64).abs())
        })
    };
    if x.len() <= CHUNK {
        return part(x);
    }
    par_map(x.len().div_ceil(CHUNK), |c| {
        part(&x[c * CHUNK..((c + 1) * CHUNK).min(x.len())])
    })
    .into_iter()
    .fold((0.0, 0.0), |(s, a), (ps, pa)| (s + ps, a + pa))
}

/// Length of the longest chain of dependent f32 adds in variant `v`'s summation of `n`
/// elements, with `blocks` the grid (v07 only; others compute theirs).
pub fn chain_len(v: Variant, n: u64, blocks: u64) -> u64 {
    let lg = |b: u32| b.trailing_zeros() as u64;
    match v {
        Variant::V01Atomic => n,
        // One tree of log2(E) levels per pass over a block's E elements (v05/v06: the add on
        // load is the first level).
        Variant::V02TreeDivergent
        | Variant::V03StridedIndex
        | Variant::V04TreeSequential
        | Variant::V05FirstAddOnLoad
        | Variant::V06WarpShuffle => {
            pass_lengths(v, n).len() as u64 * elems_per_block(v).trailing_zeros() as u64
        }
        Variant::V07MultiElement { deterministic } => {
            use v07_multi_element as k;
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

/// Integer-valued partial sums below this magnitude are f32s, so f32 adds of them are exact
/// (see the module comment).
pub const EXACT_LIMIT: i64 = 1 << 24;

/// Sums of the positive values and of the negative values' magnitudes of one group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Group {
    pos: i64,
    neg: i64,
}

impl Group {
    /// The group of `x`; `None` unless every value is an integer of magnitude at most 2^24.
    fn of(x: &[f32]) -> Option<Group> {
        let (mut pos, mut neg, mut ok) = (0i64, 0i64, true);
        for &v in x {
            let i = v as i64;
            ok &= i as f32 == v && (-EXACT_LIMIT..=EXACT_LIMIT).contains(&i);
            if i > 0 {
                pos += i;
            } else {
                neg -= i;
            }
        }
        ok.then_some(Group { pos, neg })
    }
    fn add(&mut self, v: i64) {
        if v > 0 { self.pos += v } else { self.neg -= v }
    }
    fn merge(&mut self, g: Group) {
        self.pos += g.pos;
        self.neg += g.neg;
    }
    fn total(self) -> i64 {
        self.pos - self.neg
    }
    /// The largest magnitude of a sum of any subset of the group.
    fn bound(self) -> i64 {
        self.pos.max(self.neg)
    }
}

/// The groups, or the error that a value was not an integer (a `None` from [`Group::of`]).
fn groups(groups: Vec<Option<Group>>) -> Result<Vec<Group>> {
    groups
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            Error::Other(
                "the exact sum check needs integer-valued inputs of magnitude at most 2^24".into(),
            )
        })
}

/// The exact sum of integer-valued `x` and a bound on the magnitude of every partial sum
/// variant `v` forms on the way (the module comment says why it bounds them all). `blocks`
/// and `head` are v07's grid and scalar head ([`v07_head`](super::launch::v07_head)); the
/// other variants ignore them. Errors only if `x` is not integer-valued.
pub fn exact_sum_and_bound(v: Variant, x: &[f32], blocks: u64, head: u64) -> Result<(i64, i64)> {
    if x.is_empty() {
        return Ok((0, 0));
    }
    // The groups of the elements, and how many of their sums make a group of the next level
    // (v02–v06: a block of the next pass; v07: all block sums; v01: no next level).
    let (first, next): (Vec<Group>, usize) = match v {
        Variant::V01Atomic => {
            // Atomics in any order: a partial is any subset of the elements, one group.
            (groups(vec![Group::of(x)])?, usize::MAX)
        }
        Variant::V07MultiElement { .. } => {
            use v07_multi_element as k;
            let blocks = blocks.max(1) as usize;
            let head = head.min(x.len() as u64) as usize;
            let body = &x[head..head + (x.len() - head) / 4 * 4];
            // Thread t reads vectors t, t+T, ... (T = blocks·BLOCK_THREADS), so each run of
            // BLOCK_THREADS vectors belongs to one block, in turn; the scalar head and tail
            // go to threads 0..3, in block 0.
            let run = 4 * k::BLOCK_THREADS as usize;
            let runs = body.len().div_ceil(run);
            let mut g = groups(par_map(blocks, |b| {
                let mut g = Group::default();
                for r in (b..runs).step_by(blocks) {
                    g.merge(Group::of(&body[r * run..((r + 1) * run).min(body.len())])?);
                }
                Some(g)
            }))?;
            let rest = groups(vec![
                Group::of(&x[..head]),
                Group::of(&x[head + body.len()..]),
            ])?;
            g[0].merge(rest[0]);
            g[0].merge(rest[1]);
            // Across blocks: any subset of the block sums (atomics, or the final pass).
            (g, usize::MAX)
        }
        v => {
            // v02–v06: every pass's block b sums elements [b·E, (b+1)·E) of that pass's input.
            let e = elems_per_block(v) as usize;
            let g = groups(par_map(x.len().div_ceil(e), |b| {
                Group::of(&x[b * e..((b + 1) * e).min(x.len())])
            }))?;
            (g, e)
        }
    };
    let mut bound = first.iter().map(|g| g.bound()).max().unwrap_or(0);
    let mut level: Vec<i64> = first.iter().map(|g| g.total()).collect();
    while level.len() > 1 {
        level = level
            .chunks(next)
            .map(|sums| {
                let mut g = Group::default();
                sums.iter().for_each(|&s| g.add(s));
                bound = bound.max(g.bound());
                g.total()
            })
            .collect();
    }
    Ok((level[0], bound))
}

/// The exact sum of integer-valued `x` as variant `v` must return it (see
/// [`exact_sum_and_bound`] for `blocks` and `head`). Refuses, with an error saying the input
/// is unsuitable, when a partial sum may reach 2^24: there f32 adds may round, and an exact
/// comparison would prove nothing.
pub fn exact_sum(v: Variant, x: &[f32], blocks: u64, head: u64) -> Result<i64> {
    let (sum, bound) = exact_sum_and_bound(v, x, blocks, head)?;
    if bound >= EXACT_LIMIT {
        return Err(Error::Other(format!(
            "input unsuitable for the exact sum check: a partial sum of {} over these {} \
             values may reach {bound} ≥ 2^24, where f32 adds round",
            v.row_variant(),
            x.len()
        )));
    }
    Ok(sum)
}

/// Whether `got` is the exact sum `want` from [`exact_sum`], bit for bit (the rule of
/// [`compare_exact`]; `want` is an f32 exactly, being below 2^24).
pub fn exact_passes(got: f32, want: i64) -> bool {
    got.to_bits() == (want as f32).to_bits()
}

/// Compare a GPU sum of integer-valued inputs with their exact sum from [`exact_sum`].
pub fn compare_exact(what: &str, got: f32, want: i64) -> Result<()> {
    if exact_passes(got, want) {
        Ok(())
    } else {
        Err(Error::Mismatch(format!(
            "{what}: got {got:e}, want exactly {want} (integer inputs, every partial below \
             2^24: f32 adds are exact, so any difference is a wrong sum)"
        )))
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::ops::reduce::launch::{LADDER, v07_grid};
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

    #[test]
    fn small_integers_and_the_exact_check() {
        let x = inputs(5, 1 << 16, Inputs::SmallIntegers);
        let (sum, _) = sum_ref(&x);
        for v in LADDER {
            let want = exact_sum(v, &x, 3, 1).unwrap();
            assert_eq!(want as f64, sum, "{v:?}");
            compare_exact("right", want as f32, want).unwrap();
            assert!(compare_exact("off by one", (want + 1) as f32, want).is_err());
            let poison = f32::from_bits(crate::gpu::POISON_F32_BITS);
            assert!(compare_exact("poison", poison, want).is_err());
        }
        assert_eq!(exact_sum(Variant::V04TreeSequential, &[], 0, 0).unwrap(), 0);
        // Not integers, or too large to be exact on their own: refused, not rounded.
        for bad in [[1.0, 0.5], [1.0, 3.0e7]] {
            let err = exact_sum(Variant::V02TreeDivergent, &bad, 0, 0).unwrap_err();
            assert!(err.to_string().contains("integer-valued"), "{err}");
        }
        // Right under 2^24 the check runs; one more element and it refuses: 15 × (2^24 - 1)/15
        // is 2^24 - 1, and adding 15 passes 2^24 in the last pass.
        let mut x = vec![15.0f32; ((1 << 24) - 1) / 15];
        assert_eq!(
            exact_sum(Variant::V02TreeDivergent, &x, 0, 0).unwrap(),
            (1 << 24) - 1
        );
        x.push(15.0);
        let err = exact_sum(Variant::V02TreeDivergent, &x, 0, 0).unwrap_err();
        assert!(err.to_string().contains("unsuitable"), "{err}");
        // v01's atomics over 2^24 small integers, in any order, may pass 2^24 (its bound,
        // Σpositives, is ~2^26): why its check stays the tolerance one.
        let x = inputs(6, 1 << 24, Inputs::SmallIntegers);
        let err = exact_sum(Variant::V01Atomic, &x, 0, 0).unwrap_err();
        assert!(err.to_string().contains("unsuitable"), "{err}");
    }

    /// v07's groups follow its grid: each block's elements, then all block sums.
    #[test]
    fn v07_groups_follow_the_grid() {
        let v = Variant::V07MultiElement {
            deterministic: false,
        };
        // Two blocks take runs of BLOCK_THREADS vectors in turn after a head of 1; the 2
        // tail elements go to block 0.
        let run = 4 * v07_multi_element::BLOCK_THREADS as usize;
        let mut x = vec![0.0f32; 1 + 4 * run + 2];
        x[0] = 5.0;
        for (r, sign) in [1.0, -1.0, 1.0, -1.0].into_iter().enumerate() {
            x[1 + r * run..1 + (r + 1) * run].fill(sign);
        }
        x[1 + 4 * run..].fill(3.0);
        let block0 = 5 + 2 * run as i64 + 6;
        let block1 = -2 * run as i64;
        assert_eq!(
            exact_sum_and_bound(v, &x, 2, 1).unwrap(),
            (block0 + block1, block0)
        );
        // Misplaced by one (head 0): the runs straddle the blocks, each holds +1s and -1s.
        let (_, b) = exact_sum_and_bound(v, &x, 2, 0).unwrap();
        assert!(b < block0, "{b}");
        // Three blocks: block 0 gets runs 0 and 3 (+1, -1), block 1 run 1, block 2 run 2.
        assert_eq!(
            exact_sum_and_bound(v, &x, 3, 1).unwrap(),
            (block0 + block1, run as i64 + 5 + 6)
        );
    }

    /// The 2^28 check proven against the bug it is there to catch, on the inputs the GPU
    /// tests use there (with a fixed seed): a kernel that drops one first-pass block. For
    /// every multi-pass variant the positive inputs' bound lets it through (one block of
    /// values near 1 sums to E = 256 or 512, the bound allows ~700); the exact check on the
    /// integer inputs refuses it. And the exact check runs there: no variant's partials,
    /// v07's on an H200's grid included, come near 2^24.
    #[test]
    fn reduce_2_28_check_refuses_a_dropped_block() {
        let n = 1usize << 28;
        let seed = 0x228;
        let positive = inputs(seed, n, Inputs::Positive);
        let (want, abs) = sum_ref(&positive);
        let ints = inputs(seed, n, Inputs::SmallIntegers);
        // The exact sum per block size (v02–v04 and v05–v06 group their elements alike).
        let mut exact = std::collections::BTreeMap::new();
        for v in LADDER.into_iter().filter(|v| v.multi_pass()) {
            let e = elems_per_block(v) as usize;
            let h = chain_len(v, n as u64, 0);
            let block: f64 = positive[..e].iter().map(|&x| x as f64).sum();
            let dropped = (want - block) as f32;
            assert!(
                passes(dropped, want, abs, h),
                "{v:?}: the old bound ({}) already refuses a dropped block ({block})",
                tolerance(h, abs)
            );
            let exact = *exact
                .entry(e)
                .or_insert_with(|| exact_sum(v, &ints, 0, 0).unwrap());
            // The first block whose sum is not 0 (no sum check sees a block of sum 0).
            let (b, block) = ints
                .chunks(e)
                .map(|c| c.iter().map(|&x| x as i64).sum::<i64>())
                .enumerate()
                .find(|&(_, s)| s != 0)
                .unwrap();
            // That kernel's partials are a subset's, so its f32 sum is exact too.
            let err = compare_exact("dropped", (exact - block) as f32, exact).unwrap_err();
            assert!(
                err.to_string().contains("want exactly"),
                "{v:?} block {b}: {err}"
            );
            compare_exact("right", exact as f32, exact).unwrap();
        }
        // v07 on an H200 (132 SMs × 8 blocks), its input 16-byte aligned as the GPU test's.
        let v = Variant::V07MultiElement {
            deterministic: false,
        };
        let (sum, bound) =
            exact_sum_and_bound(v, &ints, v07_grid(132, 8, n as u64) as u64, 0).unwrap();
        assert_eq!(Some(&sum), exact.values().next());
        assert!(bound < EXACT_LIMIT / 4, "{bound}");
    }

    /// The premise of the exact check: integer inputs whose partials stay below 2^24 come
    /// out exact from f32 adds in an order the bound does not assume contiguous: sequential
    /// addressing over each block of every pass (v04's tree; v05's, with the add on load as
    /// its first level).
    #[test]
    fn f32_trees_are_exact_on_small_integers() {
        fn tree_sum(x: &[f32], e: usize) -> f32 {
            let tree = |block: &[f32]| {
                let mut s = block.to_vec();
                s.resize(e, 0.0);
                let mut half = e / 2;
                while half > 0 {
                    for t in 0..half {
                        s[t] += s[t + half];
                    }
                    half /= 2;
                }
                s[0]
            };
            let mut level: Vec<f32> = x.chunks(e).map(tree).collect();
            while level.len() > 1 {
                level = level.chunks(e).map(tree).collect();
            }
            level[0]
        }
        let random = inputs(7, (1 << 22) + 3, Inputs::SmallIntegers);
        // Every partial of a positive integer, right under 2^24 at the end.
        let near_limit = vec![15.0f32; ((1 << 24) - 1) / 15];
        for x in [&random, &near_limit] {
            for v in [Variant::V04TreeSequential, Variant::V05FirstAddOnLoad] {
                let want = exact_sum(v, x, 0, 0).unwrap();
                let got = tree_sum(x, elems_per_block(v) as usize);
                compare_exact(&format!("{v:?} on the CPU"), got, want).unwrap();
            }
        }
        // The same trees round on the positive inputs: exactness is the inputs' doing.
        let p = inputs(7, 1 << 20, Inputs::Positive);
        assert_ne!(tree_sum(&p, 256) as f64, sum_ref(&p).0);
    }
}
