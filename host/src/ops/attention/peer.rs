//! attention: what the PyTorch peer (`--peer torch`: `scaled_dot_product_attention` held to
//! its flash backend, then to its cuDNN backend) is checked against.
//!
//! A peer output is held to the family's f64 reference ([`attention_ref`], the sampled rows
//! of every head) with the family's tolerance ([`TOLERANCE`]) widened by the error the
//! peers' own arithmetic is documented to make: FlashAttention and cuDNN round each
//! probability to bf16 before the P·V product (rooflab's steps keep it in f32), and SDPA's
//! math path in reduced precision rounds the scores too. Each weight `p_j` may then be off
//! by a relative `2^-9·(1 + |s_j|)`; over a row those errors add up like a random walk, so
//! an element may be off by [`SIGMAS`] standard deviations of that sum beyond the family's
//! tolerance ([`spread`]). The unit tests below hold both sides: f32 models of a bf16-P
//! kernel and of a bf16-scores one pass at a row of 4097 keys (where the family's tolerance
//! alone refuses the first), a key dropped from every row, an output element zeroed, the
//! causal mask ignored, or the scale left out, each fail.

use super::launch::Attn;
use super::reference::{attention_ref, sample_rows};
use super::tests::TOLERANCE;
use crate::check::par_map;

/// The peer's ops: prefill attention over `[B, H, S, D]` bf16, without and with the causal
/// mask (the script's names; `torch_peer::Mode::SdpaFlash`, `SdpaCudnn` are their columns,
/// `report::ATTENTION_PEER_COLUMNS` their headers).
pub const SDPA: &str = "sdpa";
pub const SDPA_CAUSAL: &str = "sdpa_causal";

/// One bf16 rounding, relative: `2^-9`.
const BF16_HALF_ULP: f64 = 1.0 / 512.0;

/// How many standard deviations of the modelled rounding error an element may be off
/// beyond the family's tolerance (errors of a row are sums of many independent roundings:
/// past 6σ is one element in 10^9).
pub const SIGMAS: f64 = 6.0;

/// For one output row (`q`, keys `0..n` through `key(j)` and `value(j)`, as
/// [`attend`](super::reference::attend)), the error per element that bf16 weights and bf16 scores explain:
/// `SIGMAS · sqrt(Σ_j (p_j·u_j·(|v_j| + |o|))² / 3)`, `u_j = 2^-9·(1 + |s_j|)` the bound
/// on weight j's relative error (uniform in ±u_j: variance u_j²/3), `|v_j| + |o|` since an
/// error in a weight moves the output towards `v_j` and, through the normalisation, away
/// from `o`.
pub fn spread<'a>(
    q: &[f32],
    n: usize,
    scale: f64,
    key: impl Fn(usize) -> &'a [f32],
    value: impl Fn(usize) -> &'a [f32],
) -> Vec<f64> {
    let o = super::reference::attend(q, n, scale, &key, &value);
    let (scores, p) = super::reference::scores_and_weights(q, n, scale, &key);
    let mut var = vec![0.0f64; q.len()];
    for (j, (&pj, &s)) in p.iter().zip(&scores).enumerate() {
        let w = pj * BF16_HALF_ULP * (1.0 + s.abs());
        for ((v2, &x), &oc) in var.iter_mut().zip(value(j)).zip(&o) {
            let t = w * (x.abs() as f64 + oc.abs());
            *v2 += t * t;
        }
    }
    var.iter().map(|v2| SIGMAS * (v2 / 3.0).sqrt()).collect()
}

