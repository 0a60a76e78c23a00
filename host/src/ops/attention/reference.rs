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

/// One row's scores `q·k_j·scale` and softmax weights (normalized), in f64, over keys
/// `0..n`, `key(j)` giving key j's row.
pub fn scores_and_weights<'a>(
    q: &[f32],
    n: usize,
    scale: f64,
    key: impl Fn(usize) -> &'a [f32],
) -> (Vec<f64>, Vec<f64>) {
    let scores: Vec<f64> = (0..n)
        .map(|j| q.iter().zip(key(j)).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>() * scale)
        .collect();
    let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|&x| (x - m).exp()).collect();
    let sum: f64 = p.iter().sum();
    let p = p.iter().map(|pj| pj / sum).collect();
    (scores, p)
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
    let (_, p) = scores_and_weights(q, n, scale, key);
    let mut out = vec![0.0f64; q.len()];
    for (j, &pj) in p.iter().enumerate() {
        for (o, &x) in out.iter_mut().zip(value(j)) {
            *o += pj * x as f64;
        }
    }
    out
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

/// v03 (`attention_v03_flash_mma`) run on the CPU, warp by warp and lane by lane, with the
/// kernel's own index functions (the swizzle, the copy order, which lane addresses which
/// row for each `ldmatrix`, where the C and P fragments sit) and `ldmatrix`/`mma.sync`
/// emulated as the PTX ISA lays out their fragments ("Matrix Fragments for mma.m16n8k16",
/// "ldmatrix"): a layout bug shows here as a wrong output, before any GPU. It also checks
/// what the GPU would not report: every `ldmatrix` phase free of bank conflicts, every
/// copy and stage inside its tile, each output element written once and rows past S never.
#[cfg(test)]
mod v03_emulation {
    use super::*;
    use crate::check::compare_f32;
    use crate::ops::attention::tests::{TOLERANCE, inputs};
    use crate::warp_emulation::{Lanes, from_bits, halves, ldmatrix_x4, mma, pack, shfl_xor, to_bits};
    use rooflab_kernels::attention::v03_flash_mma::{
        self as v3, BC, BR, STAGES, THREADS, WARPS, acc_row_col, copy_chunk, k_frag_offset, k_lane,
        p_source, q_lane, shared_bytes, stage_offset, swizzled_byte_offset, v_frag_offset, v_lane,
    };

    /// The kernel's `copy_tile`: `rows` rows of D from row `r0` of `head` (rows ≥ seq
    /// zero-filled) into the swizzled tile at byte `dst`, every slot written once.
    fn copy_tile(smem: &mut [u16], head: &[f32], d: u32, seq: u32, rows: u32, r0: u32, dst: u32) {
        let mut seen = std::collections::HashSet::new();
        for t in 0..THREADS {
            for i in 0..rows * d / 8 / THREADS {
                let (r, c) = copy_chunk(d, t + i * THREADS);
                let at = dst + swizzled_byte_offset(d, r, c);
                assert!(at.is_multiple_of(16) && at + 16 <= dst + rows * d * 2 && seen.insert(at));
                for e in 0..8 {
                    let row = r0 + r;
                    let x = if row < seq { head[(row * d + 8 * c + e) as usize] } else { 0.0 };
                    smem[(at / 2 + e) as usize] = to_bits(x);
                }
            }
        }
        assert_eq!(seen.len() as u32, rows * d / 8);
    }

