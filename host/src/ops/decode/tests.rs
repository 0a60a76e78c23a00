//! decode: the GPU correctness tests (both steps against the f64 reference: context lengths
//! around the page size, shuffled block tables, one sequence much longer than the rest, both
//! head dims, odd page sizes; bad input refused), and the check the bench reuses.

use rand::Rng;
use rand::seq::SliceRandom;

use super::launch::{DecodeShape, LADDER, PagedKv, PipelinePlan, Variant, decode, decode_timeline};
use super::probe::{PROBES, ProbeRun};
use super::reference::decode_ref;
use rooflab_kernels::decode::probe_read::decode_probe_read;
use crate::check::{compare_f32, random_f32, rng};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype};
use crate::testing::{GpuTest, expect_error};

/// (rel, abs): attention's, the same arithmetic (checked against planted bugs there).
use crate::ops::attention::tests::TOLERANCE;

/// One random decode step on the GPU, with the host copies the reference reads.
pub struct Problem {
    pub kv: PagedKv,
    pub q: Buf,
    pub qh: Vec<f32>,
    pub kh: Vec<f32>,
    pub vh: Vec<f32>,
}

/// Heads, dim and page size of a problem.
#[derive(Clone, Copy, Debug)]
pub struct Heads {
    pub hq: usize,
    pub hkv: usize,
    pub dim: usize,
    pub page_size: usize,
}

/// Pages the contexts `lens` use, in all.
pub fn pages_needed(lens: &[u32], page_size: usize) -> usize {
    lens.iter().map(|&l| (l as usize).div_ceil(page_size)).sum()
}

/// A batch with contexts `lens`: with `pool = None` every page a context uses is its own,
/// the cache's pages shuffled (plus 3 spare), entries past a sequence's last page left as
/// `u32::MAX` (never read); with `Some(n)` the cache is `n` pages: pages of their own (a
/// random choice of the n, in random order) when the contexts need at most n, else each
/// entry drawn from them at random (sequences then share pages, as shared prefixes do). q,
/// K, V are uniform in [-1, 1), rounded to bf16; with `pool = None` the slots of a
/// sequence's last page past its context hold NaN, as a served cache's stale rows may hold
/// anything: a kernel that lets one into a sum fails the check.
pub fn problem(
    gpu: &Gpu,
    h: Heads,
    lens: &[u32],
    pool: Option<usize>,
    seed: u64,
) -> Result<Problem> {
    let mut r = rng(seed);
    let ps = h.page_size;
    let used: Vec<usize> = lens.iter().map(|&l| (l as usize).div_ceil(ps)).collect();
    let max_pages = used.iter().copied().max().unwrap_or(1).max(1);
    let num_pages = pool.unwrap_or(used.iter().sum::<usize>() + 3);
    let mut table = vec![u32::MAX; lens.len() * max_pages];
    match pool {
        Some(n) if pages_needed(lens, ps) > n => {
            for (b, &u) in used.iter().enumerate() {
                for p in 0..u {
                    table[b * max_pages + p] = r.random_range(0..n as u32);
                }
            }
        }
        _ => {
            let mut perm: Vec<u32> = (0..num_pages as u32).collect();
            perm.shuffle(&mut r);
            let mut next = perm.into_iter();
            for (b, &u) in used.iter().enumerate() {
                for p in 0..u {
                    table[b * max_pages + p] = next.next().expect("enough pages");
                }
            }
        }
    }
    let shape = DecodeShape {
        batch: lens.len(),
        hq: h.hq,
        hkv: h.hkv,
        dim: h.dim,
        page_size: ps,
        num_pages,
        max_pages,
    };
    let mut rand_bf16 = |n| -> Vec<f32> {
        random_f32(&mut r, n, -1.0, 1.0)
            .into_iter()
            .map(|x| Dtype::Bf16.quantize(x))
            .collect()
    };
    let (qh, mut kh, mut vh) = (
        rand_bf16(shape.q_elements()),
        rand_bf16(shape.cache_elements()),
        rand_bf16(shape.cache_elements()),
    );
    if pool.is_none() {
        for (b, &len) in lens.iter().enumerate() {
            let last = table[b * max_pages + (len as usize - 1) / ps] as usize;
            for slot in last * ps + (len as usize - 1) % ps + 1..(last + 1) * ps {
                let row = slot * h.hkv * h.dim..(slot + 1) * h.hkv * h.dim;
                kh[row.clone()].fill(f32::NAN);
                vh[row].fill(f32::NAN);
            }
        }
    }
    let kv = PagedKv::new(
        gpu,
        shape,
        Buf::upload(gpu, Dtype::Bf16, &kh)?,
        Buf::upload(gpu, Dtype::Bf16, &vh)?,
        &table,
        lens,
    )?;
    Ok(Problem {
        q: Buf::upload(gpu, Dtype::Bf16, &qh)?,
        kv,
        qh,
        kh,
        vh,
    })
}

