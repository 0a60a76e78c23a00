//! norm: the kinds (LayerNorm, RMSNorm), the variants, their kernel entries (picked by
//! variant, kind and dtype), the launch geometry (from the variant files' constants) and
//! the safe wrapper.

use rooflab_kernels::norm::v03_fused_vectorized::{ROW_MAX_COLS, row_threads};
use rooflab_kernels::norm::{v01_two_pass, v02_fused_block, v03_fused_vectorized, v04_packed_row};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, KernelId, LaunchConfig};
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
}

pub const LADDER: [Variant; 4] = [
    Variant::V01TwoPass,
    Variant::V02FusedBlock,
    Variant::V03FusedVectorized,
    Variant::V04PackedRow,
];

/// A fused entry: `(x, w, bias, y, cols, eps)`.
type Fused<T> = Kernel<(*const T, *const T, *const T, *mut T, u32, f32)>;

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
}

impl<T> Entries<T> {
    /// The kernels variant `v` launches, in order.
    fn of(&self, v: Variant) -> Vec<KernelId> {
        match v {
            Variant::V01TwoPass => vec![self.v01_stats.id(), self.v01_apply.id()],
            Variant::V02FusedBlock => vec![self.v02.id()],
            Variant::V03FusedVectorized => vec![self.v03.id()],
            Variant::V04PackedRow => vec![self.v04.id()],
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
    };
    const RMSNORM: Entries<f32> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_rmsnorm_f32,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_rmsnorm_f32,
        v02: v02_fused_block::norm_v02_fused_block_rmsnorm_f32,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_rmsnorm_f32,
        v04: v04_packed_row::norm_v04_packed_row_rmsnorm_f32,
    };
}

impl NormElem for u16 {
    const LAYERNORM: Entries<u16> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_layernorm_bf16,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_layernorm_bf16,
        v02: v02_fused_block::norm_v02_fused_block_layernorm_bf16,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_layernorm_bf16,
        v04: v04_packed_row::norm_v04_packed_row_layernorm_bf16,
    };
    const RMSNORM: Entries<u16> = Entries {
        v01_stats: v01_two_pass::norm_v01_two_pass_stats_rmsnorm_bf16,
        v01_apply: v01_two_pass::norm_v01_two_pass_apply_rmsnorm_bf16,
        v02: v02_fused_block::norm_v02_fused_block_rmsnorm_bf16,
        v03: v03_fused_vectorized::norm_v03_fused_vectorized_rmsnorm_bf16,
        v04: v04_packed_row::norm_v04_packed_row_rmsnorm_bf16,
    };
}

impl Variant {
    /// Whether the variant holds its row on chip (rows of at most `ROW_MAX_COLS`).
    pub fn holds_row(self) -> bool {
        matches!(self, Variant::V03FusedVectorized | Variant::V04PackedRow)
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
    /// `cols` (v03's block follows the row).
    pub fn block_shape(self, cols: u32) -> (u32, u32) {
        match self {
            Variant::V01TwoPass => (v01_two_pass::BLOCK_THREADS, v01_two_pass::SHARED_BYTES),
            Variant::V02FusedBlock => (
                v02_fused_block::BLOCK_THREADS,
                v02_fused_block::SHARED_BYTES,
            ),
            Variant::V03FusedVectorized => (row_threads(cols), v03_fused_vectorized::SHARED_BYTES),
            Variant::V04PackedRow => (row_threads(cols), v04_packed_row::SHARED_BYTES),
        }
    }

    /// Every kernel one call launches for rows of `cols`, with its launch shape.
    pub fn kernel_uses(self, k: Kind, dt: Dtype, cols: usize) -> Vec<KernelUse> {
        let (b, shared) = self.block_shape(cols as u32);
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

/// Normalize each row of `x` (rows x cols) into `y`. v01 needs `stats` (mean, rstd per row:
/// `RowStats.max` holds the mean, `.sum` the rstd). v03 refuses rows longer than 16384.
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
    if v.holds_row() && cols > ROW_MAX_COLS as usize {
        return Err(Error::Shape {
            op,
            what: format!(
                "rows of {cols} elements do not fit on chip (this variant holds at most \
                 {ROW_MAX_COLS}); use v02_fused_block"
            ),
        });
    }
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
    let (b, shared) = v.block_shape(c);
    let cfg = LaunchConfig::one_block_per_row(rows, b, shared);
    // SAFETY (every launch): buffers checked by the caller to hold rows x cols / cols
    // elements of T, statistics `rows` f32; one block per row.
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
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;


    #[test]
    fn names_follow_the_stem() {
        for k in Kind::ALL {
            for dt in Dtype::ALL {
                for v in LADDER {
                    assert_eq!(
                        v.row_variant(k, dt),
                        format!("{}_{}_{}", v.stem(), k.name(), dt.name())
                    );
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
