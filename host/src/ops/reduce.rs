//! Family `reduce` on the host: the sum of an f32 array into one f32.
//!
//! Safe launch wrappers (output must be one element; an empty input gives 0 with no
//! launch), the f64 CPU reference, the cost model, the bench cases and the correctness
//! checks for every variant in `kernels-gpu/src/reduce/`. Launch geometry comes from the
//! variant files' constants.
//!
//! Accumulators: v01 and v06's atomic mode add into `out` with global atomics, so the op
//! itself zeroes `out` first (a `cuMemsetD32Async` on the stream, inside the timed call).
//! v02–v05 write per-block partials into a caller-provided workspace and the op launches the
//! same kernel on them until one block is left, which writes `out`; v06's deterministic mode
//! writes per-block partials and a second one-block launch sums them in a fixed order. Both
//! are bit-identical run to run. [`workspace_len`] says how much workspace a call needs.
//!
//! Accuracy (see [`tolerance`]): a GPU sum is a tree whose longest chain of dependent f32
//! adds has `h` links (`h = n` for v01's running atomic sum; one block tree per pass for
//! v02–v05; per-thread chain plus tree plus blocks for v06). Each add
//! rounds by at most `u = 2^-24` of a partial sum bounded by `A = Σ|x|`. Worst case that is
//! `h·u·A`; rounding errors are close to independent, so the error grows like `√h·u·A`.
//! The check allows `8·√h·u·A` (≥ the worst case for `h ≤ 64`, several standard deviations
//! beyond it for long chains) against an f64 reference. Relative to the sum itself this is
//! tight for the positive inputs ([0.5, 1.5): `A ≈ |sum|`) and still meaningful for the
//! mixed-sign ones. It does not cover v01 past ~2^24 elements of mean 1: once the running
//! sum reaches 2^25 every addend is below half an ulp and the sum stops growing (not a
//! random walk any more), which is why v01 is tested and benched at most at 2^24.

use rooflab_kernels::reduce::{
    v01_atomic, v02_tree_divergent, v03_tree_sequential, v04_first_add_on_load, v05_warp_shuffle,
    v06_multi_element,
};

use crate::bench::{Case, Workload, rotation_sets};
use crate::check::{random_f32, rng};
use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, LaunchConfig, View, ViewMut};
use crate::kernel_args;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "reduce";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Atomic,
    V02TreeDivergent,
    V03TreeSequential,
    V04FirstAddOnLoad,
    V05WarpShuffle,
    /// `deterministic`: per-block partials and a fixed-order second pass instead of one
    /// atomic per block.
    V06MultiElement {
        deterministic: bool,
    },
}

pub const LADDER: [Variant; 7] = [
    Variant::V01Atomic,
    Variant::V02TreeDivergent,
    Variant::V03TreeSequential,
    Variant::V04FirstAddOnLoad,
    Variant::V05WarpShuffle,
    Variant::V06MultiElement {
        deterministic: false,
    },
    Variant::V06MultiElement {
        deterministic: true,
    },
];

impl Variant {
    pub fn stem(self) -> &'static str {
        match self {
            Variant::V01Atomic => "v01_atomic",
            Variant::V02TreeDivergent => "v02_tree_divergent",
            Variant::V03TreeSequential => "v03_tree_sequential",
            Variant::V04FirstAddOnLoad => "v04_first_add_on_load",
            Variant::V05WarpShuffle => "v05_warp_shuffle",
            Variant::V06MultiElement { .. } => "v06_multi_element",
        }
    }

    /// The (first) kernel entry point, e.g. `reduce_v03_tree_sequential`.
    pub fn entry(self) -> &'static str {
        match self {
            Variant::V01Atomic => "reduce_v01_atomic",
            Variant::V02TreeDivergent => "reduce_v02_tree_divergent",
            Variant::V03TreeSequential => "reduce_v03_tree_sequential",
            Variant::V04FirstAddOnLoad => "reduce_v04_first_add_on_load",
            Variant::V05WarpShuffle => "reduce_v05_warp_shuffle",
            Variant::V06MultiElement { .. } => "reduce_v06_multi_element",
        }
    }

    /// The bench row's variant. The deterministic v06 is named after its second launch,
    /// which produces its result.
    pub fn row_variant(self) -> &'static str {
        match self {
            Variant::V06MultiElement {
                deterministic: true,
            } => &FINAL_ENTRY[FAMILY.len() + 1..],
            v => &v.entry()[FAMILY.len() + 1..],
        }
    }

    /// Whether the kernel adds into `out` atomically (so the op zeroes it first).
    pub fn accumulates(self) -> bool {
        matches!(
            self,
            Variant::V01Atomic
                | Variant::V06MultiElement {
                    deterministic: false
                }
        )
    }

    /// v02–v05: one block sum per block, reduced again pass after pass.
    pub fn multi_pass(self) -> bool {
        matches!(
            self,
            Variant::V02TreeDivergent
                | Variant::V03TreeSequential
                | Variant::V04FirstAddOnLoad
                | Variant::V05WarpShuffle
        )
    }
}

