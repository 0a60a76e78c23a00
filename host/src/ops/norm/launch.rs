//! norm: the kinds (LayerNorm, RMSNorm), the variants, their kernel entries (picked by
//! variant, kind and dtype), the launch geometry (from the variant files' constants) and
//! the safe wrappers, and `auto`, which picks a step by row length.

use rooflab_kernels::norm::v03_fused_vectorized::{ROW_MAX_COLS, row_threads};
use rooflab_kernels::norm::{
    v01_two_pass, v02_fused_block, v03_fused_vectorized, v04_packed_row, v05_rows_per_warp,
    v06_cluster_row, v07_cluster_registers, v08_l2_reread,
};


use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, KernelId, LaunchConfig};
use crate::ops::cluster_row::{Geometry, Keep};
use crate::tensor::{Buf, Dtype, Elem, RowStats, check_dims, expect_buf, variant_name};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    LayerNorm,
    RmsNorm,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::LayerNorm, Kind::RmsNorm];
    pub fn name(self) -> &'static str {
        match self {
            Kind::LayerNorm => "layernorm",
            Kind::RmsNorm => "rmsnorm",
        }
    }
    pub fn torch(self) -> &'static str {
        match self {
            Kind::LayerNorm => "layer_norm",
            Kind::RmsNorm => "rms_norm",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01TwoPass,
    V02FusedBlock,
    V03FusedVectorized,
    V04PackedRow,
    V05RowsPerWarp,
    V06ClusterRow,
    V07ClusterRegisters,
    V08L2Reread,
}

pub const LADDER: [Variant; 8] = [
    Variant::V01TwoPass,
    Variant::V02FusedBlock,
    Variant::V03FusedVectorized,
    Variant::V04PackedRow,
    Variant::V05RowsPerWarp,
    Variant::V06ClusterRow,
    Variant::V07ClusterRegisters,
    Variant::V08L2Reread,
];

/// A fused entry: `(x, w, bias, y, cols, eps)`.
type Fused<T> = Kernel<(*const T, *const T, *const T, *mut T, u32, f32)>;
/// A fused entry that also takes the row count: `(x, w, bias, y, rows, cols, eps)`.
type FusedRows<T> = Kernel<(*const T, *const T, *const T, *mut T, u32, u32, f32)>;

/// The entries of one kind and storage type `T` (`f32`, or `u16` for bf16).
pub struct Entries<T: 'static> {
    /// v01's statistics kernel: `(x, mean, rstd, cols, eps)`.
    pub v01_stats: Kernel<(*const T, *mut f32, *mut f32, u32, f32)>,
    /// v01's normalize kernel: `(x, mean, rstd, w, bias, y, cols)`.
    pub v01_apply: Kernel<(
        *const T,
        *const f32,
        *const f32,
        *const T,
        *const T,
        *mut T,
        u32,
    )>,
    pub v02: Fused<T>,
    pub v03: Fused<T>,
    pub v04: Fused<T>,
    /// `(x, w, bias, y, rows, cols, eps)`: groups of lanes, the grid rounds the rows up.
    pub v05: FusedRows<T>,
    /// sm_90a only.
    pub v06: Fused<T>,
    /// sm_90a only.
    pub v07: Fused<T>,
    pub v08: Fused<T>,
}

impl<T> Entries<T> {
    /// The kernels variant `v` launches, in order.
    fn of(&self, v: Variant) -> Vec<KernelId> {
        match v {
            Variant::V01TwoPass => vec![self.v01_stats.id(), self.v01_apply.id()],
            Variant::V02FusedBlock => vec![self.v02.id()],
            Variant::V03FusedVectorized => vec![self.v03.id()],
            Variant::V04PackedRow => vec![self.v04.id()],
            Variant::V05RowsPerWarp => vec![self.v05.id()],
            Variant::V06ClusterRow => vec![self.v06.id()],
            Variant::V07ClusterRegisters => vec![self.v07.id()],
            Variant::V08L2Reread => vec![self.v08.id()],
        }
    }
}

/// A storage type with its entries, per kind.
pub trait NormElem: Elem {
    const LAYERNORM: Entries<Self>;
    const RMSNORM: Entries<Self>;
    fn entries(k: Kind) -> Entries<Self> {
        match k {
            Kind::LayerNorm => Self::LAYERNORM,
            Kind::RmsNorm => Self::RMSNORM,
        }
    }
}

