//! Nsight Compute for one variant: `rooflab-bench --ncu NAME` runs itself under
//! `ncu --clock-control none --profile-from-start off` in `--profile-one NAME` mode (warm-up
//! launches, then exactly one launch between `cuProfilerStart` and `cuProfilerStop`), with a
//! curated metric set, and prints the counters next to the cost model: what the model says
//! the kernel must move against what DRAM moved.
//!
//! Without ncu, or without permission to read the counters, it says so in one line and exits
//! 0 (a machine without a profiler is not a failure of the kernel).

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::bench::Case;
use crate::cost::Bytes;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::ops;
use crate::roofline::{self, Accounting, Roofs};

/// The metrics `--ncu` collects (names as `ncu --query-metrics` lists their base, plus the
/// roll-up suffix). `--check-metrics` verifies them on the machine's GPU.
pub const METRICS: &[&str] = &[
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    // Shared-memory wavefronts per instruction: the bank-conflict figure that does not count
    // arbitration with other L1 traffic (which the `bank_conflicts` counters include).
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    // The tensor pipes (wgmma, mma.sync) and L2: what binds a tensor-core GEMM.
    "sm__pipe_tensor_op_hgmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_bytes.sum",
];

/// Warm-up launches before the profiled one (caches, clocks, lazy module loading).
pub const WARMUP: usize = 5;

#[link(name = "cuda")]
unsafe extern "C" {
    fn cuProfilerStart() -> c_int;
    fn cuProfilerStop() -> c_int;
}

fn profiler(on: bool) -> Result<()> {
    // SAFETY: plain driver calls without arguments; a current context exists (the Gpu).
    let code = unsafe {
        if on {
            cuProfilerStart()
        } else {
            cuProfilerStop()
        }
    };
    if code != 0 {
        return Err(Error::Other(format!(
            "cuProfiler{} returned CUDA error {code}",
            if on { "Start" } else { "Stop" }
        )));
    }
    Ok(())
}

/// The first case called `name` (for variants with several settings: the first, the
/// ladder's baseline setting).
/// The case `name` names: `FAMILY/VARIANT`, the first case of that name, or
/// `FAMILY/VARIANT@TEXT`, the first whose shape or note contains TEXT (e.g.
/// `memory/v01_strided_copy@stride 8`, `bf16_gemm/v05_weight_streaming@8×28672`).
pub(crate) fn find_case(name: &str, size: Option<u64>) -> std::result::Result<Case, ExitCode> {
    let mut cases = ops::all_cases(false, size, crate::check::seed());
    let (name, pick) = match name.split_once('@') {
        Some((n, p)) => (n, Some(p)),
        None => (name, None),
    };
    let fits = |c: &Case| {
        c.name() == name && pick.is_none_or(|p| c.shape.contains(p) || c.note.contains(p))
    };
    match cases.iter().position(fits) {
        Some(i) => Ok(cases.swap_remove(i)),
        None => {
            eprintln!(
                "rooflab: no case named `{name}`. Valid names (family/variant):\n  {}",
                crate::explain::case_names(&cases).join("\n  ")
            );
            Err(ExitCode::from(2))
        }
    }
}

