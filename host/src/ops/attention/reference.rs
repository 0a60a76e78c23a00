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
