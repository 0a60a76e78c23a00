//! The roofline model: roofs (measured in this run, or a datasheet profile when there is no
//! GPU), and the accounting of one row against them.
//!
//! For a cost (FLOPs, fewest bytes) and the roofs: arithmetic intensity `AI = FLOPs / bytes`,
//! the roof `min(peak_flops, AI * dram_bandwidth)`, the bound (memory when `AI * bw < peak`),
//! the floor time `max(FLOPs / peak, bytes / bw)`, and the fraction of the roof a measured
//! time reaches: `floor / measured`, which is MBU for memory-bound rows and MFU for
//! compute-bound ones.

use crate::cost::{Cost, Precision};

/// Datasheet peaks of one GPU, with where they come from.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct DeviceProfile {
    /// `--device` key.
    pub key: &'static str,
    pub name: &'static str,
    /// Substrings of the CUDA device name that select this profile (first match wins).
    pub matches: &'static [&'static str],
    pub dram_gbps: f64,
    /// Non-tensor FP32, TFLOP/s.
    pub fp32_tflops: f64,
    /// Dense (no sparsity) tensor-core TFLOP/s: TF32, BF16 (FP16 is the same on every GPU
    /// here), FP8 (`None` before Ada/Hopper).
    pub tf32_tensor_tflops: f64,
    pub bf16_tensor_tflops: f64,
    pub fp8_tensor_tflops: Option<f64>,
    pub sms: u32,
    pub boost_mhz: u32,
    pub l2_mib: u32,
    pub source: &'static str,
}

impl DeviceProfile {
    /// The datasheet's peak for `p`, GFLOP/s (`None` where the GPU has no such unit).
    pub fn peak_gflops(&self, p: Precision) -> Option<f64> {
        let tflops = match p {
            Precision::Fp32Simt => Some(self.fp32_tflops),
            Precision::Tf32Tensor => Some(self.tf32_tensor_tflops),
            Precision::Bf16Tensor | Precision::Fp16Tensor => Some(self.bf16_tensor_tflops),
            Precision::Fp8Tensor => self.fp8_tensor_tflops,
        };
        tflops.map(|t| t * 1e3)
    }

    /// Every compute roof of this datasheet, none measured.
    pub fn compute_roofs(&self) -> Vec<ComputeRoof> {
        Precision::ALL
            .iter()
            .filter_map(|&p| {
                self.peak_gflops(p).map(|gflops| ComputeRoof {
                    precision: p,
                    gflops,
                    measured: false,
                    how: format!("datasheet of {}", self.name),
                })
            })
            .collect()
    }

    /// Shared memory moves 128 bytes per clock per SM (32 banks x 4 bytes): a derived peak.
    pub fn smem_gbps(&self) -> f64 {
        self.sms as f64 * 128.0 * self.boost_mhz as f64 * 1e-3
    }
}

