//! Family `ceilings` on the host: measure this GPU's roofs in the same run as the kernels.
//!
//! DRAM: `cuMemcpyDtoD` and the best `memory` copy kernels (v03, v04) on the same buffers;
//! the larger is the roof. L2, shared memory, FP32 FMA and launch overhead each come from
//! their micro-benchmark in `kernels-gpu/src/ceilings/`. Each is shown beside the vendor
//! figure for the device where one exists.

use rooflab_kernels::ceilings::{empty_launch, fma_throughput, l2_read, smem_bandwidth};

use crate::bench::{Reps, Stats};
use crate::check::{random_f32, rng};
use crate::cost::{Bytes, Flops};
use crate::error::Result;
use crate::gpu::{Gpu, LaunchConfig};
use crate::kernel_args;
use crate::ops::memory;
use crate::roofline::{DeviceProfile, Roofs, profile_for_device};

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

/// All ceilings of one run and the roofs they give.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ceilings {
    pub rows: Vec<CeilingRow>,
    pub roofs: Roofs,
    pub vendor_profile: Option<String>,
}

fn row(
    resource: &str,
    how: String,
    value: f64,
    unit: &str,
    s: &Stats,
    vendor: Option<f64>,
) -> CeilingRow {
    CeilingRow {
        resource: resource.into(),
        how,
        value,
        unit: unit.into(),
        spread_pct: s.spread_pct(),
        vendor,
        pct_of_vendor: vendor.map(|v| 100.0 * value / v),
        is_roof: true,
    }
}

