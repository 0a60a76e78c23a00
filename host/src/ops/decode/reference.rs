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

/// Decode v06 on the CPU, one warp at a time, with the kernel's own index functions (its
/// copies' layout, each `ldmatrix` row address, where the Sᵀ and Oᵀ fragments sit) and
/// `ldmatrix`/`mma.sync`/`movmatrix` as the PTX ISA lays out their fragments: a
/// transposition or swizzle bug shows here as a wrong output, before any GPU. It also
/// checks what the GPU would not report: every copy inside its buffer and written once,
/// every `ldmatrix` phase free of bank conflicts, every output element written once. The
/// ring and the merge are v05's (verified on the GPU); a warp here takes every tile. With
/// `bulk`, v09's buffers instead: each key's row copied whole into a padded row
/// (`v09_bulk_copy::row_bytes`), the keys past the context copies of its last, the padding
/// left NaN (an `ldmatrix` that read it would spoil the output). With `Copy::TmaPages`,
/// v10's: the 128-byte-swizzled sub-tiles TMA writes, the rows past the context NaN (a stale
/// page's) until `zero_rows`'s pieces clear V's.
#[cfg(test)]
mod v06_emulation {
    use super::*;
    use crate::check::{compare_f32, random_f32, rng};
    use crate::ops::attention::tests::TOLERANCE;
    use crate::warp_emulation::{
        Lanes, from_bits, halves, ldmatrix_x4, mma, movmatrix_trans, pack, shfl_xor, to_bits,
    };
    use rand::seq::SliceRandom;
    use rooflab_kernels::decode::v06_keys_as_rows::{
        HEADS, TILE, chunk_offset, k_lane_offset, st_key_head, v_lane_offset,
    };
    use rooflab_kernels::decode::v09_bulk_copy as v09;
    use rooflab_kernels::decode::v10_tma_pages as v10;

    /// Which step's buffers the emulation fills.
    #[derive(Clone, Copy, PartialEq)]
    enum Copy {
        CpAsync,
        BulkRows,
        TmaPages,
    }

    /// v10's fill: row `r`'s chunk `c` at `chunk_at(r, c)`; past the context, NaN rows, then
    /// (V) the kernel's zeroing pieces.
    fn load_tma(buf: &mut [u16], rows: &[Option<&[f32]>], d: u32, is_v: bool) {
        let mut seen = std::collections::HashSet::new();
        for (r, row) in rows.iter().enumerate() {
            for c in 0..d / 8 {
                let at = v10::chunk_at(r as u32, c);
                assert!(at + 16 <= v10::tile_bytes(d) && seen.insert(at));
                for e in 0..8 {
                    buf[(at / 2 + e) as usize] = to_bits(row.map_or(f32::NAN, |x| x[(8 * c + e) as usize]));
                }
            }
        }
        let valid = rows.iter().filter(|r| r.is_some()).count() as u32;
        if is_v && valid < TILE {
            for i in 0..v10::zero_pieces(valid, d) {
                let at = v10::zero_piece_at(valid, i, d);
                assert!(at + 16 <= v10::tile_bytes(d));
                buf[(at / 2) as usize..(at / 2 + 8) as usize].fill(0);
            }
        }
    }

    /// v09's fill: row `r` of the tile (the key's cache row; past the context, its last key's)
    /// at `r · row_bytes`, `2·D` bytes; the padding untouched.
    fn load_bulk(buf: &mut [u16], rows: &[&[f32]], d: u32) {
        for (r, row) in rows.iter().enumerate() {
            let at = r as u32 * v09::row_bytes(d) / 2;
            assert!((at + d) * 2 <= v09::tile_bytes(d));
            for e in 0..d {
                buf[(at + e) as usize] = to_bits(row[e as usize]);
            }
        }
    }

