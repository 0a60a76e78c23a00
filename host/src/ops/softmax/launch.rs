//! softmax: the variants, their kernel entries (picked by variant and dtype), the launch
//! geometry (from the variant files' constants and geometry functions) and the safe wrappers.

use rooflab_kernels::softmax::{
    ROW_ITEMS, ROW_MAX_COLS, WARP_ROW_MAX_COLS, row_threads, v01_three_kernels, v02_block_per_row,
    v03_online, v04_warp_per_row, v05_row_in_registers, v06_rows_per_warp, v07_cluster_row,
    v08_cluster_registers, v09_l2_reread, warp_row_lanes,
};


use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, KernelId, LaunchConfig};
use crate::ops::cluster_row::{Geometry, Keep};
use crate::tensor::{Buf, Dtype, Elem, RowStats, check_dims, expect_buf, variant_name};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01ThreeKernels,
    V02BlockPerRow,
    V03Online,
    V04WarpPerRow,
    V05RowInRegisters,
    V06RowsPerWarp,
    V07ClusterRow,
    V08ClusterRegisters,
    V09L2Reread,
}

pub const LADDER: [Variant; 9] = [
    Variant::V01ThreeKernels,
    Variant::V02BlockPerRow,
    Variant::V03Online,
    Variant::V04WarpPerRow,
    Variant::V05RowInRegisters,
    Variant::V06RowsPerWarp,
    Variant::V07ClusterRow,
    Variant::V08ClusterRegisters,
    Variant::V09L2Reread,
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
    /// `(x, y, rows, cols)`.
    pub v06: Kernel<(*const T, *mut T, u32, u32)>,
    /// sm_90a only.
    pub v07: RowKernel<T>,
    /// sm_90a only.
    pub v08: RowKernel<T>,
    pub v09: RowKernel<T>,
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
            Variant::V06RowsPerWarp => vec![self.v06.id()],
            Variant::V07ClusterRow => vec![self.v07.id()],
            Variant::V08ClusterRegisters => vec![self.v08.id()],
            Variant::V09L2Reread => vec![self.v09.id()],
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
        v06: v06_rows_per_warp::softmax_v06_rows_per_warp_f32,
        v07: v07_cluster_row::softmax_v07_cluster_row_f32,
        v08: v08_cluster_registers::softmax_v08_cluster_registers_f32,
        v09: v09_l2_reread::softmax_v09_l2_reread_f32,
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
        v06: v06_rows_per_warp::softmax_v06_rows_per_warp_bf16,
        v07: v07_cluster_row::softmax_v07_cluster_row_bf16,
        v08: v08_cluster_registers::softmax_v08_cluster_registers_bf16,
        v09: v09_l2_reread::softmax_v09_l2_reread_bf16,
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
    /// `cols` in `dt`: v04 and v06 run `BLOCK_THREADS` a block, v05's block follows the row,
    /// v07's follows its slice of the row, which it keeps in shared memory, v08's its slice
    /// in registers, v09's the row (`MIN_UNITS` vectors a thread, up to 1024).
    pub fn block_shape(self, dt: Dtype, cols: u32) -> (u32, u32) {
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
            Variant::V06RowsPerWarp => (v06_rows_per_warp::BLOCK_THREADS, 0),
            Variant::V07ClusterRow | Variant::V08ClusterRegisters => {
                let g = Geometry::chosen(cols, dt.size() as u32, self.keep());
                (g.threads, g.shared_bytes)
            }
            Variant::V09L2Reread => (
                v09_l2_reread::block_threads(cols, dt.size() as u32),
                v09_l2_reread::SHARED_BYTES,
            ),
        }
    }

    /// Every kernel one call launches for rows of `cols`, with its launch shape.
    pub fn kernel_uses(self, dt: Dtype, cols: usize) -> Vec<KernelUse> {
        let (b, shared) = self.block_shape(dt, cols as u32);
        self.kernels(dt)
            .into_iter()
            .map(|k| KernelUse::new(k, b, shared))
            .collect()
    }

    /// Where a cluster step keeps its slices (v08 in registers, v07 in shared memory).
    fn keep(self) -> Keep {
        if self == Variant::V08ClusterRegisters {
            Keep::Registers
        } else {
            Keep::Shared
        }
    }

    /// The longest row the variant holds on chip (v05, v06 and v08 in registers, v07 in a
    /// cluster's shared memory); `None`: any length.
    pub fn max_cols(self) -> Option<u32> {
        match self {
            Variant::V05RowInRegisters => Some(ROW_MAX_COLS),
            Variant::V06RowsPerWarp => Some(WARP_ROW_MAX_COLS),
            Variant::V07ClusterRow => Some(v07_cluster_row::MAX_COLS),
            Variant::V08ClusterRegisters => Some(v08_cluster_registers::MAX_COLS),
            _ => None,
        }
    }

    /// Refuses rows longer than [`Variant::max_cols`], naming the limit, why, and what takes
    /// such rows. Needs no GPU.
    pub fn check_cols(self, dt: Dtype, cols: usize) -> Result<()> {
        let Some(max) = self.max_cols() else {
            return Ok(());
        };
        if cols <= max as usize {
            return Ok(());
        }
        let why = match self {
            Variant::V06RowsPerWarp => format!(
                "are longer than {} holds ({max}: 32 lanes × {ROW_ITEMS} elements in \
                 registers); use softmax::auto, or {} for rows of up to {ROW_MAX_COLS}",
                self.stem(),
                Variant::V05RowInRegisters.stem()
            ),
            Variant::V07ClusterRow => format!(
                "do not fit in a cluster's shared memory ({} holds at most {max}: {} blocks × \
                 {}); use softmax::auto or {} (two reads, the second from L2, any length)",
                self.stem(),
                v07_cluster_row::MAX_CLUSTER,
                max / v07_cluster_row::MAX_CLUSTER,
                Variant::V09L2Reread.stem()
            ),
            Variant::V08ClusterRegisters => format!(
                "do not fit in a cluster's registers ({} holds at most {max}: {} blocks × \
                 {ROW_MAX_COLS}); use softmax::auto or {} (shared memory, up to {})",
                self.stem(),
                v08_cluster_registers::MAX_CLUSTER,
                Variant::V07ClusterRow.stem(),
                v07_cluster_row::MAX_COLS
            ),
            _ => format!(
                "do not fit on chip (this variant holds at most {max}); use softmax::auto or {}",
                Variant::V09L2Reread.stem()
            ),
        };
        Err(Error::Shape {
            op: self.name(dt),
            what: format!("rows of {cols} elements {why}"),
        })
    }
}