impl NormElem for f32 {
    const LAYERNORM: Entries<f32> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_layernorm_f32,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_layernorm_f32,
        v02: v02_fused_block::norm_v02_fused_block_layernorm_f32,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_layernorm_f32,
        v04: v04_packed_row::norm_v04_packed_row_layernorm_f32,
        v05: v05_rows_per_warp::norm_v05_rows_per_warp_layernorm_f32,
        v06: v06_cluster_row::norm_v06_cluster_row_layernorm_f32,
        v07: v07_cluster_registers::norm_v07_cluster_registers_layernorm_f32,
        v08: v08_l2_reread::norm_v08_l2_reread_layernorm_f32,
    };
    const RMSNORM: Entries<f32> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_rmsnorm_f32,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_rmsnorm_f32,
        v02: v02_fused_block::norm_v02_fused_block_rmsnorm_f32,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_rmsnorm_f32,
        v04: v04_packed_row::norm_v04_packed_row_rmsnorm_f32,
        v05: v05_rows_per_warp::norm_v05_rows_per_warp_rmsnorm_f32,
        v06: v06_cluster_row::norm_v06_cluster_row_rmsnorm_f32,
        v07: v07_cluster_registers::norm_v07_cluster_registers_rmsnorm_f32,
        v08: v08_l2_reread::norm_v08_l2_reread_rmsnorm_f32,
    };
}

impl NormElem for u16 {
    const LAYERNORM: Entries<u16> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_layernorm_bf16,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_layernorm_bf16,
        v02: v02_fused_block::norm_v02_fused_block_layernorm_bf16,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_layernorm_bf16,
        v04: v04_packed_row::norm_v04_packed_row_layernorm_bf16,
        v05: v05_rows_per_warp::norm_v05_rows_per_warp_layernorm_bf16,
        v06: v06_cluster_row::norm_v06_cluster_row_layernorm_bf16,
        v07: v07_cluster_registers::norm_v07_cluster_registers_layernorm_bf16,
        v08: v08_l2_reread::norm_v08_l2_reread_layernorm_bf16,
    };
    const RMSNORM: Entries<u16> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_rmsnorm_bf16,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_rmsnorm_bf16,
        v02: v02_fused_block::norm_v02_fused_block_rmsnorm_bf16,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_rmsnorm_bf16,
        v04: v04_packed_row::norm_v04_packed_row_rmsnorm_bf16,
        v05: v05_rows_per_warp::norm_v05_rows_per_warp_rmsnorm_bf16,
        v06: v06_cluster_row::norm_v06_cluster_row_rmsnorm_bf16,
        v07: v07_cluster_registers::norm_v07_cluster_registers_rmsnorm_bf16,
        v08: v08_l2_reread::norm_v08_l2_reread_rmsnorm_bf16,
    };
}

impl Variant {
    /// The longest row the variant holds on chip (v03 and v04 in a block's registers, v05 in
    /// a group of lanes', v06 in a cluster's shared memory, v07 in a cluster's registers);
    /// `None`: any length.
    pub fn max_cols(self) -> Option<u32> {
        match self {
            Variant::V03FusedVectorized | Variant::V04PackedRow => Some(ROW_MAX_COLS),
            Variant::V05RowsPerWarp => Some(v05_rows_per_warp::MAX_COLS),
            Variant::V06ClusterRow => Some(v06_cluster_row::MAX_COLS),
            Variant::V07ClusterRegisters => Some(v07_cluster_registers::MAX_COLS),
            Variant::V01TwoPass | Variant::V02FusedBlock | Variant::V08L2Reread => None,
        }
    }

    /// Refuses rows longer than [`Variant::max_cols`], naming the limit, why, and what takes
    /// such rows. Needs no GPU.
    pub fn check_cols(self, k: Kind, dt: Dtype, cols: usize) -> Result<()> {
        let Some(max) = self.max_cols() else {
            return Ok(());
        };
        if cols <= max as usize {
            return Ok(());
        }
        let why = match self {
            Variant::V05RowsPerWarp => format!(
                "are longer than {} holds ({max}: a warp's 32 lanes × {} f32 in registers); \
                 use norm::auto, or {} for rows of up to {ROW_MAX_COLS}",
                self.stem(),
                v05_rows_per_warp::lane_cols(4),
                Variant::V04PackedRow.stem()
            ),
            Variant::V06ClusterRow => format!(
                "do not fit in a cluster's shared memory ({} holds at most {max}: {} blocks × \
                 {}); use norm::auto or {} (any length)",
                self.stem(),
                v06_cluster_row::MAX_CLUSTER,
                max / v06_cluster_row::MAX_CLUSTER,
                Variant::V08L2Reread.stem()
            ),
            Variant::V07ClusterRegisters => format!(
                "do not fit in a cluster's registers ({} holds at most {max}: {} blocks × \
                 {ROW_MAX_COLS}); use norm::auto, {} (shared memory, up to {}) or {} (any \
                 length)",
                self.stem(),
                v07_cluster_registers::MAX_CLUSTER,
                Variant::V06ClusterRow.stem(),
                v06_cluster_row::MAX_COLS,
                Variant::V08L2Reread.stem()
            ),
            _ => format!(
                "do not fit on chip (this variant holds at most {max}); use norm::auto, {} for \
                 rows of up to {} (sm_90a), or {} (any length)",
                Variant::V06ClusterRow.stem(),
                v06_cluster_row::MAX_COLS,
                Variant::V08L2Reread.stem()
            ),
        };
        Err(Error::Shape {
            op: self.name(k, dt),
            what: format!("rows of {cols} elements {why}"),
        })
    }

