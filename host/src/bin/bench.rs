//! `rooflab-bench`: the measured ladders. Usually run through `cargo xtask bench`.
//!
//! With a GPU: measure the ceilings, run every selected case (check, warm up, time), relate
//! each row to the roofs, print the table, write `bench.json`, `bench.csv`, `roofline.svg`
//! and `bars-FAMILY.svg`. Without one: the same report, predicted from the cost model and a
//! datasheet profile, every measured column marked "needs a GPU".

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use rooflab::bench;
use rooflab::report::{self, KernelResources, Report, Row};
use rooflab::roofline::{self, Roofs};
use rooflab::timing::Reps;
use rooflab::{Error, Gpu, ceilings, ops, plot};

#[derive(Parser, Debug)]
#[command(
    name = "rooflab-bench",
    about = "Run rooflab's kernel ladders against the GPU's own limits"
)]
struct Args {
    /// Only these families (repeatable). `--list` shows them.
    #[arg(long)]
    family: Vec<String>,
    /// Only variants whose name contains this text (repeatable), e.g. `v03` or `v02_coalesced_copy`.
    #[arg(long)]
    variant: Vec<String>,
    /// Only cases of this shape, as the table writes it (repeatable), e.g. `"batch 1 L 32768"`
    /// or `4096x4096`; `--list` shows each case's shape.
    #[arg(long)]
    shape: Vec<String>,
    /// Problem size for every family, e.g. 1048576, 2^20, 16M: elements for memory and
    /// reduce and the row-wise families (rows = size / columns), M = N = K for gemm.
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Smaller sizes and fewer repetitions (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Only measure the ceilings (DRAM, L2, shared, FP32, launch).
    #[arg(long)]
    ceilings: bool,
    /// Timed repetitions per case (default 50, quick 10).
    #[arg(long)]
    reps: Option<usize>,
    /// Datasheet profile for predictions when there is no GPU (h200, h100-sxm, h100-pcie,
    /// a100, l40s, l4, rtx4090).
    #[arg(long, default_value = "h200")]
    device: String,
    /// An earlier bench.json: add a column with the change per row and flag regressions.
    #[arg(long)]
    compare: Option<PathBuf>,
    /// With --compare: flag rows more than this many percent slower.
    #[arg(long, default_value_t = 10.0)]
    regress_pct: f64,
    /// Time the same ops in PyTorch (CUDA events, its own process, outputs checked against
    /// the CPU reference) and fill the peer columns: `--peer torch`. Fusion families: eager
    /// and `torch.compile`; attention: SDPA's flash and cuDNN backends; decode: SDPA on a
    /// contiguous copy of the KV cache. Needs `python3` with torch (and triton for the
    /// compiled column); otherwise the columns say so.
    #[arg(long, value_parser = ["torch"])]
    peer: Option<String>,
    /// ptxas resource report (JSON written by `cargo xtask bench`).
    #[arg(long)]
    ptxas_report: Option<PathBuf>,
    /// Where bench.json, bench.csv, the SVGs and the HTML report (`report/index.html`) go.
    #[arg(long, default_value = "target/rooflab")]
    out: PathBuf,
    /// List families and variants, then exit.
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    lab: rooflab::lab::LabArgs,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let bad = || format!("`{s}` is not a size: use a count like 1048576, 2^20, 64K, 16M or 1G");
    let n = if let Some((b, e)) = s.split_once('^') {
        let (b, e): (u64, u32) = (b.parse().map_err(|_| bad())?, e.parse().map_err(|_| bad())?);
        b.checked_pow(e).ok_or_else(bad)?
    } else {
        let (num, mul) = match s.chars().last() {
            Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
            Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
            Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
            _ => (s, 1),
        };
        num.parse::<u64>()
            .map_err(|_| bad())?
            .checked_mul(mul)
            .ok_or_else(bad)?
    };
    if n == 0 {
        return Err("size 0 measures nothing: give at least 1".into());
    }
    Ok(n)
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("rooflab: {msg}");
    ExitCode::FAILURE
}

/// Other processes on the GPU make timings unreliable: ask the driver (through nvidia-smi)
/// which compute processes are there besides this one.
fn other_gpu_processes() -> Vec<String> {
    let Ok(out) = std::process::Command::new("nvidia-smi")
        .args([
            "--query-compute-apps=pid,process_name,used_memory",
            "--format=csv,noheader",
        ])
        .output()
    else {
        return Vec::new();
    };
    let me = std::process::id().to_string();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && l.split(',').next().map(str::trim) != Some(me.as_str()))
        .map(str::to_string)
        .collect()
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(code) = args.lab.run(args.size, &args.device, &args.out) {
        return code;
    }
    let seed = rooflab::check::seed();
    let run_started = std::time::Instant::now();

