//! decode: what the PyTorch peer is checked against.
//!
//! The peer (`--peer torch`) is what a user without a paged kernel would run: PyTorch's
//! `scaled_dot_product_attention` on queries `[B, Hq, 1, D]` against a contiguous copy of
//! the cache, `[B, Hkv, Lmax, D]` with each sequence padded to the batch's longest context,
//! a boolean mask over the padding (none when no sequence is padded) and `enable_gqa=True`,
//! with the context lengths of rooflab's row (sent in the request). The script dumps all the
//! queries and outputs, and the keys and values of a few sequences ([`checked`]) as they
//! were before padding; here they are laid out as a paged cache of one-key pages so that
//! [`decode_ref`], the family's reference, reads them through a block table, and the output
//! is held to attention's peer check (the family's tolerance widened by bf16 weights and
//! scores: `attention::peer`).

use super::launch::DecodeShape;
use super::reference::decode_ref;
use crate::check::par_map;
use crate::ops::attention::peer::{compare_with_spread, spread};

/// The peer's op (the script's name; `torch_peer::Mode::SdpaContiguous` is its column,
/// `report::DECODE_PEER_COLUMNS` its header).
pub const DECODE_SDPA: &str = "decode_sdpa";

/// The sequences whose keys and values the peer dumps and the check compares: the first,
/// a third and half way in, and the last (as the bench's own check).
pub fn checked(batch: usize) -> Vec<usize> {
    let mut s: Vec<usize> = [0, batch / 3, batch / 2, batch.saturating_sub(1)]
        .into_iter()
        .filter(|&b| b < batch)
        .collect();
    s.dedup();
    s
}

/// Elements of the dumped keys (or values) of `seqs`: each sequence's `[len, Hkv, D]`.
pub fn kv_elements(hkv: usize, dim: usize, lens: &[u32], seqs: &[usize]) -> usize {
    seqs.iter().map(|&b| lens[b] as usize).sum::<usize>() * hkv * dim
}

/// The reference of one peer request: the checked sequences' outputs (every head) in f64
/// and the spread each element is allowed.
pub struct Expected {
    batch: usize,
    row: usize,
    seqs: Vec<usize>,
    want: Vec<f64>,
    spread: Vec<f64>,
}

