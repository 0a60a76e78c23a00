//! fused_elementwise: the variants, their kernel entries (picked by variant and dtype), the
//! launch geometry (from the variant files' constants) and the safe wrapper.

use rooflab_kernels::fused_elementwise::{
    GELU_ERF, GELU_TANH, v01_unfused, v02_fused, v03_fused_vectorized,
};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, KernelId, LaunchConfig};
use crate::tensor::{Buf, Dtype, Elem, check_dims, expect_buf, variant_name};

/// GELU form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gelu {
    Erf,
    Tanh,
}

impl Gelu {
    pub(super) fn mode(self) -> u32 {
        match self {
            Gelu::Erf => GELU_ERF,
            Gelu::Tanh => GELU_TANH,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Gelu::Erf => "erf",
            Gelu::Tanh => "tanh",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Unfused,
    V02Fused,
    V03FusedVectorized,
}

pub const LADDER: [Variant; 3] = [
    Variant::V01Unfused,
    Variant::V02Fused,
    Variant::V03FusedVectorized,
];

/// A fused entry: `(x, scale, bias, residual, y, n, cols, mode)`.
type Fused<T> = Kernel<(
    *const T,
    *const T,
    *const T,
    *const T,
    *mut T,
    u32,
    u32,
    u32,
)>;

/// The entries of one storage type `T` (`f32`, or `u16` for bf16).
pub struct Entries<T: 'static> {
    /// v01's four kernels, in launch order.
    pub v01_mul: Kernel<(*const T, *const T, *mut T, u32, u32)>,
    pub v01_add_bias: Kernel<(*const T, *const T, *mut T, u32, u32)>,
    pub v01_gelu: Kernel<(*const T, *mut T, u32, u32)>,
    pub v01_add: Kernel<(*const T, *const T, *mut T, u32)>,
    pub v02: Fused<T>,
    pub v03: Fused<T>,
}

impl<T> Entries<T> {
    /// The kernels variant `v` launches, in order.
    fn of(&self, v: Variant) -> Vec<KernelId> {
        match v {
            Variant::V01Unfused => vec![
                self.v01_mul.id(),
                self.v01_add_bias.id(),
                self.v01_gelu.id(),
                self.v01_add.id(),
            ],
            Variant::V02Fused => vec![self.v02.id()],
            Variant::V03FusedVectorized => vec![self.v03.id()],
        }
    }
}

/// A storage type with its entries.
pub trait FusedElem: Elem {
    const ENTRIES: Entries<Self>;
}

impl FusedElem for f32 {
    const ENTRIES: Entries<f32> = Entries {
        v01_mul: v01_unfused::fused_elementwise_v01_unfused_mul_f32,
        v01_add_bias: v01_unfused::fused_elementwise_v01_unfused_add_bias_f32,
        v01_gelu: v01_unfused::fused_elementwise_v01_unfused_gelu_f32,
        v01_add: v01_unfused::fused_elementwise_v01_unfused_add_f32,
        v02: v02_fused::fused_elementwise_v02_fused_f32,
        v03: v03_fused_vectorized::fused_elementwise_v03_fused_vectorized_f32,
    };
}

impl FusedElem for u16 {
    const ENTRIES: Entries<u16> = Entries {
        v01_mul: v01_unfused::fused_elementwise_v01_unfused_mul_bf16,
        v01_add_bias: v01_unfused::fused_elementwise_v01_unfused_add_bias_bf16,
        v01_gelu: v01_unfused::fused_elementwise_v01_unfused_gelu_bf16,
        v01_add: v01_unfused::fused_elementwise_v01_unfused_add_bf16,
        v02: v02_fused::fused_elementwise_v02_fused_bf16,
        v03: v03_fused_vectorized::fused_elementwise_v03_fused_vectorized_bf16,
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
    /// `fused_elementwise_v02_fused_f32`; errors and tests go by it.
    pub fn name(self, dt: Dtype) -> String {
        variant_name(&self.kernels(dt))
    }

    /// The bench row's variant: the name minus the family prefix.
    pub fn row_variant(self, dt: Dtype) -> String {
        self.name(dt)[super::FAMILY.name.len() + 1..].to_string()
    }

    fn block_threads(self) -> u32 {
        match self {
            Variant::V01Unfused => v01_unfused::BLOCK_THREADS,
            Variant::V02Fused => v02_fused::BLOCK_THREADS,
            Variant::V03FusedVectorized => v03_fused_vectorized::BLOCK_THREADS,
        }
    }

    /// Every kernel one call launches, with its launch shape (no shared memory).
    pub fn kernel_uses(self, dt: Dtype) -> Vec<KernelUse> {
        self.kernels(dt)
            .into_iter()
            .map(|k| KernelUse::new(k, self.block_threads(), 0))
            .collect()
    }
}

/// The three full-size intermediates v01 writes.
pub struct Intermediates(pub [Buf; 3]);

impl Intermediates {
    pub fn alloc(gpu: &Gpu, dt: Dtype, n: usize) -> Result<Intermediates> {
        Ok(Intermediates([
            Buf::alloc(gpu, dt, n)?,
            Buf::alloc(gpu, dt, n)?,
            Buf::alloc(gpu, dt, n)?,
        ]))
    }
}

/// The inputs of one chain.
pub struct Inputs<'a> {
    pub x: &'a Buf,
    pub scale: &'a Buf,
    pub bias: &'a Buf,
    pub residual: &'a Buf,
}

/// `y = gelu(x * scale + bias) + residual` over rows x cols. v01 needs `tmp`; the others
/// ignore it. Empty tensors: nothing launched.
#[allow(clippy::too_many_arguments)]
pub fn gelu_chain(
    gpu: &Gpu,
    v: Variant,
    gelu: Gelu,
    rows: usize,
    cols: usize,
    inp: &Inputs<'_>,
    y: &mut Buf,
    tmp: Option<&mut Intermediates>,
) -> Result<()> {
    let dt = inp.x.dtype();
    let op = v.name(dt);
    check_dims(&op, rows, cols, true)?;
    let n = rows * cols;
    expect_buf(&op, "x", inp.x, dt, n)?;
    expect_buf(&op, "residual", inp.residual, dt, n)?;
    expect_buf(&op, "y", y, dt, n)?;
    expect_buf(&op, "scale", inp.scale, dt, cols)?;
    expect_buf(&op, "bias", inp.bias, dt, cols)?;
    if n == 0 {
        return Ok(());
    }
    match dt {
        Dtype::F32 => launch::<f32>(gpu, v, gelu, (n, cols), inp, y, tmp, &op),
        Dtype::Bf16 => launch::<u16>(gpu, v, gelu, (n, cols), inp, y, tmp, &op),
    }
}

/// The launches of [`gelu_chain`] for storage type `T`, after its checks.
#[allow(clippy::too_many_arguments)]
fn launch<T: FusedElem>(
    gpu: &Gpu,
    v: Variant,
    gelu: Gelu,
    (n, cols): (usize, usize),
    inp: &Inputs<'_>,
    y: &mut Buf,
    tmp: Option<&mut Intermediates>,
    op: &str,
) -> Result<()> {
    let k = T::ENTRIES;
    let dt = T::DTYPE;
    let (x, s, b, r) = (
        inp.x.view::<T>(op)?,
        inp.scale.view::<T>(op)?,
        inp.bias.view::<T>(op)?,
        inp.residual.view::<T>(op)?,
    );
    let ya = y.view_mut::<T>(op)?;
    let (n32, c32, mode) = (n as u32, cols as u32, gelu.mode());
    match v {
        Variant::V01Unfused => {
            let tmp = tmp.ok_or_else(|| Error::Shape {
                op: op.into(),
                what: "v01_unfused needs its three intermediate tensors (Intermediates)".into(),
            })?;
            for (i, t) in tmp.0.iter().enumerate() {
                expect_buf(op, &format!("intermediate {i}"), t, dt, n)?;
            }
            let [t1, t2, t3] = &mut tmp.0;
            let cfg = LaunchConfig::for_threads(op, n as u64, v01_unfused::BLOCK_THREADS)?;
            // SAFETY: every buffer was checked above to hold n (or cols) elements of dt; one
            // thread per element.
            unsafe {
                gpu.launch(k.v01_mul, cfg, (x, s, t1.view_mut::<T>(op)?, n32, c32))?;
                gpu.launch(
                    k.v01_add_bias,
                    cfg,
                    (t1.view::<T>(op)?, b, t2.view_mut::<T>(op)?, n32, c32),
                )?;
                gpu.launch(
                    k.v01_gelu,
                    cfg,
                    (t2.view::<T>(op)?, t3.view_mut::<T>(op)?, n32, mode),
                )?;
                gpu.launch(k.v01_add, cfg, (t3.view::<T>(op)?, r, ya, n32))
            }
        }
        Variant::V02Fused | Variant::V03FusedVectorized => {
            let (kernel, cfg) = if v == Variant::V02Fused {
                (
                    k.v02,
                    LaunchConfig::for_threads(op, n as u64, v02_fused::BLOCK_THREADS)?,
                )
            } else {
                let per16 = 16 / dt.size();
                (
                    k.v03,
                    LaunchConfig::for_threads(
                        op,
                        v03_fused_vectorized::threads(n as u64, per16),
                        v03_fused_vectorized::BLOCK_THREADS,
                    )?,
                )
            };
            // SAFETY: as above; v03's threads cover its vectors and the tail exactly.
            unsafe { gpu.launch(kernel, cfg, (x, s, b, r, ya, n32, c32, mode)) }
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;


    #[test]
    fn names_follow_the_stem() {
        for dt in Dtype::ALL {
            for v in LADDER {
                assert_eq!(v.row_variant(dt), format!("{}_{}", v.stem(), dt.name()));
            }
        }
        assert_eq!(Variant::V01Unfused.kernel_uses(Dtype::Bf16).len(), 4);
    }

    #[test]
    fn v03_thread_mapping_covers_every_element_once() {
        for n in [1u64, 3, 4, 7, 8, 9, 1001] {
            for p in [4u64, 8] {
                let mut seen = vec![0u8; n as usize];
                for t in 0..v03_fused_vectorized::threads(n, p) {
                    let nvec = n / p;
                    let start = t * p;
                    let count = if t < nvec { p } else { n - start };
                    for k in 0..count {
                        seen[(start + k) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&s| s == 1), "n={n} p={p}");
            }
        }
    }
}