    /// The kernel's `load_rows::<D, 1>`: lane `l` copies row `l / 2` (None: past the slice,
    /// zero-filled), chunks `2c + l % 2` at `chunk_offset(l, c % 4) + 128·(c / 4)`.
    fn load(buf: &mut [u16], rows: &[Option<&[f32]>], d: u32) {
        let mut seen = std::collections::HashSet::new();
        for lane in 0..32u32 {
            let r = lane / 2;
            for c in 0..d / 16 {
                let at = r * d * 2 + chunk_offset(lane, c % 4) + 128 * (c / 4);
                assert!(at.is_multiple_of(16) && at + 16 <= TILE * d * 2 && seen.insert(at));
                let ch = 2 * c + lane % 2;
                for e in 0..8 {
                    let x = rows[r as usize].map_or(0.0, |row| row[(8 * ch + e) as usize]);
                    buf[(at / 2 + e) as usize] = to_bits(x);
                }
            }
        }
        assert_eq!(seen.len() as u32, TILE * d / 8);
    }

    /// `split_bf16x2`: the bf16 pair and the pair of what its rounding left.
    fn split(p0: f32, p1: f32) -> (u32, u32) {
        let hi = pack(p0, p1);
        let [h0, h1] = halves(hi);
        (hi, pack(p0 - h0, p1 - h1))
    }

