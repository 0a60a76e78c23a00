//! attention: the CPU reference (f64 over the bf16 inputs), for chosen query rows.

use super::launch::Attn;
use crate::check::par_map;

/// The query rows a check compares, the same in every head: all of them up to 256 rows;
/// beyond, the first and last 8, the rows around the multiples of 32 and 8 (the kernels'
/// tiles), and 40 spread evenly between.
pub fn sample_rows(seq: usize) -> Vec<usize> {
    if seq <= 256 {
        return (0..seq).collect();
    }
    let mut r: Vec<usize> = (0..8).chain(seq - 8..seq).collect();
    for edge in [31, 32, 33, 63, 64, 65, 127, 128, 129, 4095, 4096, 4097] {
        if edge < seq {
            r.push(edge);
        }
    }
    r.extend((0..40).map(|i| i * seq / 40));
    r.sort_unstable();
    r.dedup();
    r
}

/// One output row in f64: `softmax(q·k_j·scale)·V` over keys `0..n`, `key(j)` and
/// `value(j)` giving their rows (the decode reference gathers them through its block table).
pub fn attend<'a>(
    q: &[f32],
    n: usize,
    scale: f64,
    key: impl Fn(usize) -> &'a [f32],
    value: impl Fn(usize) -> &'a [f32],
) -> Vec<f64> {
    let scores: Vec<f64> = (0..n)
        .map(|j| q.iter().zip(key(j)).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>() * scale)
        .collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|&x| (x - m).exp()).collect();
    let sum: f64 = p.iter().sum();
    let mut out = vec![0.0f64; q.len()];
    for (j, &pj) in p.iter().enumerate() {
        for (o, &x) in out.iter_mut().zip(value(j)) {
            *o += pj * x as f64;
        }
    }
    out.iter().map(|o| o / sum).collect()
}

/// `O[bh][i][..]` in f64 for every head and each row of `rows`, heads outermost then rows
/// (`rows.len()·D` values a head).
pub fn attention_ref(a: &Attn, q: &[f32], k: &[f32], v: &[f32], rows: &[usize]) -> Vec<f64> {
    let (s, d) = (a.seq, a.dim);
    let scale = 1.0 / (d as f64).sqrt();
    let per_head = par_map(a.bh() * rows.len(), |task| {
        let (bh, i) = (task / rows.len(), rows[task % rows.len()]);
        let head = bh * s * d;
        let qi = &q[head + i * d..head + (i + 1) * d];
        let keys = if a.causal { i + 1 } else { s };
        let row = |j: usize| head + j * d..head + (j + 1) * d;
        attend(qi, keys, scale, |j| &k[row(j)], |j| &v[row(j)])
    });
    per_head.into_iter().flatten().collect()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    /// One key: the output is its value row; two equal keys average their values; the
    /// causal first row sees only key 0.
    #[test]
    fn reference_by_hand() {
        let d = 64;
        let a = Attn::new(1, 1, 2, d, false);
        let q = vec![0.0f32; 2 * d];
        let k = vec![0.0f32; 2 * d];
        let v: Vec<f32> = (0..2 * d).map(|x| if x < d { 1.0 } else { 3.0 }).collect();
        let o = attention_ref(&a, &q, &k, &v, &[0, 1]);
        assert!(o.iter().all(|&x| (x - 2.0).abs() < 1e-12));
        let c = Attn { causal: true, ..a };
        let o = attention_ref(&c, &q, &k, &v, &[0, 1]);
        assert!(o[..d].iter().all(|&x| (x - 1.0).abs() < 1e-12));
        assert!(o[d..].iter().all(|&x| (x - 2.0).abs() < 1e-12));
    }

    #[test]
    fn sampled_rows_cover_the_edges() {
        assert_eq!(sample_rows(17), (0..17).collect::<Vec<_>>());
        let r = sample_rows(4097);
        for must in [0, 7, 31, 32, 33, 4095, 4096] {
            assert!(r.contains(&must), "{must}");
        }
        assert!(r.windows(2).all(|w| w[0] < w[1]));
    }
}

