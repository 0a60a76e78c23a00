//! Family `softmax` on the host: softmax over the last dimension of rows x cols, f32 or
//! bf16, five variants and [`auto`], which picks one by row length.
//!
//! Numerical contract (see `kernels-gpu/src/softmax/mod.rs`): max-subtracted, safe for any
//! finite input; -inf entries give 0; **a row entirely -inf gives all zeros** (NaN-free).
//! Tolerances: exp is `ex2.approx` of `(x - max) log2 e` (~2^-22 relative plus the product's
//! rounding, a few 1e-7 where exp is not negligible); the row sum is a per-thread chain of
//! up to cols / 32 terms plus a tree, each step 2^-24: f32 rel = 4e-6 + 6e-8 * (cols/32 + 10)
//! (cols = 4096: 1.2e-5), abs 1e-9 for outputs that underflow (ftz); bf16 rel 8e-3 (one
//! final rounding, 2^-9) plus the f32 error, abs 1e-6.

use rooflab_kernels::softmax::{
    ROW_MAX_COLS, row_threads, v01_three_kernels, v02_block_per_row, v03_online, v04_warp_per_row,
    v05_row_in_registers,
};

use super::fused_elementwise::{Buf, Dtype, check_dims, expect_buf, leak, par_map};
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::check::{compare_f32, random_f32, rng};
use crate::cost::{Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, LaunchConfig};
use crate::kernel_args;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "softmax";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01ThreeKernels,
    V02BlockPerRow,
    V03Online,
    V04WarpPerRow,
    V05RowInRegisters,
}

pub const LADDER: [Variant; 5] = [
    Variant::V01ThreeKernels,
    Variant::V02BlockPerRow,
    Variant::V03Online,
    Variant::V04WarpPerRow,
    Variant::V05RowInRegisters,
];

impl Variant {
    pub fn stem(self) -> &'static str {
        match self {
            Variant::V01ThreeKernels => "v01_three_kernels",
            Variant::V02BlockPerRow => "v02_block_per_row",
            Variant::V03Online => "v03_online",
            Variant::V04WarpPerRow => "v04_warp_per_row",
            Variant::V05RowInRegisters => "v05_row_in_registers",
        }
    }
    pub fn entry(self, dt: Dtype) -> String {
        format!("{FAMILY}_{}_{}", self.stem(), dt.name())
    }
    /// Modelled DRAM traffic: v01 reads x three times (plus its 2 x rows statistics written
    /// and read); the others are modelled at the minimum (their re-reads of a row hit cache
    /// for the rows benched).
    pub fn modelled(self, dt: Dtype, rows: u64, cols: u64) -> Cost {
        let base = cost(dt, rows, cols);
        match self {
            Variant::V01ThreeKernels => base.with_modelled(
                dt.bytes(v01_three_kernels::PASSES * rows * cols)
                    + crate::cost::Bytes(4 * 4 * rows),
            ),
            _ => base,
        }
    }
}

/// One read of x, one write of y. FLOPs per element: max 1, sub+mul+exp 3, sum 1, scale 1.
pub fn cost(dt: Dtype, rows: u64, cols: u64) -> Cost {
    Cost::new(Flops(6 * rows * cols), dt.bytes(2 * rows * cols))
}

/// What `auto` runs for rows of `cols`: one warp per row up to 256 elements, the row in
/// registers up to `ROW_MAX_COLS` (16384), the online two-read kernel beyond.
pub fn auto_choice(cols: usize) -> Variant {
    if cols <= 256 {
        Variant::V04WarpPerRow
    } else if cols <= ROW_MAX_COLS as usize {
        Variant::V05RowInRegisters
    } else {
        Variant::V03Online
    }
}

/// Row statistics of v01 (max and sum per row).
pub struct RowStats {
    pub max: DeviceArray<f32>,
    pub sum: DeviceArray<f32>,
}

impl RowStats {
    pub fn alloc(gpu: &Gpu, rows: usize) -> Result<RowStats> {
        Ok(RowStats {
            max: gpu.alloc(rows)?,
            sum: gpu.alloc(rows)?,
        })
    }