/// The deterministic v06's second launch.
pub const FINAL_ENTRY: &str = "reduce_v06_multi_element_final";

/// Blocks of the v01–v05 launches for `n` elements (1D, one or two elements per thread).
pub fn blocks_simple(v: Variant, n: u64) -> u64 {
    let per_block = match v {
        Variant::V01Atomic => v01_atomic::BLOCK_THREADS as u64,
        Variant::V02TreeDivergent => v02_tree_divergent::BLOCK_THREADS as u64,
        Variant::V03TreeSequential => v03_tree_sequential::BLOCK_THREADS as u64,
        Variant::V04FirstAddOnLoad => v04_first_add_on_load::ELEMS_PER_BLOCK,
        Variant::V05WarpShuffle => v05_warp_shuffle::ELEMS_PER_BLOCK,
        Variant::V06MultiElement { .. } => unreachable!("v06 sizes its grid to the machine"),
    };
    n.div_ceil(per_block).max(1)
}

/// v06's grid: `BLOCKS_PER_SM` per SM (or what fits), never more than there is work for.
pub fn v06_blocks(gpu: &Gpu, n: u64) -> Result<u32> {
    use v06_multi_element as k;
    let fit = gpu
        .blocks_per_sm(
            "reduce_v06_multi_element",
            k::BLOCK_THREADS,
            k::SHARED_BYTES as usize,
        )?
        .clamp(1, k::BLOCKS_PER_SM);
    Ok(v06_grid(gpu.info.multiprocessors, fit, n))
}

/// The v06 grid from the machine's size and the work: a pure function for unit tests.
pub fn v06_grid(multiprocessors: u32, fit: u32, n: u64) -> u32 {
    use v06_multi_element as k;
    let needed = n.div_ceil(4 * k::UNROLL * k::BLOCK_THREADS as u64).max(1);
    (multiprocessors as u64 * fit as u64).min(needed) as u32
}

/// Elements the deterministic v06 needs for its partials on this GPU (any `n`).
pub fn partials_len(gpu: &Gpu) -> usize {
    gpu.info.multiprocessors as usize * v06_multi_element::BLOCKS_PER_SM as usize
}

/// The multi-pass variants' pass lengths: `[n, blocks(n), blocks(blocks(n)), ..]` down to
/// the input of the one-block pass that writes `out`.
pub fn pass_lengths(v: Variant, n: u64) -> Vec<u64> {
    let mut out = vec![n];
    let mut len = n;
    while blocks_simple(v, len) > 1 {
        len = blocks_simple(v, len);
        out.push(len);
    }
    out
}

/// Workspace (f32 elements) a call of `sum` with variant `v` needs for `n` elements: the
/// partials of every pass but the last (v02–v05), the per-block partials (deterministic
/// v06), or nothing.
pub fn workspace_len(gpu: &Gpu, v: Variant, n: u64) -> usize {
    match v {
        Variant::V06MultiElement {
            deterministic: true,
        } => partials_len(gpu),
        v if v.multi_pass() => pass_lengths(v, n)[1..].iter().sum::<u64>() as usize,
        _ => 0,
    }
}