/// Finds NAME's case, prepares it on the GPU and checks it once against the CPU reference,
/// then runs `f`; an error is printed as `rooflab: MODE NAME: ...`.
fn on_checked_case(
    mode: &str,
    name: &str,
    size: Option<u64>,
    f: impl FnOnce(&Case, &Gpu, &mut dyn crate::bench::Workload) -> Result<()>,
) -> ExitCode {
    let case = match find_case(name, size) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = (|| -> Result<()> {
        let gpu = Gpu::new()?;
        let mut w = (case.prepare)(&gpu)?;
        w.check(&gpu)?;
        f(&case, &gpu, w.as_mut())
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rooflab: {mode} {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--profile-one NAME`: check once, warm up, then one launch inside the profiler range.
pub fn run_one(name: &str, size: Option<u64>) -> ExitCode {
    on_checked_case("--profile-one", name, size, |case, gpu, w| {
        for i in 0..WARMUP {
            w.launch(gpu, i)?;
        }
        gpu.sync()?;
        profiler(true)?;
        w.launch(gpu, WARMUP)?;
        gpu.sync()?;
        profiler(false)?;
        eprintln!("rooflab: profiled one launch of {} {} {}", case.name(), case.shape, case.note);
        Ok(())
    })
}

/// `--timeline NAME` ([`crate::timeline`]): check, warm up, [`RUNS`](crate::timeline::RUNS)
/// stamped and as many event-timed launches, then the median-span run's summary on stdout
/// and its CSV under `out`.
pub fn run_timeline(name: &str, size: Option<u64>, out: &Path) -> ExitCode {
    use crate::timeline::{RUNS, Summary, quantile, write_csv};
    on_checked_case("--timeline", name, size, |case, gpu, w| {
        let plain = gpu.time(WARMUP, RUNS, |i| w.launch(gpu, i))?;
        let mut runs = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let stamps = w.timeline(gpu).unwrap_or_else(|| {
                Err(Error::Other(format!(
                    "{} records no timeline: only decode's stream-K steps (v08-v11) do",
                    case.name()
                )))
            })?;
            let summary = Summary::new(&stamps)?;
            runs.push((summary, stamps));
        }
        runs.sort_by(|a, b| a.0.span_us.total_cmp(&b.0.span_us));
        let (summary, stamps) = &runs[runs.len() / 2];
        let mut plain = plain;
        plain.sort_by(f64::total_cmp);
        println!("timeline of {} {} ({})", case.name(), case.shape, case.note);
        println!(
            "  stamped spans, µs: {}; unstamped launches (events), µs: median {:.1}",
            runs.iter().map(|r| format!("{:.1}", r.0.span_us)).collect::<Vec<_>>().join(" "),
            quantile(&plain, 0.5)
        );
        print!("{}", summary.render());
        std::fs::create_dir_all(out)
            .map_err(|e| Error::Other(format!("cannot create {}: {e}", out.display())))?;
        let csv = out.join("timeline.csv");
        write_csv(&csv, stamps)?;
        println!("  per-block stamps of the median run: {}", csv.display());
        Ok(())
    })
}

/// The ncu to run: `--ncu-path`, else PATH, else CUDA's default place.
fn find_ncu(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given {
        return p.exists().then(|| p.to_path_buf());
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ncu"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = PathBuf::from("/usr/local/cuda/bin/ncu");
        p.exists().then_some(p)
    })
}

/// ncu's words for "you may not read the performance counters".
fn no_permission(text: &str) -> bool {
    text.contains("ERR_NVGPUCTRPERM")
}

const PERMISSION_HINT: &str = "ncu has no permission to read the GPU performance counters \
     (ERR_NVGPUCTRPERM): run as root, or load nvidia with NVreg_RestrictProfilingToAdminUsers=0";

/// `--ncu NAME [--ncu-section S ..]`: rooflab's metrics for one launch next to the model,
/// then, when `sections` are given, ncu's own sections (for example `WarpStateStats`) for
/// the same launch, as ncu formats them: what the curated metrics leave out, for a kernel
/// that misses its model.
pub fn run_ncu(
    name: &str,
    size: Option<u64>,
    ncu: Option<&Path>,
    device: &str,
    sections: &[String],
) -> ExitCode {
    let case = match find_case(name, size) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(ncu) = find_ncu(ncu) else {
        println!("rooflab: no Nsight Compute (`ncu`) here; nothing profiled.");
        return ExitCode::SUCCESS;
    };
    // ncu's kernel filter: exactly the kernels the case launches, known by value.
    if case.kernels.is_empty() {
        return fail(format!("`{name}` launches no kernel of its own to profile"));
    }
    let names: Vec<&str> = case.kernels.iter().map(|k| k.kernel.name()).collect();
    let entry = format!("({})", names.join("|"));
    // Metrics this ncu does not list would fail the whole run: leave them out, and say so.
    let metrics: Vec<&str> = match Command::new(&ncu).arg("--query-metrics").output() {
        Ok(o) if o.status.success() => {
            let listed = String::from_utf8_lossy(&o.stdout).into_owned();
            let (known, unknown): (Vec<&str>, Vec<&str>) = METRICS
                .iter()
                .partition(|m| listing_line(&listed, m).is_some());
            if !unknown.is_empty() {
                eprintln!(
                    "rooflab: this ncu does not know {}; profiling without them",
                    unknown.join(", ")
                );
            }
            known
        }
        _ => METRICS.to_vec(),
    };
    let metric_list = metrics.join(",");
    let csv = [
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--metrics",
        &metric_list,
    ];
    let (text, status) = match under_ncu(&ncu, &entry, name, size, &csv) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let kernels = parse_ncu_csv(&text);
    if kernels.is_empty() {
        eprintln!("{text}");
        return fail(format!(
            "ncu reported no kernel matching `{entry}` (its output is above; ncu exit {status})"
        ));
    }
    // The model's floor on the datasheet of `--device` (the ncu run has no roofs of its own).
    let profile = roofline::profile_by_key(device)
        .or_else(|| roofline::profile_by_key("h200"))
        .expect("h200 profile exists");
    let mut roofs = Roofs::from_profile(profile);
    roofs.origin = format!(
        "datasheet of {}: profile measures no roofs of its own, the bench does",
        profile.name
    );
    print!("{}", compare_with_model(&case, &kernels, &roofs));
    if sections.is_empty() {
        return ExitCode::SUCCESS;
    }
    let args: Vec<&str> = sections
        .iter()
        .flat_map(|s| ["--section", s.as_str()])
        .collect();
    let (text, status) = match under_ncu(&ncu, &entry, name, size, &args) {
        Ok(r) => r,
        Err(code) => return code,
    };
    println!("\n== ncu sections: {}\n{text}", sections.join(", "));
    if status.success() {
        ExitCode::SUCCESS
    } else {
        fail(format!("ncu exited with {status}"))
    }
}

/// One launch of NAME (`rooflab-bench --profile-one`, after warm-up) under `ncu` with
/// `args`, clocks left alone, kernels matching `entry` only: ncu's output and exit status.
/// `Err` holds the exit code when there is nothing to show: ncu could not start, or has no
/// permission for the counters (each said in one line).
fn under_ncu(
    ncu: &Path,
    entry: &str,
    name: &str,
    size: Option<u64>,
    args: &[&str],
) -> std::result::Result<(String, std::process::ExitStatus), ExitCode> {
    let Ok(me) = std::env::current_exe() else {
        return Err(fail("cannot find rooflab-bench's own path"));
    };
    let mut cmd = Command::new(ncu);
    cmd.args(["--clock-control", "none", "--profile-from-start", "off"])
        .args(args)
        .args(["-k", &format!("regex:^{entry}$")])
        .arg(&me)
        .args(["--profile-one", name]);
    if let Some(s) = size {
        cmd.args(["--size", &s.to_string()]);
    }
    eprintln!("rooflab: {} ...", show(&cmd));
    let out = cmd.output().map_err(|e| {
        println!(
            "rooflab: could not run {}: {e}; nothing profiled.",
            ncu.display()
        );
        ExitCode::SUCCESS
    })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if no_permission(&text) {
        println!("rooflab: {PERMISSION_HINT}; nothing profiled.");
        return Err(ExitCode::SUCCESS);
    }
    Ok((text, out.status))
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("rooflab: {msg}");
    ExitCode::FAILURE
}

fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--check-metrics`: which of [`METRICS`] `ncu --query-metrics` lists on this GPU.
pub fn check_metrics(ncu: Option<&Path>) -> ExitCode {
    let Some(ncu) = find_ncu(ncu) else {
        println!("rooflab: no Nsight Compute (`ncu`) here; nothing checked.");
        return ExitCode::SUCCESS;
    };
    let out = match Command::new(&ncu).arg("--query-metrics").output() {
        Ok(o) => o,
        Err(e) => {
            println!(
                "rooflab: could not run {}: {e}; nothing checked.",
                ncu.display()
            );
            return ExitCode::SUCCESS;
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if no_permission(&text) {
        println!("rooflab: {PERMISSION_HINT}; nothing checked.");
        return ExitCode::SUCCESS;
    }
    let (report, missing) = check_metric_names(&text);
    print!("{report}");
    if missing > 0 {
        return fail(format!(
            "{missing} metric(s) unknown to this ncu/GPU: fix METRICS in host/src/profile.rs"
        ));
    }
    ExitCode::SUCCESS
}

/// A metric's base name: `dram__bytes_read.sum` -> `dram__bytes_read`.
pub fn base_name(metric: &str) -> &str {
    metric.split('.').next().unwrap_or(metric)
}

/// The line of `ncu --query-metrics` output that lists `metric`'s base name, if any.
fn listing_line<'a>(query_output: &'a str, metric: &str) -> Option<&'a str> {
    let base = base_name(metric);
    query_output
        .lines()
        .find(|l| l.split_whitespace().next() == Some(base))
}

/// Each metric with the `--query-metrics` line that lists its base (or MISSING), and the
/// number missing.
pub fn check_metric_names(query_output: &str) -> (String, usize) {
    let mut s = String::new();
    let mut missing = 0;
    for m in METRICS {
        match listing_line(query_output, m) {
            Some(l) => {
                let _ = writeln!(s, "ok       {m:<66} {}", l.trim());
            }
            None => {
                missing += 1;
                let _ = writeln!(s, "MISSING  {m}");
            }
        }
    }
    (s, missing)
}

/// One profiled kernel launch: its name and metric values in base units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelMetrics {
    pub kernel: String,
    pub block: String,
    pub grid: String,
    pub values: BTreeMap<String, f64>,
}

impl KernelMetrics {
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.values.get(metric).copied()
    }
}

/// Scale a value to base units (bytes, nanoseconds), whatever prefix ncu printed.
fn to_base(value: f64, unit: &str) -> f64 {
    let k = match unit {
        "Kbyte" | "KB" => 1e3,
        "Mbyte" | "MB" => 1e6,
        "Gbyte" | "GB" => 1e9,
        "Tbyte" | "TB" => 1e12,
        "usecond" | "us" => 1e3,
        "msecond" | "ms" => 1e6,
        "second" | "s" => 1e9,
        _ => 1.0,
    };
    value * k
}

/// Parses `ncu --csv --page raw` output: a header row (`"ID","Process ID",...` then metric
/// names), a units row, then one row per profiled kernel. Lines that are not CSV rows (ncu's
/// `==PROF==` lines, the program's own output) are skipped.
pub fn parse_ncu_csv(text: &str) -> Vec<KernelMetrics> {
    let Some(start) = text.find("\"ID\",") else {
        return Vec::new();
    };
    let csv_text: String = text[start..]
        .lines()
        .filter(|l| l.starts_with('"'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(csv_text.as_bytes());
    let Ok(header) = rd.headers().cloned() else {
        return Vec::new();
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let (kcol, bcol, gcol) = (col("Kernel Name"), col("Block Size"), col("Grid Size"));
    let mut units: Option<csv::StringRecord> = None;
    let mut out = Vec::new();
    for rec in rd.records().flatten() {
        // The units row has an empty ID.
        if rec.get(0).is_none_or(|id| id.trim().is_empty()) {
            units = Some(rec);
            continue;
        }
        let field = |c: Option<usize>| c.and_then(|c| rec.get(c)).unwrap_or("").to_string();
        let mut k = KernelMetrics {
            kernel: field(kcol),
            block: field(bcol),
            grid: field(gcol),
            values: BTreeMap::new(),
        };
        for (i, h) in header.iter().enumerate() {
            if !METRICS.contains(&h) {
                continue;
            }
            let raw: String = rec
                .get(i)
                .unwrap_or("")
                .chars()
                .filter(|c| *c != ',')
                .collect();
            if let Ok(v) = raw.trim().parse::<f64>() {
                let unit = units.as_ref().and_then(|u| u.get(i)).unwrap_or("");
                k.values.insert(h.to_string(), to_base(v, unit));
            }
        }
        out.push(k);
    }
    out
}

/// The counters of each profiled kernel next to the model's expectation.
pub fn compare_with_model(case: &Case, kernels: &[KernelMetrics], roofs: &Roofs) -> String {
    let a = Accounting::of(&case.cost, roofs);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {} {}: model {} min, {} modelled; floor {:.1} µs, variant floor {:.1} µs ({})",
        case.name(),
        case.shape,
        case.note,
        case.cost.min_bytes,
        case.cost.modelled_bytes,
        a.floor_us,
        a.variant_floor_us,
        roofs.origin
    );
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1} %"));
    let ratio = |n: Option<f64>, d: Option<f64>| match (n, d) {
        (Some(n), Some(d)) if d > 0.0 => format!("{:.2}", n / d),
        _ => "-".into(),
    };
    let mut dram_total = 0.0;
    for k in kernels {
        let _ = writeln!(s, "\n{}  grid {} block {}", k.kernel, k.grid, k.block);
        let row = |s: &mut String, what: &str, v: String, note: &str| {
            let _ = writeln!(s, "  {what:<34}{v:>16}  {note}");
        };
        let t = k.get("gpu__time_duration.sum");
        row(
            &mut s,
            "time",
            t.map_or("-".into(), |t| format!("{:.1} µs", t / 1e3)),
            "one launch, clocks not locked",
        );
        let rd = k.get("dram__bytes_read.sum");
        let wr = k.get("dram__bytes_write.sum");
        let dram = rd.unwrap_or(0.0) + wr.unwrap_or(0.0);
        dram_total += dram;
        row(
            &mut s,
            "DRAM bytes read / written",
            format!(
                "{} / {}",
                Bytes(rd.unwrap_or(0.0) as u64),
                Bytes(wr.unwrap_or(0.0) as u64)
            ),
            "",
        );
        row(
            &mut s,
            "DRAM throughput",
            pct(k.get("dram__throughput.avg.pct_of_peak_sustained_elapsed")),
            "of peak",
        );
        row(
            &mut s,
            "SM throughput",
            pct(k.get("sm__throughput.avg.pct_of_peak_sustained_elapsed")),
            "of peak",
        );
        row(
            &mut s,
            "compute/memory throughput",
            pct(k.get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")),
            "the busiest memory unit",
        );
        row(
            &mut s,
            "tensor pipe busy wgmma / mma.sync",
            format!(
                "{} / {}",
                pct(k.get(
                    "sm__pipe_tensor_op_hgmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
                )),
                pct(k.get(
                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
                ))
            ),
            "of elapsed cycles",
        );
        row(
            &mut s,
            "L2 throughput, bytes",
            format!(
                "{} / {}",
                pct(k.get("lts__throughput.avg.pct_of_peak_sustained_elapsed")),
                k.get("lts__t_bytes.sum")
                    .map_or("-".into(), |b| Bytes(b as u64).to_string())
            ),
            "of peak; through L2 in all",
        );
        row(
            &mut s,
            "achieved occupancy",
            pct(k.get("sm__warps_active.avg.pct_of_peak_sustained_active")),
            "warps active / max",
        );
        row(
            &mut s,
            "sectors/request, global loads",
            ratio(
                k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
                k.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
            ),
            "4 = coalesced 4 B/thread, 16 = coalesced 16 B, 32 = a sector per thread",
        );
        row(
            &mut s,
            "sectors/request, global stores",
            ratio(
                k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
                k.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
            ),
            "",
        );
        row(
            &mut s,
            "L1 hit rate",
            pct(k.get("l1tex__t_sector_hit_rate.pct")),
            "",
        );
        row(
            &mut s,
            "L2 hit rate",
            pct(k.get("lts__t_sector_hit_rate.pct")),
            "",
        );
        let bc = |m: &str| k.get(m).map_or("-".into(), |v| format!("{v:.0}"));
        let per = |w: &str, i: &str| ratio(k.get(w), k.get(i));
        row(
            &mut s,
            "shared wavefronts/instr ld / st",
            format!(
                "{} / {}",
                per(
                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                    "smsp__sass_inst_executed_op_shared_ld.sum"
                ),
                per(
                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
                    "smsp__sass_inst_executed_op_shared_st.sum"
                )
            ),
            "1 = conflict-free 4-byte access; 16-byte: 4 (2 if lane pairs share addresses)",
        );
        row(
            &mut s,
            "shared bank conflicts ld / st",
            format!(
                "{} / {}",
                bc("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
                bc("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum")
            ),
            "",
        );
    }
    let m = case.cost.modelled_bytes.0 as f64;
    let _ = writeln!(
        s,
        "\nDRAM moved {} against {} modelled ({}): {}",
        Bytes(dram_total as u64),
        case.cost.modelled_bytes,
        if m > 0.0 {
            format!("{:.2}x the model", dram_total / m)
        } else {
            "no bytes modelled".into()
        },
        if m > 0.0 && (dram_total / m - 1.0).abs() > 0.15 {
            "MISS: more than 15 % off the model; explain it (caching, wasted sectors, spills?)"
        } else {
            "within 15 % of the model"
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_is_picked_by_its_note_or_shape() {
        let c = find_case("memory/v01_strided_copy@stride 8", None)
            .ok()
            .unwrap();
        assert_eq!(c.note, "stride 8");
        let c = find_case("memory/v01_strided_copy", None).ok().unwrap();
        assert_eq!(c.note, "stride 32");
        let c = find_case("bf16_gemm/v05_weight_streaming@8×28672", None)
            .ok()
            .unwrap();
        assert_eq!(c.shape, "8×28672×8192");
        assert!(find_case("memory/v01_strided_copy@stride 99", None).is_err());
    }

    /// The shape of `ncu --csv --page raw --print-units base` output (ncu 2025), trimmed to
    /// three metrics, with the program's own lines around it.
    const SAMPLE: &str = "\
==PROF== Connected to process 4242 (/tmp/rooflab-bench)
rooflab: profiled one launch of memory/v03_vectorized_copy n=2^28
==PROF== Profiling \"KERNEL\": 0%....50%....100% - 9 passes
\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"gpu__time_duration.sum\",\"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum\",\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\"
\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Mbyte\",\"byte\",\"usecond\",\"\",\"\"
\"0\",\"4242\",\"rooflab-bench\",\"127.0.0.1\",\"KERNEL\",\"1\",\"13\",\"(256, 1, 1)\",\"(262144, 1, 1)\",\"0\",\"9.0\",\"1,073.74\",\"1073741824\",\"501.3\",\"2097152\",\"33554432\"
";

    /// The kernel the sample profiles.
    const KERNEL: rooflab_kernels::kernel::KernelId =
        rooflab_kernels::memory::v03_vectorized::memory_v03_vectorized_copy.id();

    fn sample() -> String {
        SAMPLE.replace("KERNEL", KERNEL.name())
    }

    #[test]
    fn parses_raw_csv_in_base_units() {
        let k = parse_ncu_csv(&sample());
        assert_eq!(k.len(), 1);
        let k = &k[0];
        assert_eq!(k.kernel, KERNEL.name());
        assert_eq!(k.block, "(256, 1, 1)");
        assert!((k.get("dram__bytes_read.sum").unwrap() - 1.07374e9).abs() < 1e3);
        assert_eq!(k.get("dram__bytes_write.sum"), Some(1073741824.0));
        assert!((k.get("gpu__time_duration.sum").unwrap() - 501_300.0).abs() < 1e-6);
        assert_eq!(
            k.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
                .unwrap()
                / k.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
                    .unwrap(),
            16.0
        );
        assert!(parse_ncu_csv("==PROF== nothing profiled").is_empty());
    }

    #[test]
    fn compares_dram_bytes_with_the_model() {
        let cases = ops::all_cases(false, Some(1 << 28), 1);
        let case = cases
            .iter()
            .find(|c| c.name() == "memory/v03_vectorized_copy")
            .unwrap();
        let k = parse_ncu_csv(&sample());
        let roofs = Roofs::from_profile(roofline::profile_by_key("h200").unwrap());
        let text = compare_with_model(case, &k, &roofs);
        assert!(text.contains("sectors/request, global loads"), "{text}");
        assert!(text.contains("16.00"), "{text}");
        assert!(text.contains("1.00x the model"), "{text}");
        assert!(text.contains("within 15 %"), "{text}");
    }

    #[test]
    fn metric_check_and_permission() {
        let query = "Device NVIDIA H200 (GH100)\n\
            ------- ------- -------\n\
            dram__bytes_read  Counter  byte  # of bytes read from DRAM\n\
            gpu__time_duration  Counter  nsecond  total duration\n";
        let (text, missing) = check_metric_names(query);
        assert_eq!(missing, METRICS.len() - 2);
        assert!(text.contains("ok       dram__bytes_read.sum"));
        assert!(text.contains("MISSING  lts__t_sector_hit_rate.pct"));
        assert_eq!(
            base_name("l1tex__t_sector_hit_rate.pct"),
            "l1tex__t_sector_hit_rate"
        );
        assert!(no_permission(
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"
        ));
    }
}