/// One launch into a poisoned output, then the sequences `seqs` (every head) against the
/// f64 reference, and no NaN anywhere in the output.
pub fn check(gpu: &Gpu, v: Variant, p: &Problem, seqs: &[usize]) -> Result<()> {
    let s = p.kv.shape;
    let mut out = Buf::alloc(gpu, Dtype::Bf16, s.q_elements())?;
    // v10 and v11 take page sizes that are multiples of 16 only: others are refused, before
    // launch.
    if v.tma_pages() && !s.page_size.is_multiple_of(16) {
        return expect_error(decode(gpu, v, &p.q, &p.kv, &mut out), &["page size", "multiple of 16", "v09"]);
    }
    out.poison(gpu)?;
    decode(gpu, v, &p.q, &p.kv, &mut out)?;
    gpu.sync()?;
    compare_out(v, p, seqs, &out.to_f32()?)
}

/// A launch's output `got` (every sequence): the sequences `seqs` against the f64
/// reference, and no NaN anywhere.
fn compare_out(v: Variant, p: &Problem, seqs: &[usize], got: &[f32]) -> Result<()> {
    let s = p.kv.shape;
    let what = format!(
        "{} batch {} Hq {} Hkv {} page {} lens {:?}",
        v.row_variant(s.dim),
        s.batch,
        s.hq,
        s.hkv,
        s.page_size,
        &p.kv.lens_host[..p.kv.lens_host.len().min(8)]
    );
    if let Some(i) = got.iter().position(|x| !x.is_finite()) {
        return Err(Error::Mismatch(format!("{what}: out[{i}] = {}", got[i])));
    }
    let want: Vec<f32> = decode_ref(
        &s,
        &p.qh,
        &p.kh,
        &p.vh,
        &p.kv.table_host,
        &p.kv.lens_host,
        seqs,
    )
    .into_iter()
    .map(|x| x as f32)
    .collect();
    let row = s.hq * s.dim;
    let got_seqs: Vec<f32> = seqs
        .iter()
        .flat_map(|&b| got[b * row..(b + 1) * row].to_vec())
        .collect();
    compare_f32(&what, &got_seqs, &want, TOLERANCE.0, TOLERANCE.1).map_err(Error::Mismatch)
}

/// Whether step `v` cannot run on this GPU (v09 is in the sm_90a PTX only); when so, after
/// checking that a launch is refused before anything runs, with a message naming what it
/// needs. The step's tests then have nothing else to run here.
fn refused_here(gpu: &Gpu, v: Variant) -> Result<bool> {
    if gpu.runs(v.kernels(64)[0])? {
        return Ok(false);
    }
    let h = Heads { hq: 8, hkv: 2, dim: 64, page_size: 16 };
    let p = problem(gpu, h, &[3, 40], None, 1)?;
    let mut out = Buf::alloc(gpu, Dtype::Bf16, p.kv.shape.q_elements())?;
    expect_error(decode(gpu, v, &p.q, &p.kv, &mut out), &["sm_90a"])?;
    eprintln!("  {}: not in this GPU's PTX; refused as expected", v.stem());
    Ok(true)
}