    /// The variant file's stem, e.g. `v02_fused_block`: where its kernels are defined.
    pub fn stem(self) -> &'static str {
        self.kernels(Kind::LayerNorm, Dtype::F32)[0].stem()
    }

    /// The kernels this variant launches for `k` in `dt`, in order.
    pub fn kernels(self, k: Kind, dt: Dtype) -> Vec<KernelId> {
        match dt {
            Dtype::F32 => f32::entries(k).of(self),
            Dtype::Bf16 => u16::entries(k).of(self),
        }
    }

    /// The variant's name: its entry (v01: its kernels' common name), e.g.
    /// `norm_v02_fused_block_layernorm_f32`; errors and tests go by it.
    pub fn name(self, k: Kind, dt: Dtype) -> String {
        variant_name(&self.kernels(k, dt))
    }

    /// The bench row's variant: the name minus the family prefix.
    pub fn row_variant(self, k: Kind, dt: Dtype) -> String {
        self.name(k, dt)[super::FAMILY.name.len() + 1..].to_string()
    }

    /// (threads a block, dynamic shared bytes) of every kernel of the variant for rows of
    /// `cols` in `dt`: v03's and v04's block follows the row, v05 runs `BLOCK_THREADS` a
    /// block, v06's block follows its slice of the row, which it keeps in shared memory, v07's
    /// its slice in registers, v08's the row (`MIN_UNITS` vectors a thread, up to 1024).
    pub fn block_shape(self, dt: Dtype, cols: u32) -> (u32, u32) {
        match self {
            Variant::V01TwoPass => (v01_two_pass::BLOCK_THREADS, v01_two_pass::SHARED_BYTES),
            Variant::V02FusedBlock => (
                v02_fused_block::BLOCK_THREADS,
                v02_fused_block::SHARED_BYTES,
            ),
            Variant::V03FusedVectorized => (row_threads(cols), v03_fused_vectorized::SHARED_BYTES),
            Variant::V04PackedRow => (row_threads(cols), v04_packed_row::SHARED_BYTES),
            Variant::V05RowsPerWarp => (v05_rows_per_warp::BLOCK_THREADS, 0),
            Variant::V08L2Reread => (
                v08_l2_reread::block_threads(cols, dt.size() as u32),
                v08_l2_reread::SHARED_BYTES,
            ),
            Variant::V06ClusterRow | Variant::V07ClusterRegisters => {
                let g = Geometry::chosen(cols, dt.size() as u32, self.keep());
                (g.threads, g.shared_bytes)
            }
        }
    }

    /// Where a cluster step keeps its slices (v07 in registers, v06 in shared memory).
    fn keep(self) -> Keep {
        if self == Variant::V07ClusterRegisters {
            Keep::Registers
        } else {
            Keep::Shared
        }
    }

    /// Every kernel one call launches for rows of `cols`, with its launch shape.
    pub fn kernel_uses(self, k: Kind, dt: Dtype, cols: usize) -> Vec<KernelUse> {
        let (b, shared) = self.block_shape(dt, cols as u32);
        self.kernels(k, dt)
            .into_iter()
            .map(|id| KernelUse::new(id, b, shared))
            .collect()
    }
}

/// The inputs of one normalization.
pub struct NormArgs<'a> {
    pub x: &'a Buf,
    pub weight: &'a Buf,
    /// LayerNorm only (ignored for RMSNorm; pass the weight or anything of the right shape).
    pub bias: &'a Buf,
    pub eps: f32,
}

/// The longest rows `auto` gives v05 (it takes up to its `MAX_COLS`, 512): measured on the
/// H200 (`docs/runs/2026-12-03-h200-2018-norm-v05-v06-partial.json`), v05 led v04 at 256
/// columns in all four kinds and dtypes (f32 LayerNorm 81.7% of the roof against 76.2%, bf16
/// 60.6% against 38.5%) and v04 led at 512 (95.5% against 81.1%, bf16 73.4% against 62.4%).
pub const AUTO_SHORT_MAX_COLS: u32 = 256;
const _: () = assert!(AUTO_SHORT_MAX_COLS <= v05_rows_per_warp::MAX_COLS);

