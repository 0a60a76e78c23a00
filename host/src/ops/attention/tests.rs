//! attention: the GPU correctness tests (every variant against the f64 reference at awkward
//! sequence lengths, both head dims, causal or not; bad input), and the check the bench
//! reuses.

use super::launch::{Attn, LADDER, Variant, attention};
use rooflab_kernels::attention::HEAD_DIMS;
use super::reference::{attention_ref, sample_rows};
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype};
use crate::testing::{GpuTest, expect_error};

/// (rel, abs), either sufficing: one bf16 rounding of the output, twice over, or 2e-5 near
/// zero; see `mod.rs` and `reference::tolerance_tests`.
pub const TOLERANCE: (f32, f32) = (4e-3, 2e-5);

/// Fresh Q, K, V in [-1, 1) rounded to bf16 (as f32, for the reference).
pub fn inputs(a: &Attn, seed: u64) -> [Vec<f32>; 3] {
    let mut r = rng(seed);
    let mut t = || {
        random_f32(&mut r, a.elements(), -1.0, 1.0)
            .into_iter()
            .map(|x| Dtype::Bf16.quantize(x))
            .collect::<Vec<f32>>()
    };
    [t(), t(), t()]
}

/// One check: fresh inputs, O poisoned, one launch, the sampled rows of every head against
/// the f64 reference (and no NaN anywhere in O).
pub fn check(gpu: &Gpu, v: Variant, a: Attn, seed: u64) -> Result<()> {
    let [q, k, vv] = inputs(&a, seed);
    let (dq, dk, dv) = (
        Buf::upload(gpu, Dtype::Bf16, &q)?,
        Buf::upload(gpu, Dtype::Bf16, &k)?,
        Buf::upload(gpu, Dtype::Bf16, &vv)?,
    );
    let mut o = Buf::alloc(gpu, Dtype::Bf16, a.elements())?;
    o.poison(gpu)?;
    attention(gpu, v, &a, &dq, &dk, &dv, &mut o)?;
    gpu.sync()?;
    let got = o.to_f32()?;
    let what = format!("{} {a} seed={seed}", v.row_variant(a.dim));
    if let Some(i) = got.iter().position(|x| !x.is_finite()) {
        return Err(Error::Mismatch(format!("{what}: O[{i}] = {}", got[i])));
    }
    let rows = sample_rows(a.seq);
    let want: Vec<f32> = attention_ref(&a, &q, &k, &vv, &rows)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    let d = a.dim;
    let got_rows: Vec<f32> = (0..a.bh())
        .flat_map(|bh| rows.iter().map(move |&i| (bh, i)))
        .flat_map(|(bh, i)| {
            let at = (bh * a.seq + i) * d;
            got[at..at + d].to_vec()
        })
        .collect();
    compare_f32(&what, &got_rows, &want, TOLERANCE.0, TOLERANCE.1).map_err(Error::Mismatch)
}

/// Shapes every variant's test covers: one query, lengths that are not multiples of any
/// tile (17, 1000, 4097), both head dims, causal and not, several heads.
pub const TEST_SHAPES: [Attn; 8] = [
    Attn::new(1, 1, 1, 64, false),
    Attn::new(1, 1, 1, 128, true),
    Attn::new(1, 2, 17, 64, true),
    Attn::new(2, 1, 17, 128, false),
    Attn::new(1, 3, 1000, 64, false),
    Attn::new(1, 1, 1000, 128, true),
    Attn::new(1, 1, 4097, 64, true),
    Attn::new(1, 1, 4097, 128, false),
];

/// Shapes beside [`TEST_SHAPES`]: the (S, D, causal) of S 1, 17, 1000, 4097 that it leaves
/// out, and lengths around the 64-row and 64-key tiles of v03 (63, 64, 65, 129) at both head
/// dims, causal and not. Two heads where S is short, so that a row written past a head's last
/// query lands in the next head's first rows (which every check compares) instead of
/// passing unseen.
pub const EDGE_SHAPES: [Attn; 24] = [
    Attn::new(1, 2, 1, 64, true),
    Attn::new(2, 1, 1, 128, false),
    Attn::new(1, 2, 17, 64, false),
    Attn::new(2, 1, 17, 128, true),
    Attn::new(1, 1, 1000, 64, true),
    Attn::new(1, 2, 1000, 128, false),
    Attn::new(1, 1, 4097, 64, false),
    Attn::new(1, 1, 4097, 128, true),
    Attn::new(1, 2, 63, 64, false),
    Attn::new(1, 2, 63, 64, true),
    Attn::new(2, 1, 63, 128, false),
    Attn::new(2, 1, 63, 128, true),
    Attn::new(1, 2, 64, 64, false),
    Attn::new(1, 2, 64, 64, true),
    Attn::new(2, 1, 64, 128, false),
    Attn::new(2, 1, 64, 128, true),
    Attn::new(1, 2, 65, 64, false),
    Attn::new(1, 2, 65, 64, true),
    Attn::new(2, 1, 65, 128, false),
    Attn::new(2, 1, 65, 128, true),
    Attn::new(1, 2, 129, 64, false),
    Attn::new(1, 2, 129, 64, true),
    Attn::new(2, 1, 129, 128, false),
    Attn::new(2, 1, 129, 128, true),
];

