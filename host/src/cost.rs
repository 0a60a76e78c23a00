//! Accounting: FLOPs and bytes as distinct types, counted from the shape, once per op.
//!
//! Every op's cost model gives the FLOPs it must do and the fewest DRAM bytes it must move
//! (each input read once, each output written once). A variant may add modelled traffic of
//! its own (the strided copy's wasted sectors, AoS's unused fields): `modelled_bytes`. All
//! rates in the report come from these numbers and a measured time.

use std::fmt;
use std::ops::{Add, Mul};

/// A number of bytes moved through device memory.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Bytes(pub u64);

/// A number of floating-point operations (an FMA counts as 2).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Flops(pub u64);

impl Bytes {
    /// `n` elements of `T`.
    pub fn of<T>(n: u64) -> Bytes {
        Bytes(n * size_of::<T>() as u64)
    }
    /// GB/s (1e9 bytes per second) when moved in `micros` microseconds.
    pub fn gbps(self, micros: f64) -> f64 {
        self.0 as f64 / (micros * 1e3)
    }
}

impl Flops {
    /// TFLOP/s when done in `micros` microseconds.
    pub fn tflops(self, micros: f64) -> f64 {
        self.0 as f64 / (micros * 1e6)
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}
impl Mul<u64> for Bytes {
    type Output = Bytes;
    fn mul(self, k: u64) -> Bytes {
        Bytes(self.0 * k)
    }
}
impl Add for Flops {
    type Output = Flops;
    fn add(self, o: Flops) -> Flops {
        Flops(self.0 + o.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        match self.0 {
            0..1024 => write!(f, "{} B", self.0),
            1024..1_048_576 => write!(f, "{:.1} KiB", b / 1024.0),
            1_048_576..1_073_741_824 => write!(f, "{:.1} MiB", b / 1_048_576.0),
            _ => write!(f, "{:.2} GiB", b / 1_073_741_824.0),
        }
    }
}

/// The arithmetic a FLOP count is done in. Each has its own compute roof: on an H200 the BF16
/// tensor-core peak is ~15x the FP32 SIMT one, so a row is only judged against the roof of
/// its own precision.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// FP32 on the CUDA cores (FFMA), also bf16 data computed in f32.
    #[default]
    Fp32Simt,
    Tf32Tensor,
    Bf16Tensor,
    Fp16Tensor,
    Fp8Tensor,
}

impl Precision {
    pub const ALL: [Precision; 5] = [
        Precision::Fp32Simt,
        Precision::Tf32Tensor,
        Precision::Bf16Tensor,
        Precision::Fp16Tensor,
        Precision::Fp8Tensor,
    ];

    /// As tables and plots name the roof.
    pub fn label(self) -> &'static str {
        match self {
            Precision::Fp32Simt => "FP32",
            Precision::Tf32Tensor => "TF32 tensor",
            Precision::Bf16Tensor => "BF16 tensor",
            Precision::Fp16Tensor => "FP16 tensor",
            Precision::Fp8Tensor => "FP8 tensor",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// The cost of one launch of one variant at one shape.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cost {
    pub flops: Flops,
    /// What the FLOPs are done in (and so which compute roof applies).
    #[serde(default)]
    pub precision: Precision,
    /// The op's floor: each input read once, each output written once.
    pub min_bytes: Bytes,
    /// What this variant is modelled to move (>= `min_bytes`).
    pub modelled_bytes: Bytes,
    /// Device memory the variant allocates beyond its inputs and outputs (attention v01's
    /// B·H·S² scores): what makes a step's memory O(S²) instead of O(S).
    #[serde(default)]
    pub scratch_bytes: Bytes,
}

impl Cost {
    /// An op's cost with no extra traffic.
    pub fn new(flops: Flops, min_bytes: Bytes) -> Cost {
        Cost {
            flops,
            precision: Precision::Fp32Simt,
            min_bytes,
            modelled_bytes: min_bytes,
            scratch_bytes: Bytes(0),
        }
    }
    /// The same op with this much scratch device memory.
    pub fn with_scratch(self, scratch_bytes: Bytes) -> Cost {
        Cost {
            scratch_bytes,
            ..self
        }
    }
    /// The same op with this variant's own modelled traffic.
    pub fn with_modelled(self, modelled_bytes: Bytes) -> Cost {
        Cost {
            modelled_bytes,
            ..self
        }
    }
    /// The same op with its FLOPs done in `precision` (FP32 SIMT unless said).
    pub fn with_precision(self, precision: Precision) -> Cost {
        Cost { precision, ..self }
    }
    /// FLOPs per byte of the op's minimum traffic.
    pub fn intensity(&self) -> f64 {
        if self.min_bytes.0 == 0 {
            0.0
        } else {
            self.flops.0 as f64 / self.min_bytes.0 as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        // 1 GB in 1 ms is 1000 GB/s; 2 TFLOP in 1 s is 2 TFLOP/s.
        assert!((Bytes(1_000_000_000).gbps(1000.0) - 1000.0).abs() < 1e-9);
        assert!((Flops(2_000_000_000_000).tflops(1e6) - 2.0).abs() < 1e-12);
        assert_eq!(Bytes::of::<f32>(10), Bytes(40));
        assert_eq!(Bytes(3) * 4 + Bytes(1), Bytes(13));
    }

    #[test]
    fn intensity_and_modelled() {
        let c = Cost::new(Flops(2 * 100), Bytes(12 * 100));
        assert!((c.intensity() - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(c.modelled_bytes, c.min_bytes);
        assert_eq!(c.with_modelled(Bytes(5000)).modelled_bytes, Bytes(5000));
        assert_eq!(Cost::new(Flops(0), Bytes(0)).intensity(), 0.0);
    }

    #[test]
    fn display() {
        assert_eq!(Bytes(512).to_string(), "512 B");
        assert_eq!(Bytes(1 << 30).to_string(), "1.00 GiB");
    }
}