    /// The device addresses of `stats` (max, sum) for a two-pass variant over `rows` rows,
    /// or a shape error naming `op` when they are missing or sized for other rows.
    pub fn require(
        stats: Option<&mut RowStats>,
        rows: usize,
        op: &str,
        variant: &str,
    ) -> Result<(u64, u64)> {
        let st = stats.ok_or_else(|| Error::Shape {
            op: op.into(),
            what: format!("{variant} needs its row statistics (RowStats)"),
        })?;
        if st.max.len() != rows || st.sum.len() != rows {
            return Err(Error::Shape {
                op: op.into(),
                what: format!("row statistics hold {} entries, need {rows}", st.max.len()),
            });
        }
        Ok((st.max.view().addr, st.sum.view().addr))
    }
}

/// Softmax of each row of `x` (rows x cols) into `y` with variant `v`. v01 needs `stats`.
/// Empty tensors: nothing launched. v05 refuses rows longer than 16384.
pub fn softmax(
    gpu: &Gpu,
    v: Variant,
    rows: usize,
    cols: usize,
    x: &Buf,
    y: &mut Buf,
    stats: Option<&mut RowStats>,
) -> Result<()> {
    let dt = x.dtype();
    let op = v.entry(dt);
    check_dims(&op, rows, cols, false)?;
    expect_buf(&op, "x", x, dt, rows * cols)?;
    expect_buf(&op, "y", y, dt, rows * cols)?;
    if v == Variant::V05RowInRegisters && cols > ROW_MAX_COLS as usize {
        return Err(Error::Shape {
            op,
            what: format!(
                "rows of {cols} elements do not fit on chip (this variant holds at most \
                 {ROW_MAX_COLS}); use softmax::auto or v03_online"
            ),
        });
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let (xa, ya, c) = (x.addr(), y.addr(), cols as u32);
    let per_row = |b: u32, shared: u32| LaunchConfig::one_block_per_row(rows, b, shared);
    // SAFETY (every launch below): x and y hold rows x cols elements of dt (checked above),
    // the statistics `rows` f32; argument lists match the entries; grids are one block per
    // row (v04: one warp per row).
    unsafe {
        match v {
            Variant::V01ThreeKernels => {
                let (m, s) = RowStats::require(stats, rows, &op, "v01_three_kernels")?;
                let cfg = per_row(
                    v01_three_kernels::BLOCK_THREADS,
                    v01_three_kernels::SHARED_BYTES,
                );
                let name = |k: &str| format!("{FAMILY}_v01_three_kernels_{k}_{}", dt.name());
                gpu.launch(&name("max"), cfg, &kernel_args![xa, m, c])?;
                gpu.launch(&name("sum"), cfg, &kernel_args![xa, m, s, c])?;
                gpu.launch(&name("normalize"), cfg, &kernel_args![xa, m, s, ya, c])
            }
            Variant::V02BlockPerRow => gpu.launch(
                &op,
                per_row(
                    v02_block_per_row::BLOCK_THREADS,
                    v02_block_per_row::SHARED_BYTES,
                ),
                &kernel_args![xa, ya, c],
            ),
            Variant::V03Online => gpu.launch(
                &op,
                per_row(v03_online::BLOCK_THREADS, v03_online::SHARED_BYTES),
                &kernel_args![xa, ya, c],
            ),
            Variant::V04WarpPerRow => {
                let cfg = LaunchConfig::for_threads(
                    &op,
                    rows as u64 * 32,
                    v04_warp_per_row::BLOCK_THREADS,
                )?;
                let r = rows as u32;
                gpu.launch(&op, cfg, &kernel_args![xa, ya, r, c])
            }
            Variant::V05RowInRegisters => gpu.launch(
                &op,
                per_row(row_threads(c), v05_row_in_registers::SHARED_BYTES),
                &kernel_args![xa, ya, c],
            ),
        }
    }
}

/// Softmax with the variant `auto_choice` picks for this row length; returns it.
pub fn auto(gpu: &Gpu, rows: usize, cols: usize, x: &Buf, y: &mut Buf) -> Result<Variant> {
    let v = auto_choice(cols);
    softmax(gpu, v, rows, cols, x, y, None)?;
    Ok(v)
}

// ---------------------------------------------------------------- reference and checks

/// Softmax of each row in f64 with the same contract (all -inf row -> zeros).
pub fn softmax_ref(rows: usize, cols: usize, x: &[f32]) -> Vec<f32> {
    let per_row = par_map(rows, |r| {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let m = if m == f64::NEG_INFINITY { 0.0 } else { m };
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
        row.iter()
            .map(|&v| ((v as f64 - m).exp() * inv) as f32)
            .collect::<Vec<_>>()
    });
    per_row.concat()
}

/// (rel, abs) tolerance for rows of `cols`; see the module header.
pub fn tolerance(dt: Dtype, cols: usize) -> (f32, f32) {
    let f32_rel = 4e-6 + 6e-8 * (cols as f32 / 32.0 + 10.0);
    match dt {
        Dtype::F32 => (f32_rel, 1e-9),
        Dtype::Bf16 => (8e-3 + f32_rel, 1e-6),
    }
}

/// Input patterns the checks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Uniform in [-8, 8).
    Normal,
    /// Uniform in [-1e4, 1e4): overflow without the max subtraction.
    Huge,
    /// Normal, with every 7th element -inf and row 1 (if any) entirely -inf.
    NegInf,
}