/// Common GPUs' datasheet figures (SXM/PCIe as named). Tensor rates are dense: the datasheets
/// print the 2:4-sparsity figure first (twice these); the dense one is in their footnotes
/// ("specifications shown with sparsity; dense is one-half").
pub const PROFILES: &[DeviceProfile] = &[
    DeviceProfile {
        key: "h200",
        name: "NVIDIA H200 SXM",
        matches: &["H200"],
        dram_gbps: 4800.0,
        fp32_tflops: 67.0,
        tf32_tensor_tflops: 494.7,
        bf16_tensor_tflops: 989.5,
        fp8_tensor_tflops: Some(1978.9),
        sms: 132,
        boost_mhz: 1980,
        l2_mib: 60,
        source: "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)",
    },
    DeviceProfile {
        key: "h100-pcie",
        name: "NVIDIA H100 PCIe",
        matches: &["H100 PCIe"],
        dram_gbps: 2000.0,
        fp32_tflops: 51.0,
        tf32_tensor_tflops: 378.0,
        bf16_tensor_tflops: 756.0,
        fp8_tensor_tflops: Some(1513.0),
        sms: 114,
        boost_mhz: 1755,
        l2_mib: 50,
        source: "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)",
    },
    DeviceProfile {
        key: "h100-sxm",
        name: "NVIDIA H100 SXM",
        matches: &["H100"],
        dram_gbps: 3350.0,
        fp32_tflops: 67.0,
        tf32_tensor_tflops: 494.7,
        bf16_tensor_tflops: 989.5,
        fp8_tensor_tflops: Some(1978.9),
        sms: 132,
        boost_mhz: 1980,
        l2_mib: 50,
        source: "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)",
    },
    DeviceProfile {
        key: "a100",
        name: "NVIDIA A100 SXM4 80GB",
        matches: &["A100"],
        dram_gbps: 2039.0,
        fp32_tflops: 19.5,
        tf32_tensor_tflops: 156.0,
        bf16_tensor_tflops: 312.0,
        fp8_tensor_tflops: None,
        sms: 108,
        boost_mhz: 1410,
        l2_mib: 40,
        source: "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)",
    },
    DeviceProfile {
        key: "l40s",
        name: "NVIDIA L40S",
        matches: &["L40S"],
        dram_gbps: 864.0,
        fp32_tflops: 91.6,
        tf32_tensor_tflops: 183.0,
        bf16_tensor_tflops: 362.05,
        fp8_tensor_tflops: Some(733.0),
        sms: 142,
        boost_mhz: 2520,
        l2_mib: 96,
        source: "NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s)",
    },
    DeviceProfile {
        key: "l4",
        name: "NVIDIA L4",
        matches: &["NVIDIA L4"],
        dram_gbps: 300.0,
        fp32_tflops: 30.3,
        tf32_tensor_tflops: 60.0,
        bf16_tensor_tflops: 121.0,
        fp8_tensor_tflops: Some(242.5),
        sms: 58,
        boost_mhz: 2040,
        l2_mib: 48,
        source: "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4)",
    },
    DeviceProfile {
        key: "rtx4090",
        name: "NVIDIA GeForce RTX 4090",
        matches: &["RTX 4090"],
        dram_gbps: 1008.0,
        fp32_tflops: 82.6,
        tf32_tensor_tflops: 82.6,
        bf16_tensor_tflops: 165.2,
        fp8_tensor_tflops: Some(330.3),
        sms: 128,
        boost_mhz: 2520,
        l2_mib: 72,
        source: "NVIDIA Ada GPU architecture whitepaper, appendix A (GeForce RTX 4090)",
    },
];

/// The profile for a `--device` key.
pub fn profile_by_key(key: &str) -> Option<&'static DeviceProfile> {
    PROFILES.iter().find(|p| p.key.eq_ignore_ascii_case(key))
}

/// The profile whose name patterns match a CUDA device name.
pub fn profile_for_device(name: &str) -> Option<&'static DeviceProfile> {
    PROFILES
        .iter()
        .find(|p| p.matches.iter().any(|m| name.contains(m)))
}

/// One compute roof: the peak of one precision, measured in the run or from the datasheet.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ComputeRoof {
    pub precision: Precision,
    pub gflops: f64,
    /// Measured in this run (a solid line in the plot) or taken from the datasheet (dashed,
    /// labelled so).
    pub measured: bool,
    /// The kernel that measured it, or the datasheet it comes from.
    pub how: String,
}

/// The roofs rows are judged against.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Roofs {
    pub dram_gbps: f64,
    pub l2_gbps: Option<f64>,
    pub smem_gbps: Option<f64>,
    /// The FP32 SIMT roof (also in `compute`; kept for runs written before `compute`).
    pub fp32_gflops: f64,
    /// The roof of every precision known here, measured ones first in preference to the
    /// datasheet's (empty in runs made before precisions were recorded: FP32 only then).
    #[serde(default)]
    pub compute: Vec<ComputeRoof>,
    /// Measured ceilings of one instruction path that are not the chip's roof for their
    /// precision (BF16 through `mma.sync` on Hopper, where `wgmma` is the fast path): shown
    /// beside the roofs, never used to judge a row.
    #[serde(default)]
    pub instruction_ceilings: Vec<ComputeRoof>,
    pub launch_us: Option<f64>,
    /// "measured on <device>" or "datasheet of <profile> (no GPU: predicted)".
    pub origin: String,
}

