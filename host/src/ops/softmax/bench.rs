//! softmax: the bench cases: the ladder up to v05, and v09, at 16384 x 4096 (v06 is for
//! shorter rows, v07 and v08 for longer); short rows (262144 x 128) for v03-v06; long rows
//! (2048 x 32768) for v02, v03, v07, v08 and v09, and the longest (512 x 131072, 256 x 262144)
//! for v07 and v09; `auto` at each shape; and `auto`'s row-length sweep at a fixed total
//! (ladders `sweep_cols_f32` / `sweep_cols_bf16`: rows x cols = 2^26 for cols = 128 .. 262144,
//! drawn as a line over cols by the report).

use super::launch::{LADDER, Variant, auto, auto_choice, softmax};
use super::tests::{Pattern, check, make_input};
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype, RowStats};

/// Elements of every point of the row-length sweep (rows = SWEEP_TOTAL / cols).
pub const SWEEP_TOTAL: usize = 1 << 26;
/// The sweep's row lengths: short rows (v06), one block's registers (v05), clusters (v07).
pub const SWEEP_COLS: [usize; 7] = [128, 512, 2048, 8192, 32768, 131072, 262144];

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
        .map(|_| ())
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

/// The ladder a row climbs: one per dtype.
fn ladder(dt: Dtype) -> &'static str {
    match dt {
        Dtype::F32 => "softmax_f32",
        Dtype::Bf16 => "softmax_bf16",
    }
}

/// The ladder of `auto`'s row-length sweep: one per dtype.
fn sweep_ladder(dt: Dtype) -> &'static str {
    match dt {
        Dtype::F32 => "sweep_cols_f32",
        Dtype::Bf16 => "sweep_cols_bf16",
    }
}

