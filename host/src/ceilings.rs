//! Family `ceilings` on the host: measure this GPU's roofs in the same run as the kernels.
//!
//! DRAM: `cuMemcpyDtoD` and the best `memory` copy kernels (v03, v04) on the same buffers;
//! the larger is the roof. L2, shared memory, FP32 FMA and launch overhead each come from
//! their micro-benchmark in `kernels-gpu/src/ceilings/`. Each is shown beside the vendor
//! figure for the device where one exists.

use rooflab_kernels::ceilings::{
    empty_launch, fma_throughput, l2_read, mma_throughput, smem_bandwidth, wgmma_throughput,
};

use crate::check::{random_f32, rng};
use crate::cost::{Bytes, Flops, Precision};
use crate::error::Result;
use crate::gpu::{Gpu, LaunchConfig};
use crate::ops::memory;
pub use crate::roofline::{CeilingRow, Ceilings};
use crate::roofline::{ComputeRoof, DeviceProfile, Roofs, profile_for_device};
use crate::timing::{Reps, Stats};

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
    let moved = memory::cost::copy_cost(n as u64).min_bytes;
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
            format!("{} kernel, {moved}", v.kernel(memory::Op::Copy)),
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
    let kernel = l2_read::ceilings_l2_read;
    let cfg = LaunchConfig::for_threads(kernel.name(), threads, l2_read::BLOCK_THREADS)?;
    let (vectors, iters) = ((l2_f32 / 4) as u64, l2_read::ITERS);
    // SAFETY: `buf` holds 4 * vectors f32, `out` one f32 per thread.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch(kernel, cfg, (buf.view(), vectors, iters, out.view_mut()))
    })?);
    let bytes = Bytes(l2_read::ITERS as u64 * vectors * 16);
    rows.push(row(
        "L2",
        format!(
            "{kernel}, {} resident, {} passes",
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
    let kernel = smem_bandwidth::ceilings_smem_bandwidth;
    let mut cfg = LaunchConfig::for_threads(kernel.name(), threads, smem_bandwidth::BLOCK_THREADS)?;
    cfg.shared_bytes = smem_bandwidth::SHARED_BYTES;
    let iters: u32 = if quick { 1024 } else { 4096 };
    // SAFETY: `out` holds one f32 per thread; shared size as the kernel expects.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch(kernel, cfg, (iters, out.view_mut()))
    })?);
    let bytes = Bytes(threads * 2 * 16 * smem_bandwidth::UNROLL as u64 * iters as u64);
    rows.push(row(
        "shared",
        format!("{kernel}, ld/st.shared.v4 conflict-free"),
        bytes.gbps(s.median_us),
        "GB/s",
        &s,
        profile.map(|p| p.smem_gbps()),
    ));
    drop(out);

    // FP32 FMA.
    let threads = sms * fma_throughput::BLOCKS_PER_SM as u64 * fma_throughput::BLOCK_THREADS as u64;
    let mut out = gpu.alloc::<f32>(threads as usize)?;
    let kernel = fma_throughput::ceilings_fma_throughput;
    let cfg = LaunchConfig::for_threads(kernel.name(), threads, fma_throughput::BLOCK_THREADS)?;
    let iters: u32 = if quick { 1024 } else { 4096 };
    let (a, c) = (0.999_f32, 1e-3_f32);
    // SAFETY: `out` holds one f32 per thread.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch(kernel, cfg, (iters, a, c, out.view_mut()))
    })?);
    let flops = Flops(threads * fma_throughput::FLOPS_PER_THREAD_ITER * iters as u64);
    let fp32_gflops = flops.tflops(s.median_us) * 1e3;
    let how = format!(
        "{kernel}, {} chains x {} FMAs/thread",
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

    // BF16 tensor cores through mma.sync (m16n8k16, operands in registers). On Hopper this
    // is not the chip's BF16 roof (wgmma is, with operands in shared memory; the datasheet
    // peak stays the roof until a wgmma kernel measures it): a ceiling row, not a roof, that
    // bounds what the mma.sync steps of `bf16_gemm` can reach.
    let threads = sms * mma_throughput::BLOCKS_PER_SM as u64 * mma_throughput::BLOCK_THREADS as u64;
    let mut out = gpu.alloc::<f32>(threads as usize)?;
    let kernel = mma_throughput::ceilings_mma_throughput;
    let cfg = LaunchConfig::for_threads(kernel.name(), threads, mma_throughput::BLOCK_THREADS)?;
    let iters: u32 = if quick { 256 } else { 1024 };
    // SAFETY: `out` holds one f32 per thread.
    let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
        gpu.launch(kernel, cfg, (iters, out.view_mut()))
    })?);
    let warps = threads / 32;
    let flops = Flops(warps * mma_throughput::FLOPS_PER_WARP_ITER * iters as u64);
    let mut mma = row(
        "BF16 tensor (mma.sync)",
        format!(
            "{kernel}, {} chains of mma.sync.m16n8k16 per warp",
            mma_throughput::CHAINS
        ),
        flops.tflops(s.median_us) * 1e3,
        "GFLOP/s",
        &s,
        profile.map(|p| p.bf16_tensor_tflops * 1e3),
    );
    mma.is_roof = false;
    let mma_ceiling = ComputeRoof {
        precision: Precision::Bf16Tensor,
        gflops: mma.value,
        measured: true,
        how: format!("mma.sync, {kernel}"),
    };
    rows.push(mma);
    drop(out);

    // BF16 tensor cores through wgmma (m64n256k16 from shared memory): the chip's BF16 roof,
    // measured, where the GPU can load sm_90a PTX; elsewhere the datasheet figure stays.
    let kernel = wgmma_throughput::ceilings_wgmma_throughput;
    let wgmma_roof = match gpu.available(kernel) {
        Ok(()) => {
            let threads = sms
                * wgmma_throughput::BLOCKS_PER_SM as u64
                * wgmma_throughput::BLOCK_THREADS as u64;
            let mut out = gpu.alloc::<f32>(threads as usize)?;
            let cfg =
                LaunchConfig::for_threads(kernel.name(), threads, wgmma_throughput::BLOCK_THREADS)?;
            let cfg = LaunchConfig {
                shared_bytes: wgmma_throughput::SHARED_BYTES,
                ..cfg
            };
            let iters: u32 = if quick { 256 } else { 2048 };
            // SAFETY: `out` holds one f32 per thread; the block gets the shared memory the
            // kernel's tiles need.
            let s = Stats::from_samples(gpu.time(reps.warmup, reps.timed, |_| unsafe {
                gpu.launch(kernel, cfg, (iters, out.view_mut()))
            })?);
            let warpgroups = threads / 128;
            let flops =
                Flops(warpgroups * wgmma_throughput::FLOPS_PER_WARPGROUP_ITER * iters as u64);
            let r = row(
                "BF16 tensor (wgmma)",
                format!(
                    "{kernel}, wgmma.m64n256k16 on resident tiles, {} warpgroups/SM",
                    wgmma_throughput::WARPGROUPS
                ),
                flops.tflops(s.median_us) * 1e3,
                "GFLOP/s",
                &s,
                profile.map(|p| p.bf16_tensor_tflops * 1e3),
            );
            let roof = ComputeRoof {
                precision: Precision::Bf16Tensor,
                gflops: r.value,
                measured: true,
                how: format!("wgmma, {kernel}"),
            };
            rows.push(r);
            Some(roof)
        }
        Err(_) => None,
    };

    // Launch overhead: LAUNCHES_PER_SAMPLE empty launches back to back per sample.
    let kernel = empty_launch::ceilings_empty_launch;
    let cfg = LaunchConfig::for_threads(
        kernel.name(),
        empty_launch::BLOCK_THREADS as u64,
        empty_launch::BLOCK_THREADS,
    )?;
    let per = empty_launch::LAUNCHES_PER_SAMPLE;
    let s = Stats::from_samples(
        gpu.time(reps.warmup, reps.timed, |_| {
            for _ in 0..per {
                // SAFETY: the kernel takes no arguments.
                unsafe { gpu.launch(kernel, cfg, ())? };
            }
            Ok(())
        })?
        .into_iter()
        .map(|us| us / per as f64)
        .collect(),
    );
    rows.push(row(
        "launch",
        format!("{kernel}, {per} back-to-back per sample"),
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
    let mut roofs = Roofs {
        dram_gbps: best,
        l2_gbps: value("L2"),
        smem_gbps: value("shared"),
        fp32_gflops,
        // The tensor-core roofs this run does not measure stay the datasheet's, marked so.
        compute: profile.map(|p| p.compute_roofs()).unwrap_or_default(),
        instruction_ceilings: vec![mma_ceiling],
        launch_us: value("launch"),
        origin: format!("measured on {} in this run", gpu.info.name),
    };
    if let Some(r) = wgmma_roof {
        roofs.set_measured(r);
    }
    roofs.set_measured(ComputeRoof {
        precision: Precision::Fp32Simt,
        gflops: fp32_gflops,
        measured: true,
        how: format!("{}", fma_throughput::ceilings_fma_throughput),
    });
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