impl Roofs {
    /// Roofs from a datasheet profile, for predictions without a GPU.
    pub fn from_profile(p: &DeviceProfile) -> Roofs {
        Roofs {
            dram_gbps: p.dram_gbps,
            l2_gbps: None,
            smem_gbps: Some(p.smem_gbps()),
            fp32_gflops: p.fp32_tflops * 1e3,
            compute: p.compute_roofs(),
            instruction_ceilings: vec![],
            launch_us: None,
            origin: format!(
                "datasheet of {} (no GPU here: predicted, not measured)",
                p.name
            ),
        }
    }
}

impl Roofs {
    /// The compute roof for `p`: measured if this run measured it, else the datasheet's, else
    /// (an old run, or a GPU with no datasheet profile) FP32's for FP32 and none otherwise.
    pub fn compute_roof(&self, p: Precision) -> Option<ComputeRoof> {
        let known = self.compute.iter().filter(|r| r.precision == p);
        if let Some(r) = known.clone().find(|r| r.measured).or(known.clone().next()) {
            return Some(r.clone());
        }
        (p == Precision::Fp32Simt).then(|| ComputeRoof {
            precision: p,
            gflops: self.fp32_gflops,
            measured: !self.origin.starts_with("datasheet"),
            how: self.origin.clone(),
        })
    }

    /// The peak for `p` in GFLOP/s. A precision with no roof here (no datasheet profile for
    /// this GPU) falls back to FP32's so that rows still get a floor; `compute_roof` tells.
    pub fn peak_gflops(&self, p: Precision) -> f64 {
        self.compute_roof(p)
            .map(|r| r.gflops)
            .unwrap_or(self.fp32_gflops)
    }

    /// "FP32 63.7 TFLOP/s, TF32 tensor 494.7 TFLOP/s (datasheet), ...": every compute roof,
    /// the ones not measured in the run marked (FP16's datasheet peak, BF16's, left out).
    pub fn compute_summary(&self) -> String {
        let mut parts = vec![format!("FP32 {:.1} TFLOP/s", self.fp32_gflops / 1e3)];
        for r in &self.compute {
            if r.precision == Precision::Fp32Simt
                || (r.precision == Precision::Fp16Tensor && !r.measured)
            {
                continue;
            }
            parts.push(format!(
                "{} {:.1} TFLOP/s{}",
                r.precision,
                r.gflops / 1e3,
                if r.measured { "" } else { " (datasheet)" }
            ));
        }
        for c in &self.instruction_ceilings {
            parts.push(format!(
                "{} via {} {:.1} TFLOP/s (an instruction's ceiling, not the roof)",
                c.precision,
                c.how.split(',').next().unwrap_or(""),
                c.gflops / 1e3
            ));
        }
        parts.join(", ")
    }

    /// Record a measured roof, replacing what was known for its precision.
    pub fn set_measured(&mut self, roof: ComputeRoof) {
        self.compute.retain(|r| r.precision != roof.precision);
        if roof.precision == Precision::Fp32Simt {
            self.fp32_gflops = roof.gflops;
        }
        self.compute.push(roof);
        self.compute.sort_by_key(|r| r.precision);
    }
}

/// One measured ceiling.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CeilingRow {
    /// "DRAM", "L2", "shared", "FP32 FMA", "launch".
    pub resource: String,
    /// How it was measured.
    pub how: String,
    pub value: f64,
    /// "GB/s", "GFLOP/s" or "µs".
    pub unit: String,
    pub spread_pct: f64,
    /// The datasheet figure for this device, where there is one.
    pub vendor: Option<f64>,
    /// value / vendor, percent.
    pub pct_of_vendor: Option<f64>,
    /// Whether this row sets a roof (the losing DRAM measurement does not).
    pub is_roof: bool,
}

/// All ceilings of one run (measured by `ceilings::measure`) and the roofs they give.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ceilings {
    pub rows: Vec<CeilingRow>,
    pub roofs: Roofs,
    pub vendor_profile: Option<String>,
}

/// Which roof limits a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
}

/// One row's place on the roofline.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Accounting {
    /// FLOPs per byte of the op's minimum traffic.
    pub intensity: f64,
    /// The precision whose compute roof the row is judged against.
    #[serde(default)]
    pub precision: Precision,
    /// `min(peak, AI * bw)` in GFLOP/s (0 for ops without FLOPs).
    pub roof_gflops: f64,
    pub bound: Bound,
    /// The fastest this op can run on these roofs, µs.
    pub floor_us: f64,
    /// The fastest this variant can run given the traffic it is modelled to cause, µs: the
    /// prediction without a GPU.
    pub variant_floor_us: f64,
}