/// The longest bf16 rows `auto` gives v09 (the row read twice, the second time from L2) rather
/// than v07: measured on the H100 (2026-12-07, `docs/runs/2026-12-07-h100-0527-softmax-v09.json`),
/// at 2048×32768 bf16 v09 took 97.2 µs against v07's 106.3 (91.2% of the roof against 83.4);
/// in f32 there v07 led (199.5 against 216.7: two resident f32 rows an SM, 2 × 128 KiB ×
/// 132 SMs, crowd L2, and ncu counted 337 MiB read against 256), and at 131072 and 262144
/// v07 led in both dtypes (bf16 512×131072 110.0 against 134.7).
pub const AUTO_L2_MAX_COLS_BF16: u32 = 32768;

/// What `auto` runs for rows of `cols` of `dt`: a group of lanes per row up to
/// `WARP_ROW_MAX_COLS` (512), the row in one block's registers up to `ROW_MAX_COLS` (16384),
/// then for bf16 up to `AUTO_L2_MAX_COLS_BF16` (32768) the row streamed twice (v09), a
/// cluster per row in shared memory (v07) up to its `MAX_COLS` (262144) where the GPU has
/// clusters (`clusters`: sm_90a, see [`clusters_available`]), and v09 otherwise (any length):
/// it took 216.7 µs for f32 at 2048×32768 on the H100 where v03, the other any-length step,
/// took 350.8 (`docs/runs/2026-12-06-h100-1201-softmax-norm-no-peer.json`).
///
/// Not v08 (the cluster's slices in registers): it measured slower than v07 at every row it
/// takes, on the H100 (2026-12-06, `docs/runs/2026-12-06-h100-1201-softmax-norm-no-peer.json`,
/// 2048×32768: f32 230.3 µs against 199.0, bf16 160.5 against 107.6) and in the same order
/// on the H200, its registers holding it to half the SM's threads (`docs/06-softmax.md`).
pub fn auto_choice(cols: usize, dt: Dtype, clusters: bool) -> Variant {
    if cols <= WARP_ROW_MAX_COLS as usize {
        Variant::V06RowsPerWarp
    } else if cols <= ROW_MAX_COLS as usize {
        Variant::V05RowInRegisters
    } else if dt == Dtype::Bf16 && cols <= AUTO_L2_MAX_COLS_BF16 as usize {
        Variant::V09L2Reread
    } else if clusters && cols <= v07_cluster_row::MAX_COLS as usize {
        Variant::V07ClusterRow
    } else {
        Variant::V09L2Reread
    }
}