/// Measure every ceiling. `quick` uses a smaller DRAM buffer and fewer rounds.
pub fn measure(gpu: &Gpu, quick: bool, reps: Reps) -> Result<Ceilings> {
    let profile: Option<&DeviceProfile> = profile_for_device(&gpu.info.name);
    let sms = gpu.info.multiprocessors as u64;
    let mut rows = Vec::new();

    // DRAM: the copy engine path and our best copy kernels, on the same 2 GiB (quick:
    // 256 MiB, still 4x the L2) buffers. Bytes read + written.
    let n = if quick { 64usize << 20 } else { 512 << 20 };
    let src = gpu.upload(&random_f32(&mut rng(11), n, -1.0, 1.0))?;
    let mut dst = gpu.alloc::<f32>(n)?;
    let moved = memory::copy_cost(n as u64).min_bytes;
    let vendor_bw = profile.map(|p| p.dram_gbps);
    let mut dram = Vec::new();
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| {
        gpu.copy_device(src.view(), dst.view_mut())
    })?);
    dram.push(row(
        "DRAM",
        format!("cuMemcpyDtoD, {moved}"),
        moved.gbps(s.median_us),
        "GB/s",
        &s,
        vendor_bw,
    ));
    for v in [
        memory::Variant::V03Vectorized,
        memory::Variant::V04GridStrideIlp,
    ] {
        let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| {
            memory::copy(gpu, v, src.view(), dst.view_mut())
        })?);
        dram.push(row(
            "DRAM",
            format!("{} kernel, {moved}", v.entry(memory::Op::Copy)),
            moved.gbps(s.median_us),
            "GB/s",
            &s,
            vendor_bw,
        ));
    }
    drop((src, dst));
    let best = dram.iter().map(|r| r.value).fold(0.0, f64::max);
    for r in &mut dram {
        r.is_roof = r.value == best;
    }
    rows.extend(dram);

    // L2: a quarter of the L2 (H200: two 30 MiB halves; a quarter stays resident in either).
    let l2_f32 = ((gpu.info.l2_bytes / 4) / 16 * 4) as usize;
    let buf = gpu.upload(&random_f32(&mut rng(12), l2_f32, -1.0, 1.0))?;
    let threads = sms * l2_read::BLOCKS_PER_SM as u64 * l2_read::BLOCK_THREADS as u64;
    let mut out = gpu.alloc::<f32>(threads as usize)?;
    let cfg = LaunchConfig::for_threads("ceilings_l2_read", threads, l2_read::BLOCK_THREADS)?;
    let (b, vectors, iters, o) = (
        buf.view().addr,
        (l2_f32 / 4) as u64,
        l2_read::ITERS,
        out.view_mut().addr,
    );
    // SAFETY: `buf` holds 4 * vectors f32, `out` one f32 per thread; args match the entry.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch("ceilings_l2_read", cfg, &kernel_args![b, vectors, iters, o])
    })?);
    let bytes = Bytes(l2_read::ITERS as u64 * vectors * 16);
    rows.push(row(
        "L2",
        format!(
            "ceilings_l2_read, {} resident, {} passes",
            Bytes(vectors * 16),
            l2_read::ITERS
        ),
        bytes.gbps(s.median_us),
        "GB/s",
        &s,
        None,
    ));
    drop((buf, out));

    // Shared memory.
    let blocks = sms * smem_bandwidth::BLOCKS_PER_SM as u64;
    let threads = blocks * smem_bandwidth::BLOCK_THREADS as u64;
    let mut out = gpu.alloc::<f32>(threads as usize)?;
    let mut cfg = LaunchConfig::for_threads(
        "ceilings_smem_bandwidth",
        threads,
        smem_bandwidth::BLOCK_THREADS,
    )?;
    cfg.shared_bytes = smem_bandwidth::SHARED_BYTES;
    let iters: u32 = if quick { 1024 } else { 4096 };
    let o = out.view_mut().addr;
    // SAFETY: `out` holds one f32 per thread; shared size as the kernel expects.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch("ceilings_smem_bandwidth", cfg, &kernel_args![iters, o])
    })?);
    let bytes = Bytes(threads * 2 * 16 * smem_bandwidth::UNROLL as u64 * iters as u64);
    rows.push(row(
        "shared",
        "ceilings_smem_bandwidth, ld/st.shared.v4 conflict-free".into(),
        bytes.gbps(s.median_us),
        "GB/s",
        &s,
        profile.map(|p| p.smem_gbps()),
    ));
    drop(out);

    // FP32 FMA.
    let threads = sms * fma_throughput::BLOCKS_PER_SM as u64 * fma_throughput::BLOCK_THREADS as u64;
    let mut out = gpu.alloc::<f32>(threads as usize)?;
    let cfg = LaunchConfig::for_threads(
        "ceilings_fma_throughput",
        threads,
        fma_throughput::BLOCK_THREADS,
    )?;
    let iters: u32 = if quick { 1024 } else { 4096 };
    let (a, c, o) = (0.999_f32, 1e-3_f32, out.view_mut().addr);
    // SAFETY: `out` holds one f32 per thread; args match the entry.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch(
            "ceilings_fma_throughput",
            cfg,
            &kernel_args![iters, a, c, o],
        )
    })?);
    let flops = Flops(threads * fma_throughput::FLOPS_PER_THREAD_ITER * iters as u64);
    let fp32_gflops = flops.tflops(s.median_us) * 1e3;
    let how = format!(
        "ceilings_fma_throughput, {} chains x {} FMAs/thread",
        fma_throughput::CHAINS,
        fma_throughput::STEPS
    );
    rows.push(row(
        "FP32 FMA",
        how,
        fp32_gflops,
        "GFLOP/s",
        &s,
        profile.map(|p| p.fp32_tflops * 1e3),
    ));
    drop(out);

    // Launch overhead: LAUNCHES_PER_SAMPLE empty launches back to back per sample.
    let cfg = LaunchConfig::for_threads(
        "ceilings_empty_launch",
        empty_launch::BLOCK_THREADS as u64,
        empty_launch::BLOCK_THREADS,
    )?;
    let per = empty_launch::LAUNCHES_PER_SAMPLE;
    let s = Stats::from_samples(
        gpu.time(reps.warmup, reps.timed, |_| {
            for _ in 0..per {
                // SAFETY: the kernel takes no arguments.
                unsafe { gpu.launch("ceilings_empty_launch", cfg, &[])? };
            }
            Ok(())
        })?
        .into_iter()
        .map(|us| us / per as f64)
        .collect(),
    );
    rows.push(row(
        "launch",
        format!("ceilings_empty_launch, {per} back-to-back per sample"),
        s.median_us,
        "µs",
        &s,
        None,
    ));

    let value = |res: &str| {
        rows.iter()
            .find(|r| r.resource == res && r.is_roof)
            .map(|r| r.value)
    };
    let roofs = Roofs {
        dram_gbps: best,
        l2_gbps: value("L2"),
        smem_gbps: value("shared"),
        fp32_gflops,
        launch_us: value("launch"),
        origin: format!("measured on {} in this run", gpu.info.name),
    };
    Ok(Ceilings {
        rows,
        roofs,
        vendor_profile: profile.map(|p| p.name.to_string()),
    })
}

/// The ceilings as a terminal table.
pub fn table(c: &Ceilings) -> comfy_table::Table {
    use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let vendor = c
        .vendor_profile
        .as_deref()
        .unwrap_or("no datasheet for this device");
    t.set_header([
        "ceiling",
        "measured",
        "unit",
        "spread %",
        &format!("vendor ({vendor})"),
        "% of vendor",
        "how",
    ]);
    for r in &c.rows {
        let f =
            |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
        let decimals = if r.unit == "µs" { 2 } else { 0 };
        let name = if r.is_roof {
            format!("{} (roof)", r.resource)
        } else {
            r.resource.clone()
        };
        t.add_row(vec![
            name,
            format!("{:.decimals$}", r.value),
            r.unit.clone(),
            format!("{:.1}", r.spread_pct),
            f(r.vendor, 0),
            f(r.pct_of_vendor, 1),
            r.how.clone(),
        ]);
    }
    for c in 1..6 {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}