impl Accounting {
    pub fn of(cost: &Cost, roofs: &Roofs) -> Accounting {
        let intensity = cost.intensity();
        let peak = roofs.peak_gflops(cost.precision);
        let mem_us = cost.min_bytes.0 as f64 / (roofs.dram_gbps * 1e3);
        let flop_us = cost.flops.0 as f64 / (peak * 1e3);
        let bound = if intensity * roofs.dram_gbps < peak {
            Bound::Memory
        } else {
            Bound::Compute
        };
        Accounting {
            intensity,
            precision: cost.precision,
            roof_gflops: peak.min(intensity * roofs.dram_gbps),
            bound,
            floor_us: mem_us.max(flop_us),
            variant_floor_us: (cost.modelled_bytes.0 as f64 / (roofs.dram_gbps * 1e3)).max(flop_us),
        }
    }

    /// "memory", "compute", or "compute (BF16 tensor)" for a row whose roof is not FP32's.
    pub fn bound_label(&self) -> String {
        match (self.bound, self.precision) {
            (Bound::Memory, _) => "memory".into(),
            (Bound::Compute, Precision::Fp32Simt) => "compute".into(),
            (Bound::Compute, p) => format!("compute ({p})"),
        }
    }

    /// The fraction of the roof reached in `measured_us`, in percent: MBU when memory-bound,
    /// MFU when compute-bound.
    pub fn pct_of_roof(&self, measured_us: f64) -> f64 {
        100.0 * self.floor_us / measured_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::{Bytes, Flops};

    fn roofs() -> Roofs {
        Roofs {
            dram_gbps: 4000.0,
            l2_gbps: None,
            smem_gbps: None,
            fp32_gflops: 60_000.0,
            compute: vec![],
            instruction_ceilings: vec![],
            launch_us: None,
            origin: "test".into(),
        }
    }

    #[test]
    fn each_precision_meets_its_own_roof() {
        // A 4096^3 GEMM in BF16 on H200 datasheet roofs: judged against 989.5 TFLOP/s, not 67.
        let n = 4096u64;
        let c = Cost::new(Flops(2 * n * n * n), Bytes(3 * n * n * 2));
        let p = profile_by_key("h200").unwrap();
        let r = Roofs::from_profile(p);
        let fp32 = Accounting::of(&c, &r);
        let bf16 = Accounting::of(&c.with_precision(Precision::Bf16Tensor), &r);
        assert_eq!(bf16.precision, Precision::Bf16Tensor);
        assert!((bf16.roof_gflops - 989_500.0).abs() < 1e-6);
        assert!((fp32.floor_us / bf16.floor_us - 989.5 / 67.0).abs() < 1e-9);
        // A measured roof wins over the datasheet's, and FP32's also sets `fp32_gflops`.
        let mut m = r.clone();
        m.set_measured(ComputeRoof {
            precision: Precision::Bf16Tensor,
            gflops: 800_000.0,
            measured: true,
            how: "test kernel".into(),
        });
        assert_eq!(
            m.compute_roof(Precision::Bf16Tensor).unwrap().gflops,
            800_000.0
        );
        assert!(!m.compute_roof(Precision::Tf32Tensor).unwrap().measured);
        // An old run (no `compute`): FP32 from `fp32_gflops`, nothing else.
        let old = roofs();
        assert_eq!(
            old.compute_roof(Precision::Fp32Simt).unwrap().gflops,
            60_000.0
        );
        assert!(old.compute_roof(Precision::Bf16Tensor).is_none());
        // An instruction's ceiling is shown, never used as the roof.
        let mut c = r.clone();
        c.instruction_ceilings.push(ComputeRoof {
            precision: Precision::Bf16Tensor,
            gflops: 630_000.0,
            measured: true,
            how: "mma.sync, k".into(),
        });
        assert!(
            c.compute_summary()
                .contains("BF16 tensor via mma.sync 630.0 TFLOP/s")
        );
        let big = Cost::new(Flops(1 << 40), Bytes(1 << 20)).with_precision(Precision::Bf16Tensor);
        assert_eq!(Accounting::of(&big, &c).roof_gflops, 989_500.0);
        // A100 has no FP8 unit.
        assert!(
            profile_by_key("a100")
                .unwrap()
                .peak_gflops(Precision::Fp8Tensor)
                .is_none()
        );
    }

    #[test]
    fn memory_bound_copy() {
        // 8 GB copied at 4000 GB/s: 2 ms floor; measured 2.5 ms is 80% MBU.
        let a = Accounting::of(&Cost::new(Flops(0), Bytes(8_000_000_000)), &roofs());
        assert_eq!(a.bound, Bound::Memory);
        assert_eq!(a.roof_gflops, 0.0);
        assert!((a.floor_us - 2000.0).abs() < 1e-9);
        assert!((a.pct_of_roof(2500.0) - 80.0).abs() < 1e-9);
        // A variant modelled to move 8x the bytes has an 8x floor.
        let c = Cost::new(Flops(0), Bytes(8_000_000_000)).with_modelled(Bytes(64_000_000_000));
        assert!((Accounting::of(&c, &roofs()).variant_floor_us - 16000.0).abs() < 1e-9);
    }

    #[test]
    fn compute_bound_gemm() {
        // 4096^3 SGEMM: 2*4096^3 FLOPs over 3*4096^2*4 bytes: AI = 682.7, compute-bound.
        let n = 4096u64;
        let c = Cost::new(Flops(2 * n * n * n), Bytes(3 * n * n * 4));
        let a = Accounting::of(&c, &roofs());
        assert_eq!(a.bound, Bound::Compute);
        assert!((a.intensity - 2.0 * n as f64 / 12.0).abs() < 1e-9);
        assert_eq!(a.roof_gflops, 60_000.0);
        // 60 000 GFLOP/s = 6e7 FLOP per µs.
        let floor = 2.0 * (n * n * n) as f64 / 6e7;
        assert!((a.floor_us - floor).abs() < 1e-6);
        assert!((a.pct_of_roof(2.0 * floor) - 50.0).abs() < 1e-9);
    }

    #[test]
    fn ridge_point() {
        // AI exactly at the ridge (15 FLOP/B here) is compute-bound, and the roof is the peak.
        let a = Accounting::of(&Cost::new(Flops(15_000), Bytes(1000)), &roofs());
        assert_eq!(a.bound, Bound::Compute);
        assert_eq!(a.roof_gflops, 60_000.0);
        let b = Accounting::of(&Cost::new(Flops(14_000), Bytes(1000)), &roofs());
        assert_eq!(b.bound, Bound::Memory);
        assert!((b.roof_gflops - 56_000.0).abs() < 1e-9);
    }

    #[test]
    fn profiles() {
        assert_eq!(profile_for_device("NVIDIA H200").unwrap().key, "h200");
        assert_eq!(
            profile_for_device("NVIDIA H100 PCIe").unwrap().key,
            "h100-pcie"
        );
        assert_eq!(
            profile_for_device("NVIDIA H100 80GB HBM3").unwrap().key,
            "h100-sxm"
        );
        assert_eq!(profile_for_device("NVIDIA L40S").unwrap().key, "l40s");
        assert_eq!(profile_for_device("NVIDIA L4").unwrap().key, "l4");
        assert!(profile_for_device("Some GPU").is_none());
        assert_eq!(profile_by_key("H200").unwrap().name, "NVIDIA H200 SXM");
        // 132 SMs x 128 B x 1.98 GHz = 33.45 TB/s.
        assert!((profile_by_key("h200").unwrap().smem_gbps() - 33454.08).abs() < 0.01);
        for p in PROFILES {
            assert!(p.dram_gbps > 0.0 && p.fp32_tflops > 0.0 && !p.source.is_empty());
            // Dense tensor rates: above FP32 SIMT, BF16 twice TF32, FP8 twice BF16.
            assert!(p.bf16_tensor_tflops > p.fp32_tflops, "{}", p.key);
            assert!(
                (p.bf16_tensor_tflops / p.tf32_tensor_tflops - 2.0).abs() < 0.05,
                "{}",
                p.key
            );
            if let Some(f8) = p.fp8_tensor_tflops {
                assert!((f8 / p.bf16_tensor_tflops - 2.0).abs() < 0.05, "{}", p.key);
            }
        }
    }
}