    /// One warp over sequence `b`'s whole context for KV head `kvh`, heads chunk `chunk`:
    /// the normalized rows `[HEADS][D]` (NaN where never written, heads past the group).
    #[allow(clippy::too_many_arguments)]
    fn warp(s: &DecodeShape, q: &[f32], k: &[f32], v: &[f32], table: &[u32], len: u32, b: usize, kvh: usize, chunk: u32, copy: Copy) -> Vec<f32> {
        let bulk = copy == Copy::BulkRows;
        let tma = copy == Copy::TmaPages;
        let (d, ks) = (s.dim as u32, s.dim / 16);
        let group = (s.hq / s.hkv) as u32;
        let sl = s.scale() * std::f32::consts::LOG2_E;
        let qf: Vec<Lanes<[u32; 2]>> = (0..ks)
            .map(|kk| {
                std::array::from_fn(|l| {
                    let (g, t) = (l / 4, l % 4);
                    let h = chunk * HEADS + g as u32;
                    if h >= group {
                        return [0, 0];
                    }
                    let row = &q[(b * s.hq + kvh * group as usize + h as usize) * s.dim..];
                    std::array::from_fn(|i| {
                        let at = 16 * kk + 2 * t + 8 * i;
                        pack(row[at], row[at + 1])
                    })
                })
            })
            .collect();
        let row_of = |j: u32| -> usize {
            let page = table[b * s.max_pages + j as usize / s.page_size] as usize;
            ((page * s.page_size + j as usize % s.page_size) * s.hkv + kvh) * s.dim
        };
        let tb = if bulk { v09::tile_bytes(d) } else { TILE * d * 2 };
        let klo = |ln: u32, i: u32| match copy {
            Copy::BulkRows => v09::k_lane_offset(d, ln, i),
            Copy::TmaPages => v10::k_lane_offset(ln, i),
            Copy::CpAsync => k_lane_offset(d, ln, i),
        };
        let vlo = |ln: u32, i: u32| match copy {
            Copy::BulkRows => v09::v_lane_offset(d, ln, i),
            Copy::TmaPages => v10::v_lane_offset(ln, i),
            Copy::CpAsync => v_lane_offset(d, ln, i),
        };
        let jstride = if tma { v10::SUB_TILE_BYTES } else { 128 };
        let mut acc = vec![[[0.0f32; 4]; 32]; ks];
        let mut m = [[f32::NEG_INFINITY; 2]; 32];
        let mut l = [[0.0f32; 2]; 32];
        for j0 in (0..len).step_by(TILE as usize) {
            let gather = |c: &'_ [f32], is_v: bool| -> Vec<u16> {
                let mut buf = vec![0x7fc0u16; (tb / 2) as usize];
                if tma {
                    let rows: Vec<Option<&[f32]>> = (0..TILE)
                        .map(|r| (j0 + r < len).then(|| &c[row_of(j0 + r)..][..s.dim]))
                        .collect();
                    load_tma(&mut buf, &rows, d, is_v);
                } else if bulk {
                    let rows: Vec<&[f32]> = (0..TILE).map(|r| &c[row_of((j0 + r).min(len - 1))..][..s.dim]).collect();
                    load_bulk(&mut buf, &rows, d);
                } else {
                    let rows: Vec<Option<&[f32]>> = (0..TILE)
                        .map(|r| (j0 + r < len).then(|| &c[row_of(j0 + r)..][..s.dim]))
                        .collect();
                    load(&mut buf, &rows, d);
                }
                buf
            };
            let (kb, vb) = (gather(k, false), gather(v, true));
            let mut sc = [[0.0f32; 4]; 32];
            let mut sc_odd = [[0.0f32; 4]; 32];
            for (kk, qk) in qf.iter().enumerate() {
                let addr = std::array::from_fn(|ln| klo(ln as u32, kk as u32 % 4) + jstride * (kk as u32 / 4));
                let a = ldmatrix_x4(&kb, &addr, (0, tb), false);
                if kk % 2 == 0 {
                    sc = mma(&a, qk, &sc);
                } else {
                    sc_odd = mma(&a, qk, &sc_odd);
                }
            }
            for (ln, x) in sc.iter_mut().enumerate() {
                for (e, x) in x.iter_mut().enumerate() {
                    *x += sc_odd[ln][e];
                    if j0 + st_key_head(ln as u32, e as u32).0 >= len {
                        *x = f32::NEG_INFINITY;
                    }
                }
            }
            let mut p = [[0.0f32; 4]; 32];
            for h in 0..2 {
                let mut mx: Lanes<f32> = std::array::from_fn(|ln| m[ln][h].max(sc[ln][h]).max(sc[ln][h + 2]));
                for mask in [4, 8, 16] {
                    let o = shfl_xor(&mx, mask);
                    mx = std::array::from_fn(|ln| mx[ln].max(o[ln]));
                }
                for ln in 0..32 {
                    assert!(mx[ln].is_finite(), "tile {j0}: a head's max is not finite");
                    let msc = mx[ln] * sl;
                    let corr = (m[ln][h] * sl - msc).exp2();
                    m[ln][h] = mx[ln];
                    for e in [h, h + 2] {
                        p[ln][e] = sc[ln][e].mul_add(sl, -msc).exp2();
                    }
                    l[ln][h] = l[ln][h].mul_add(corr, p[ln][h] + p[ln][h + 2]);
                    for ai in acc.iter_mut() {
                        ai[ln][h] *= corr;
                        ai[ln][h + 2] *= corr;
                    }
                }
            }
            // Pᵀ's B fragments: keys 0-7 and 8-15, hi and lo, transposed.
            let halves_of = |e: usize| -> (Lanes<u32>, Lanes<u32>) {
                let both: Lanes<(u32, u32)> = std::array::from_fn(|ln| split(p[ln][e], p[ln][e + 1]));
                (
                    movmatrix_trans(&both.map(|x| x.0)),
                    movmatrix_trans(&both.map(|x| x.1)),
                )
            };
            let ((hi0, lo0), (hi1, lo1)) = (halves_of(0), halves_of(2));
            let pb_hi: Lanes<[u32; 2]> = std::array::from_fn(|ln| [hi0[ln], hi1[ln]]);
            let pb_lo: Lanes<[u32; 2]> = std::array::from_fn(|ln| [lo0[ln], lo1[ln]]);
            for (i, ai) in acc.iter_mut().enumerate() {
                let addr = std::array::from_fn(|ln| vlo(ln as u32, i as u32 % 4) + jstride * (i as u32 / 4));
                let a = ldmatrix_x4(&vb, &addr, (0, tb), true);
                *ai = mma(&a, &pb_hi, ai);
                *ai = mma(&a, &pb_lo, ai);
            }
        }
        // The partial sums over the 8 lanes of a column pair (`shfl.bfly` 4, 8, 16).
        for mask in [4, 8, 16] {
            let o = l;
            for (ln, x) in l.iter_mut().enumerate() {
                x[0] += o[ln ^ mask][0];
                x[1] += o[ln ^ mask][1];
            }
        }
        let mut out = vec![f32::NAN; HEADS as usize * s.dim];
        let mut written = vec![false; out.len()];
        for (i, ai) in acc.iter().enumerate() {
            for ln in 0..32 {
                for e in 0..4 {
                    let (dim, head) = st_key_head(ln as u32, e as u32);
                    let at = head as usize * s.dim + 16 * i + dim as usize;
                    assert!(!written[at], "Oᵀ element (head {head}, dim {}) twice", 16 * i + dim as usize);
                    written[at] = true;
                    if chunk * HEADS + head < group {
                        out[at] = from_bits(to_bits(ai[ln][e] / l[ln][e % 2]));
                    }
                }
            }
        }
        assert!(written.iter().all(|&w| w));
        out
    }

    /// Random problems (contexts around the tile and page sizes, shuffled pages, groups of
    /// 4, 3 and 12): every warp's rows against the f64 reference, in v06's buffers and v09's.
    #[test]
    fn v06_fragments_match_the_reference() {
        fragments_match_the_reference(Copy::CpAsync);
    }

    #[test]
    fn v09_fragments_match_the_reference() {
        fragments_match_the_reference(Copy::BulkRows);
    }

    #[test]
    fn v10_fragments_match_the_reference() {
        fragments_match_the_reference(Copy::TmaPages);
    }

    fn fragments_match_the_reference(copy: Copy) {
        for (seed, (hq, hkv, dim, page_size, lens)) in [
            (32, 8, 128, 16, vec![1u32, 15, 16, 17, 100]),
            (3, 1, 64, 5, vec![33, 7]),
            (12, 1, 128, 3, vec![47]),
            (8, 2, 64, 16, vec![161]),
        ]
        .into_iter()
        .enumerate()
        {
            let mut r = rng(0x0606 + seed as u64);
            let used: Vec<usize> = lens.iter().map(|&l| (l as usize).div_ceil(page_size)).collect();
            let max_pages = *used.iter().max().unwrap();
            let num_pages = used.iter().sum::<usize>() + 2;
            let mut perm: Vec<u32> = (0..num_pages as u32).collect();
            perm.shuffle(&mut r);
            let mut table = vec![u32::MAX; lens.len() * max_pages];
            let mut next = perm.into_iter();
            for (b, &u) in used.iter().enumerate() {
                for p in 0..u {
                    table[b * max_pages + p] = next.next().unwrap();
                }
            }
            let s = DecodeShape { batch: lens.len(), hq, hkv, dim, page_size, num_pages, max_pages };
            let bf = |n: usize, r: &mut _| -> Vec<f32> {
                random_f32(r, n, -1.0, 1.0).into_iter().map(|x| from_bits(to_bits(x))).collect()
            };
            let q = bf(s.q_elements(), &mut r);
            let k = bf(s.cache_elements(), &mut r);
            let v = bf(s.cache_elements(), &mut r);
            let seqs: Vec<usize> = (0..s.batch).collect();
            let want: Vec<f32> = decode_ref(&s, &q, &k, &v, &table, &lens, &seqs).into_iter().map(|x| x as f32).collect();
            let group = hq / hkv;
            for (b, &len) in lens.iter().enumerate() {
                for kvh in 0..hkv {
                    for chunk in 0..group.div_ceil(HEADS as usize) as u32 {
                        let got = warp(&s, &q, &k, &v, &table, len, b, kvh, chunk, copy);
                        let heads = (group - chunk as usize * HEADS as usize).min(HEADS as usize);
                        let h0 = b * hq + kvh * group + chunk as usize * HEADS as usize;
                        let what = format!("Hq {hq} Hkv {hkv} D {dim} page {page_size}: seq {b} (len {len}) kv head {kvh} chunk {chunk}");
                        compare_f32(&what, &got[..heads * dim], &want[h0 * dim..(h0 + heads) * dim], TOLERANCE.0, TOLERANCE.1)
                            .unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            }
        }
    }
}
