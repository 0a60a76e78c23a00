//! decode: the CPU reference (f64 over the bf16 inputs, keys gathered through the table).

use super::launch::DecodeShape;
use crate::check::par_map;
use crate::ops::attention::reference::attend;

/// `out[b][h][..]` in f64 for each sequence `b` of `seqs`, all heads (`seqs.len()·Hq·D`
/// values, sequence-major). `k`, `v` are the caches, `q` the queries (as f32).
#[allow(clippy::too_many_arguments)]
pub fn decode_ref(
    s: &DecodeShape,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    table: &[u32],
    lens: &[u32],
    seqs: &[usize],
) -> Vec<f64> {
    let (d, group) = (s.dim, s.hq / s.hkv);
    let scale = 1.0 / (d as f64).sqrt();
    let rows = par_map(seqs.len() * s.hq, |task| {
        let (b, h) = (seqs[task / s.hq], task % s.hq);
        let kvh = h / group;
        let qr = &q[(b * s.hq + h) * d..(b * s.hq + h + 1) * d];
        let at = |j: usize| {
            let page = table[b * s.max_pages + j / s.page_size] as usize;
            ((page * s.page_size + j % s.page_size) * s.hkv + kvh) * d
        };
        let len = lens[b] as usize;
        attend(qr, len, scale, |j| &k[at(j)..at(j) + d], |j| &v[at(j)..at(j) + d])
    });
    rows.into_iter().flatten().collect()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    /// Pages out of order: the reference must follow the table, not the cache order.
    #[test]
    fn follows_the_block_table() {
        let s = DecodeShape {
            batch: 1,
            hq: 2,
            hkv: 1,
            dim: 64,
            page_size: 1,
            num_pages: 2,
            max_pages: 2,
        };
        let q = vec![0.0f32; 2 * 64];
        let k = vec![0.0f32; 2 * 64];
        // Page 0 holds values 5, page 1 values 1; the sequence's only key is page 1.
        let v: Vec<f32> = (0..128).map(|i| if i < 64 { 5.0 } else { 1.0 }).collect();
        let o = decode_ref(&s, &q, &k, &v, &[1, 0], &[1], &[0]);
        assert!(o.iter().all(|&x| (x - 1.0).abs() < 1e-12));
        let o = decode_ref(&s, &q, &k, &v, &[1, 0], &[2], &[0]);
        assert!(o.iter().all(|&x| (x - 3.0).abs() < 1e-12));
    }
}