pub fn make_input(dt: Dtype, rows: usize, cols: usize, p: Pattern, seed: u64) -> Vec<f32> {
    let (lo, hi) = if p == Pattern::Huge {
        (-1e4, 1e4)
    } else {
        (-8.0, 8.0)
    };
    let mut x: Vec<f32> = random_f32(&mut rng(seed), rows * cols, lo, hi)
        .into_iter()
        .map(|v| dt.quantize(v))
        .collect();
    if p == Pattern::NegInf {
        for (i, v) in x.iter_mut().enumerate() {
            if i % 7 == 3 || (i / cols.max(1)) == 1 {
                *v = f32::NEG_INFINITY;
            }
        }
    }
    x
}

/// One correctness check: fresh input, poisoned output, every element compared.
pub fn check(
    gpu: &Gpu,
    v: Option<Variant>,
    dt: Dtype,
    rows: usize,
    cols: usize,
    p: Pattern,
    seed: u64,
) -> Result<()> {
    let h = make_input(dt, rows, cols, p, seed);
    let x = Buf::upload(gpu, dt, &h)?;
    let mut y = Buf::alloc(gpu, dt, rows * cols)?;
    y.poison(gpu)?;
    let ran = match v {
        Some(v) => {
            let mut st = RowStats::alloc(gpu, rows)?;
            softmax(gpu, v, rows, cols, &x, &mut y, Some(&mut st))?;
            v
        }
        None => auto(gpu, rows, cols, &x, &mut y)?,
    };
    gpu.sync()?;
    let got = y.to_f32()?;
    let want = softmax_ref(rows, cols, &h);
    let (rel, abs) = tolerance(dt, cols);
    let what = format!(
        "{}{} {rows}x{cols} {p:?} seed={seed}",
        if v.is_none() { "auto->" } else { "" },
        ran.entry(dt)
    );
    compare_f32(&what, &got, &want, rel, abs).map_err(Error::Mismatch)
}

/// (rows, cols): lengths 1, 2, 31, a 768 hidden size, 4097, 16384 (the on-chip limit) and
/// 131072 (past it: v05 is checked to refuse it instead).
pub const TEST_SHAPES: [(usize, usize); 8] = [
    (3, 1),
    (5, 2),
    (33, 31),
    (7, 128),
    (19, 768),
    (9, 4097),
    (4, 16384),
    (2, 131072),
];

pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for dt in Dtype::ALL {
        for v in LADDER {
            t.push(GpuTest::new(
                format!("{}_matches_cpu", v.entry(dt)),
                move |gpu| {
                    for (i, &(rows, cols)) in
                        crate::testing::matrices(&TEST_SHAPES).iter().enumerate()
                    {
                        if v == Variant::V05RowInRegisters && cols > ROW_MAX_COLS as usize {
                            continue;
                        }
                        for p in [Pattern::Normal, Pattern::Huge, Pattern::NegInf] {
                            check(gpu, Some(v), dt, rows, cols, p, seed + i as u64)?;
                        }
                    }
                    Ok(())
                },
            ));
        }
        t.push(GpuTest::new(
            format!("softmax_auto_{}_matches_cpu", dt.name()),
            move |gpu| {
                for (i, &(rows, cols)) in crate::testing::matrices(&TEST_SHAPES).iter().enumerate()
                {
                    check(gpu, None, dt, rows, cols, Pattern::NegInf, seed + i as u64)?;
                }
                Ok(())
            },
        ));
    }
    t.push(GpuTest::new("softmax_all_neg_inf_row_gives_zeros", |gpu| {
        for dt in Dtype::ALL {
            for v in LADDER {
                let x = Buf::upload(gpu, dt, &[f32::NEG_INFINITY; 3 * 40])?;
                let mut y = Buf::alloc(gpu, dt, 3 * 40)?;
                y.poison(gpu)?;
                let mut st = RowStats::alloc(gpu, 3)?;
                softmax(gpu, v, 3, 40, &x, &mut y, Some(&mut st))?;
                let got = y.to_f32()?;
                if got.iter().any(|&g| g != 0.0) {
                    return Err(Error::Mismatch(format!(
                        "{}: all -inf row not all zeros",
                        v.entry(dt)
                    )));
                }
            }
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "softmax_bad_input_is_refused_before_launch",
        |gpu| {
            let x = Buf::upload(gpu, Dtype::F32, &[1.0; 12])?;
            let mut y = Buf::alloc(gpu, Dtype::F32, 12)?;
            let mut yb = Buf::alloc(gpu, Dtype::Bf16, 12)?;
            for v in LADDER {
                let mut st = RowStats::alloc(gpu, 3)?;
                expect_error(
                    softmax(gpu, v, 4, 4, &x, &mut y, Some(&mut st)),
                    &["x has 12", "16"],
                )?;
                expect_error(
                    softmax(gpu, v, 3, 4, &x, &mut yb, Some(&mut st)),
                    &["y is bf16"],
                )?;
                // Empty: defined, nothing launched.
                let e = Buf::alloc(gpu, Dtype::F32, 0)?;
                let mut ye = Buf::alloc(gpu, Dtype::F32, 0)?;
                softmax(gpu, v, 0, 4, &e, &mut ye, Some(&mut st))?;
            }
            expect_error(
                softmax(gpu, Variant::V01ThreeKernels, 3, 4, &x, &mut y, None),
                &["RowStats"],
            )?;
            let long = Buf::alloc(gpu, Dtype::F32, 20000)?;
            let mut yl = Buf::alloc(gpu, Dtype::F32, 20000)?;
            expect_error(
                softmax(
                    gpu,
                    Variant::V05RowInRegisters,
                    1,
                    20000,
                    &long,
                    &mut yl,
                    None,
                ),
                &["20000", "16384", "auto"],
            )
        },
    ));
    t
}

// ---------------------------------------------------------------- bench

struct SoftmaxWork {
    v: Option<Variant>,
    dt: Dtype,
    rows: usize,
    cols: usize,
    xs: Vec<Buf>,
    y: Buf,
    stats: Option<RowStats>,
    seed: u64,
}

impl Workload for SoftmaxWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(
            gpu,
            self.v,
            self.dt,
            self.rows,
            self.cols,
            Pattern::Normal,
            self.seed,
        )
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let x = &self.xs[i % self.xs.len()];
        match self.v {
            Some(v) => softmax(
                gpu,
                v,
                self.rows,
                self.cols,
                x,
                &mut self.y,
                self.stats.as_mut(),
            ),
            None => auto(gpu, self.rows, self.cols, x, &mut self.y).map(|_| ()),
        }
    }
}

pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let scale = |rows: usize, cols: usize| match size {
        Some(s) => ((s as usize / cols).max(1), cols),
        None if quick => ((rows / 8).max(1), cols),
        None => (rows, cols),
    };
    // (shape, variants): the whole ladder at 16384 x 4096, short rows for v04 against v03
    // and v05, long rows for v03 (v05 cannot hold them).
    type Plan = Vec<((usize, usize), Vec<Option<Variant>>)>;
    let plan: Plan = vec![
        (
            scale(16384, 4096),
            LADDER.iter().map(|&v| Some(v)).chain([None]).collect(),
        ),
        (
            scale(262144, 128),
            vec![
                Some(Variant::V03Online),
                Some(Variant::V04WarpPerRow),
                Some(Variant::V05RowInRegisters),
                None,
            ],
        ),
        (
            scale(2048, 32768),
            vec![
                Some(Variant::V02BlockPerRow),
                Some(Variant::V03Online),
                None,
            ],
        ),
    ];
    let mut out = Vec::new();
    for dt in Dtype::ALL {
        for ((rows, cols), vs) in &plan {
            let (rows, cols) = (*rows, *cols);
            for &v in vs {
                let shown = v.unwrap_or(auto_choice(cols));
                let c = shown.modelled(dt, rows as u64, cols as u64);
                out.push(Case {
                    family: FAMILY,
                    variant: match v {
                        Some(v) => leak(format!("{}_{}", v.stem(), dt.name())),
                        None => leak(format!("auto_{}", dt.name())),
                    },
                    ladder: leak(format!("softmax_{}", dt.name())),
                    shape: format!("{rows}x{cols}"),
                    note: if v.is_none() {
                        format!("auto→{}", &shown.stem()[..3])
                    } else {
                        String::new()
                    },
                    cost: c,
                    torch: Some(TorchSpec {
                        op: "softmax".into(),
                        shape: vec![rows as u64, cols as u64],
                        dtype: dt.torch().into(),
                    }),
                    prepare: Box::new(move |gpu: &Gpu| {
                        let xs = (0..rotation_sets(c.min_bytes.0, gpu.info.l2_bytes))
                            .map(|k| {
                                let h = make_input(
                                    dt,
                                    rows,
                                    cols,
                                    Pattern::Normal,
                                    seed + 7 + k as u64,
                                );
                                Buf::upload(gpu, dt, &h)
                            })
                            .collect::<Result<Vec<_>>>()?;
                        Ok(Box::new(SoftmaxWork {
                            v,
                            dt,
                            rows,
                            cols,
                            xs,
                            y: Buf::alloc(gpu, dt, rows * cols)?,
                            stats: Some(RowStats::alloc(gpu, rows)?),
                            seed,
                        }) as Box<dyn Workload>)
                    }),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooflab_kernels::softmax::{ROW_ITEMS, row_slot};

    #[test]
    fn reference_contract() {
        let y = softmax_ref(
            2,
            3,
            &[
                0.0,
                0.0,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
            ],
        );
        assert_eq!(y, vec![0.5, 0.5, 0.0, 0.0, 0.0, 0.0]);
        let y = softmax_ref(1, 2, &[1e4, -1e4]);
        assert_eq!(y, vec![1.0, 0.0]);
    }

    #[test]
    fn auto_picks_by_row_length() {
        assert_eq!(auto_choice(1), Variant::V04WarpPerRow);
        assert_eq!(auto_choice(128), Variant::V04WarpPerRow);
        assert_eq!(auto_choice(4096), Variant::V05RowInRegisters);
        assert_eq!(auto_choice(16384), Variant::V05RowInRegisters);
        assert_eq!(auto_choice(16385), Variant::V03Online);
    }

    #[test]
    fn row_in_registers_layout_covers_each_element_once() {
        for cols in [1u32, 2, 31, 128, 768, 1000, 4096, 4097, 16384] {
            let b = row_threads(cols);
            assert!(b.is_multiple_of(32) && b <= 1024 && b * ROW_ITEMS >= cols);
            for per16 in [1u32, 4, 8] {
                if per16 > 1 && cols % per16 != 0 {
                    continue; // the kernels use the scalar layout then
                }
                let mut seen = vec![0u8; cols as usize];
                for t in 0..b {
                    for k in 0..ROW_ITEMS {
                        if let Some(e) = row_slot(k, t, b, per16, cols) {
                            seen[e as usize] += 1;
                        }
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "cols={cols} per16={per16}");
            }
        }
    }

    #[test]
    fn cost_and_tolerance() {
        assert_eq!(cost(Dtype::F32, 2, 3).min_bytes.0, 48);
        let v01 = Variant::V01ThreeKernels.modelled(Dtype::F32, 16384, 4096);
        let ratio = v01.modelled_bytes.0 as f64 / v01.min_bytes.0 as f64;
        assert!((ratio - 2.0).abs() < 1e-3, "{ratio}");
        let (rel, _) = tolerance(Dtype::F32, 4096);
        assert!(rel < 2e-5 && rel > 1e-5);
    }

    #[test]
    fn entries_exist_in_the_ptx() {
        let ptx = crate::ptx::BUILT[0].1;
        for dt in Dtype::ALL {
            for v in &LADDER[1..] {
                assert!(ptx.contains(&format!(".entry {}(", v.entry(dt))));
            }
            for k in ["max", "sum", "normalize"] {
                assert!(ptx.contains(&format!(
                    ".entry softmax_v01_three_kernels_{k}_{}(",
                    dt.name()
                )));
            }
        }
    }
}