/// The longest bf16 rows `auto` gives v08 (the row read twice, the second time from L2) rather
/// than v06: measured on the H100 (2026-12-07, `docs/runs/2026-12-07-h100-0118-norm-v08.json`),
/// at 1024×32768 bf16 v08 led v06 in both kinds (LayerNorm 53.1 µs against 61.7, RMSNorm 50.0
/// against 56.5) and at 4096×16384 it led v04 in LayerNorm (97.6 against 121.2); in f32 at
/// 32768 it tied v06 in LayerNorm and trailed it in RMSNorm (111.6 against 105.5), and past
/// 32768 (1024×65536, 256×262144) v06 led in every kind: narrowly in bf16 (LayerNorm
/// 1024×65536 115.7 against 117.6), by far in f32 (217.3 against 268.4), whose two resident
/// rows an SM (2 × 256 KiB × 132 SMs) outgrow L2 there, so the second pass reads DRAM again.
/// bf16 rows of up to 16384 stay with v04, which led in RMSNorm there (91.5 against 95.1).
pub const AUTO_L2_MAX_COLS_BF16: u32 = 32768;

/// The longest bf16 LayerNorm rows `auto` gives v04. v04's bf16 LayerNorm entry runs at its own
/// ~40 registers (bounded to 32 it would spill, see the kernel), so past 8192 columns, where a
/// row takes more than 512 threads, only one block fits an SM and its two block reductions
/// are not hidden behind another block's loads: on the H100 (2026-12-07,
/// `docs/runs/2026-12-07-h100-0118-norm-v08.json`) it took 121.2 µs at 4096×16384 against
/// v08's 97.6 (v04 91.9 against 99.4 at 8192×8192). RMSNorm and f32 keep v04 to
/// `ROW_MAX_COLS` (bf16 RMSNorm at 4096×16384: v04 91.5, v08 95.1; f32 level).
pub const AUTO_REGISTER_MAX_COLS_LAYERNORM_BF16: u32 = 8192;
const _: () = assert!(AUTO_REGISTER_MAX_COLS_LAYERNORM_BF16 <= ROW_MAX_COLS);

/// What `auto` runs for rows of `cols` of `dt`: a group of lanes per row up to
/// `AUTO_SHORT_MAX_COLS` (256), the row in one block's registers (v04) up to `ROW_MAX_COLS`
/// (16384; bf16 LayerNorm only to `AUTO_REGISTER_MAX_COLS_LAYERNORM_BF16`, 8192), then for
/// bf16 up to `AUTO_L2_MAX_COLS_BF16` (32768) the row streamed twice (v08),
/// a cluster per row in shared memory (v06) up to its `MAX_COLS` (393216) where the GPU has
/// clusters (`clusters`: sm_90a, see [`clusters_available`]), and v08 (a block per row, any
/// length, the second read from L2 while the rows fit there) otherwise: it took 113.9 µs for
/// f32 LayerNorm at 1024×32768 on the H100, where v02, the other any-length step, took 238.9
/// (`docs/runs/2026-12-06-h100-1201-softmax-norm-no-peer.json`). Not
/// v07 (the slices in registers): it measured slower than v06 at every length of the sweep,
/// on the H100 (2026-12-06, `docs/runs/2026-12-06-h100-1201-softmax-norm-no-peer.json`:
/// LayerNorm bf16 1024×32768 97.0 µs against 64.5) and in the same order on the H200, its
/// 56-64 registers holding it to half the SM's threads (`docs/07-normalization.md`).
///
/// Which step suits which lengths (the H200's sweep, `docs/07-normalization.md`): v04 holds
/// the roof from 1024 to 8192 columns and falls off at 128 (a block per short row) and at
/// 16384 (1024-thread blocks); v05 is for the short rows, v06 and v08 for the long ones.
pub fn auto_choice(k: Kind, cols: usize, dt: Dtype, clusters: bool) -> Variant {
    let register_max = if k == Kind::LayerNorm && dt == Dtype::Bf16 {
        AUTO_REGISTER_MAX_COLS_LAYERNORM_BF16
    } else {
        ROW_MAX_COLS
    };
    if cols <= AUTO_SHORT_MAX_COLS as usize {
        Variant::V05RowsPerWarp
    } else if cols <= register_max as usize {
        Variant::V04PackedRow
    } else if dt == Dtype::Bf16 && cols <= AUTO_L2_MAX_COLS_BF16 as usize {
        Variant::V08L2Reread
    } else if clusters && cols <= v06_cluster_row::MAX_COLS as usize {
        Variant::V06ClusterRow
    } else {
        Variant::V08L2Reread
    }
}

/// Whether `gpu` runs v06 and v07 (built only into the sm_90a PTX): `auto`'s question before it picks
/// the cluster step ([`Gpu::runs`], kept per GPU). A kernel missing from every PTX is an
/// error, not a "no".
pub fn clusters_available(gpu: &Gpu) -> Result<bool> {
    gpu.runs(f32::LAYERNORM.v06)
}