/// `got` against `want`, element by element: within the family's tolerance (rel or abs, as
/// `check::compare_f32`) plus `spread`; NaN or infinity fails.
pub fn compare_with_spread(
    what: &str,
    got: &[f32],
    want: &[f64],
    spread: &[f64],
) -> Result<(), String> {
    if got.len() != want.len() || want.len() != spread.len() {
        return Err(format!(
            "{what}: {} elements back, {} expected",
            got.len(),
            want.len()
        ));
    }
    let (rel, abs) = (TOLERANCE.0 as f64, TOLERANCE.1 as f64);
    let mut bad = Vec::new();
    let mut count = 0usize;
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(spread).enumerate() {
        let err = (g as f64 - w).abs();
        let allowed = abs.max(rel * w.abs().max((g as f64).abs())) + s;
        // `!(err <= allowed)`: a NaN fails.
        if !g.is_finite() || err.is_nan() || err > allowed {
            count += 1;
            if bad.len() < 5 {
                bad.push(format!("[{i}] got {g}, want {w:.6e} (allowed ±{allowed:.2e})"));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(format!(
            "{what}: {count} of {} elements wrong (rel {rel:e} or abs {abs:e}, plus {SIGMAS}σ \
             of bf16 weights and scores); first: {}",
            got.len(),
            bad.join(", ")
        ))
    }
}

/// The reference of one peer request: the sampled rows of every head of `a` in f64 and the
/// spread each element is allowed, computed once for both columns.
pub struct Expected {
    a: Attn,
    rows: Vec<usize>,
    want: Vec<f64>,
    spread: Vec<f64>,
}

impl Expected {
    /// From the peer's own inputs `q`, `k`, `v` (`[B, H, S, D]`, as f32).
    pub fn new(a: Attn, q: &[f32], k: &[f32], v: &[f32]) -> Expected {
        let rows = sample_rows(a.seq);
        let want = attention_ref(&a, q, k, v, &rows);
        let (s, d) = (a.seq, a.dim);
        let scale = 1.0 / (d as f64).sqrt();
        let spread = par_map(a.bh() * rows.len(), |task| {
            let (bh, i) = (task / rows.len(), rows[task % rows.len()]);
            let head = bh * s * d;
            let row = |j: usize| head + j * d..head + (j + 1) * d;
            let keys = if a.causal { i + 1 } else { s };
            spread(&q[row(i)], keys, scale, |j| &k[row(j)], |j| &v[row(j)])
        })
        .into_iter()
        .flatten()
        .collect();
        Expected {
            a,
            rows,
            want,
            spread,
        }
    }

    /// Elements of the whole output the peer dumps (`[B, H, S, D]`).
    pub fn output_len(&self) -> usize {
        self.a.elements()
    }

    /// One peer output `o` (`[B, H, S, D]`, as f32): no NaN anywhere, and the sampled rows
    /// within the tolerance.
    pub fn check(&self, what: &str, o: &[f32]) -> Result<(), String> {
        if o.len() != self.a.elements() {
            return Err(format!(
                "{what}: {} elements back, {} expected",
                o.len(),
                self.a.elements()
            ));
        }
        if let Some(i) = o.iter().position(|x| !x.is_finite()) {
            return Err(format!("{what}: O[{i}] = {}", o[i]));
        }
        let d = self.a.dim;
        let got: Vec<f32> = (0..self.a.bh())
            .flat_map(|bh| self.rows.iter().map(move |&i| (bh * self.a.seq + i) * d))
            .flat_map(|at| o[at..at + d].iter().copied())
            .collect();
        compare_with_spread(what, &got, &self.want, &self.spread)
    }
}

/// The check on the arithmetic of the peers it exists for, and on the bugs it must catch.
#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::check::compare_f32;
    use crate::ops::attention::tests::inputs;
    use crate::tensor::Dtype;

    /// How a modelled peer rounds.
    #[derive(Clone, Copy)]
    struct Model {
        /// Scores rounded to bf16 (a reduced-precision math path).
        bf16_scores: bool,
        /// Keys left off the end of each row's context (a bug).
        drop: usize,
        /// The causal mask ignored (a bug).
        no_mask: bool,
        /// The `1/√D` scale left out (a bug).
        no_scale: bool,
    }

    const HONEST: Model = Model {
        bf16_scores: false,
        drop: 0,
        no_mask: false,
        no_scale: false,
    };

    /// A FlashAttention-style kernel in f32 for `rows` of every head: scores in f32 (or
    /// rounded to bf16), the row sum from the f32 weights, each weight rounded to bf16 for
    /// the P·V product, the output rounded to bf16 once; `O` for the whole tensor, zeros
    /// outside `rows`.
    fn model(a: &Attn, q: &[f32], k: &[f32], v: &[f32], rows: &[usize], m: Model) -> Vec<f32> {
        let (s, d) = (a.seq, a.dim);
        let scale = if m.no_scale { 1.0 } else { a.scale() };
        let bf = |x: f32| Dtype::Bf16.quantize(x);
        let mut out = vec![0.0f32; a.elements()];
        for bh in 0..a.bh() {
            let head = bh * s * d;
            for &i in rows {
                let keys = if a.causal && !m.no_mask { i + 1 } else { s } - m.drop;
                let sc: Vec<f32> = (0..keys)
                    .map(|j| {
                        let dot = (0..d).fold(0.0f32, |t, c| {
                            q[head + i * d + c].mul_add(k[head + j * d + c], t)
                        });
                        if m.bf16_scores { bf(dot * scale) } else { dot * scale }
                    })
                    .collect();
                let mx = sc.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let p: Vec<f32> = sc.iter().map(|&x| (x - mx).exp()).collect();
                let l: f32 = p.iter().sum();
                for c in 0..d {
                    let acc = p
                        .iter()
                        .enumerate()
                        .fold(0.0f32, |t, (j, &pj)| bf(pj).mul_add(v[head + j * d + c], t));
                    out[head + i * d + c] = bf(acc / l);
                }
            }
        }
        out
    }

    fn shapes() -> [Attn; 2] {
        [Attn::new(1, 1, 4097, 64, false), Attn::new(1, 1, 1000, 128, true)]
    }

    #[test]
    fn bf16_weights_and_scores_pass_and_planted_bugs_fail() {
        for a in shapes() {
            let [q, k, v] = inputs(&a, 11);
            let exp = Expected::new(a, &q, &k, &v);
            let rows = sample_rows(a.seq);
            let flash = model(&a, &q, &k, &v, &rows, HONEST);
            exp.check("bf16 P", &flash).unwrap();
            let math = Model {
                bf16_scores: true,
                ..HONEST
            };
            exp.check("bf16 scores and P", &model(&a, &q, &k, &v, &rows, math))
                .unwrap();
            // A key dropped from the end of every row (the causal row 0 has only one).
            let long: Vec<usize> = rows.iter().copied().filter(|&i| i > 0).collect();
            let dropped = Model { drop: 1, ..HONEST };
            let mut o = model(&a, &q, &k, &v, &long, dropped);
            let d = a.dim;
            o[..d].copy_from_slice(&flash[..d]);
            assert!(exp.check("dropped key", &o).is_err(), "{a}");
            // One element zeroed.
            let mut z = flash.clone();
            let at = (rows[rows.len() / 2]) * d + 3;
            assert!(z[at].abs() > 1e-3);
            z[at] = 0.0;
            assert!(exp.check("zeroed", &z).is_err(), "{a}");
            // The scale left out.
            let unscaled = Model {
                no_scale: true,
                ..HONEST
            };
            assert!(exp.check("no scale", &model(&a, &q, &k, &v, &rows, unscaled)).is_err());
            // A NaN anywhere, even outside the sampled rows.
            let mut nan = flash.clone();
            let outside = (0..a.seq).find(|i| !rows.contains(i));
            if let Some(i) = outside {
                nan[i * d] = f32::NAN;
                assert!(exp.check("NaN", &nan).is_err());
            }
        }
        // The causal mask ignored.
        let a = Attn::new(1, 1, 300, 64, true);
        let [q, k, v] = inputs(&a, 12);
        let exp = Expected::new(a, &q, &k, &v);
        let rows = sample_rows(a.seq);
        let unmasked = Model {
            no_mask: true,
            ..HONEST
        };
        assert!(exp.check("no mask", &model(&a, &q, &k, &v, &rows, unmasked)).is_err());
    }

    /// Why the peers get the wider check: the family's tolerance alone refuses a kernel that
    /// rounds its weights to bf16, as FlashAttention and cuDNN do.
    #[test]
    fn the_family_tolerance_alone_refuses_bf16_weights() {
        let a = shapes()[0];
        let [q, k, v] = inputs(&a, 11);
        let rows = sample_rows(a.seq);
        let want: Vec<f32> = attention_ref(&a, &q, &k, &v, &rows)
            .into_iter()
            .map(|x| x as f32)
            .collect();
        let o = model(&a, &q, &k, &v, &rows, HONEST);
        let got: Vec<f32> = rows
            .iter()
            .flat_map(|&i| o[i * a.dim..(i + 1) * a.dim].to_vec())
            .collect();
        let (rel, abs) = TOLERANCE;
        assert!(compare_f32("bf16 P", &got, &want, rel, abs).is_err());
    }

    /// The headers name the columns as the bench fills them.
    #[test]
    fn peer_columns_are_named_for_sdpa() {
        let c = crate::report::peer_columns(super::super::FAMILY.name);
        assert_eq!((c.first, c.second), ("SDPA flash", "SDPA cuDNN"));
    }

    #[test]
    fn spread_shrinks_as_keys_are_added() {
        let q = [0.5f32; 64];
        let kv = vec![0.25f32; 64 * 1024];
        let row = |j: usize| &kv[j * 64..(j + 1) * 64];
        // One key: 6σ of a weight off by 2^-9·(1 + |s|), times |v| + |o|.
        let one = spread(&q, 1, 0.125, row, row);
        // 1024 equal keys: each weight 1/1024, the errors add up as √1024 of them.
        let two_k = spread(&q, 1024, 0.125, row, row);
        assert!(one[0] > 10.0 * two_k[0], "{} {}", one[0], two_k[0]);
        assert!(one[0] < 0.01);
    }
}