/// `out[0] = Σ x`. `out` must hold exactly one element. `workspace` must hold at least
/// [`workspace_len`] elements (none needed: v01 and the atomic v06).
/// An empty `x` gives `out[0] = 0` without a kernel launch.
pub fn sum(
    gpu: &Gpu,
    v: Variant,
    x: View<'_, f32>,
    mut out: ViewMut<'_, f32>,
    workspace: Option<ViewMut<'_, f32>>,
) -> Result<()> {
    let op = v.entry();
    if out.len != 1 {
        return Err(Error::Shape {
            op: op.into(),
            what: format!("the output must be one element, got {}", out.len),
        });
    }
    let n = x.len as u64;
    let need = workspace_len(gpu, v, n);
    let ws = match (&workspace, need) {
        (_, 0) => 0u64,
        (None, need) => {
            return Err(Error::Shape {
                op: op.into(),
                what: format!("{n} elements need a workspace of {need} elements, got none"),
            });
        }
        (Some(w), need) => {
            if w.len < need {
                return Err(Error::Shape {
                    op: op.into(),
                    what: format!(
                        "{n} elements need a workspace of {need} elements, it has {}",
                        w.len
                    ),
                });
            }
            w.addr
        }
    };
    let need_partials = matches!(
        v,
        Variant::V06MultiElement {
            deterministic: true
        }
    );
    let partials_addr = if need_partials { ws } else { 0 };
    if n == 0 || v.accumulates() {
        // The empty sum is 0; atomic variants start from 0.
        gpu.zero(out.reborrow())?;
    }
    if n == 0 {
        return Ok(());
    }
    let (xa, oa) = (x.addr, out.addr);
    match v {
        Variant::V06MultiElement { .. } => {
            use v06_multi_element as k;
            let blocks = v06_blocks(gpu, n)?;
            let cfg = LaunchConfig {
                grid: (blocks, 1, 1),
                block: (k::BLOCK_THREADS, 1, 1),
                shared_bytes: k::SHARED_BYTES,
            };
            // SAFETY: x holds n f32, out one, partials (when non-null) at least `blocks`
            // (partials_len >= blocks); arguments match `(x, n, out, partials)`.
            unsafe { gpu.launch(op, cfg, &kernel_args![xa, n, oa, partials_addr])? };
            if need_partials {
                let cfg = LaunchConfig {
                    grid: (1, 1, 1),
                    block: (k::FINAL_THREADS, 1, 1),
                    shared_bytes: k::FINAL_SHARED_BYTES,
                };
                // SAFETY: the first launch wrote `blocks` partials; arguments match
                // `(partials, count, out)`.
                unsafe { gpu.launch(FINAL_ENTRY, cfg, &kernel_args![partials_addr, blocks, oa])? };
            }
            Ok(())
        }
        Variant::V01Atomic => {
            let cfg = LaunchConfig::for_threads(op, n, v01_atomic::BLOCK_THREADS)?;
            // SAFETY: x holds n f32, out one (zeroed above); arguments match `(x, n, out)`.
            unsafe { gpu.launch(op, cfg, &kernel_args![xa, n, oa]) }
        }
        _ => {
            let (threads, shared) = match v {
                Variant::V02TreeDivergent => (
                    v02_tree_divergent::BLOCK_THREADS,
                    v02_tree_divergent::SHARED_BYTES,
                ),
                Variant::V03TreeSequential => (
                    v03_tree_sequential::BLOCK_THREADS,
                    v03_tree_sequential::SHARED_BYTES,
                ),
                Variant::V04FirstAddOnLoad => (
                    v04_first_add_on_load::BLOCK_THREADS,
                    v04_first_add_on_load::SHARED_BYTES,
                ),
                _ => (
                    v05_warp_shuffle::BLOCK_THREADS,
                    v05_warp_shuffle::SHARED_BYTES,
                ),
            };
            // Pass k reads pass k-1's partials (the input for k = 0) and writes its own block
            // sums after them in the workspace; the one-block pass writes `out`.
            let (mut src, mut len, mut next) = (xa, n, ws);
            loop {
                let blocks = blocks_simple(v, len);
                let dst = if blocks == 1 { oa } else { next };
                let mut cfg = LaunchConfig::for_threads(op, blocks * threads as u64, threads)?;
                cfg.shared_bytes = shared;
                // SAFETY: `src` holds `len` f32 (the input or the previous pass's partials);
                // `dst` has room for `blocks` (out when 1, else inside the workspace, whose
                // size workspace_len checked); arguments match `(x, n, partials)`.
                unsafe { gpu.launch(op, cfg, &kernel_args![src, len, dst])? };
                if blocks == 1 {
                    return Ok(());
                }
                (src, len) = (dst, blocks);
                next += 4 * blocks;
            }
        }
    }
}