/// Whether `gpu` runs v07 and v08 (built only into the sm_90a PTX): `auto`'s question before it picks
/// the cluster step ([`Gpu::runs`], kept per GPU). A kernel missing from every PTX is an
/// error, not a "no".
pub fn clusters_available(gpu: &Gpu) -> Result<bool> {
    gpu.runs(f32::ENTRIES.v07)
}

/// Softmax of each row of `x` (rows x cols) into `y` with variant `v`. v01 needs `stats`.
/// Empty tensors: nothing launched. v05 to v08 refuse rows longer than they hold
/// ([`Variant::max_cols`]); v07 and v08 are unavailable on GPUs other than compute capability
/// 9.0.
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
    v.check_cols(dt, cols)?;
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
    let (b, shared) = v.block_shape(T::DTYPE, c);
    let per_row = LaunchConfig::one_block_per_row(rows, b, shared);
    // SAFETY (every launch below): x and y hold rows x cols elements of T (checked by the
    // caller, as is cols against the variant's limit), the statistics `rows` f32; grids are
    // one block per row (v04: one warp per row, v06: warp_row_lanes(cols) lanes per row, the
    // kernels skip rows past the last; v07 and v08: a cluster of blocks per row, with the
    // cluster size, block size and shared memory their geometry functions give for cols).
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
            Variant::V09L2Reread => gpu.launch(k.v09, per_row, (xv, yv, c)),
            Variant::V04WarpPerRow => {
                let cfg = LaunchConfig::for_threads(op, rows as u64 * 32, b)?;
                gpu.launch(k.v04, cfg, (xv, yv, rows as u32, c))
            }
            Variant::V05RowInRegisters => gpu.launch(k.v05, per_row, (xv, yv, c)),
            Variant::V06RowsPerWarp => {
                let lanes = warp_row_lanes(c) as u64;
                let cfg = LaunchConfig::for_threads(op, rows as u64 * lanes, b)?;
                gpu.launch(k.v06, cfg, (xv, yv, rows as u32, c))
            }
            Variant::V07ClusterRow | Variant::V08ClusterRegisters => {
                let kernel = if v == Variant::V07ClusterRow { k.v07 } else { k.v08 };
                gpu.available(kernel)?;
                let g = Geometry::for_launch(op, c, T::DTYPE.size() as u32, v.keep())?;
                let cfg = LaunchConfig::for_threads(
                    op,
                    rows as u64 * g.cluster as u64 * g.threads as u64,
                    g.threads,
                )?;
                let cfg = LaunchConfig {
                    shared_bytes: g.shared_bytes,
                    ..cfg
                };
                gpu.launch_cluster(kernel, cfg, g.cluster, (xv, yv, c))
            }
        }
    }
}