impl Expected {
    /// Heads `hq`, `hkv` of `dim`; `lens` every sequence's context; `q` every query
    /// (`[B, Hq, D]`); `k`, `v` the keys and values of `seqs`, one sequence after the other,
    /// each `[len, Hkv, D]` (as the script dumps them).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        hq: usize,
        hkv: usize,
        dim: usize,
        lens: &[u32],
        seqs: &[usize],
        q: &[f32],
        k: &[f32],
        v: &[f32],
    ) -> Result<Expected, String> {
        let batch = lens.len();
        if hkv == 0 || !hq.is_multiple_of(hkv) {
            return Err(format!("Hq {hq} is not a multiple of Hkv {hkv}"));
        }
        if let Some(b) = seqs.iter().find(|&&b| b >= batch || lens[b] == 0) {
            return Err(format!("sequence {b} is not in the batch or has no keys"));
        }
        let kv = kv_elements(hkv, dim, lens, seqs);
        if q.len() != batch * hq * dim || k.len() != kv || v.len() != kv {
            return Err(format!(
                "q, k, v hold {}, {}, {} elements; {}, {kv}, {kv} expected",
                q.len(),
                k.len(),
                v.len(),
                batch * hq * dim
            ));
        }
        // The checked sequences as a paged cache of one-key pages, in dump order.
        let n = seqs.len();
        let sub: Vec<u32> = seqs.iter().map(|&b| lens[b]).collect();
        let max_pages = sub.iter().copied().max().unwrap_or(1) as usize;
        let mut offsets = Vec::with_capacity(n);
        let mut table = vec![u32::MAX; n * max_pages];
        let mut at = 0usize;
        for (i, &l) in sub.iter().enumerate() {
            offsets.push(at);
            for j in 0..l as usize {
                table[i * max_pages + j] = (at + j) as u32;
            }
            at += l as usize;
        }
        let s = DecodeShape {
            batch: n,
            hq,
            hkv,
            dim,
            page_size: 1,
            num_pages: at,
            max_pages,
        };
        let row = hq * dim;
        let q_sub: Vec<f32> = seqs
            .iter()
            .flat_map(|&b| q[b * row..(b + 1) * row].iter().copied())
            .collect();
        let all: Vec<usize> = (0..n).collect();
        let want = decode_ref(&s, &q_sub, k, v, &table, &sub, &all);
        let (group, scale) = (hq / hkv, 1.0 / (dim as f64).sqrt());
        let spread = par_map(n * hq, |task| {
            let (i, h) = (task / hq, task % hq);
            let kvh = h / group;
            let key = |j: usize| {
                let at = ((offsets[i] + j) * hkv + kvh) * dim;
                at..at + dim
            };
            let qr = &q_sub[task * dim..(task + 1) * dim];
            spread(qr, sub[i] as usize, scale, |j| &k[key(j)], |j| &v[key(j)])
        })
        .into_iter()
        .flatten()
        .collect();
        Ok(Expected {
            batch,
            row,
            seqs: seqs.to_vec(),
            want,
            spread,
        })
    }

    /// Elements of the whole output the peer dumps (`[B, Hq, D]`).
    pub fn output_len(&self) -> usize {
        self.batch * self.row
    }

    /// One peer output (`[B, Hq, D]`, as f32): no NaN anywhere, and the checked sequences
    /// within the tolerance.
    pub fn check(&self, what: &str, out: &[f32]) -> Result<(), String> {
        if out.len() != self.output_len() {
            return Err(format!(
                "{what}: {} elements back, {} expected",
                out.len(),
                self.output_len()
            ));
        }
        if let Some(i) = out.iter().position(|x| !x.is_finite()) {
            return Err(format!("{what}: out[{i}] = {}", out[i]));
        }
        let got: Vec<f32> = self
            .seqs
            .iter()
            .flat_map(|&b| out[b * self.row..(b + 1) * self.row].iter().copied())
            .collect();
        compare_with_spread(what, &got, &self.want, &self.spread)
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::check::{random_f32, rng};
    use crate::tensor::Dtype;

    /// The header says that the peer reads a contiguous cache.
    #[test]
    fn peer_column_says_contiguous() {
        let c = crate::report::peer_columns(super::super::FAMILY.name);
        assert!(c.first.contains("contiguous KV"));
    }

    #[test]
    fn checked_sequences() {
        assert_eq!(checked(1), vec![0]);
        assert_eq!(checked(2), vec![0, 1]);
        assert_eq!(checked(16), vec![0, 5, 8, 15]);
        assert_eq!(checked(0), Vec::<usize>::new());
    }

    /// SDPA's arithmetic modelled in f32 on the dumped layout (keys `[len, Hkv, D]` per
    /// sequence), the GQA group mapped as `enable_gqa` does (query head h reads KV head
    /// h / (Hq/Hkv)), weights rounded to bf16; `extra` keys read past each context (a mask
    /// off by some) and `interleave` mapping heads as h % Hkv instead (a GQA bug).
    #[allow(clippy::too_many_arguments)]
    fn sdpa_model(
        hq: usize,
        hkv: usize,
        d: usize,
        lens: &[u32],
        q: &[f32],
        kv: &[(Vec<f32>, Vec<f32>)],
        extra: usize,
        interleave: bool,
    ) -> Vec<f32> {
        let bf = |x: f32| Dtype::Bf16.quantize(x);
        let scale = 1.0 / (d as f32).sqrt();
        let mut out = vec![0.0f32; lens.len() * hq * d];
        for (b, &len) in lens.iter().enumerate() {
            let (k, v) = &kv[b];
            for h in 0..hq {
                let g = if interleave { h % hkv } else { h / (hq / hkv) };
                let qr = &q[(b * hq + h) * d..(b * hq + h + 1) * d];
                let n = len as usize + extra;
                let row = |j: usize| (j * hkv + g) * d..(j * hkv + g + 1) * d;
                let s: Vec<f32> = (0..n)
                    .map(|j| qr.iter().zip(&k[row(j)]).map(|(a, b)| a * b).sum::<f32>() * scale)
                    .collect();
                let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let p: Vec<f32> = s.iter().map(|&x| (x - m).exp()).collect();
                let l: f32 = p.iter().sum();
                for c in 0..d {
                    let acc: f32 = (0..n).map(|j| bf(p[j]) * v[row(j)][c]).sum();
                    out[(b * hq + h) * d + c] = bf(acc / l);
                }
            }
        }
        out
    }

    #[test]
    fn sdpa_passes_and_mask_and_gqa_bugs_fail() {
        let (hq, hkv, d) = (8, 2, 64);
        let lens = [900u32, 1, 37, 16, 300];
        let mut r = rng(21);
        let mut bf16 = |n| -> Vec<f32> {
            random_f32(&mut r, n, -1.0, 1.0)
                .into_iter()
                .map(|x| Dtype::Bf16.quantize(x))
                .collect()
        };
        let q = bf16(lens.len() * hq * d);
        // Each sequence's keys and values with 4 padded keys behind (what a mask hides).
        let kv: Vec<(Vec<f32>, Vec<f32>)> = lens
            .iter()
            .map(|&l| ((l as usize + 4) * hkv * d, ()))
            .map(|(n, ())| (bf16(n), bf16(n)))
            .collect();
        let seqs = checked(lens.len());
        assert_eq!(seqs, vec![0, 1, 2, 4]);
        let dump = |which: usize| -> Vec<f32> {
            seqs.iter()
                .flat_map(|&b| {
                    let t = if which == 0 { &kv[b].0 } else { &kv[b].1 };
                    t[..lens[b] as usize * hkv * d].to_vec()
                })
                .collect()
        };
        let (k, v) = (dump(0), dump(1));
        let exp = Expected::new(hq, hkv, d, &lens, &seqs, &q, &k, &v).unwrap();
        assert_eq!(exp.output_len(), lens.len() * hq * d);
        let good = sdpa_model(hq, hkv, d, &lens, &q, &kv, 0, false);
        exp.check("sdpa model", &good).unwrap();
        let one_more = sdpa_model(hq, hkv, d, &lens, &q, &kv, 1, false);
        assert!(exp.check("a padded key read", &one_more).is_err());
        let swapped = sdpa_model(hq, hkv, d, &lens, &q, &kv, 0, true);
        assert!(exp.check("GQA interleaved", &swapped).is_err());
        let mut nan = good.clone();
        nan[3 * hq * d] = f32::NAN; // sequence 3, not a checked one
        assert!(exp.check("NaN", &nan).is_err());
        // A dump of the wrong size is refused before any reference.
        assert!(Expected::new(hq, hkv, d, &lens, &seqs, &q, &k[1..], &v).is_err());
        assert!(Expected::new(hq, 3, d, &lens, &seqs, &q, &k, &v).is_err());
    }
}
