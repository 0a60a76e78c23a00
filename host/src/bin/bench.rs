//! `rooflab-bench`: the measured ladders. Usually run through `cargo xtask bench`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use rooflab::bench::{self, Ceilings, Report, Reps, Row};
use rooflab::{Error, Gpu, ops};

#[derive(Parser, Debug)]
#[command(
    name = "rooflab-bench",
    about = "Run rooflab's kernel ladders against the GPU's own limits"
)]
struct Args {
    /// Only these families (repeatable). Valid: see --list.
    #[arg(long)]
    family: Vec<String>,
    /// Only variants whose name contains this text (repeatable), e.g. `v03` or `v02_coalesced_copy`.
    #[arg(long)]
    variant: Vec<String>,
    /// Problem size for every family (elements for `memory`), e.g. 1048576, 2^20, 16M.
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Smaller sizes and fewer repetitions (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Timed repetitions per case (default 50, quick 10).
    #[arg(long)]
    reps: Option<usize>,
    /// Where bench.json and bench.csv go.
    #[arg(long, default_value = "target/rooflab")]
    out: PathBuf,
    /// List families and variants, then exit.
    #[arg(long)]
    list: bool,
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

fn main() -> ExitCode {
    let args = Args::parse();
    let seed = rooflab::check::seed();
    let all = ops::all_cases(args.quick, args.size, seed);

    for f in &args.family {
        if !ops::family_names().contains(&f.as_str()) {
            eprintln!(
                "rooflab: unknown family `{f}`. Valid families: {}",
                ops::family_names().join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let cases: Vec<_> = all
        .into_iter()
        .filter(|c| args.family.is_empty() || args.family.iter().any(|f| f == c.family))
        .filter(|c| {
            args.variant.is_empty() || args.variant.iter().any(|v| c.variant.contains(v.as_str()))
        })
        .collect();
    if args.list {
        for c in &cases {
            println!("{:<40} {} {}", c.name(), c.shape, c.note);
        }
        return ExitCode::SUCCESS;
    }
    if cases.is_empty() {
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

    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e @ Error::NoDevice(_)) => {
            println!("rooflab: no GPU here, nothing measured ({e}).");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("rooflab: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("rooflab bench on {}  (seed {seed})", gpu.describe());

    let reps = Reps {
        warmup: if args.quick { 3 } else { 10 },
        timed: args.reps.unwrap_or(if args.quick { 10 } else { 50 }),
    };
    let ceiling_bytes = if args.quick { 256 << 20 } else { 2 << 30 };
    let ceilings: Option<Ceilings> = match bench::measure_copy_ceiling(&gpu, ceiling_bytes, reps) {
        Ok(c) => {
            println!(
                "copy ceiling (cuMemcpyDtoD, {} MiB, read+write): {:.0} GB/s, spread {:.1}%",
                ceiling_bytes >> 20,
                c.copy_gbps,
                c.copy_stats.spread_pct()
            );
            Some(c)
        }
        Err(e) => {
            eprintln!("rooflab: measuring the copy ceiling failed: {e}");
            None
        }
    };

    let mut rows: Vec<Row> = Vec::new();
    let mut failed = 0;
    for case in &cases {
        let (row, err) = bench::run_case(&gpu, case, reps);
        match (&row.median_us, &err) {
            (Some(m), _) => eprintln!("  {:<40} {:>10.1} µs", row.name, m),
            (None, Some(e)) => eprintln!("  {:<40} FAILED: {e}", row.name),
            _ => {}
        }
        if !row.correct {
            failed += 1;
        }
        rows.push(row);
        if let Some(e) = err
            && e.is_fatal()
        {
            eprintln!("rooflab: the CUDA context is unusable after this fault; stopping the run.");
            break;
        }
    }
    bench::relate(&mut rows, ceilings.as_ref());
    println!("{}", bench::table(&rows));
    let report = Report {
        rooflab_version: env!("CARGO_PKG_VERSION").into(),
        date_utc: utc_now(),
        device: serde_json::to_value(&gpu.info).ok(),
        ceilings,
        rows,
        note: None,
    };
    if let Err(e) = bench::write_report(&args.out, &report) {
        eprintln!("rooflab: {e}");
        return ExitCode::FAILURE;
    }
    println!("report: {}/bench.json, bench.csv", args.out.display());
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