/// Softmax with the variant `auto_choice` picks for this row length on this GPU; returns it.
pub fn auto(gpu: &Gpu, rows: usize, cols: usize, x: &Buf, y: &mut Buf) -> Result<Variant> {
    // Only rows past v05's limit depend on the GPU.
    let clusters = cols > ROW_MAX_COLS as usize && clusters_available(gpu)?;
    let v = auto_choice(cols, x.dtype(), clusters);
    softmax(gpu, v, rows, cols, x, y, None)?;
    Ok(v)
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use rooflab_kernels::softmax::row_slot;

    #[test]
    fn auto_picks_by_row_length() {
        for clusters in [true, false] {
            for dt in Dtype::ALL {
                let c = |cols| auto_choice(cols, dt, clusters);
                assert_eq!(c(1), Variant::V06RowsPerWarp);
                assert_eq!(c(128), Variant::V06RowsPerWarp);
                assert_eq!(c(512), Variant::V06RowsPerWarp);
                assert_eq!(c(513), Variant::V05RowInRegisters);
                assert_eq!(c(4096), Variant::V05RowInRegisters);
                assert_eq!(c(16384), Variant::V05RowInRegisters);
                assert_eq!(c(262145), Variant::V09L2Reread);
                assert_eq!(c(1 << 20), Variant::V09L2Reread);
            }
            // bf16 rows whose resident rows stay in L2: the L2 re-read step, clusters or not.
            for cols in [16385, 32768] {
                assert_eq!(auto_choice(cols, Dtype::Bf16, clusters), Variant::V09L2Reread);
            }
        }
        // Other long rows: the shared-memory cluster step on sm_90a (never v08, measured
        // slower), the L2 re-read step elsewhere.
        for cols in [16385, 32768, 32769, 131072, 131073, 262144] {
            assert_eq!(auto_choice(cols, Dtype::F32, true), Variant::V07ClusterRow, "{cols}");
            assert_eq!(auto_choice(cols, Dtype::F32, false), Variant::V09L2Reread);
            if cols > AUTO_L2_MAX_COLS_BF16 as usize {
                assert_eq!(auto_choice(cols, Dtype::Bf16, true), Variant::V07ClusterRow);
                assert_eq!(auto_choice(cols, Dtype::Bf16, false), Variant::V09L2Reread);
            }
        }
        // Whatever auto picks takes the row.
        for cols in [1, 512, 513, 16384, 16385, 32768, 32769, 131072, 131073, 262144, 262145, 1 << 20] {
            for clusters in [true, false] {
                for dt in Dtype::ALL {
                    auto_choice(cols, dt, clusters).check_cols(dt, cols).unwrap();
                }
            }
        }
    }

    /// Every element of a row in exactly one slot of one thread, for `b` threads of
    /// `ROW_ITEMS` slots, in the layouts the kernels use for `cols` (vectors of `per16` only
    /// when `cols` is a multiple of it).
    fn covers_each_element_once(cols: u32, b: u32) {
        for per16 in [1u32, 4, 8] {
            if per16 > 1 && !cols.is_multiple_of(per16) {
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
            assert!(seen.iter().all(|&s| s == 1), "cols={cols} b={b} per16={per16}");
        }
    }

    #[test]
    fn row_in_registers_layout_covers_each_element_once() {
        for cols in [1u32, 2, 31, 128, 768, 1000, 4096, 4097, 16384] {
            let b = row_threads(cols);
            assert!(b.is_multiple_of(32) && b <= 1024 && b * ROW_ITEMS >= cols);
            covers_each_element_once(cols, b);
        }
    }

    /// v06: a group of `warp_row_lanes(cols)` lanes holds the row (v05's layout with the group
    /// for the block); groups tile a warp; the longest row takes the whole warp.
    #[test]
    fn rows_per_warp_layout_covers_each_element_once() {
        let max = WARP_ROW_MAX_COLS;
        assert_eq!(max, 32 * ROW_ITEMS);
        let mut lengths = vec![1u32, 2, 3, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 200];
        lengths.extend([255, 256, 257, 384, 500, max - 1, max]);
        for cols in lengths {
            let g = warp_row_lanes(cols);
            assert!(g.is_power_of_two() && g <= 32, "cols={cols}: {g} lanes");
            assert!(g * ROW_ITEMS >= cols, "cols={cols}: {g} lanes too few");
            assert!(g == 1 || (g / 2) * ROW_ITEMS < cols, "cols={cols}: {g} lanes, half do");
            assert!(v06_rows_per_warp::BLOCK_THREADS.is_multiple_of(32));
            covers_each_element_once(cols, g);
        }
        assert_eq!(warp_row_lanes(128), 8, "the bench's short rows: 4 rows a warp");
        assert_eq!(warp_row_lanes(max), 32);
        assert!(warp_row_lanes(max + 1) > 32, "past the max a warp is not enough");
        let v = Variant::V06RowsPerWarp;
        v.check_cols(Dtype::F32, max as usize).unwrap();
        let e = v.check_cols(Dtype::Bf16, max as usize + 1).unwrap_err().to_string();
        assert!(
            e.contains(&v.name(Dtype::Bf16))
                && e.contains(&format!("rows of {}", max + 1))
                && e.contains(&max.to_string())
                && e.contains("auto")
                && e.contains(Variant::V05RowInRegisters.stem()),
            "{e}"
        );
    }

    /// v09: `MIN_UNITS` vectors a thread, whole warps, up to `MAX_THREADS` (longer rows:
    /// more steps a thread); no row is too long.
    #[test]
    fn l2_reread_block_covers_the_row() {
        use v09_l2_reread::{MAX_THREADS, MIN_UNITS, SHARED_BYTES, block_threads};
        let v = Variant::V09L2Reread;
        for cols in [1u32, 2, 7, 8, 31, 127, 128, 129, 4097, 16384, 32768, 262145, 1 << 22] {
            for dt in Dtype::ALL {
                let e = dt.size() as u32;
                let b = block_threads(cols, e);
                assert_eq!(v.block_shape(dt, cols), (b, SHARED_BYTES));
                assert!(b.is_multiple_of(32) && (32..=MAX_THREADS).contains(&b), "{cols}");
                assert!(b == MAX_THREADS || b * MIN_UNITS * (16 / e) >= cols, "{cols} {e}");
                v.check_cols(dt, cols as usize).unwrap();
            }
        }
        assert_eq!(block_threads(32768, 2), 1024);
        assert_eq!(block_threads(4096, 4), 256);
    }

    /// v07: its block shape is the cluster-row geometry chosen for the row (whose slices
    /// `cluster_row`'s tests check), fits the GPU at every length up to the max, and longer
    /// rows are refused.
    #[test]
    fn cluster_row_geometry_fits_up_to_the_max() {
        use v07_cluster_row::{MAX_COLS, MAX_THREADS, slice};
        const { assert!(MAX_COLS >= 262144, "the issue's longest rows") };
        let lengths = [1u32, 2, 7, 8, 31, 127, 128, 129, 4097, 16385, 32768, 65537];
        for cols in lengths.into_iter().chain([MAX_COLS - 1, MAX_COLS]) {
            for dt in Dtype::ALL {
                let e = dt.size() as u32;
                let g = Geometry::chosen(cols, e, Keep::Shared);
                let (bs, shared) = Variant::V07ClusterRow.block_shape(dt, cols);
                assert_eq!((bs, shared), (g.threads, g.shared_bytes));
                assert!(bs.is_multiple_of(32) && (32..=MAX_THREADS).contains(&bs), "{cols}");
                assert!(shared <= 227 * 1024, "cols={cols} {dt:?}: {shared} bytes");
                let (_, len0) = slice(0, cols, e, g.cluster);
                assert!(shared >= len0 * e, "the slice fits");
            }
        }
        // The bench's shapes: 32768 f32 → 4 blocks of 512 threads of 4 vectors (32 KiB of
        // slice); the max in f32 → 8 blocks of 1024 threads, 128 KiB.
        assert_eq!(Geometry::chosen(32768, 4, Keep::Shared).threads, 512);
        assert_eq!(Geometry::chosen(MAX_COLS, 4, Keep::Shared).threads, 1024);
        let v = Variant::V07ClusterRow;
        v.check_cols(Dtype::Bf16, MAX_COLS as usize).unwrap();
        let e = v.check_cols(Dtype::F32, MAX_COLS as usize + 1).unwrap_err().to_string();
        assert!(
            e.contains(&v.name(Dtype::F32))
                && e.contains(&format!("rows of {}", MAX_COLS + 1))
                && e.contains(&MAX_COLS.to_string())
                && e.contains("auto")
                && e.contains(Variant::V09L2Reread.stem()),
            "{e}"
        );
    }

    /// v08: each block's slice is v05's row layout over `reg_block_threads` threads (16
    /// slots each cover it), the block shape is the register geometry, and rows past its max
    /// are refused, naming v07.
    #[test]
    fn cluster_registers_geometry_holds_each_slice() {
        use v08_cluster_registers::{MAX_COLS, SHARED_BYTES, reg_cluster_size, slice};
        const { assert!(MAX_COLS == 131072) };
        let lengths = [1u32, 2, 31, 4097, 8192, 8193, 16385, 32768, 65537];
        for cols in lengths.into_iter().chain([MAX_COLS - 1, MAX_COLS]) {
            for dt in Dtype::ALL {
                let e = dt.size() as u32;
                let (bs, shared) = Variant::V08ClusterRegisters.block_shape(dt, cols);
                assert_eq!(shared, SHARED_BYTES);
                assert!(bs.is_multiple_of(32) && (32..=1024).contains(&bs), "{cols}");
                let c = reg_cluster_size(cols, e);
                for rank in 0..c {
                    let (_, len) = slice(rank, cols, e, c);
                    assert!(len <= bs * ROW_ITEMS, "cols={cols} rank={rank}");
                    if len > 0 && len.is_multiple_of(16 / e) {
                        covers_each_element_once(len, bs);
                    }
                }
            }
        }
        let v = Variant::V08ClusterRegisters;
        v.check_cols(Dtype::F32, MAX_COLS as usize).unwrap();
        let e = v.check_cols(Dtype::Bf16, MAX_COLS as usize + 1).unwrap_err().to_string();
        assert!(
            e.contains(&format!("rows of {}", MAX_COLS + 1))
                && e.contains(&MAX_COLS.to_string())
                && e.contains("auto")
                && e.contains(Variant::V07ClusterRow.stem()),
            "{e}"
        );
    }

    #[test]
    fn names_follow_the_stem() {
        for dt in Dtype::ALL {
            for v in LADDER {
                assert_eq!(v.row_variant(dt), format!("{}_{}", v.stem(), dt.name()));
                // In the sm_80 PTX, or (the cluster step) first in the sm_90a one.
                let cluster = [Variant::V07ClusterRow, Variant::V08ClusterRegisters];
                let want = if cluster.contains(&v) {
                    "sm_90a"
                } else {
                    "sm_80"
                };
                for k in v.kernels(dt) {
                    assert_eq!(crate::ptx::first_arch_with(k.name()), Some(want), "{k}");
                }
            }
        }
        let uses = Variant::V05RowInRegisters.kernel_uses(Dtype::F32, 4096);
        assert_eq!((uses[0].block_threads, uses[0].shared_bytes), (256, 128));
        let uses = Variant::V06RowsPerWarp.kernel_uses(Dtype::Bf16, 128);
        assert_eq!((uses[0].block_threads, uses[0].shared_bytes), (256, 0));
        assert_eq!(
            Variant::V01ThreeKernels.kernel_uses(Dtype::Bf16, 10).len(),
            3
        );
    }
}