    for f in &args.family {
        if !ops::family_names().contains(&f.as_str()) {
            eprintln!(
                "rooflab: unknown family `{f}`. Valid families: {}",
                ops::family_names().join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let Some(profile) = roofline::profile_by_key(&args.device) else {
        let keys: Vec<_> = roofline::PROFILES.iter().map(|p| p.key).collect();
        eprintln!(
            "rooflab: unknown --device `{}`. Valid: {}",
            args.device,
            keys.join(", ")
        );
        return ExitCode::from(2);
    };
    // The selected families' cases, split into those the variant and shape filters keep
    // and the rest (whose shapes an unmatched `--shape` lists).
    let (cases, passed_over): (Vec<_>, Vec<_>) = ops::all_cases(args.quick, args.size, seed)
        .into_iter()
        .filter(|c| args.family.is_empty() || args.family.iter().any(|f| f == c.family))
        .partition(|c| {
            (args.variant.is_empty() || args.variant.iter().any(|v| c.variant.contains(v.as_str())))
                && (args.shape.is_empty() || args.shape.iter().any(|s| c.shape == s.trim()))
        });
    if args.list {
        for c in &cases {
            println!("{:<48} {} {}", c.name(), c.shape, c.note);
        }
        return ExitCode::SUCCESS;
    }
    if cases.is_empty() && !args.ceilings && !args.shape.is_empty() {
        // Each shape once, in the bench's order.
        let mut shapes: Vec<&str> = Vec::new();
        for c in &passed_over {
            if !shapes.contains(&c.shape.as_str()) {
                shapes.push(&c.shape);
            }
        }
        eprintln!(
            "rooflab: no case of {:?} matches the other filters. Shapes of the selected families{}:\n  {}",
            args.shape,
            if args.quick { " (--quick)" } else { "" },
            shapes.join("\n  ")
        );
        return ExitCode::from(2);
    }
    if cases.is_empty() && !args.ceilings {
        let names: Vec<String> = ops::all_cases(true, None, 0)
            .iter()
            .map(|c| c.name())
            .collect();
        eprintln!(
            "rooflab: no variant matches {:?}. Valid variants:\n  {}",
            args.variant,
            names.join("\n  ")
        );
        return ExitCode::from(2);
    }
    let old = match &args.compare {
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Report>(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => Some(r),
            Err(e) => {
                return fail(format!(
                    "--compare {}: cannot read an earlier bench.json: {e}",
                    p.display()
                ));
            }
        },
        None => None,
    };
    let resources: Vec<KernelResources> = match &args.ptxas_report {
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(e) => return fail(format!("--ptxas-report {}: {e}", p.display())),
        },
        None => Vec::new(),
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        return fail(format!("cannot create {}: {e}", args.out.display()));
    }

    let reps = Reps {
        warmup: if args.quick { 3 } else { 10 },
        timed: args.reps.unwrap_or(if args.quick { 10 } else { 50 }),
    };
    let mut failed = 0;
    let mut rows: Vec<Row> = Vec::new();
    let (gpu, measured_ceilings, roofs): (Option<Gpu>, Option<ceilings::Ceilings>, Roofs) =
        match Gpu::new() {
            Ok(gpu) => {
                println!("rooflab bench on {}  (seed {seed})", gpu.describe());
                let others = other_gpu_processes();
                if !others.is_empty() {
                    println!(
                        "WARNING: other processes are using this GPU, timings are unreliable: {}",
                        others.join("; ")
                    );
                }
                let t0 = std::time::Instant::now();
                match ceilings::measure(&gpu, args.quick, reps) {
                    Ok(c) => {
                        println!("{}", ceilings::table(&c));
                        println!("ceilings took {:.1} s", t0.elapsed().as_secs_f64());
                        let roofs = c.roofs.clone();
                        (Some(gpu), Some(c), roofs)
                    }
                    Err(e) => return fail(format!("measuring the ceilings failed: {e}")),
                }
            }
            Err(e @ Error::NoDevice(_)) => {
                println!(
                    "rooflab: no GPU here, nothing measured ({e}). Writing the report predicted for {} from its datasheet.",
                    profile.name
                );
                (None, None, Roofs::from_profile(profile))
            }
            Err(e) => return fail(e),
        };

    if !args.ceilings {
        // After every row, a whole report of the rows so far goes to bench-partial.json
        // (atomically): a run killed midway leaves bench.json of the last whole run intact
        // and what it measured here, readable by `cargo xtask report`.
        let partial_path = args.out.join("bench-partial.json");
        let started = utc_now();
        let device = gpu
            .as_ref()
            .and_then(|g| serde_json::to_value(&g.info).ok());
        // On a terminal: a progress bar (rows done, the current row, time left), and only
        // failures printed; otherwise (CI logs, run-all) a line per row as it finishes.
        let bar = (gpu.is_some() && std::io::stderr().is_terminal()).then(|| {
            let pb = indicatif::ProgressBar::new(cases.len() as u64);
            pb.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:40} {pos}/{len} rows, {elapsed} so far, ~{eta} left  {msg}",
                )
                .expect("a valid template"),
            );
            pb
        });
        let say = |line: String, always: bool| match &bar {
            Some(pb) if always => pb.println(line),
            Some(_) => {}
            None => eprintln!("{line}"),
        };
        for case in &cases {
            if let Some(pb) = &bar {
                pb.set_message(format!("{} {}", case.name(), case.shape));
            }
            let row = match &gpu {
                Some(gpu) => {
                    let (row, err) = bench::run_case(gpu, case, reps);
                    if let Some(pb) = &bar {
                        pb.inc(1);
                    }
                    match (&row.median_us, &err) {
                        (Some(m), _) => say(
                            format!(
                                "  {:<48} {:>10.1} µs  ({} reps, row took {:.1} s)",
                                row.name,
                                m,
                                row.reps.unwrap_or(0),
                                row.wall_s.unwrap_or(0.0)
                            ),
                            false,
                        ),
                        (None, Some(e)) => say(format!("  {:<48} FAILED: {e}", row.name), true),
                        _ => {}
                    }
                    if let Some(why) = &row.unavailable {
                        say(format!("  {:<48} UNAVAILABLE: {why}", row.name), true);
                    } else if !row.correct {
                        failed += 1;
                    }
                    if let Some(e) = &row.twin_error {
                        failed += 1;
                        say(
                            format!("  {:<48} CUDA C++ TWIN FAILED: {e}", row.name),
                            true,
                        );
                    }
                    if let Some(e) = err
                        && e.is_fatal()
                    {
                        rows.push(row);
                        say(
                            "rooflab: the CUDA context is unusable after this fault; stopping the run."
                                .into(),
                            true,
                        );
                        break;
                    }
                    row
                }
                None => bench::unmeasured_row(case),
            };
            rows.push(row);
            let mut so_far = rows.clone();
            report::relate(&mut so_far, Some(&roofs));
            let partial = Report {
                rooflab_version: env!("CARGO_PKG_VERSION").into(),
                date_utc: started.clone(),
                device: device.clone(),
                measured: gpu.is_some(),
                ceilings: measured_ceilings.clone(),
                roofs: Some(roofs.clone()),
                rows: so_far,
                note: Some(format!(
                    "partial: {} of {} cases done",
                    rows.len(),
                    cases.len()
                )),
            };
            if let Ok(json) = serde_json::to_string_pretty(&partial) {
                let _ = report::atomic_write(&partial_path, json.as_bytes());
            }
        }
        if let Some(pb) = &bar {
            pb.finish_and_clear();
        }
    }
    let measured = gpu.is_some();
    if measured && args.peer.is_some() {
        // Rows follow the cases one to one (unless a fault stopped the run early).
        let specs: Vec<_> = cases
            .iter()
            .map(|c| c.torch.clone())
            .take(rows.len())
            .collect();
        rooflab::torch_peer::fill(&mut rows, &specs);
    }
    report::relate(&mut rows, Some(&roofs));
    let arch = gpu.as_ref().map(|g| g.info.ptx_arch).unwrap_or("sm_90");
    report::attach_resources(&mut rows, &resources, arch);
    let regressed = old
        .as_ref()
        .map(|o| report::compare(&mut rows, o, args.regress_pct))
        .unwrap_or_default();
    if !rows.is_empty() {
        println!(
            "{}",
            report::table(&rows, measured, old.is_some().then_some(args.regress_pct))
        );
    }
    println!(
        "roofs: DRAM {:.0} GB/s, {} ({})",
        roofs.dram_gbps,
        roofs.compute_summary(),
        roofs.origin
    );

    let report = Report {
        rooflab_version: env!("CARGO_PKG_VERSION").into(),
        date_utc: utc_now(),
        device: gpu
            .as_ref()
            .and_then(|g| serde_json::to_value(&g.info).ok()),
        measured,
        ceilings: measured_ceilings,
        roofs: Some(roofs.clone()),
        rows,
        note: (!measured).then(|| {
            format!(
                "no GPU: predicted for {} from its datasheet; nothing measured",
                profile.name
            )
        }),
    };
    if let Err(e) = report::write_report(&args.out, &report) {
        return fail(e);
    }
    if !report.rows.is_empty() {
        let title = if measured {
            format!(
                "rooflab roofline, {} ({})",
                gpu.as_ref().map(|g| g.info.name.as_str()).unwrap_or("?"),
                report.date_utc
            )
        } else {
            format!("rooflab roofline, predicted for {} (no GPU)", profile.name)
        };
        if let Err(e) = plot::roofline(&args.out.join("roofline.svg"), &report.rows, &roofs, &title)
        {
            return fail(e);
        }
        for f in ops::family_names() {
            if report.rows.iter().any(|r| r.family == f)
                && let Err(e) = plot::family_bars(
                    &args.out.join(format!("bars-{f}.svg")),
                    &report.rows,
                    f,
                    measured,
                )
            {
                return fail(e);
            }
        }
    }
    // The page a person opens first; its chapter links need the guide (`--docs`).
    let docs = args.lab.docs.is_dir().then_some(args.lab.docs.as_path());
    let page = match rooflab::html::write(&report, &args.out, docs) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let _ = std::fs::remove_file(args.out.join("bench-partial.json"));
    if measured {
        println!(
            "bench: {} rows, whole run {:.1} s (wall clock, including inputs, checks and plots)",
            report.rows.len(),
            run_started.elapsed().as_secs_f64()
        );
    }
    println!(
        "report: {}/bench.json, bench.csv, roofline.svg, bars-*.svg; open {}",
        args.out.display(),
        page.display()
    );
    for r in &regressed {
        println!("REGRESSION: {r}");
    }
    if failed > 0 {
        eprintln!("rooflab: {failed} case(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Current UTC time as `YYYY-MM-DD HH:MM:SS` (civil-from-days, no time-zone crate needed).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86400) as i64, secs % 86400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
