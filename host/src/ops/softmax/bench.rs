//! softmax: the bench cases (the whole ladder at 16384 x 4096, short rows for v04 against
//! v03 and v05, long rows for v03; `auto` at each shape).

use super::launch::{LADDER, Variant, auto, auto_choice, softmax};
use super::tests::{Pattern, check, make_input};
use crate::bench::{Case, TorchSpec, Workload, rotation_sets};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::tensor::{Buf, Dtype, RowStats};

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

/// The ladder a row climbs: one per dtype.
fn ladder(dt: Dtype) -> &'static str {
    match dt {
        Dtype::F32 => "softmax_f32",
        Dtype::Bf16 => "softmax_bf16",
    }
}

/// The family's bench cases. `size` overrides the element count (the rows follow).
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
                    family: super::FAMILY.name,
                    variant: match v {
                        Some(v) => v.row_variant(dt),
                        None => format!("auto_{}", dt.name()),
                    },
                    kernels: shown.kernel_uses(dt, cols),
                    ladder: ladder(dt),
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
mod unit_tests {
    use super::*;

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
        assert_eq!(auto_short.note, "auto→v04");
        // Every case names the kernels it runs, with their launch shape (v05's block follows
        // the row: 4096 / 16 = 256 threads).
        assert!(c.iter().all(|c| !c.kernels.is_empty()));
        let v05 = c
            .iter()
            .find(|c| c.variant == "v05_row_in_registers_f32" && c.shape.ends_with("x4096"))
            .unwrap();
        assert_eq!(v05.kernels[0].block_threads, 256);
    }
}