/// The first `n` of the GPU's counters read back: all 0, or the first that is not.
fn counters_left_at_zero(gpu: &Gpu, step: &str, n: usize) -> Result<()> {
    let left = gpu.with_counters(n, |c| c.to_host())?;
    match left.iter().take(n).position(|&c| c != 0) {
        Some(i) => Err(Error::Mismatch(format!(
            "{step} left counter {i} at {} (of {n}); each launch must leave them 0",
            left[i]
        ))),
        None => Ok(()),
    }
}

/// The batches every step's test runs: (heads, context lengths).
fn test_batches() -> Vec<(Heads, Vec<u32>)> {
    let h = |hq, hkv, dim, page_size| Heads {
        hq,
        hkv,
        dim,
        page_size,
    };
    vec![
        // Around the page size and the 32-key tile.
        (h(4, 2, 64, 16), vec![1, 15, 16, 17, 31, 32, 33]),
        // The model's heads; one sequence far longer than the rest.
        (h(32, 8, 128, 16), vec![5, 4097, 1, 300]),
        // Odd page sizes, no GQA and a group of 16.
        (h(8, 8, 64, 7), vec![1, 7, 8, 100]),
        (h(16, 1, 128, 1), vec![1, 2, 65]),
    ]
}

/// The family's GPU tests.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        t.push(GpuTest::new(
            format!("decode_{}_matches_cpu", v.stem()),
            move |gpu| {
                if refused_here(gpu, v)? {
                    return Ok(());
                }
                for (i, (h, lens)) in test_batches().into_iter().enumerate() {
                    let p = problem(gpu, h, &lens, None, seed + i as u64)?;
                    let all: Vec<usize> = (0..lens.len()).collect();
                    check(gpu, v, &p, &all)?;
                }
                // Shared pages drawn at random (the bench's layout).
                let h = Heads {
                    hq: 8,
                    hkv: 2,
                    dim: 128,
                    page_size: 16,
                };
                let p = problem(gpu, h, &[40, 1000, 3], Some(50), seed ^ 0xdec)?;
                check(gpu, v, &p, &[0, 1, 2])
            },
        ));
    }
    // The copy-only probe: every walk's block sums add up to the caches' rows (their bits),
    // at the ladder's batches, with pages shared, and a page size it cannot walk refused.
    t.push(GpuTest::new(format!("decode_{}_matches_cpu", decode_probe_read.stem()), move |gpu| {
        let mut batches = test_batches();
        batches.push((Heads { hq: 8, hkv: 2, dim: 128, page_size: 16 }, vec![40, 1000, 3, 4097]));
        for (i, (h, lens)) in batches.into_iter().enumerate() {
            let shared = (i % 2 == 1).then_some(pages_needed(&lens, h.page_size) / 2 + 1);
            let p = problem(gpu, h, &lens, shared, seed ^ (0x9b0 + i as u64))?;
            for probe in PROBES {
                if !h.page_size.is_power_of_two() {
                    expect_error(ProbeRun::new(gpu, probe, &p.kv).map(|_| ()), &["powers of two", "page 7"])?;
                    continue;
                }
                ProbeRun::new(gpu, probe, &p.kv)?.check(gpu, &p.kv)?;
            }
        }
        Ok(())
    }));
    // v03's split path on any GPU: one sequence, one KV head pair, a long context.
    t.push(GpuTest::new(
        format!("decode_{}_splits_match_cpu", Variant::V03SplitK.stem()),
        move |gpu| {
            for (i, (dim, lens)) in [(64, vec![3000]), (128, vec![2500, 1, 40])].into_iter().enumerate() {
                let h = Heads {
                    hq: 8,
                    hkv: 2,
                    dim,
                    page_size: 16,
                };
                let p = problem(gpu, h, &lens, None, seed ^ (0x5b1 + i as u64))?;
                let max = lens.iter().copied().max().unwrap_or(0);
                let n = Variant::V03SplitK.splits(&p.kv.shape, max, gpu.info.multiprocessors);
                if n < 2 {
                    return Err(Error::Other(format!(
                        "lens {lens:?}: v03 chose {n} split(s); this test needs a split"
                    )));
                }
                let all: Vec<usize> = (0..lens.len()).collect();
                check(gpu, Variant::V03SplitK, &p, &all)?;
            }
            Ok(())
        },
    ));
    // The pipelined steps' head chunks: groups of 6 (v04, v06: one chunk of 8, two heads
    // masked; v05: one of 16), 32 (v04, v06: four chunks; v05: two) and 3 (v04: a chunk of
    // 4, one masked; v06: of 8, five masked); short contexts (one split) and long (several).
    for v in [
        Variant::V04VectorizedPipeline,
        Variant::V05MmaHeads,
        Variant::V06KeysAsRows,
        Variant::V07FusedCombine,
        Variant::V08StreamK,
        Variant::V09BulkCopy,
        Variant::V10TmaPages,
        Variant::V11OneRoundCombine,
    ] {
        t.push(GpuTest::new(format!("decode_{}_head_chunks_match_cpu", v.stem()), move |gpu| {
            if refused_here(gpu, v)? {
                return Ok(());
            }
            for (i, (hq, hkv, dim, page_size, lens)) in [
                (12, 2, 128, 16, vec![700, 33]),
                (32, 1, 64, 5, vec![97, 3000]),
                (3, 1, 128, 16, vec![2, 1500]),
            ]
            .into_iter()
            .enumerate()
            {
                let h = Heads { hq, hkv, dim, page_size };
                let p = problem(gpu, h, &lens, None, seed ^ (0x404 + i as u64))?;
                let all: Vec<usize> = (0..lens.len()).collect();
                check(gpu, v, &p, &all)?;
            }
            Ok(())
        }));
    }
    // --timeline's stamped launches (v08-v11): the output is still right, and every block
    // of the plan wrote its stamps, in order, on a real SM, within one launch's time.
    for v in [Variant::V08StreamK, Variant::V09BulkCopy, Variant::V10TmaPages, Variant::V11OneRoundCombine] {
        t.push(GpuTest::new(format!("decode_{}_timeline_stamps_every_block", v.stem()), move |gpu| {
            if refused_here(gpu, v)? {
                return Ok(());
            }
            let h = Heads { hq: 32, hkv: 8, dim: 128, page_size: 16 };
            let lens = [4097, 40, 1000, 3];
            let p = problem(gpu, h, &lens, None, seed ^ 0x71e)?;
            let mut out = Buf::alloc(gpu, Dtype::Bf16, p.kv.shape.q_elements())?;
            out.poison(gpu)?;
            let stamps = decode_timeline(gpu, v, &p.q, &p.kv, &mut out)?;
            compare_out(v, &p, &[0, 1, 2, 3], &out.to_f32()?)?;
            let blocks = p.kv.stream_plan(gpu)?.0.blocks as usize;
            if stamps.len() != blocks || blocks < 2 {
                return Err(Error::Mismatch(format!("{} stamps for a plan of {blocks} blocks", stamps.len())));
            }
            let summary = crate::timeline::Summary::new(&stamps).map_err(|e| Error::Mismatch(e.to_string()))?;
            let sms = gpu.info.multiprocessors;
            if let Some(b) = stamps.iter().position(|s| s.sm >= 4 * sms) {
                return Err(Error::Mismatch(format!("block {b} stamped SM {} ({sms} SMs)", stamps[b].sm)));
            }
            // A small launch: far below a second (a stamp of garbage would not be).
            if !(summary.span_us > 0.0 && summary.span_us < 1e6) {
                return Err(Error::Mismatch(format!("a span of {} µs", summary.span_us)));
            }
            // The plain launch afterwards is unaffected (the counters came back to 0).
            check(gpu, v, &p, &[0, 3])
        }));
    }
    // v07's last-block combine: several splits, launched three times (each launch must
    // find the counters at 0 and leave them so), then the counters read back.
    t.push(GpuTest::new(
        format!("decode_{}_counters_return_to_zero", Variant::V07FusedCombine.stem()),
        move |gpu| {
            let h = Heads { hq: 8, hkv: 2, dim: 64, page_size: 16 };
            let lens = [3000, 17, 1];
            let p = problem(gpu, h, &lens, None, seed ^ 0x707)?;
            let plan = PipelinePlan::new(Variant::V07FusedCombine, &p.kv.shape, &lens, gpu.info.multiprocessors);
            if plan.splits < 2 {
                return Err(Error::Other(format!(
                    "lens {lens:?}: v07 planned {} split(s); this test needs several",
                    plan.splits
                )));
            }
            for _ in 0..3 {
                check(gpu, Variant::V07FusedCombine, &p, &[0, 1, 2])?;
            }
            counters_left_at_zero(gpu, "v07", lens.len() * h.hkv * plan.chunks as usize)
        },
    ));
    // v08's plan on this GPU (v09 runs the same): pairs cut across blocks (the long context),
    // blocks of many short pairs; three launches, the counters read back, then a second batch
    // of other lengths through the same GPU's counters.
    for v in [Variant::V08StreamK, Variant::V09BulkCopy, Variant::V10TmaPages, Variant::V11OneRoundCombine] {
        t.push(GpuTest::new(
            format!("decode_{}_counters_return_to_zero", v.stem()),
            move |gpu| {
                if refused_here(gpu, v)? {
                    return Ok(());
                }
                for (i, (dim, lens)) in [(64, vec![9000, 17, 1, 600]), (128, vec![40_000, 3, 2048])]
                    .into_iter()
                    .enumerate()
                {
                    let h = Heads { hq: 32, hkv: 8, dim, page_size: 16 };
                    let p = problem(gpu, h, &lens, None, seed ^ (0x808 + i as u64))?;
                    let (plan, _) = p.kv.stream_plan(gpu)?;
                    let cut = (0..plan.pairs as usize).filter(|&q| plan.pair_blocks(q).1 > 1).count();
                    let shared = (0..plan.blocks as usize).any(|g| {
                        let (_, t1, first) = plan.block(g);
                        plan.buffer[first as usize + 1] < t1
                    });
                    if cut == 0 || !shared {
                        return Err(Error::Other(format!(
                            "lens {lens:?}: {} planned {} blocks with {cut} pairs cut and no block \
                             of several pairs = {}; this test needs both",
                            v.stem(),
                            plan.blocks, !shared
                        )));
                    }
                    let all: Vec<usize> = (0..lens.len()).collect();
                    for _ in 0..3 {
                        check(gpu, v, &p, &all)?;
                    }
                    counters_left_at_zero(gpu, v.stem(), plan.pairs as usize)?;
                }
                Ok(())
            },
        ));
    }
    // v11's merge of a pair's partial rows by the whole block: one warp a head and rounds
    // past ROWS_AT_ONCE rows (group 8), two warps a head (group 4, D 64), three heads on
    // six warps with two idle, one head on all eight, and a chunk of 8 beside one of 4.
    t.push(GpuTest::new(
        format!("decode_{}_merges_many_partials_match_cpu", Variant::V11OneRoundCombine.stem()),
        move |gpu| {
            let v = Variant::V11OneRoundCombine;
            if refused_here(gpu, v)? {
                return Ok(());
            }
            let r = rooflab_kernels::decode::v11_one_round_combine::ROWS_AT_ONCE as u32;
            let per = rooflab_kernels::decode::v11_one_round_combine::warps_per_head;
            for (i, (hq, dim, lens, rounds)) in [
                (8, 128, vec![20_000], true),
                (4, 64, vec![30_000], true),
                (3, 128, vec![9000, 2], false),
                (1, 64, vec![5000], false),
                (12, 128, vec![7000, 40], false),
            ]
            .into_iter()
            .enumerate()
            {
                let h = Heads { hq, hkv: 1, dim, page_size: 16 };
                let p = problem(gpu, h, &lens, None, seed ^ (0x11c + i as u64))?;
                let (plan, _) = p.kv.stream_plan(gpu)?;
                // Pair 0 (sequence 0, chunk 0) is cut; its warps' rows take several rounds
                // where the case says so.
                let n = plan.pair_blocks(0).1;
                let live = (hq as u32).min(rooflab_kernels::decode::v11_one_round_combine::HEADS);
                if n < 2 || (rounds && n.div_ceil(per(live)) <= r) {
                    return Err(Error::Other(format!(
                        "hq {hq} lens {lens:?}: pair 0 cut across {n} blocks ({} warps a head); \
                         this case needs {}",
                        per(live),
                        if rounds { "more rows a warp than one round reads" } else { "a cut" }
                    )));
                }
                let all: Vec<usize> = (0..lens.len()).collect();
                check(gpu, v, &p, &all)?;
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "decode_bad_input_is_refused_before_launch",
        |gpu| {
            let s = DecodeShape {
                batch: 2,
                hq: 4,
                hkv: 2,
                dim: 64,
                page_size: 16,
                num_pages: 4,
                max_pages: 2,
            };
            let cache = || Buf::alloc(gpu, Dtype::Bf16, s.cache_elements());
            let new = |s: DecodeShape, table: &[u32], lens: &[u32]| {
                PagedKv::new(gpu, s, cache()?, cache()?, table, lens).map(|_| ())
            };
            new(s, &[0, 1, 2, 3], &[32, 17])?;
            expect_error(new(s, &[0, 4, 2, 3], &[32, 17]), &["[0][1] = 4", "4 pages"])?;
            expect_error(new(s, &[0, 1, 2, 3], &[33, 1]), &["33", "capacity", "32"])?;
            expect_error(new(s, &[0, 1, 2, 3], &[0, 1]), &["context length 0"])?;
            expect_error(new(DecodeShape { hq: 5, ..s }, &[0, 1, 2, 3], &[1, 1]), &["multiple of Hkv"])?;
            expect_error(new(DecodeShape { dim: 96, ..s }, &[0, 1, 2, 3], &[1, 1]), &["head dim 96"])?;
            expect_error(new(s, &[0, 1, 2], &[1, 1]), &["3 entries"])?;
            expect_error(new(s, &[0, 1, 2, 3], &[1]), &["1 context lengths"])?;
            // Cache rows (pages · page size · Hkv) past u32: refused before the caches are
            // looked at (the kernels index rows in 32 bits).
            expect_error(
                new(DecodeShape { num_pages: 1 << 28, ..s }, &[0, 1, 2, 3], &[1, 1]),
                &["cache rows", "8589934592", "4294967295"],
            )?;
            // Entries past a sequence's last page are never read: anything goes there.
            new(s, &[0, u32::MAX, 2, u32::MAX], &[16, 5])?;
            // A GQA group past what v02's block serves.
            let g = DecodeShape {
                hq: 32,
                hkv: 1,
                ..s
            };
            let g_cache = || Buf::alloc(gpu, Dtype::Bf16, g.cache_elements());
            let kv = PagedKv::new(gpu, g, g_cache()?, g_cache()?, &[0, 1, 2, 3], &[1, 1])?;
            let q = Buf::alloc(gpu, Dtype::Bf16, g.q_elements())?;
            let mut out = Buf::alloc(gpu, Dtype::Bf16, g.q_elements())?;
            expect_error(
                decode(gpu, Variant::V02GqaGrouped, &q, &kv, &mut out),
                &["group of 32", "use v01"],
            )?;
            let short = Buf::alloc(gpu, Dtype::Bf16, g.q_elements() - 1)?;
            expect_error(
                decode(gpu, Variant::V01BlockPerHead, &short, &kv, &mut out),
                &["q has"],
            )
        },
    ));
    t
}
