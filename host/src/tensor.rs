//! Tensors of the row-wise families (fused_elementwise, softmax, norm): the storage type
//! [`Dtype`], the dtype-tagged device buffer [`Buf`] and the typed views a launch takes from
//! it ([`Elem`]), the per-row statistics the two-kernel baselines write ([`RowStats`]), and
//! the checks every wrapper runs before a launch ([`expect_buf`], [`check_dims`]).

use cust::memory::DeviceCopy;
use half::bf16;

use crate::cost::Bytes;
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, KernelId, View, ViewMut};

/// Storage type of a tensor. Arithmetic is f32 either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F32,
    Bf16,
}

impl Dtype {
    pub const ALL: [Dtype; 2] = [Dtype::F32, Dtype::Bf16];
    /// Suffix of kernel entries and bench rows.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::Bf16 => "bf16",
        }
    }
    pub fn torch(self) -> &'static str {
        match self {
            Dtype::F32 => "float32",
            Dtype::Bf16 => "bfloat16",
        }
    }
    pub fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 => 2,
        }
    }
    /// The value as this dtype stores it (bf16: round to nearest even).
    pub fn quantize(self, v: f32) -> f32 {
        match self {
            Dtype::F32 => v,
            Dtype::Bf16 => bf16::from_f32(v).to_f32(),
        }
    }
    /// `n` elements of this dtype.
    pub fn bytes(self, n: u64) -> Bytes {
        Bytes(n * self.size())
    }
}

/// A device tensor of either dtype (bf16 as raw u16 bits, the kernels' `*const u16`).
pub enum Buf {
    F32(DeviceArray<f32>),
    Bf16(DeviceArray<u16>),
}

/// bf16 quiet-NaN bits written into bf16 outputs before a launch (f32 outputs get
/// `gpu.poison`).
pub const POISON_BF16_BITS: u16 = 0x7fc1;

impl Buf {
    /// Upload `data` as `dt` (bf16: rounded).
    pub fn upload(gpu: &Gpu, dt: Dtype, data: &[f32]) -> Result<Buf> {
        Ok(match dt {
            Dtype::F32 => Buf::F32(gpu.upload(data)?),
            Dtype::Bf16 => Buf::Bf16(
                gpu.upload(
                    &data
                        .iter()
                        .map(|&v| bf16::from_f32(v).to_bits())
                        .collect::<Vec<_>>(),
                )?,
            ),
        })
    }
    pub fn alloc(gpu: &Gpu, dt: Dtype, len: usize) -> Result<Buf> {
        Ok(match dt {
            Dtype::F32 => Buf::F32(gpu.alloc(len)?),
            Dtype::Bf16 => Buf::Bf16(gpu.alloc(len)?),
        })
    }
    pub fn dtype(&self) -> Dtype {
        match self {
            Buf::F32(_) => Dtype::F32,
            Buf::Bf16(_) => Dtype::Bf16,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Buf::F32(a) => a.len(),
            Buf::Bf16(a) => a.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The whole buffer as a kernel's `*const T`; an error naming `op` when its dtype is not
    /// `T`'s (the wrappers check dtypes first, so they never see it).
    pub fn view<T: Elem>(&self, op: &str) -> Result<View<'_, T>> {
        T::array(self)
            .map(|a| a.view())
            .ok_or_else(|| self.wrong_dtype(op, T::DTYPE))
    }
    /// The whole buffer as a kernel's `*mut T`; as [`Buf::view`].
    pub fn view_mut<T: Elem>(&mut self, op: &str) -> Result<ViewMut<'_, T>> {
        let dt = self.dtype();
        match T::array_mut(self) {
            Some(a) => Ok(a.view_mut()),
            None => Err(wrong_dtype(op, dt, T::DTYPE)),
        }
    }
    fn wrong_dtype(&self, op: &str, want: Dtype) -> Error {
        wrong_dtype(op, self.dtype(), want)
    }
    /// Fill with NaN so that an unwritten element can never pass a comparison.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        match self {
            Buf::F32(a) => gpu.poison(a.view_mut()),
            Buf::Bf16(a) => {
                gpu.sync()?;
                a.copy_from_host(&vec![POISON_BF16_BITS; a.len()])
            }
        }
    }
    /// Download, widened to f32.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        Ok(match self {
            Buf::F32(a) => a.to_host()?,
            Buf::Bf16(a) => a
                .to_host()?
                .into_iter()
                .map(|b| bf16::from_bits(b).to_f32())
                .collect(),
        })
    }
}

fn wrong_dtype(op: &str, have: Dtype, want: Dtype) -> Error {
    Error::Shape {
        op: op.into(),
        what: format!(
            "a buffer is {}, the kernel takes {}",
            have.name(),
            want.name()
        ),
    }
}

/// An element type the kernels store: `f32`, or `u16` for bf16. Lets a wrapper written once
/// take typed views of a [`Buf`] for the entry of its dtype.
pub trait Elem: DeviceCopy + 'static {
    const DTYPE: Dtype;
    fn array(b: &Buf) -> Option<&DeviceArray<Self>>;
    fn array_mut(b: &mut Buf) -> Option<&mut DeviceArray<Self>>;
}

impl Elem for f32 {
    const DTYPE: Dtype = Dtype::F32;
    fn array(b: &Buf) -> Option<&DeviceArray<f32>> {
        match b {
            Buf::F32(a) => Some(a),
            Buf::Bf16(_) => None,
        }
    }
    fn array_mut(b: &mut Buf) -> Option<&mut DeviceArray<f32>> {
        match b {
            Buf::F32(a) => Some(a),
            Buf::Bf16(_) => None,
        }
    }
}

