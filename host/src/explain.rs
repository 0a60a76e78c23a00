//! `rooflab-bench --explain NAME`: one case's cost model and predicted floor, no GPU needed.
//! `cargo xtask explain` shows this next to the variant's source header, ptxas figures and PTX.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::bench::Case;
use crate::cost::Bytes;
use crate::ops;
use crate::roofline::{self, Accounting, Bound, DeviceProfile, Roofs};

/// Every distinct case name (`family/variant`), in bench order.
pub fn case_names(cases: &[Case]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in cases {
        let n = c.name();
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

/// The explanation of every case named `name` (a variant can appear at several settings,
/// e.g. strides), as text. `None` when no case has that name.
pub fn explain(cases: &[Case], name: &str, profile: &DeviceProfile) -> Option<String> {
    let mine: Vec<&Case> = cases.iter().filter(|c| c.name() == name).collect();
    if mine.is_empty() {
        return None;
    }
    let roofs = Roofs::from_profile(profile);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cost model on {} (datasheet: DRAM {:.0} GB/s, FP32 {:.1} TFLOP/s, BF16 tensor {:.1} TFLOP/s)",
        profile.name,
        roofs.dram_gbps,
        roofs.fp32_gflops / 1e3,
        profile.bf16_tensor_tflops
    );
    for c in mine {
        let a = Accounting::of(&c.cost, &roofs);
        let head = if c.note.is_empty() {
            c.name()
        } else {
            format!("{} ({})", c.name(), c.note)
        };
        let _ = writeln!(s, "\n{head}  [ladder `{}`]", c.ladder);
        let row = |s: &mut String, k: &str, v: String| {
            let _ = writeln!(s, "  {k:<15}{v}");
        };
        row(&mut s, "shape", c.shape.clone());
        row(
            &mut s,
            "FLOPs",
            format!("{} (an FMA counts 2)", c.cost.flops.0),
        );
        row(
            &mut s,
            "min bytes",
            format!(
                "{} ({} B: each input read once, each output written once)",
                c.cost.min_bytes, c.cost.min_bytes.0
            ),
        );
        let extra = c.cost.modelled_bytes.0 as f64 / c.cost.min_bytes.0.max(1) as f64;
        row(
            &mut s,
            "modelled bytes",
            format!(
                "{} ({:.2}x the minimum: this variant's own traffic)",
                c.cost.modelled_bytes, extra
            ),
        );
        row(
            &mut s,
            "AI",
            format!("{:.3} FLOP/byte (FLOPs / min bytes)", a.intensity),
        );
        row(
            &mut s,
            "precision",
            format!("{} (the compute roof it meets)", a.precision),
        );
        let ridge = roofs.peak_gflops(a.precision) / roofs.dram_gbps;
        row(
            &mut s,
            "bound",
            match a.bound {
                Bound::Memory => format!("memory (AI below the ridge at {ridge:.1} FLOP/byte)"),
                Bound::Compute => format!("compute (AI at or above the ridge at {ridge:.1})"),
            },
        );
        row(
            &mut s,
            "roof",
            format!("{:.1} GFLOP/s at this AI", a.roof_gflops),
        );
        row(
            &mut s,
            "floor",
            format!(
                "{:.2} µs (the op at the roof: fewest bytes, all FLOPs)",
                a.floor_us
            ),
        );
        row(
            &mut s,
            "variant floor",
            format!(
                "{:.2} µs (modelled bytes at the roof: the prediction)",
                a.variant_floor_us
            ),
        );
        if a.intensity == 0.0 {
            let gbps = Bytes(c.cost.min_bytes.0).gbps(a.variant_floor_us);
            row(
                &mut s,
                "predicted GB/s",
                format!("{gbps:.0} effective (min bytes over the variant floor)"),
            );
        }
    }
    // The kernels behind this name with their launch shape at the first case's shape
    // (several for multi-kernel variants, none for a host-side dispatcher such as
    // `softmax/auto`), for `cargo xtask explain` to look up in ptxas and the PTX.
    let first = cases.iter().find(|c| c.name() == name)?;
    let _ = writeln!(
        s,
        "\n  kernels        {}",
        if first.kernels.is_empty() {
            "(none: chosen on the host at run time)".to_string()
        } else {
            first
                .kernels
                .iter()
                .map(|k| k.kernel.name())
                .collect::<Vec<_>>()
                .join(" ")
        }
    );
    for k in &first.kernels {
        let _ = writeln!(
            s,
            "  launch         {} block={} dynamic_smem={}",
            k.kernel, k.block_threads, k.shared_bytes
        );
    }
    Some(s)
}

/// The `--explain` mode. Exit 2 with the valid names when `name` is unknown.
pub fn run(name: &str, size: Option<u64>, device: &str) -> ExitCode {
    let Some(profile) = roofline::profile_by_key(device) else {
        let keys: Vec<_> = roofline::PROFILES.iter().map(|p| p.key).collect();
        eprintln!(
            "rooflab: unknown --device `{device}`. Valid: {}",
            keys.join(", ")
        );
        return ExitCode::from(2);
    };
    let cases = ops::all_cases(false, size, crate::check::seed());
    match explain(&cases, name, profile) {
        Some(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        None => {
            eprintln!(
                "rooflab: no case named `{name}`. Valid names (family/variant):\n  {}",
                case_names(&cases).join("\n  ")
            );
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explains_every_case_and_refuses_unknown() {
        let cases = ops::all_cases(true, None, 1);
        let h200 = roofline::profile_by_key("h200").unwrap();
        let names = case_names(&cases);
        assert!(names.contains(&"memory/v03_vectorized_copy".to_string()));
        for n in &names {
            let text = explain(&cases, n, h200).unwrap();
            assert!(text.contains(n) && text.contains("variant floor"), "{text}");
        }
        assert!(explain(&cases, "memory/v99_nothing", h200).is_none());
    }

    #[test]
    fn strided_copy_floor_is_sixteen_times_the_minimum() {
        // 2^20 f32 copied: 8 MiB min; the stride-32 variant is modelled at 16x that (reads
        // of 64-byte sector pairs, partial-sector writes with their fills).
        let cases = ops::all_cases(false, Some(1 << 20), 1);
        let h200 = roofline::profile_by_key("h200").unwrap();
        let text = explain(&cases, "memory/v01_strided_copy", h200).unwrap();
        assert!(text.contains("stride 32"), "{text}");
        assert!(text.contains("16.00x the minimum"), "{text}");
        // 8388608 B at 4800 GB/s = 1.75 µs; modelled 16x = 27.96 µs.
        assert!(text.contains("floor          1.75 µs"), "{text}");
        assert!(text.contains("27.96 µs"), "{text}");
    }
}