/// Normalization with the variant [`auto_choice`] picks for this row length on this GPU;
/// returns it.
pub fn auto(
    gpu: &Gpu,
    k: Kind,
    rows: usize,
    cols: usize,
    a: &NormArgs<'_>,
    y: &mut Buf,
) -> Result<Variant> {
    // Only rows past v04's limit depend on the GPU.
    let clusters = cols > ROW_MAX_COLS as usize && clusters_available(gpu)?;
    let v = auto_choice(k, cols, a.x.dtype(), clusters);
    norm(gpu, v, k, rows, cols, a, y, None)?;
    Ok(v)
}

/// Normalize each row of `x` (rows x cols) into `y`. v01 needs `stats` (mean, rstd per row:
/// `RowStats.max` holds the mean, `.sum` the rstd). v03-v07 refuse rows longer than they
/// hold ([`Variant::max_cols`]); v06 and v07 are unavailable on GPUs other than compute
/// capability 9.0.
#[allow(clippy::too_many_arguments)]
pub fn norm(
    gpu: &Gpu,
    v: Variant,
    k: Kind,
    rows: usize,
    cols: usize,
    a: &NormArgs<'_>,
    y: &mut Buf,
    stats: Option<&mut RowStats>,
) -> Result<()> {
    let dt = a.x.dtype();
    let op = v.name(k, dt);
    check_dims(&op, rows, cols, false)?;
    expect_buf(&op, "x", a.x, dt, rows * cols)?;
    expect_buf(&op, "y", y, dt, rows * cols)?;
    expect_buf(&op, "weight", a.weight, dt, cols)?;
    if k == Kind::LayerNorm {
        expect_buf(&op, "bias", a.bias, dt, cols)?;
    }
    if !(a.eps >= 0.0 && a.eps.is_finite()) {
        return Err(Error::Shape {
            op,
            what: format!("eps = {} must be finite and >= 0", a.eps),
        });
    }
    v.check_cols(k, dt, cols)?;
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    match dt {
        Dtype::F32 => launch::<f32>(gpu, v, k, rows, cols, a, y, stats, &op),
        Dtype::Bf16 => launch::<u16>(gpu, v, k, rows, cols, a, y, stats, &op),
    }
}

