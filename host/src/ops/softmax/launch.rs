//! softmax: the variants, their kernel entries (picked by variant and dtype), the launch
//! geometry (from the variant files' constants) and the safe wrappers.

use rooflab_kernels::softmax::{
    ROW_MAX_COLS, row_threads, v01_three_kernels, v02_block_per_row, v03_online, v04_warp_per_row,
    v05_row_in_registers,
};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, KernelId, LaunchConfig};
use crate::tensor::{Buf, Dtype, Elem, RowStats, check_dims, expect_buf, variant_name};

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

/// A one-kernel row entry: `(x, y, cols)`.
type RowKernel<T> = Kernel<(*const T, *mut T, u32)>;

/// The entries of one storage type `T` (`f32`, or `u16` for bf16).
pub struct Entries<T: 'static> {
    /// v01's three kernels, in launch order.
    pub v01_max: Kernel<(*const T, *mut f32, u32)>,
    pub v01_sum: Kernel<(*const T, *const f32, *mut f32, u32)>,
    pub v01_normalize: Kernel<(*const T, *const f32, *const f32, *mut T, u32)>,
    pub v02: RowKernel<T>,
    pub v03: RowKernel<T>,
    /// `(x, y, rows, cols)`.
    pub v04: Kernel<(*const T, *mut T, u32, u32)>,
    pub v05: RowKernel<T>,
}

impl<T> Entries<T> {
    /// The kernels variant `v` launches, in order.
    fn of(&self, v: Variant) -> Vec<KernelId> {
        match v {
            Variant::V01ThreeKernels => vec![
                self.v01_max.id(),
                self.v01_sum.id(),
                self.v01_normalize.id(),
            ],
            Variant::V02BlockPerRow => vec![self.v02.id()],
            Variant::V03Online => vec![self.v03.id()],
            Variant::V04WarpPerRow => vec![self.v04.id()],
            Variant::V05RowInRegisters => vec![self.v05.id()],
        }
    }
}

/// A storage type with its entries.
pub trait SoftmaxElem: Elem {
    const ENTRIES: Entries<Self>;
}

impl SoftmaxElem for f32 {
    const ENTRIES: Entries<f32> = Entries {
        v01_max: v01_three_kernels::softmax_v01_three_kernels_max_f32,
        v01_sum: v01_three_kernels::softmax_v01_three_kernels_sum_f32,
        v01_normalize: v01_three_kernels::softmax_v01_three_kernels_normalize_f32,
        v02: v02_block_per_row::softmax_v02_block_per_row_f32,
        v03: v03_online::softmax_v03_online_f32,
        v04: v04_warp_per_row::softmax_v04_warp_per_row_f32,
        v05: v05_row_in_registers::softmax_v05_row_in_registers_f32,
    };
}

impl SoftmaxElem for u16 {
    const ENTRIES: Entries<u16> = Entries {
        v01_max: v01_three_kernels::softmax_v01_three_kernels_max_bf16,
        v01_sum: v01_three_kernels::softmax_v01_three_kernels_sum_bf16,
        v01_normalize: v01_three_kernels::softmax_v01_three_kernels_normalize_bf16,
        v02: v02_block_per_row::softmax_v02_block_per_row_bf16,
        v03: v03_online::softmax_v03_online_bf16,
        v04: v04_warp_per_row::softmax_v04_warp_per_row_bf16,
        v05: v05_row_in_registers::softmax_v05_row_in_registers_bf16,
    };
}