// ---------------------------------------------------------------- CPU reference

/// `(Σ x, Σ |x|)` accumulated in f64.
pub fn sum_ref(x: &[f32]) -> (f64, f64) {
    x.iter().fold((0.0, 0.0), |(s, a), &v| {
        (s + v as f64, a + (v as f64).abs())
    })
}

/// Length of the longest chain of dependent f32 adds in variant `v`'s summation of `n`
/// elements, with `blocks` the grid (v06 only; others compute theirs).
pub fn chain_len(v: Variant, n: u64, blocks: u64) -> u64 {
    let lg = |b: u32| b.trailing_zeros() as u64;
    match v {
        Variant::V01Atomic => n,
        Variant::V02TreeDivergent | Variant::V03TreeSequential => {
            pass_lengths(v, n).len() as u64 * lg(v02_tree_divergent::BLOCK_THREADS)
        }
        Variant::V04FirstAddOnLoad | Variant::V05WarpShuffle => {
            pass_lengths(v, n).len() as u64 * (lg(v04_first_add_on_load::BLOCK_THREADS) + 1)
        }
        Variant::V06MultiElement { deterministic } => {
            use v06_multi_element as k;
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

/// Compare a GPU sum with the f64 reference; NaN (the poison) and infinities fail.
pub fn compare_sum(what: &str, got: f32, x: &[f32], h: u64) -> Result<()> {
    let (want, abs) = sum_ref(x);
    let tol = tolerance(h, abs);
    let err = (got as f64 - want).abs();
    if got.is_finite() && err <= tol {
        Ok(())
    } else {
        Err(Error::Mismatch(format!(
            "{what}: got {got:e}, want {want:e} (error {err:e}, allowed {tol:e} for a chain \
             of {h} adds over Σ|x| = {abs:e})"
        )))
    }
}

// ---------------------------------------------------------------- cost model

/// `n` adds; `n` f32 read, one written.
pub fn cost(n: u64) -> Cost {
    Cost::new(Flops(n), Bytes::of::<f32>(n + 1))
}

/// What a variant moves beyond the minimum: the multi-pass variants write every pass's
/// partials and read them back; v06's partials are a few KiB and left out.
pub fn modelled_bytes(v: Variant, n: u64) -> Bytes {
    let extra = if v.multi_pass() {
        2 * pass_lengths(v, n)[1..].iter().sum::<u64>()
    } else {
        0
    };
    cost(n).min_bytes + Bytes::of::<f32>(extra)
}

// ---------------------------------------------------------------- checks

/// The two input distributions: positive with mean 1 (the relative check is tight) and
/// mixed signs (cancellation; the bound is relative to Σ|x|).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inputs {
    Positive,
    MixedSigns,
}

pub fn inputs(seed: u64, n: usize, kind: Inputs) -> Vec<f32> {
    let (lo, hi) = match kind {
        Inputs::Positive => (0.5, 1.5),
        Inputs::MixedSigns => (-1.0, 1.0),
    };
    random_f32(&mut rng(seed), n, lo, hi)
}

/// One check: `n` elements starting `off` elements into their allocation (so the 16-byte
/// head varies), output poisoned, compared with the f64 sum. Returns the GPU's result.
pub fn check(gpu: &Gpu, v: Variant, n: usize, off: usize, kind: Inputs, seed: u64) -> Result<f32> {
    let x = inputs(seed, n + off, kind);
    let dx = gpu.upload(&x)?;
    let mut out = gpu.alloc::<f32>(1)?;
    let mut ws = gpu.alloc::<f32>(workspace_len(gpu, v, n as u64))?;
    gpu.poison(out.view_mut())?;
    gpu.poison(ws.view_mut())?;
    sum(
        gpu,
        v,
        dx.view_range(off..off + n),
        out.view_mut(),
        Some(ws.view_mut()),
    )?;
    gpu.sync()?;
    let got = out.to_host()?[0];
    let blocks = match v {
        Variant::V06MultiElement { .. } => v06_blocks(gpu, n as u64)? as u64,
        _ => 0,
    };
    let what = format!(
        "{} n={n} offset={off} {kind:?} seed={seed}",
        v.row_variant()
    );
    compare_sum(&what, got, &x[off..], chain_len(v, n as u64, blocks))?;
    Ok(got)
}

/// Lengths every variant is checked at: 1, 2, around a block, primes, and 2^24 + 3.
pub const TEST_LENGTHS: [usize; 11] = [
    1,
    2,
    3,
    31,
    1023,
    1024,
    1025,
    65_537,
    1_000_003,
    (1 << 22) + 1,
    (1 << 24) + 3,
];

pub fn check_variant(gpu: &Gpu, v: Variant, seed: u64) -> Result<()> {
    let mut lengths = crate::testing::lengths(&TEST_LENGTHS);
    if !matches!(v, Variant::V01Atomic) && !crate::testing::sanitizing() {
        // The top of the supported range (1 GiB of input); v01 is limited to 2^24 (above).
        lengths.push(1 << 28);
    }
    for (k, &n) in lengths.iter().enumerate() {
        let s = seed.wrapping_add(k as u64 * 13);
        for kind in [Inputs::Positive, Inputs::MixedSigns] {
            check(gpu, v, n, 0, kind, s)?;
        }
        // Misaligned starts (v06's scalar head) at the smaller lengths.
        if n <= 1 << 22 {
            for off in [1, 3] {
                check(gpu, v, n, off, Inputs::Positive, s ^ off as u64)?;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- bench

/// Default bench length: 2^28 (1 GiB) or 2^24 in quick mode.
pub fn default_len(quick: bool) -> u64 {
    if quick { 1 << 24 } else { 1 << 28 }
}

/// v01's same-address atomics run at roughly a few per nanosecond: at 2^28 one launch would
/// take far longer than the rest of the family together, so its row stays at 2^24.
pub const V01_BENCH_MAX: u64 = 1 << 24;

struct SumWork {
    v: Variant,
    n: usize,
    sets: Vec<DeviceArray<f32>>,
    out: DeviceArray<f32>,
    workspace: DeviceArray<f32>,
    seed: u64,
}

impl Workload for SumWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(gpu, self.v, self.n, 0, Inputs::Positive, self.seed).map(|_| ())
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.sets.len();
        sum(
            gpu,
            self.v,
            self.sets[k].view(),
            self.out.view_mut(),
            Some(self.workspace.view_mut()),
        )
    }
}

fn pretty_len(n: u64) -> String {
    if n.is_power_of_two() {
        format!("n=2^{}", n.trailing_zeros())
    } else {
        format!("n={n}")
    }
}

/// The family's bench cases. `size` overrides the length (v01 is capped, see above).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let n_all = size.unwrap_or(default_len(quick));
    LADDER
        .iter()
        .map(|&v| {
            let n = if v == Variant::V01Atomic {
                n_all.min(V01_BENCH_MAX)
            } else {
                n_all
            };
            let cost = cost(n).with_modelled(modelled_bytes(v, n));
            let note = match v {
                Variant::V01Atomic if n < n_all => format!(
                    "at {} not {}: same-address atomics would take too long",
                    pretty_len(n),
                    pretty_len(n_all)
                ),
                Variant::V06MultiElement {
                    deterministic: true,
                } => "deterministic: partials + fixed-order second launch".into(),
                Variant::V06MultiElement {
                    deterministic: false,
                } => "one atomic per block".into(),
                _ => String::new(),
            };
            Case {
                family: FAMILY,
                variant: v.row_variant(),
                ladder: "sum",
                shape: pretty_len(n),
                note,
                cost,
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let sets = (0..rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes))
                        .map(|k| {
                            gpu.upload(&inputs(
                                seed.wrapping_add(k as u64),
                                n as usize,
                                Inputs::Positive,
                            ))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(SumWork {
                        v,
                        n: n as usize,
                        sets,
                        out: gpu.alloc(1)?,
                        workspace: gpu.alloc(workspace_len(gpu, v, n))?,
                        seed,
                    }) as Box<dyn Workload>)
                }),
            }
        })
        .collect()
}

pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        let name = match v {
            Variant::V06MultiElement {
                deterministic: true,
            } => "reduce_v06_multi_element_final_matches_cpu".to_string(),
            v => format!("{}_matches_cpu", v.entry()),
        };
        t.push(GpuTest::new(name, move |gpu| check_variant(gpu, v, seed)));
    }
    t.push(GpuTest::new("reduce_v06_past_2_31_elements", move |gpu| {
        // 2^31 + 5 f32 (8 GiB): past i32 indexing, both the atomic and the deterministic
        // v06 (the kernels index with u64). Skipped under the sanitizer with the other
        // multi-GB tests.
        let n = (1usize << 31) + 5;
        for deterministic in [false, true] {
            let v = Variant::V06MultiElement { deterministic };
            check(gpu, v, n, 0, Inputs::MixedSigns, seed ^ 0x231)?;
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "reduce_v06_multi_element_final_is_bit_identical_run_to_run",
        move |gpu| {
            let v = Variant::V06MultiElement {
                deterministic: true,
            };
            for (n, off) in [(1usize << 28, 0usize), ((1 << 24) + 3, 1), (1_000_003, 3)] {
                for kind in [Inputs::Positive, Inputs::MixedSigns] {
                    let a = check(gpu, v, n, off, kind, seed)?;
                    let b = check(gpu, v, n, off, kind, seed)?;
                    if a.to_bits() != b.to_bits() {
                        return Err(Error::Mismatch(format!(
                            "deterministic sum n={n} offset={off} {kind:?}: {a:e} \
                             ({:#010x}) then {b:e} ({:#010x})",
                            a.to_bits(),
                            b.to_bits()
                        )));
                    }
                }
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "reduce_bad_output_is_refused_before_launch",
        |gpu| {
            let x = gpu.upload(&[1.0f32; 10])?;
            let mut out2 = gpu.alloc::<f32>(2)?;
            let mut out0 = gpu.alloc::<f32>(0)?;
            for v in LADDER {
                expect_error(
                    sum(gpu, v, x.view(), out2.view_mut(), None),
                    &["bad input", "one element", "2"],
                )?;
                expect_error(
                    sum(gpu, v, x.view(), out0.view_mut(), None),
                    &["bad input", "one element", "0"],
                )?;
            }
            let det = Variant::V06MultiElement {
                deterministic: true,
            };
            let mut out = gpu.alloc::<f32>(1)?;
            expect_error(
                sum(gpu, det, x.view(), out.view_mut(), None),
                &["bad input", "workspace", "got none"],
            )?;
            let mut small = gpu.alloc::<f32>(3)?;
            expect_error(
                sum(gpu, det, x.view(), out.view_mut(), Some(small.view_mut())),
                &["bad input", "workspace", "it has 3"],
            )?;
            // A multi-pass variant on 1000 elements needs 4 partials (256 per block).
            let x = gpu.upload(&[1.0f32; 1000])?;
            expect_error(
                sum(
                    gpu,
                    Variant::V03TreeSequential,
                    x.view(),
                    out.view_mut(),
                    None,
                ),
                &["bad input", "workspace of 4", "got none"],
            )?;
            expect_error(
                sum(
                    gpu,
                    Variant::V03TreeSequential,
                    x.view(),
                    out.view_mut(),
                    Some(small.view_mut()),
                ),
                &["bad input", "workspace of 4", "it has 3"],
            )
        },
    ));
    t.push(GpuTest::new(
        "reduce_empty_input_gives_zero_without_launch",
        |gpu| {
            let x = gpu.alloc::<f32>(0)?;
            let mut out = gpu.alloc::<f32>(1)?;
            let mut ws = gpu.alloc::<f32>(partials_len(gpu))?;
            for v in LADDER {
                gpu.poison(out.view_mut())?;
                sum(gpu, v, x.view(), out.view_mut(), Some(ws.view_mut()))?;
                gpu.sync()?;
                let got = out.to_host()?[0];
                if got.to_bits() != 0 {
                    return Err(Error::Mismatch(format!(
                        "{}: empty sum gave {got:e}, want 0",
                        v.row_variant()
                    )));
                }
            }
            Ok(())
        },
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_model_hand_computed() {
        assert_eq!(cost(1000), Cost::new(Flops(1000), Bytes(4004)));
        assert_eq!(cost(1 << 28).min_bytes, Bytes((1 << 30) + 4));
        // 1000 elements, 256 per block: 4 partials written and read back.
        assert_eq!(
            modelled_bytes(Variant::V03TreeSequential, 1000),
            Bytes(4004 + 32)
        );
        assert_eq!(modelled_bytes(Variant::V01Atomic, 1000), Bytes(4004));
    }

    #[test]
    fn passes() {
        let v3 = Variant::V03TreeSequential;
        assert_eq!(pass_lengths(v3, 1), vec![1]);
        assert_eq!(pass_lengths(v3, 256), vec![256]);
        assert_eq!(pass_lengths(v3, 257), vec![257, 2]);
        assert_eq!(
            pass_lengths(v3, 1 << 28),
            vec![1 << 28, 1 << 20, 1 << 12, 1 << 4]
        );
        assert_eq!(
            pass_lengths(Variant::V05WarpShuffle, 1 << 28),
            vec![1 << 28, 1 << 19, 1 << 10, 2]
        );
    }

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

    /// Simulate v06's per-thread mapping on the CPU: every element read exactly once for
    /// any alignment, length and grid.
    #[test]
    fn v06_mapping_covers_every_element_once() {
        use v06_multi_element as k;
        for n in [1u64, 2, 3, 4, 5, 17, 1023, 1025, 65_537] {
            for mis in 0..4u64 {
                for blocks in [1u32, 3, v06_grid(132, 8, n)] {
                    let step = blocks as u64 * k::BLOCK_THREADS as u64;
                    let head = mis.min(n);
                    let vectors = (n - head) / 4;
                    let tail_start = head + 4 * vectors;
                    let mut seen = vec![0u8; n as usize];
                    for t in 0..step {
                        let mut v = t;
                        while v + (k::UNROLL - 1) * step < vectors {
                            for u in 0..k::UNROLL {
                                for l in 0..4 {
                                    seen[(head + 4 * (v + u * step) + l) as usize] += 1;
                                }
                            }
                            v += k::UNROLL * step;
                        }
                        while v < vectors {
                            for l in 0..4 {
                                seen[(head + 4 * v + l) as usize] += 1;
                            }
                            v += step;
                        }
                        if t < head {
                            seen[t as usize] += 1;
                        }
                        if t < n - tail_start {
                            seen[(tail_start + t) as usize] += 1;
                        }
                    }
                    assert!(
                        seen.iter().all(|&c| c == 1),
                        "n={n} mis={mis} blocks={blocks}"
                    );
                }
            }
        }
    }

    #[test]
    fn grids() {
        assert_eq!(blocks_simple(Variant::V01Atomic, 1), 1);
        assert_eq!(blocks_simple(Variant::V03TreeSequential, 257), 2);
        assert_eq!(blocks_simple(Variant::V05WarpShuffle, 512), 1);
        assert_eq!(blocks_simple(Variant::V05WarpShuffle, 513), 2);
        // Machine-sized for big n, small for small n.
        assert_eq!(v06_grid(132, 8, 1 << 28), 1056);
        assert_eq!(v06_grid(132, 8, 1), 1);
        assert_eq!(v06_grid(132, 8, 4097), 2);
    }

    #[test]
    fn names_follow_the_stem() {
        for v in LADDER {
            assert_eq!(v.entry(), format!("reduce_{}", v.stem()));
            assert!(
                crate::ptx::BUILT[0]
                    .1
                    .contains(&format!(".entry {}(", v.entry()))
            );
        }
        assert!(
            crate::ptx::BUILT[0]
                .1
                .contains(&format!(".entry {FINAL_ENTRY}("))
        );
        let cases = cases(false, None, 1);
        assert_eq!(cases.len(), LADDER.len());
        let v01 = cases.iter().find(|c| c.variant == "v01_atomic").unwrap();
        assert_eq!(v01.shape, "n=2^24");
        assert!(cases.iter().any(|c| c.variant == "v06_multi_element_final"));
    }
}