/// The launches of [`norm`] for storage type `T`, after its checks.
#[allow(clippy::too_many_arguments)]
fn launch<T: NormElem>(
    gpu: &Gpu,
    v: Variant,
    k: Kind,
    rows: usize,
    cols: usize,
    a: &NormArgs<'_>,
    y: &mut Buf,
    stats: Option<&mut RowStats>,
    op: &str,
) -> Result<()> {
    let e = T::entries(k);
    let (x, w, c, eps) = (
        a.x.view::<T>(op)?,
        a.weight.view::<T>(op)?,
        cols as u32,
        a.eps,
    );
    // RMSNorm's kernels never read the bias (and its dtype is not checked): they get the
    // weight in its place.
    let bias = match k {
        Kind::LayerNorm => a.bias.view::<T>(op)?,
        Kind::RmsNorm => w,
    };
    let yv = y.view_mut::<T>(op)?;
    let (b, shared) = v.block_shape(T::DTYPE, c);
    let cfg = LaunchConfig::one_block_per_row(rows, b, shared);
    // SAFETY (every launch): buffers checked by the caller to hold rows x cols / cols
    // elements of T (and cols against the variant's limit), statistics `rows` f32; one block
    // per row (v05: row_lanes(cols) lanes per row, the kernel skips rows past the last; v06
    // and v07: a cluster of blocks per row, with the cluster size, block size and shared
    // memory their geometry functions give for cols).
    unsafe {
        match v {
            Variant::V01TwoPass => {
                let st = RowStats::require(stats, rows, op, "v01_two_pass")?;
                gpu.launch(
                    e.v01_stats,
                    cfg,
                    (x, st.max.view_mut(), st.sum.view_mut(), c, eps),
                )?;
                gpu.launch(
                    e.v01_apply,
                    cfg,
                    (x, st.max.view(), st.sum.view(), w, bias, yv, c),
                )
            }
            Variant::V02FusedBlock => gpu.launch(e.v02, cfg, (x, w, bias, yv, c, eps)),
            Variant::V03FusedVectorized => gpu.launch(e.v03, cfg, (x, w, bias, yv, c, eps)),
            Variant::V04PackedRow => gpu.launch(e.v04, cfg, (x, w, bias, yv, c, eps)),
            Variant::V08L2Reread => gpu.launch(e.v08, cfg, (x, w, bias, yv, c, eps)),
            Variant::V05RowsPerWarp => {
                let lanes = v05_rows_per_warp::row_lanes(c, T::DTYPE.size() as u32) as u64;
                let cfg = LaunchConfig::for_threads(op, rows as u64 * lanes, b)?;
                gpu.launch(e.v05, cfg, (x, w, bias, yv, rows as u32, c, eps))
            }
            Variant::V06ClusterRow | Variant::V07ClusterRegisters => {
                let kernel = if v == Variant::V06ClusterRow { e.v06 } else { e.v07 };
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
                gpu.launch_cluster(kernel, cfg, g.cluster, (x, w, bias, yv, c, eps))
            }
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn auto_picks_by_row_length() {
        for clusters in [true, false] {
            for k in Kind::ALL {
                for dt in Dtype::ALL {
                    let c = |cols| auto_choice(k, cols, dt, clusters);
                    assert_eq!(c(1), Variant::V05RowsPerWarp);
                    assert_eq!(c(128), Variant::V05RowsPerWarp);
                    assert_eq!(c(256), Variant::V05RowsPerWarp);
                    assert_eq!(c(257), Variant::V04PackedRow);
                    assert_eq!(c(512), Variant::V04PackedRow);
                    assert_eq!(c(4096), Variant::V04PackedRow);
                    assert_eq!(c(8192), Variant::V04PackedRow);
                    // v04 to its limit, except bf16 LayerNorm (one block an SM there).
                    let lnb = k == Kind::LayerNorm && dt == Dtype::Bf16;
                    let past_8192 = if lnb { Variant::V08L2Reread } else { Variant::V04PackedRow };
                    assert_eq!(c(8193), past_8192, "{k:?} {dt:?}");
                    assert_eq!(c(16384), past_8192, "{k:?} {dt:?}");
                    assert_eq!(c(393217), Variant::V08L2Reread);
                    assert_eq!(c(1 << 20), Variant::V08L2Reread);
                }
            }
        }
        for k in Kind::ALL {
            // bf16 rows that two an SM still fit in L2: the L2 re-read step, clusters or not.
            for cols in [16385, 32768] {
                for clusters in [true, false] {
                    assert_eq!(auto_choice(k, cols, Dtype::Bf16, clusters), Variant::V08L2Reread);
                }
            }
            // Other long rows: the shared-memory cluster step on sm_90a (never v07, measured
            // slower), v08 (any length) elsewhere.
            for cols in [16385, 32768, 32769, 131072, 131073, 262144, 262145, 393216] {
                let c = |dt, clusters| auto_choice(k, cols, dt, clusters);
                assert_eq!(c(Dtype::F32, true), Variant::V06ClusterRow, "{cols}");
                assert_eq!(c(Dtype::F32, false), Variant::V08L2Reread);
                if cols > AUTO_L2_MAX_COLS_BF16 as usize {
                    assert_eq!(c(Dtype::Bf16, true), Variant::V06ClusterRow);
                    assert_eq!(c(Dtype::Bf16, false), Variant::V08L2Reread);
                }
            }
        }
        // Whatever auto picks takes the row, in every kind and dtype.
        for cols in [
            1, 256, 257, 8192, 8193, 16384, 16385, 32768, 32769, 131072, 131073, 393216, 393217,
            1 << 20,
        ] {
            for clusters in [true, false] {
                for k in Kind::ALL {
                    for dt in Dtype::ALL {
                        auto_choice(k, cols, dt, clusters).check_cols(k, dt, cols).unwrap();
                    }
                }
            }
        }
    }

    /// v05: a group of `row_lanes(cols, ..)` lanes holds the row, `LANE_VECTORS` 16-byte
    /// vectors a lane (scalar layout: `lane_cols` elements a lane, element k·G + q); groups
    /// tile a warp; each element of the row is in exactly one slot; a group never has a half
    /// that would do; the longest row fits a warp in both dtypes.
    #[test]
    fn rows_per_warp_layout_covers_each_element_once() {
        use v05_rows_per_warp::{BLOCK_THREADS, LANE_VECTORS, MAX_COLS, lane_cols, row_lanes};
        assert!(BLOCK_THREADS.is_multiple_of(32));
        let lengths = [1u32, 2, 7, 8, 15, 16, 17, 31, 32, 33, 64, 127, 128, 129, 200, 256];
        for cols in lengths.into_iter().chain([257, 384, 500, MAX_COLS - 1, MAX_COLS]) {
            for e in [4u32, 2] {
                let g = row_lanes(cols, e);
                let lc = lane_cols(e);
                assert!(g.is_power_of_two() && g <= 32, "cols={cols} e={e}: {g} lanes");
                assert!(g * lc >= cols, "cols={cols} e={e}: {g} lanes too few");
                assert!(g == 1 || (g / 2) * lc < cols, "cols={cols}: {g} lanes, half do");
                let per16 = 16 / e;
                // The vector layout (when cols is a multiple of the vector) and the scalar one.
                for vec in [true, false] {
                    if vec && !cols.is_multiple_of(per16) {
                        continue;
                    }
                    let mut seen = vec![0u8; cols as usize];
                    for q in 0..g {
                        if vec {
                            for c in 0..LANE_VECTORS {
                                let start = (c * g + q) * per16;
                                for k in 0..per16 {
                                    if start < cols {
                                        seen[(start + k) as usize] += 1;
                                    }
                                }
                            }
                        } else {
                            for k in 0..lc {
                                if k * g + q < cols {
                                    seen[(k * g + q) as usize] += 1;
                                }
                            }
                        }
                    }
                    assert!(seen.iter().all(|&s| s == 1), "cols={cols} e={e} vec={vec}");
                }
            }
        }
        // The short rows of the issue: 128 f32 → 8 lanes (4 rows a warp), 128 bf16 → 4 lanes
        // (8 rows a warp); 64 bytes a lane in both.
        assert_eq!((row_lanes(128, 4), row_lanes(128, 2)), (8, 4));
        assert_eq!((lane_cols(4) * 4, lane_cols(2) * 2), (64, 64));
        assert_eq!((row_lanes(MAX_COLS, 4), row_lanes(MAX_COLS, 2)), (32, 16));
        assert!(row_lanes(MAX_COLS + 1, 4) > 32, "past the max a warp is not enough");
        let v = Variant::V05RowsPerWarp;
        assert_eq!(v.block_shape(Dtype::Bf16, 128), (BLOCK_THREADS, 0));
        v.check_cols(Kind::LayerNorm, Dtype::F32, MAX_COLS as usize).unwrap();
        let e = v
            .check_cols(Kind::RmsNorm, Dtype::Bf16, MAX_COLS as usize + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&v.name(Kind::RmsNorm, Dtype::Bf16))
                && e.contains(&format!("rows of {}", MAX_COLS + 1))
                && e.contains(&MAX_COLS.to_string())
                && e.contains("auto")
                && e.contains(Variant::V04PackedRow.stem()),
            "{e}"
        );
    }

    /// v06: its block shape is the cluster-row geometry chosen for the row (whose slices
    /// `cluster_row`'s tests check), fits the GPU at every length up to the max, and longer
    /// rows are refused.
    #[test]
    fn cluster_row_geometry_fits_up_to_the_max() {
        use v06_cluster_row::{HEADER_BYTES, MAX_COLS, MAX_THREADS, slice};
        const { assert!(MAX_COLS > 262144, "the issue's longest rows, and 262145") };
        let lengths = [1u32, 2, 7, 8, 31, 127, 128, 129, 4097, 16385, 32768, 65537, 262145];
        for cols in lengths.into_iter().chain([MAX_COLS - 1, MAX_COLS]) {
            for dt in Dtype::ALL {
                let e = dt.size() as u32;
                let g = Geometry::chosen(cols, e, Keep::Shared);
                let (bs, shared) = Variant::V06ClusterRow.block_shape(dt, cols);
                assert_eq!((bs, shared), (g.threads, g.shared_bytes));
                assert!(bs.is_multiple_of(32) && (32..=MAX_THREADS).contains(&bs), "{cols}");
                assert!(shared <= 227 * 1024, "cols={cols} {dt:?}: {shared} bytes");
                let (_, len0) = slice(0, cols, e, g.cluster);
                assert!(shared >= len0 * e, "the slice fits");
            }
        }
        // The bench's long rows: 32768 f32 → 4 blocks of 512 threads of 4 vectors, 32 KiB of
        // slice; 262144 f32 → 8 blocks of 1024 threads, 128 KiB; the max in f32 → 192 KiB.
        assert_eq!(Geometry::chosen(32768, 4, Keep::Shared).threads, 512);
        let shared = |cols| Geometry::chosen(cols, 4, Keep::Shared).shared_bytes;
        assert_eq!(shared(32768), HEADER_BYTES + 8192 * 4);
        assert_eq!(Geometry::chosen(262144, 4, Keep::Shared).threads, 1024);
        assert_eq!(shared(MAX_COLS), HEADER_BYTES + 192 * 1024);
        let v = Variant::V06ClusterRow;
        v.check_cols(Kind::LayerNorm, Dtype::Bf16, MAX_COLS as usize).unwrap();
        let e = v
            .check_cols(Kind::LayerNorm, Dtype::F32, MAX_COLS as usize + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&v.name(Kind::LayerNorm, Dtype::F32))
                && e.contains(&format!("rows of {}", MAX_COLS + 1))
                && e.contains(&MAX_COLS.to_string())
                && e.contains("auto")
                && e.contains(Variant::V08L2Reread.stem()),
            "{e}"
        );
        // v04's refusal names the way out for long rows too.
        let e = Variant::V04PackedRow
            .check_cols(Kind::RmsNorm, Dtype::F32, 20000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("20000") && e.contains("16384") && e.contains(v.stem()), "{e}");
    }

    /// v07: its block shape is the register-kept cluster-row geometry (16 elements a thread of
    /// the slice, the header only in shared memory), and longer rows are refused naming v06.
    #[test]
    fn cluster_registers_geometry_fits_up_to_the_max() {
        use v07_cluster_registers::{MAX_COLS, SHARED_BYTES, slice};
        let lengths = [1u32, 2, 7, 31, 128, 4097, 16385, 32768, 65537, 131071];
        for cols in lengths.into_iter().chain([MAX_COLS]) {
            for dt in Dtype::ALL {
                let e = dt.size() as u32;
                let g = Geometry::chosen(cols, e, Keep::Registers);
                let (bs, shared) = Variant::V07ClusterRegisters.block_shape(dt, cols);
                assert_eq!((bs, shared), (g.threads, g.shared_bytes));
                assert_eq!(shared, SHARED_BYTES);
                assert!(bs.is_multiple_of(32) && bs <= 1024, "{cols}");
                let (_, len0) = slice(0, cols, e, g.cluster);
                assert!(bs * 16 >= len0, "cols={cols} {dt:?}: 16 slots a thread hold the slice");
            }
        }
        // The bench's long rows: 32768 → 4 blocks of 512 threads.
        let g = Geometry::chosen(32768, 4, Keep::Registers);
        assert_eq!((g.cluster, g.threads), (4, 512));
        let v = Variant::V07ClusterRegisters;
        v.check_cols(Kind::RmsNorm, Dtype::Bf16, MAX_COLS as usize).unwrap();
        let e = v
            .check_cols(Kind::LayerNorm, Dtype::F32, MAX_COLS as usize + 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&v.name(Kind::LayerNorm, Dtype::F32))
                && e.contains(&format!("rows of {}", MAX_COLS + 1))
                && e.contains(&MAX_COLS.to_string())
                && e.contains("auto")
                && e.contains(Variant::V06ClusterRow.stem()),
            "{e}"
        );
    }

    /// v08: `MIN_UNITS` vectors a thread, whole warps, up to 1024 threads (longer rows: more
    /// steps a thread); any length is taken.
    #[test]
    fn l2_reread_block_follows_the_row() {
        use v08_l2_reread::{MAX_THREADS, MIN_UNITS, SHARED_BYTES, block_threads};
        assert_eq!(block_threads(1, 4), 32);
        assert_eq!(block_threads(16384, 2), 512);
        assert_eq!(block_threads(32768, 4), 1024);
        assert_eq!(block_threads(1 << 20, 2), MAX_THREADS);
        for cols in [1u32, 7, 1001, 4096, 16385, 32768, 262145] {
            for e in [4u32, 2] {
                let b = block_threads(cols, e);
                assert!(b.is_multiple_of(32) && b <= MAX_THREADS, "{cols}");
                assert!(b == MAX_THREADS || b * MIN_UNITS * (16 / e) >= cols, "{cols} {e}");
            }
        }
        let v = Variant::V08L2Reread;
        assert_eq!(v.block_shape(Dtype::F32, 32768), (1024, SHARED_BYTES));
        assert_eq!(v.max_cols(), None);
        v.check_cols(Kind::LayerNorm, Dtype::Bf16, 1 << 24).unwrap();
    }

    #[test]
    fn names_follow_the_stem() {
        for k in Kind::ALL {
            for dt in Dtype::ALL {
                for v in LADDER {
                    assert_eq!(
                        v.row_variant(k, dt),
                        format!("{}_{}_{}", v.stem(), k.name(), dt.name())
                    );
                    // In the sm_80 PTX, or (the cluster step) first in the sm_90a one.
                    let want = if v.keep() == Keep::Registers || v == Variant::V06ClusterRow {
                        "sm_90a"
                    } else {
                        "sm_80"
                    };
                    for id in v.kernels(k, dt) {
                        assert_eq!(crate::ptx::first_arch_with(id.name()), Some(want), "{id}");
                    }
                }
            }
        }
        let uses = Variant::V03FusedVectorized.kernel_uses(Kind::RmsNorm, Dtype::Bf16, 4096);
        assert_eq!((uses[0].block_threads, uses[0].shared_bytes), (256, 128));
        assert_eq!(
            Variant::V01TwoPass
                .kernel_uses(Kind::LayerNorm, Dtype::F32, 4096)
                .len(),
            2
        );
    }
}