impl Variant {
    /// The variant file's stem, e.g. `v02_coalesced`: where its kernels are defined.
    pub fn stem(self) -> &'static str {
        self.kernels(Dtype::F32)[0].stem()
    }

    /// The kernels this variant launches in `dt`, in order.
    pub fn kernels(self, dt: Dtype) -> Vec<KernelId> {
        match dt {
            Dtype::F32 => f32::ENTRIES.of(self),
            Dtype::Bf16 => u16::ENTRIES.of(self),
        }
    }

    /// The variant's name: its entry (v01: its kernels' common name), e.g.
    /// `softmax_v02_block_per_row_f32`; errors and tests go by it.
    pub fn name(self, dt: Dtype) -> String {
        variant_name(&self.kernels(dt))
    }

    /// The bench row's variant: the name minus the family prefix.
    pub fn row_variant(self, dt: Dtype) -> String {
        self.name(dt)[super::FAMILY.name.len() + 1..].to_string()
    }

    /// (threads a block, dynamic shared bytes) of every kernel of the variant for rows of
    /// `cols`: v04 runs `ROWS_PER_BLOCK` warps a block, v05's block follows the row.
    pub fn block_shape(self, cols: u32) -> (u32, u32) {
        match self {
            Variant::V01ThreeKernels => (
                v01_three_kernels::BLOCK_THREADS,
                v01_three_kernels::SHARED_BYTES,
            ),
            Variant::V02BlockPerRow => (
                v02_block_per_row::BLOCK_THREADS,
                v02_block_per_row::SHARED_BYTES,
            ),
            Variant::V03Online => (v03_online::BLOCK_THREADS, v03_online::SHARED_BYTES),
            Variant::V04WarpPerRow => (v04_warp_per_row::BLOCK_THREADS, 0),
            Variant::V05RowInRegisters => (row_threads(cols), v05_row_in_registers::SHARED_BYTES),
        }
    }

    /// Every kernel one call launches for rows of `cols`, with its launch shape.
    pub fn kernel_uses(self, dt: Dtype, cols: usize) -> Vec<KernelUse> {
        let (b, shared) = self.block_shape(cols as u32);
        self.kernels(dt)
            .into_iter()
            .map(|k| KernelUse::new(k, b, shared))
            .collect()
    }
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
    let op = v.name(dt);
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
    match dt {
        Dtype::F32 => launch::<f32>(gpu, v, rows, cols, x, y, stats, &op),
        Dtype::Bf16 => launch::<u16>(gpu, v, rows, cols, x, y, stats, &op),
    }
}

/// The launches of [`softmax`] for storage type `T`, after its checks.
#[allow(clippy::too_many_arguments)]
fn launch<T: SoftmaxElem>(
    gpu: &Gpu,
    v: Variant,
    rows: usize,
    cols: usize,
    x: &Buf,
    y: &mut Buf,
    stats: Option<&mut RowStats>,
    op: &str,
) -> Result<()> {
    let k = T::ENTRIES;
    let (xv, yv, c) = (x.view::<T>(op)?, y.view_mut::<T>(op)?, cols as u32);
    let (b, shared) = v.block_shape(c);
    let per_row = LaunchConfig::one_block_per_row(rows, b, shared);
    // SAFETY (every launch below): x and y hold rows x cols elements of T (checked by the
    // caller), the statistics `rows` f32; grids are one block per row (v04: one warp per
    // row, the kernel skips warps past the last row).
    unsafe {
        match v {
            Variant::V01ThreeKernels => {
                let st = RowStats::require(stats, rows, op, "v01_three_kernels")?;
                gpu.launch(k.v01_max, per_row, (xv, st.max.view_mut(), c))?;
                gpu.launch(
                    k.v01_sum,
                    per_row,
                    (xv, st.max.view(), st.sum.view_mut(), c),
                )?;
                gpu.launch(
                    k.v01_normalize,
                    per_row,
                    (xv, st.max.view(), st.sum.view(), yv, c),
                )
            }
            Variant::V02BlockPerRow => gpu.launch(k.v02, per_row, (xv, yv, c)),
            Variant::V03Online => gpu.launch(k.v03, per_row, (xv, yv, c)),
            Variant::V04WarpPerRow => {
                let cfg = LaunchConfig::for_threads(op, rows as u64 * 32, b)?;
                gpu.launch(k.v04, cfg, (xv, yv, rows as u32, c))
            }
            Variant::V05RowInRegisters => gpu.launch(k.v05, per_row, (xv, yv, c)),
        }
    }
}

/// Softmax with the variant `auto_choice` picks for this row length; returns it.
pub fn auto(gpu: &Gpu, rows: usize, cols: usize, x: &Buf, y: &mut Buf) -> Result<Variant> {
    let v = auto_choice(cols);
    softmax(gpu, v, rows, cols, x, y, None)?;
    Ok(v)
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use rooflab_kernels::softmax::{ROW_ITEMS, row_slot};

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
    fn names_follow_the_stem() {
        for dt in Dtype::ALL {
            for v in LADDER {
                assert_eq!(v.row_variant(dt), format!("{}_{}", v.stem(), dt.name()));
            }
        }
        let uses = Variant::V05RowInRegisters.kernel_uses(Dtype::F32, 4096);
        assert_eq!((uses[0].block_threads, uses[0].shared_bytes), (256, 128));
        assert_eq!(
            Variant::V01ThreeKernels.kernel_uses(Dtype::Bf16, 10).len(),
            3
        );
    }
}