impl Elem for u16 {
    const DTYPE: Dtype = Dtype::Bf16;
    fn array(b: &Buf) -> Option<&DeviceArray<u16>> {
        match b {
            Buf::Bf16(a) => Some(a),
            Buf::F32(_) => None,
        }
    }
    fn array_mut(b: &mut Buf) -> Option<&mut DeviceArray<u16>> {
        match b {
            Buf::Bf16(a) => Some(a),
            Buf::F32(_) => None,
        }
    }
}

/// Refuse a buffer whose dtype or length is not what the op expects.
pub fn expect_buf(op: &str, what: &str, b: &Buf, dt: Dtype, len: usize) -> Result<()> {
    if b.dtype() != dt {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "{what} is {}, the op runs in {}",
                b.dtype().name(),
                dt.name()
            ),
        });
    }
    if b.len() != len {
        return Err(Error::Shape {
            op: op.into(),
            what: format!("{what} has {} elements, expected {len}", b.len()),
        });
    }
    Ok(())
}

/// Rows x cols checked for the kernels' 32-bit indexing (`cols` and, where `whole`, the
/// element count below 2^32).
pub fn check_dims(op: &str, rows: usize, cols: usize, whole: bool) -> Result<()> {
    let n = rows as u64 * cols as u64;
    let limit = u32::MAX as u64;
    if cols as u64 > limit || rows as u64 > i32::MAX as u64 {
        return Err(Error::TooLarge {
            op: op.into(),
            what: "rows or cols".into(),
            value: (rows.max(cols)) as u64,
            limit,
        });
    }
    if whole && n > limit {
        return Err(Error::TooLarge {
            op: op.into(),
            what: "elements (rows x cols)".into(),
            value: n,
            limit,
        });
    }
    Ok(())
}

/// Per-row f32 statistics of the two-kernel baselines (softmax v01: max and sum; norm v01:
/// mean in `max`, rstd in `sum`).
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

    /// `stats`, checked to be there and to hold `rows` entries; a shape error naming `op`
    /// when they are missing or sized for other rows.
    pub fn require<'a>(
        stats: Option<&'a mut RowStats>,
        rows: usize,
        op: &str,
        variant: &str,
    ) -> Result<&'a mut RowStats> {
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
        Ok(st)
    }
}

/// The name a variant goes by, from the entries it launches: the entry itself for one
/// kernel; for several (`softmax_v01_three_kernels_max_f32`, `.._sum_f32`, ..) their names
/// with the segment that differs taken out (`softmax_v01_three_kernels_f32`).
pub fn variant_name(kernels: &[KernelId]) -> String {
    let Some((first, rest)) = kernels.split_first() else {
        return String::new();
    };
    let first = first.name();
    if rest.is_empty() {
        return first.to_string();
    }
    // Longest common prefix ending in `_`, longest common suffix starting with `_`.
    let mut pre = first.len();
    let mut suf = first.len();
    for n in rest.iter().map(|k| k.name()) {
        pre = pre.min(
            first
                .bytes()
                .zip(n.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
        suf = suf.min(
            first
                .bytes()
                .rev()
                .zip(n.bytes().rev())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    let prefix = &first[..first[..pre].rfind('_').map_or(0, |i| i + 1)];
    let tail = &first[first.len() - suf..];
    let suffix = tail.find('_').map_or("", |i| &tail[i + 1..]);
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use rooflab_kernels::fused_elementwise::v01_unfused;
    use rooflab_kernels::norm::v01_two_pass;
    use rooflab_kernels::softmax::{v01_three_kernels, v02_block_per_row};

    #[test]
    fn variant_names_come_from_the_entries() {
        let one = [v02_block_per_row::softmax_v02_block_per_row_f32.id()];
        // One kernel: its own name.
        assert_eq!(variant_name(&one), one[0].name());
        let three = [
            v01_three_kernels::softmax_v01_three_kernels_max_bf16.id(),
            v01_three_kernels::softmax_v01_three_kernels_sum_bf16.id(),
            v01_three_kernels::softmax_v01_three_kernels_normalize_bf16.id(),
        ];
        assert_eq!(variant_name(&three), "softmax_v01_three_kernels_bf16");
        let two = [
            v01_two_pass::norm_v01_two_pass_stats_layernorm_f32.id(),
            v01_two_pass::norm_v01_two_pass_apply_layernorm_f32.id(),
        ];
        assert_eq!(variant_name(&two), "norm_v01_two_pass_layernorm_f32");
        let four = [
            v01_unfused::fused_elementwise_v01_unfused_mul_f32.id(),
            v01_unfused::fused_elementwise_v01_unfused_add_bias_f32.id(),
            v01_unfused::fused_elementwise_v01_unfused_gelu_f32.id(),
            v01_unfused::fused_elementwise_v01_unfused_add_f32.id(),
        ];
        assert_eq!(variant_name(&four), "fused_elementwise_v01_unfused_f32");
    }

    #[test]
    fn dtype_basics() {
        assert_eq!(Dtype::Bf16.bytes(3), Bytes(6));
        assert_eq!(Dtype::Bf16.quantize(1.0 + 1.0 / 512.0), 1.0);
        assert_eq!(Dtype::F32.quantize(0.1), 0.1);
    }
}