/// The tolerance against the arithmetic: an f32 model of the kernels (scores pre-scaled by
/// `scale·log2 e`, one key a lane in tiles of 32, the online rescaling, an `exp2` off by
/// ±2^-21 as `ex2.approx` may be, one bf16 rounding of the output) passes the check at a
/// long row, and the bugs the check exists for — a key dropped, an output element zeroed —
/// fail it.
#[cfg(test)]
mod tolerance_tests {
    use super::*;
    use crate::check::compare_f32;
    use crate::ops::attention::tests::{TOLERANCE, inputs};
    use crate::tensor::Dtype;

    /// The kernels' arithmetic in f32 for `rows` of every head, with `drop` keys left off
    /// the end of each row's context.
    fn model(a: &Attn, q: &[f32], k: &[f32], v: &[f32], rows: &[usize], drop: usize) -> Vec<f32> {
        let (s, d) = (a.seq, a.dim);
        let sl = a.scale() * std::f32::consts::LOG2_E;
        let exp2 = |x: f32, j: usize| x.exp2() * if j.is_multiple_of(2) { 1.0 + 4.8e-7 } else { 1.0 - 4.8e-7 };
        let mut out = Vec::new();
        for bh in 0..a.bh() {
            let head = bh * s * d;
            for &i in rows {
                let keys = if a.causal { i + 1 } else { s } - drop;
                let qs: Vec<f32> = (0..d).map(|c| q[head + i * d + c] * sl).collect();
                let (mut m, mut l, mut acc) = (f32::NEG_INFINITY, 0.0f32, vec![0.0f32; d]);
                for j0 in (0..keys).step_by(32) {
                    let tile: Vec<usize> = (j0..keys.min(j0 + 32)).collect();
                    let sc: Vec<f32> = tile
                        .iter()
                        .map(|&j| (0..d).fold(0.0f32, |t, c| qs[c].mul_add(k[head + j * d + c], t)))
                        .collect();
                    let m_new = sc.iter().copied().fold(m, f32::max);
                    let p: Vec<f32> = sc.iter().zip(&tile).map(|(&x, &j)| exp2(x - m_new, j)).collect();
                    let corr = exp2(m - m_new, 0);
                    l = l.mul_add(corr, p.iter().sum::<f32>());
                    for (c, o) in acc.iter_mut().enumerate() {
                        *o *= corr;
                        for (&pj, &j) in p.iter().zip(&tile) {
                            *o = pj.mul_add(v[head + j * d + c], *o);
                        }
                    }
                    m = m_new;
                }
                out.extend(acc.iter().map(|o| Dtype::Bf16.quantize(o * (1.0 / l))));
            }
        }
        out
    }

    #[test]
    fn tolerance_passes_the_arithmetic_and_fails_planted_bugs() {
        for a in [Attn::new(1, 1, 4097, 64, false), Attn::new(1, 1, 1000, 128, true)] {
            let [q, k, v] = inputs(&a, 7);
            let rows = sample_rows(a.seq);
            let want: Vec<f32> = attention_ref(&a, &q, &k, &v, &rows)
                .into_iter()
                .map(|x| x as f32)
                .collect();
            let (rel, abs) = TOLERANCE;
            let honest = model(&a, &q, &k, &v, &rows, 0);
            compare_f32("f32 model", &honest, &want, rel, abs).unwrap();
            // A key dropped from the end of every row (only rows with more than one key).
            let long: Vec<usize> = rows.iter().copied().filter(|&i| !a.causal || i > 0).collect();
            let want_long: Vec<f32> = attention_ref(&a, &q, &k, &v, &long)
                .into_iter()
                .map(|x| x as f32)
                .collect();
            let dropped = model(&a, &q, &k, &v, &long, 1);
            assert!(compare_f32("dropped key", &dropped, &want_long, rel, abs).is_err(), "{a}");
            // One output element zeroed.
            let mut zeroed = honest.clone();
            let at = zeroed.iter().position(|x| x.abs() > 1e-3).unwrap();
            zeroed[at] = 0.0;
            assert!(compare_f32("zeroed", &zeroed, &want, rel, abs).is_err(), "{a}");
        }
    }
}