    /// v03 over the whole problem: O for every head, rows < S (NaN where never written).
    fn run(a: &Attn, q: &[f32], k: &[f32], v: &[f32], split: bool) -> Vec<f32> {
        let (seq, d) = (a.seq as u32, a.dim as u32);
        let (ks, nt, no) = ((d / 16) as usize, (BC / 8) as usize, (d / 8) as usize);
        let sl = a.scale() * std::f32::consts::LOG2_E;
        let mut out = vec![f32::NAN; a.elements()];
        let mut written = vec![0u8; a.elements()];
        let grid_x = seq.div_ceil(BR);
        for bh in 0..a.bh() {
            let hr = bh * a.seq * a.dim..(bh + 1) * a.seq * a.dim;
            let (qh, kh, vh) = (&q[hr.clone()], &k[hr.clone()], &v[hr.clone()]);
            for bx in 0..grid_x {
                let q0 = (grid_x - 1 - bx) * BR;
                // Unwritten shared memory reads as NaN.
                let mut sm = vec![0x7fc0u16; (shared_bytes(d) / 2) as usize];
                let end = if a.causal { seq.min(q0 + BR) } else { seq };
                let tiles = end.div_ceil(BC);
                copy_tile(&mut sm, qh, d, seq, BR, q0, 0);
                copy_tile(&mut sm, kh, d, seq, BC, 0, stage_offset(d, true, 0));
                copy_tile(&mut sm, vh, d, seq, BC, 0, stage_offset(d, false, 0));
                let q_tile = (0, BR * d * 2);
                for w in 0..WARPS {
                    let wr = 16 * w;
                    let qf: Vec<Lanes<[u32; 4]>> = (0..ks)
                        .map(|kk| {
                            let addr = std::array::from_fn(|l| {
                                let (r, c) = q_lane(l as u32, kk as u32);
                                swizzled_byte_offset(d, wr + r, c)
                            });
                            ldmatrix_x4(&sm, &addr, q_tile, false)
                        })
                        .collect();
                    // The warp's state (one copy per lane), as the kernel's registers.
                    let mut acc = vec![[[0.0f32; 4]; 32]; no];
                    let mut m = [[f32::NEG_INFINITY; 2]; 32];
                    let mut l = [[0.0f32; 2]; 32];
                    // Each warp replays the block's tile sequence on its own copy of the
                    // stages (the copies are the same for every warp).
                    let mut smw = sm.clone();
                    for jt in 0..tiles {
                        if jt + 1 < tiles {
                            let s = (jt + 1) % STAGES;
                            copy_tile(&mut smw, kh, d, seq, BC, (jt + 1) * BC, stage_offset(d, true, s));
                            copy_tile(&mut smw, vh, d, seq, BC, (jt + 1) * BC, stage_offset(d, false, s));
                        }
                        let (kb, vb) = (stage_offset(d, true, jt % STAGES), stage_offset(d, false, jt % STAGES));
                        let (k_tile, v_tile) = ((kb, kb + BC * d * 2), (vb, vb + BC * d * 2));
                        let j0 = jt * BC;
                        let mut s = vec![[[0.0f32; 4]; 32]; nt];
                        for (kk, qa) in qf.iter().enumerate() {
                            for p in 0..nt / 2 {
                                let addr = std::array::from_fn(|ln| {
                                    kb + k_frag_offset(d, ln as u32, kk as u32, p as u32)
                                });
                                let b = ldmatrix_x4(&smw, &addr, k_tile, false);
                                let b01 = b.map(|x| [x[0], x[1]]);
                                let b23 = b.map(|x| [x[2], x[3]]);
                                s[2 * p] = mma(qa, &b01, &s[2 * p]);
                                s[2 * p + 1] = mma(qa, &b23, &s[2 * p + 1]);
                            }
                        }
                        if j0 + BC > seq || (a.causal && j0 + BC > q0 + 1) {
                            for (n, sn) in s.iter_mut().enumerate() {
                                for (ln, x) in sn.iter_mut().enumerate() {
                                    for (e, x) in x.iter_mut().enumerate() {
                                        let (r, col) = acc_row_col(ln as u32, e as u32);
                                        let key = j0 + 8 * n as u32 + col;
                                        if key >= seq || (a.causal && key > q0 + wr + r) {
                                            *x = f32::NEG_INFINITY;
                                        }
                                    }
                                }
                            }
                        }
                        for r in 0..2 {
                            let mut mx: Lanes<f32> = std::array::from_fn(|ln| {
                                s.iter().fold(m[ln][r], |x, sn| x.max(sn[ln][2 * r]).max(sn[ln][2 * r + 1]))
                            });
                            for mask in [1, 2] {
                                let o = shfl_xor(&mx, mask);
                                mx = std::array::from_fn(|ln| mx[ln].max(o[ln]));
                            }
                            for ln in 0..32 {
                                let msc = if mx[ln] == f32::NEG_INFINITY { 0.0 } else { mx[ln] * sl };
                                let corr = (m[ln][r] * sl - msc).exp2();
                                let mut rs = 0.0f32;
                                for sn in s.iter_mut() {
                                    for e in [2 * r, 2 * r + 1] {
                                        sn[ln][e] = sn[ln][e].mul_add(sl, -msc).exp2();
                                        rs += sn[ln][e];
                                    }
                                }
                                l[ln][r] = l[ln][r].mul_add(corr, rs);
                                for an in acc.iter_mut() {
                                    an[ln][2 * r] *= corr;
                                    an[ln][2 * r + 1] *= corr;
                                }
                                m[ln][r] = mx[ln];
                            }
                        }
                        for kk in 0..nt / 2 {
                            let mut hi = [[0u32; 4]; 32];
                            let mut lo = [[0u32; 4]; 32];
                            for ln in 0..32 {
                                for i in 0..4 {
                                    let (tn, e) = p_source(i);
                                    let x = s[2 * kk + tn][ln];
                                    hi[ln][i] = pack(x[e], x[e + 1]);
                                    let h = halves(hi[ln][i]);
                                    lo[ln][i] = pack(x[e] - h[0], x[e + 1] - h[1]);
                                }
                            }
                            for np in 0..no / 2 {
                                let addr = std::array::from_fn(|ln| {
                                    vb + v_frag_offset(d, ln as u32, kk as u32, np as u32)
                                });
                                let b = ldmatrix_x4(&smw, &addr, v_tile, true);
                                let b01 = b.map(|x| [x[0], x[1]]);
                                let b23 = b.map(|x| [x[2], x[3]]);
                                acc[2 * np] = mma(&hi, &b01, &acc[2 * np]);
                                acc[2 * np + 1] = mma(&hi, &b23, &acc[2 * np + 1]);
                                if split {
                                    acc[2 * np] = mma(&lo, &b01, &acc[2 * np]);
                                    acc[2 * np + 1] = mma(&lo, &b23, &acc[2 * np + 1]);
                                }
                            }
                        }
                    }
                    // Epilogue: the rows' sums over the quad, O staged in bf16 in the warp's
                    // rows of the Q tile (of the block's shared memory: the stores below
                    // read every warp's rows).
                    for r in 0..2 {
                        let mut x: Lanes<f32> = std::array::from_fn(|ln| l[ln][r]);
                        for mask in [1, 2] {
                            let o = shfl_xor(&x, mask);
                            x = std::array::from_fn(|ln| x[ln] + o[ln]);
                        }
                        for (lr, xr) in l.iter_mut().zip(x) {
                            lr[r] = xr;
                        }
                    }
                    for (n, an) in acc.iter().enumerate() {
                        for ln in 0..32 {
                            for h in 0..2 {
                                let (r, c) = acc_row_col(ln as u32, 2 * h as u32);
                                assert!(r < 16);
                                let at = swizzled_byte_offset(d, wr + r, n as u32) + 2 * c;
                                let inv = 1.0 / l[ln][h];
                                let wv = pack(an[ln][2 * h] * inv, an[ln][2 * h + 1] * inv);
                                sm[(at / 2) as usize] = wv as u16;
                                sm[(at / 2 + 1) as usize] = (wv >> 16) as u16;
                            }
                        }
                    }
                }
                for t in 0..THREADS {
                    for i in 0..BR * d / 8 / THREADS {
                        let (r, c) = copy_chunk(d, t + i * THREADS);
                        if q0 + r < seq {
                            let at = (swizzled_byte_offset(d, r, c) / 2) as usize;
                            let o = bh * a.seq * a.dim + ((q0 + r) * d + 8 * c) as usize;
                            for e in 0..8 {
                                out[o + e] = from_bits(sm[at + e]);
                                written[o + e] += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(written.iter().all(|&n| n == 1), "an output element written {:?} times", written.iter().find(|&&n| n != 1));
        out
    }

    /// The kernel's split addresses (a lane part for `kk % 4` or `np % 4`, plus a constant)
    /// are the swizzled (row, chunk) of `k_lane` and `v_lane`, for every lane and step.
    #[test]
    fn v03_split_offsets_are_the_swizzled_rows() {
        for d in [64u32, 128] {
            for lane in 0..32 {
                for kk in 0..d / 16 {
                    for p in 0..BC / 16 {
                        let (r, c) = k_lane(lane, kk);
                        assert_eq!(
                            k_frag_offset(d, lane, kk, p),
                            swizzled_byte_offset(d, 16 * p + r, c),
                            "K d={d} lane={lane} kk={kk} p={p}"
                        );
                    }
                }
                for kk in 0..BC / 16 {
                    for np in 0..d / 16 {
                        let (r, c) = v_lane(lane, np);
                        assert_eq!(
                            v_frag_offset(d, lane, kk, np),
                            swizzled_byte_offset(d, 16 * kk + r, c),
                            "V d={d} lane={lane} kk={kk} np={np}"
                        );
                    }
                }
            }
        }
    }

    fn rows_of(a: &Attn, o: &[f32], rows: &[usize]) -> Vec<f32> {
        (0..a.bh())
            .flat_map(|bh| rows.iter().map(move |&i| (bh * a.seq + i) * a.dim))
            .flat_map(|at| o[at..at + a.dim].to_vec())
            .collect()
    }

    /// The emulated kernel against the f64 reference at the family's tolerance: lengths
    /// below, at and past the tiles, both head dims, causal and not, several heads.
    #[test]
    fn v03_fragments_emulated_match_the_reference() {
        for (i, a) in [
            Attn::new(1, 2, 1, 64, true),
            Attn::new(2, 1, 17, 128, false),
            Attn::new(1, 2, 17, 64, true),
            Attn::new(1, 1, 64, 128, true),
            Attn::new(1, 1, 65, 64, false),
            Attn::new(1, 2, 129, 64, true),
            Attn::new(1, 1, 130, 128, true),
            Attn::new(1, 1, 200, 128, false),
        ]
        .into_iter()
        .enumerate()
        {
            let [q, k, v] = inputs(&a, 40 + i as u64);
            let got = run(&a, &q, &k, &v, v3::P_SPLIT);
            assert!(got.iter().all(|x| x.is_finite()), "{a}");
            let rows = sample_rows(a.seq);
            let want: Vec<f32> = attention_ref(&a, &q, &k, &v, &rows).into_iter().map(|x| x as f32).collect();
            compare_f32(&format!("v03 emulated {a}"), &rows_of(&a, &got, &rows), &want, TOLERANCE.0, TOLERANCE.1)
                .unwrap();
        }
    }

    /// Why `P_SPLIT`: with P rounded to one bf16 (FlashAttention's P·V), the emulated kernel
    /// fails the family's tolerance; with the hi + lo split it passes.
    #[test]
    fn v03_needs_the_split_for_the_family_tolerance() {
        let a = Attn::new(1, 1, 512, 64, false);
        let [q, k, v] = inputs(&a, 9);
        let rows = sample_rows(a.seq);
        let want: Vec<f32> = attention_ref(&a, &q, &k, &v, &rows).into_iter().map(|x| x as f32).collect();
        let (rel, abs) = TOLERANCE;
        let one = rows_of(&a, &run(&a, &q, &k, &v, false), &rows);
        assert!(compare_f32("bf16 P", &one, &want, rel, abs).is_err());
        let split = rows_of(&a, &run(&a, &q, &k, &v, true), &rows);
        compare_f32("bf16 hi + lo P", &split, &want, rel, abs).unwrap();
    }
}

/// v04 (`attention_v04_flash_wgmma`) run on the CPU, consumer warpgroup by warpgroup and
/// thread by thread, with the kernel's own index functions (where each block starts, how
/// many key tiles it reads, which tiles and keys it masks, where each S and O accumulator
/// sits, which S elements make P's A fragments) and wgmma's register fragments as the PTX
/// ISA lays them out ("Register Fragments and Shared Memory Matrix Layouts", `m64nNk16`): a
/// mask or fragment bug shows here before any GPU, and each output element must be written
/// once, rows past S never. The shared-memory side (TMA's swizzle, the descriptors) is the
/// GPU tests' to check: here S is the f32 product of the bf16 inputs and V is read by key
/// and dim, zero past S as TMA fills it.
#[cfg(test)]
mod v04_emulation {
    use super::*;
    use crate::check::compare_f32;
    use crate::ops::attention::tests::{TOLERANCE, inputs};
    use half::bf16;
    use rooflab_kernels::attention::v04_flash_wgmma::{
        BC, BR, CONSUMERS, P_SPLIT, acc_row_col, block_q0, key_tiles, masked, p_source,
        tile_has_masked,
    };

    /// Threads of a warpgroup.
    const WG: usize = 128;
    /// n8 tiles of S's `m64n128`.
    const NT: usize = (BC / 8) as usize;

    /// wgmma's A fragment from registers (`m64k16`, bf16): register `r` of thread `t` holds
    /// row `16·(t/32) + (t%32)/4 + 8·(r%2)`, columns `8·(r/2) + 2·(t%4)` and `+1`.
    fn a_row_col(t: usize, r: usize) -> (usize, usize) {
        (16 * (t / 32) + (t % 32) / 4 + 8 * (r % 2), 8 * (r / 2) + 2 * (t % 4))
    }

    fn bf(x: f32) -> f32 {
        bf16::from_f32(x).to_f32()
    }

    /// `shfl.xor` over each warp of the warpgroup.
    fn shfl_xor(x: &[[f32; 2]], mask: usize) -> Vec<[f32; 2]> {
        (0..WG).map(|t| x[(t & !31) | ((t % 32) ^ mask)]).collect()
    }

    /// The emulated kernel's output (`B·H·S·D`, NaN where nothing was written).
    // Thread loops index several per-thread arrays at once, as the kernel's threads do.
    #[allow(clippy::needless_range_loop)]
    fn run(a: &Attn, q: &[f32], k: &[f32], v: &[f32], split: bool) -> Vec<f32> {
        let (seq, d) = (a.seq as u32, a.dim);
        let no = d / 2;
        let sl = a.scale() * std::f32::consts::LOG2_E;
        let grid_x = seq.div_ceil(BR);
        let mut out = vec![f32::NAN; a.bh() * a.seq * d];
        let mut written = vec![0u8; out.len()];
        for bh in 0..a.bh() {
            let head = bh * a.seq * d;
            // Q, K, V of the head as TMA brings them: zero past S.
            let at = |t: &[f32], row: u32, col: usize| {
                if row < seq { t[head + row as usize * d + col] } else { 0.0 }
            };
            for x in 0..grid_x {
                let q0 = block_q0(grid_x, x);
                let tiles = key_tiles(seq, q0, a.causal);
                for c in 0..CONSUMERS {
                    let r0 = q0 + 64 * c;
                    let mut acc = vec![vec![0.0f32; no]; WG];
                    let mut m = vec![[f32::NEG_INFINITY; 2]; WG];
                    let mut l = vec![[0.0f32; 2]; WG];
                    for j in 0..tiles {
                        let j0 = j * BC;
                        // S = Q·Kᵀ into each thread's accumulators.
                        let mut s: Vec<[f32; 64]> = (0..WG)
                            .map(|t| {
                                std::array::from_fn(|i| {
                                    let (r, col) = acc_row_col(t as u32, i as u32);
                                    (0..d).fold(0.0f32, |sum, e| {
                                        at(q, r0 + r, e).mul_add(at(k, j0 + col, e), sum)
                                    })
                                })
                            })
                            .collect();
                        if tile_has_masked(j0, r0, seq, a.causal) {
                            for (t, st) in s.iter_mut().enumerate() {
                                for (i, x) in st.iter_mut().enumerate() {
                                    let (r, col) = acc_row_col(t as u32, i as u32);
                                    if masked(j0 + col, r0 + r, seq, a.causal) {
                                        *x = f32::NEG_INFINITY;
                                    }
                                }
                            }
                        }
                        // The online softmax, as the kernel: thread max, quad max, weights.
                        let mut mx: Vec<[f32; 2]> = (0..WG)
                            .map(|t| {
                                let mut mx = m[t];
                                for n in 0..NT {
                                    mx[0] = mx[0].max(s[t][4 * n].max(s[t][4 * n + 1]));
                                    mx[1] = mx[1].max(s[t][4 * n + 2].max(s[t][4 * n + 3]));
                                }
                                mx
                            })
                            .collect();
                        for mask in [1, 2] {
                            let o = shfl_xor(&mx, mask);
                            for t in 0..WG {
                                mx[t] = [mx[t][0].max(o[t][0]), mx[t][1].max(o[t][1])];
                            }
                        }
                        for t in 0..WG {
                            let mut corr = [0.0f32; 2];
                            let mut msc = [0.0f32; 2];
                            for r in 0..2 {
                                msc[r] = if mx[t][r] == f32::NEG_INFINITY { 0.0 } else { mx[t][r] * sl };
                                corr[r] = (m[t][r] * sl - msc[r]).exp2();
                                m[t][r] = mx[t][r];
                            }
                            let mut rs = [0.0f32; 2];
                            for (i, x) in s[t].iter_mut().enumerate() {
                                *x = x.mul_add(sl, -msc[(i % 4) / 2]).exp2();
                                rs[(i % 4) / 2] += *x;
                            }
                            for r in 0..2 {
                                l[t][r] = l[t][r].mul_add(corr[r], rs[r]);
                            }
                            for (i, o) in acc[t].iter_mut().enumerate() {
                                *o *= corr[(i % 4) / 2];
                            }
                        }
                        // P as the warpgroup's A fragments, placed where wgmma reads them.
                        let mut hi = vec![vec![0.0f32; BC as usize]; 64];
                        let mut lo = hi.clone();
                        for t in 0..WG {
                            for kk in 0..NT / 2 {
                                for r in 0..4 {
                                    let i = 8 * kk + p_source(r as u32) as usize;
                                    let (row, col) = a_row_col(t, r);
                                    for h in 0..2 {
                                        let p = s[t][i + h];
                                        let ph = bf(p);
                                        hi[row][16 * kk + col + h] = ph;
                                        lo[row][16 * kk + col + h] = if split { bf(p - ph) } else { 0.0 };
                                    }
                                }
                            }
                        }
                        // O += P·V, into each thread's O accumulators.
                        for (t, at_t) in acc.iter_mut().enumerate() {
                            for (i, o) in at_t.iter_mut().enumerate() {
                                let (r, col) = acc_row_col(t as u32, i as u32);
                                for key in 0..BC as usize {
                                    let w = hi[r as usize][key] + lo[r as usize][key];
                                    *o = w.mul_add(at(v, j0 + key as u32, col as usize), *o);
                                }
                            }
                        }
                    }
                    // Epilogue: the quads' sums, O / l as bf16, rows < S.
                    let lq: Vec<[f32; 2]> = {
                        let mut lq = l.clone();
                        for mask in [1, 2] {
                            let o = shfl_xor(&lq, mask);
                            for t in 0..WG {
                                lq[t] = [lq[t][0] + o[t][0], lq[t][1] + o[t][1]];
                            }
                        }
                        lq
                    };
                    for t in 0..WG {
                        for i in 0..no {
                            let (r, col) = acc_row_col(t as u32, i as u32);
                            let row = r0 + r;
                            if row < seq {
                                let at = head + row as usize * d + col as usize;
                                written[at] += 1;
                                out[at] = bf(acc[t][i] / lq[t][(i % 4) / 2]);
                            }
                        }
                    }
                }
            }
        }
        assert!(written.iter().all(|&w| w == 1), "{a}: an output element written {} times", written.iter().find(|&&w| w != 1).unwrap());
        out
    }

    fn rows_of(a: &Attn, o: &[f32], rows: &[usize]) -> Vec<f32> {
        (0..a.bh())
            .flat_map(|bh| rows.iter().map(move |&i| (bh * a.seq + i) * a.dim))
            .flat_map(|at| o[at..at + a.dim].to_vec())
            .collect()
    }

    /// The emulated kernel against the f64 reference at the family's tolerance: lengths
    /// below, at and past the 128-row tiles, both head dims, causal and not, several heads.
    #[test]
    fn v04_fragments_emulated_match_the_reference() {
        for (i, a) in [
            Attn::new(1, 2, 1, 64, true),
            Attn::new(2, 1, 17, 128, false),
            Attn::new(1, 1, 65, 64, true),
            Attn::new(1, 1, 128, 128, true),
            Attn::new(1, 2, 129, 64, false),
            Attn::new(1, 1, 300, 64, true),
            Attn::new(1, 1, 257, 128, false),
        ]
        .into_iter()
        .enumerate()
        {
            let [q, k, v] = inputs(&a, 60 + i as u64);
            let got = run(&a, &q, &k, &v, P_SPLIT);
            assert!(got.iter().all(|x| x.is_finite()), "{a}");
            let rows = sample_rows(a.seq);
            let want: Vec<f32> = attention_ref(&a, &q, &k, &v, &rows).into_iter().map(|x| x as f32).collect();
            compare_f32(&format!("v04 emulated {a}"), &rows_of(&a, &got, &rows), &want, TOLERANCE.0, TOLERANCE.1)
                .unwrap();
        }
    }
}