/// The family's bench cases. `size` overrides the element count (the rows follow).
///
/// `auto`'s rows name the step it runs (note `auto→vNN`) and its kernels as on a GPU with
/// clusters (sm_90a, the bench's reference H200): on another GPU a long-row `auto` row lists
/// v07's kernel and is reported unavailable, like v07's own row, although `auto` would run
/// v03 there.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let scale = |rows: usize, cols: usize| match size {
        Some(s) => ((s as usize / cols).max(1), cols),
        None if quick => ((rows / 8).max(1), cols),
        None => (rows, cols),
    };
    // (ladder, shape, variants): the ladder up to v05 at 16384 x 4096 (v06 holds rows of up
    // to 512, v07 and v08 are for rows past v05's 16384), short rows for v04 and v06 against
    // v03 and v05, long rows for v03, v07 and v08 (v05 cannot hold them).
    type Plan = Vec<(&'static str, (usize, usize), Vec<Option<Variant>>)>;
    let mut plan: Plan = vec![
        (
            "ladder",
            scale(16384, 4096),
            LADDER
                .iter()
                .filter(|&&v| {
                    ![Variant::V06RowsPerWarp, Variant::V07ClusterRow, Variant::V08ClusterRegisters]
                        .contains(&v)
                })
                .map(|&v| Some(v))
                .chain([None])
                .collect(),
        ),
        (
            "ladder",
            scale(262144, 128),
            vec![
                Some(Variant::V03Online),
                Some(Variant::V04WarpPerRow),
                Some(Variant::V05RowInRegisters),
                Some(Variant::V06RowsPerWarp),
                None,
            ],
        ),
        (
            "ladder",
            scale(2048, 32768),
            vec![
                Some(Variant::V02BlockPerRow),
                Some(Variant::V03Online),
                Some(Variant::V07ClusterRow),
                Some(Variant::V08ClusterRegisters),
                Some(Variant::V09L2Reread),
                None,
            ],
        ),
    ];
    // The longest rows: the two steps that take them, the cluster's shared memory and the L2
    // re-read (whose resident rows outgrow L2 somewhere past 32768 f32 / 65536 bf16).
    for (rows, cols) in [(512, 131072), (256, 262144)] {
        plan.push((
            "ladder",
            scale(rows, cols),
            vec![Some(Variant::V07ClusterRow), Some(Variant::V09L2Reread)],
        ));
    }
    // The row-length sweep: `auto` at a fixed total (scaled as the rest).
    for cols in SWEEP_COLS {
        plan.push(("sweep", scale(SWEEP_TOTAL / cols, cols), vec![None]));
    }
    let mut out = Vec::new();
    for dt in Dtype::ALL {
        for (kind, (rows, cols), vs) in &plan {
            let (rows, cols) = (*rows, *cols);
            for &v in vs {
                let shown = v.unwrap_or(auto_choice(cols, dt, true));
                let c = shown.modelled(dt, rows as u64, cols as u64);
                out.push(Case {
                    family: super::FAMILY.name,
                    variant: match v {
                        Some(v) => v.row_variant(dt),
                        None => format!("auto_{}", dt.name()),
                    },
                    kernels: shown.kernel_uses(dt, cols),
                    ladder: if *kind == "sweep" {
                        sweep_ladder(dt)
                    } else {
                        ladder(dt)
                    },
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
                        lens: Vec::new(),
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
mod unit_tests {
    use super::*;
    use rooflab_kernels::cluster_row::HEADER_BYTES;

    #[test]
    fn cases_cover_the_ladder_and_auto() {
        let c = cases(true, None, 1);
        for dt in Dtype::ALL {
            for v in LADDER {
                assert!(c.iter().any(|c| c.variant == v.row_variant(dt)));
            }
        }
        let auto_short = c
            .iter()
            .find(|c| c.variant == "auto_f32" && c.shape.ends_with("x128"))
            .unwrap();
        assert_eq!(auto_short.note, "auto→v06");
        // Every case names the kernels it runs, with their launch shape (v05's block follows
        // the row: 4096 / 16 = 256 threads; v07's its slice: 32768 / 8 / 4 vectors of 4 f32).
        assert!(c.iter().all(|c| !c.kernels.is_empty()));
        let v05 = c
            .iter()
            .find(|c| c.variant == "v05_row_in_registers_f32" && c.shape.ends_with("x4096"))
            .unwrap();
        assert_eq!(v05.kernels[0].block_threads, 256);
        let v06 = c
            .iter()
            .find(|c| c.variant == "v06_rows_per_warp_bf16")
            .unwrap();
        assert!(v06.shape.ends_with("x128"), "{}", v06.shape);
        let v07 = c
            .iter()
            .find(|c| c.variant == "v07_cluster_row_f32")
            .unwrap();
        assert!(v07.shape.ends_with("x32768"), "{}", v07.shape);
        // 4 blocks a row of 8192 (32 KiB), 512 threads of 4 vectors.
        assert_eq!(v07.kernels[0].block_threads, 512);
        assert_eq!(v07.kernels[0].shared_bytes, HEADER_BYTES + 8192 * 4);
        // v08: 4 blocks a row of 8192 elements in registers, 512 threads, the header only.
        let v08 = c
            .iter()
            .find(|c| c.variant == "v08_cluster_registers_bf16")
            .unwrap();
        assert!(v08.shape.ends_with("x32768"), "{}", v08.shape);
        assert_eq!((v08.kernels[0].block_threads, v08.kernels[0].shared_bytes), (512, HEADER_BYTES));
    }

    /// The row-length sweep: `auto` at every length, rows x cols the same total, honouring
    /// `--size` and `--quick` like the other shapes, with the torch peer, on its own ladder.
    #[test]
    fn the_row_length_sweep_keeps_the_total() {
        for (quick, size, total) in [
            (false, None, SWEEP_TOTAL),
            (true, None, SWEEP_TOTAL / 8),
            (false, Some(1u64 << 24), 1 << 24),
        ] {
            let c = cases(quick, size, 1);
            for dt in Dtype::ALL {
                let sweep: Vec<&Case> = c.iter().filter(|c| c.ladder == sweep_ladder(dt)).collect();
                assert_eq!(sweep.len(), SWEEP_COLS.len());
                for (case, cols) in sweep.iter().zip(SWEEP_COLS) {
                    assert_eq!(case.variant, format!("auto_{}", dt.name()));
                    assert_eq!(case.shape, format!("{}x{cols}", total / cols));
                    let want = auto_choice(cols, dt, true);
                    assert_eq!(case.note, format!("auto→{}", &want.stem()[..3]));
                    let t = case.torch.as_ref().unwrap();
                    assert_eq!(t.shape, vec![(total / cols) as u64, cols as u64]);
                }
            }
        }
        let c = cases(false, None, 1);
        let notes: Vec<&str> = c
            .iter()
            .filter(|c| c.ladder == "sweep_cols_f32")
            .map(|c| c.note.as_str())
            .collect();
        assert_eq!(
            notes,
            ["auto→v06", "auto→v06", "auto→v05", "auto→v05", "auto→v07", "auto→v07", "auto→v07"]
        );
    }
}