/// The family's GPU tests.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    // A step's tests need its kernels (v04's exist only in the sm_90a PTX): elsewhere they
    // are reported unavailable, by name, never passed.
    let needs = |v: Variant, mut test: GpuTest| {
        for d in HEAD_DIMS {
            for k in v.kernels(d as usize) {
                test = test.requiring(k);
            }
        }
        test
    };
    for v in LADDER {
        t.push(needs(v, GpuTest::new(
            format!("attention_{}_matches_cpu", v.stem()),
            move |gpu| {
                let shapes =
                    crate::testing::shapes(&TEST_SHAPES, |a| a.bh() * a.seq * a.seq * a.dim / 64);
                for (i, &a) in shapes.iter().enumerate() {
                    check(gpu, v, a, seed + i as u64)?;
                }
                Ok(())
            },
        )));
        t.push(needs(v, GpuTest::new(
            format!("attention_{}_tile_edges_and_masks", v.stem()),
            move |gpu| {
                let shapes =
                    crate::testing::shapes(&EDGE_SHAPES, |a| a.bh() * a.seq * a.seq * a.dim / 64);
                for (i, &a) in shapes.iter().enumerate() {
                    check(gpu, v, a, seed + 100 + i as u64)?;
                }
                Ok(())
            },
        )));
    }
    t.push(GpuTest::new(
        "attention_bad_input_is_refused_before_launch",
        |gpu| {
            let a = Attn::new(1, 2, 5, 64, false);
            let n = a.elements();
            let buf = |len| Buf::alloc(gpu, Dtype::Bf16, len);
            let (q, k, v) = (buf(n)?, buf(n)?, buf(n)?);
            for var in LADDER {
                let mut o = buf(n)?;
                expect_error(
                    attention(gpu, var, &Attn { dim: 96, ..a }, &q, &k, &v, &mut o),
                    &["head dim 96", "64, 128"],
                )?;
                let short = buf(n - 1)?;
                expect_error(
                    attention(gpu, var, &a, &q, &short, &v, &mut o),
                    &["K has", &format!("expected {n}")],
                )?;
                let f32s = Buf::alloc(gpu, Dtype::F32, n)?;
                expect_error(
                    attention(gpu, var, &a, &f32s, &k, &v, &mut o),
                    &["Q is f32"],
                )?;
                expect_error(
                    attention(gpu, var, &Attn::new(1, 65536, 0, 64, false), &q, &k, &v, &mut o),
                    &["B·H", "65535"],
                )?;
                // A step this GPU cannot run says so, before launching anything.
                if !gpu.runs(var.kernels(64)[0])? {
                    o.poison(gpu)?;
                    expect_error(
                        attention(gpu, var, &a, &q, &k, &v, &mut o),
                        &["unavailable", "sm_90a"],
                    )?;
                }
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "attention_zero_sizes_launch_nothing",
        |gpu| {
            for var in LADDER {
                let e = Buf::alloc(gpu, Dtype::Bf16, 0)?;
                let mut o = Buf::alloc(gpu, Dtype::Bf16, 0)?;
                for a in [Attn::new(0, 4, 16, 64, false), Attn::new(2, 2, 0, 128, true)] {
                    attention(gpu, var, &a, &e, &e, &e, &mut o)?;
                }
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        format!("attention_{}_refuses_scores_past_free_memory", Variant::V01Naive.stem()),
        |gpu| {
            // 2^20 queries: 4 TiB of scores, Q/K/V/O 128 MiB each.
            let a = Attn::new(1, 1, 1 << 20, 64, false);
            let buf = || Buf::alloc(gpu, Dtype::Bf16, a.elements());
            let (q, k, v, mut o) = (buf()?, buf()?, buf()?, buf()?);
            expect_error(
                attention(gpu, Variant::V01Naive, &a, &q, &k, &v, &mut o),
                &["scores in DRAM", "GiB free", "v02"],
            )
        },
    ));
    t
}
