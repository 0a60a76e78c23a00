//! The report: one [`Row`] per case, related to the ladder's first row and to the roofs,
//! compared with an earlier run, as a terminal table, JSON and CSV.

use std::path::Path;

use crate::cost::{Bytes, Cost, Flops, Precision};
use crate::error::{Error, Result};
use crate::roofline::{Accounting, Bound, Roofs};

/// One line of the report. `Default` is a row of nothing measured (every figure `None`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub name: String,
    pub family: String,
    pub variant: String,
    /// The kernel entries the row's case launches (empty in runs made before they were
    /// recorded).
    #[serde(default)]
    pub kernels: Vec<String>,
    pub ladder: String,
    pub shape: String,
    pub note: String,
    pub flops: u64,
    /// What the FLOPs are done in: the row meets that precision's compute roof.
    #[serde(default)]
    pub precision: Precision,
    pub min_bytes: u64,
    pub modelled_bytes: u64,
    /// Device memory the variant allocates beyond its inputs and outputs (`Cost`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub scratch_bytes: u64,
    pub median_us: Option<f64>,
    pub p10_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub spread_pct: Option<f64>,
    /// Effective bandwidth: the op's minimum bytes over the median time.
    pub gbps: Option<f64>,
    /// Achieved TFLOP/s (FLOPs over the median time).
    pub tflops: Option<f64>,
    /// The roofline accounting against this run's roofs (or a datasheet's, predicted).
    pub accounting: Option<Accounting>,
    /// floor / median in percent: MBU for memory-bound rows, MFU for compute-bound ones.
    pub pct_of_roof: Option<f64>,
    /// ptxas's view of the kernel(s): most registers per thread, spill bytes, static smem.
    pub registers: Option<u32>,
    pub spill_bytes: Option<u32>,
    /// The same row's median in an earlier run (`--compare`), and the change in percent
    /// (positive = slower now).
    pub old_median_us: Option<f64>,
    pub change_pct: Option<f64>,
    pub regressed: bool,
    /// The ladder's first row's median over this row's median.
    pub speedup_vs_v01: Option<f64>,
    /// The measured slowdown over the ladder's first row that the bytes model predicts
    /// (modelled bytes of v01 over this row's modelled bytes), for comparison.
    pub predicted_speedup_vs_v01: Option<f64>,
    pub correct: bool,
    pub error: Option<String>,
    /// Why the row was not run on this GPU (its kernel is built only for another
    /// architecture, e.g. an sm_90a step on a non-Hopper GPU): listed, neither passed nor
    /// failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// The peer library (or why it did not run). The family names what its two peer columns
    /// hold ([`peer_columns`]): by default a library named in this string and torch.compile.
    pub peer: Option<String>,
    pub peer_median_us: Option<f64>,
    /// Peer time over this row's time, in percent (100 = as fast as the peer).
    pub pct_of_peer: Option<f64>,
    /// The compiled peer (`torch.compile` of the same op, `--peer torch`), or why it has no
    /// figure; its median, and its time over this row's in percent. Attention fills it with
    /// SDPA's cuDNN backend ([`peer_columns`]).
    #[serde(default)]
    pub compiled_peer: Option<String>,
    #[serde(default)]
    pub compiled_peer_median_us: Option<f64>,
    #[serde(default)]
    pub pct_of_compiled_peer: Option<f64>,
    /// Seconds the compiled peer's first call took (compilation): reported, never timed.
    #[serde(default)]
    pub compiled_peer_compile_s: Option<f64>,
    /// The CUDA C++ twin of the row's kernels (`host/twins`, the same algorithm compiled by
    /// NVRTC), or why it has no figure; set only for twinned steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin: Option<String>,
    /// The twin's median, from a timing that alternates it with the Rust kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin_median_us: Option<f64>,
    /// Rust time / C++ time from that same paired timing (1.00: the same; above 1: Rust is
    /// slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust_vs_twin: Option<f64>,
    /// The twin's output failed the check (a failure of the run, not of the Rust row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin_error: Option<String>,
    /// With `--compare`: how much the row's fraction of its run's roof fell against the old
    /// run's, in percent (positive: worse), which tells a slower kernel from a slower GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roof_change_pct: Option<f64>,
    /// Timed launches behind the median (fewer than asked for long kernels: TIME_BUDGET_US).
    #[serde(default)]
    pub reps: Option<usize>,
    /// Wall-clock seconds the row took on the host: inputs, check, warm-up, timing, peer.
    #[serde(default)]
    pub wall_s: Option<f64>,
}

/// What a family's two peer columns hold (a row's `peer*` and `compiled_peer*` fields), as
/// table headers and chart legends name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerColumns {
    /// The first column's header word (its cells name the peer and its version).
    pub first: &'static str,
    /// The first column in a chart's legend.
    pub first_legend: &'static str,
    /// The second column's header word.
    pub second: &'static str,
    /// The second column in a chart's legend.
    pub second_legend: &'static str,
}

/// Every family's but attention's and decode's: a peer library (cuBLAS, eager PyTorch: each
/// row's `peer` names it), then torch.compile.
pub const PEER_COLUMNS: PeerColumns = PeerColumns {
    first: "peer",
    first_legend: "peer library",
    second: "torch.compile",
    second_legend: "compiled peer (torch.compile)",
};

/// Attention's: PyTorch SDPA held to its flash backend, then to its cuDNN backend
/// (`torch_peer::Mode::SdpaFlash`, `SdpaCudnn`).
pub const ATTENTION_PEER_COLUMNS: PeerColumns = PeerColumns {
    first: "SDPA flash",
    first_legend: "PyTorch SDPA, flash backend",
    second: "SDPA cuDNN",
    second_legend: "PyTorch SDPA, cuDNN backend",
};

/// Decode's one: PyTorch SDPA over a contiguous copy of the paged KV cache
/// (`torch_peer::Mode::SdpaContiguous`).
pub const DECODE_PEER_COLUMNS: PeerColumns = PeerColumns {
    first: "SDPA, contiguous KV",
    first_legend: "PyTorch SDPA on a contiguous copy of the KV cache",
    second: "second peer",
    second_legend: "second peer",
};

/// The peer columns of `family` (by name: the report sits below the family registry):
/// attention's and decode's are PyTorch SDPA's, every other family's [`PEER_COLUMNS`].
pub fn peer_columns(family: &str) -> PeerColumns {
    match family {
        "attention" => ATTENTION_PEER_COLUMNS,
        "decode" => DECODE_PEER_COLUMNS,
        _ => PEER_COLUMNS,
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Fill the columns that relate rows to each other and to the roofs.
pub fn relate(rows: &mut [Row], roofs: Option<&Roofs>) {
    for i in 0..rows.len() {
        if let Some(roofs) = roofs {
            let cost = Cost {
                flops: Flops(rows[i].flops),
                precision: rows[i].precision,
                min_bytes: Bytes(rows[i].min_bytes),
                modelled_bytes: Bytes(rows[i].modelled_bytes),
                scratch_bytes: Bytes(rows[i].scratch_bytes),
            };
            let a = Accounting::of(&cost, roofs);
            rows[i].pct_of_roof = rows[i].median_us.map(|m| a.pct_of_roof(m));
            rows[i].accounting = Some(a);
        }
        let base = rows.iter().find(|r| {
            r.family == rows[i].family && r.ladder == rows[i].ladder && r.shape == rows[i].shape
        });
        if let Some((b_bytes, b_median)) = base.map(|b| (b.modelled_bytes, b.median_us)) {
            rows[i].predicted_speedup_vs_v01 =
                Some(b_bytes as f64 / rows[i].modelled_bytes.max(1) as f64);
            if let (Some(bm), Some(m)) = (b_median, rows[i].median_us) {
                rows[i].speedup_vs_v01 = Some(bm / m);
            }
        }
    }
}

/// Compare with an earlier report: rows match by name, shape and note. A row more than
/// `threshold_pct` slower is flagged. Returns the names of the regressed rows.
pub fn compare(rows: &mut [Row], old: &Report, threshold_pct: f64) -> Vec<String> {
    let mut regressed = Vec::new();
    for r in rows.iter_mut() {
        let Some(o) = old
            .rows
            .iter()
            .find(|o| o.name == r.name && o.shape == r.shape && o.note == r.note)
        else {
            continue;
        };
        r.old_median_us = o.median_us;
        if let (Some(new), Some(old)) = (r.median_us, o.median_us) {
            let change = 100.0 * (new - old) / old;
            r.change_pct = Some(change);
            // The same row against its own run's roof: when the roof (a ceiling measured in
            // each run) fell as much as the row, the GPU ran slower (clocks, power), not the
            // kernel: a slowdown is a regression only if the fraction of the roof fell too.
            r.roof_change_pct = match (r.pct_of_roof, o.pct_of_roof) {
                (Some(n), Some(p)) if p > 0.0 => Some(100.0 * (p - n) / p),
                _ => None,
            };
            if change > threshold_pct && r.roof_change_pct.is_none_or(|c| c > threshold_pct) {
                r.regressed = true;
                regressed.push(format!(
                    "{} {} {}: {old:.1} -> {new:.1} µs (+{change:.1}%)",
                    r.name, r.shape, r.note
                ));
            }
        }
    }
    regressed
}

/// The "vs old" cell: the time's change, "SLOWER" for a regression, and "(roof too)" where
/// the time grew past the threshold but the run's own roof fell with it (not flagged).
pub fn change_cell(r: &Row, threshold_pct: f64) -> String {
    match r.change_pct {
        Some(c) if r.regressed => format!("{c:+.1}% SLOWER"),
        Some(c) if c > threshold_pct => format!("{c:+.1}% (roof too)"),
        Some(c) => format!("{c:+.1}%"),
        None => "new".into(),
    }
}

/// ptxas's resource report for one kernel (read from the JSON `cargo xtask bench` writes).
#[derive(Clone, Debug, serde::Deserialize)]
pub struct KernelResources {
    pub arch: String,
    pub name: String,
    pub registers: Option<u32>,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_frame: u32,
    pub smem: u32,
}

/// Attach ptxas figures (for `arch`) to rows: every kernel the row's case launches (several
/// for multi-kernel variants; the largest register count shown, spills summed), found by the
/// kernels the row records, not by its name.
pub fn attach_resources(rows: &mut [Row], res: &[KernelResources], arch: &str) {
    for r in rows.iter_mut() {
        let mine: Vec<_> = res
            .iter()
            .filter(|k| k.arch == arch && r.kernels.contains(&k.name))
            .collect();
        if !mine.is_empty() {
            r.registers = mine.iter().filter_map(|k| k.registers).max();
            r.spill_bytes = Some(mine.iter().map(|k| k.spill_stores + k.spill_loads).sum());
        }
    }
}

/// The report as a terminal table. Without a GPU the measured columns say "needs a GPU" and
/// the predicted floor time is shown instead.
/// `compared`: the `--compare` threshold, when the rows were compared with an older run.
pub fn table(rows: &[Row], measured: bool, compared: Option<f64>) -> comfy_table::Table {
    use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let f = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    let x = |v: Option<f64>| v.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".into());
    let mut header = vec!["family/variant", "shape", "AI F/B", "bound", "floor µs"];
    // The second peer's column only when some row has one (`--peer torch`), named after
    // what it holds in the families shown (torch.compile, SDPA cuDNN, or both, each row
    // by its family).
    let mut second: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.compiled_peer.is_some()) {
        let name = peer_columns(&r.family).second;
        if !second.contains(&name) {
            second.push(name);
        }
    }
    let compiled = !second.is_empty();
    let second_header = format!("% {}", second.join(" / "));
    // The CUDA C++ twins' column only when some row is twinned.
    let twins = rows.iter().any(|r| r.twin.is_some());
    if measured {
        header.extend([
            "median µs",
            "spread %",
            "GB/s",
            "TFLOP/s",
            "% roof",
            "vs v01",
            "model vs v01",
            "peer",
            "% peer",
        ]);
        if compiled {
            header.push(&second_header);
        }
        if twins {
            header.push("vs C++");
        }
        if compared.is_some() {
            header.push("vs old");
        }
        header.push("correct");
    } else {
        header.extend([
            "predicted µs",
            "regs",
            "spill B",
            "model vs v01",
            "measured",
        ]);
    }
    t.set_header(header);
    for r in rows {
        let shape = if r.note.is_empty() {
            r.shape.clone()
        } else {
            format!("{} {}", r.shape, r.note)
        };
        let (ai, bound, floor) = match &r.accounting {
            Some(a) => (
                format!("{:.2}", a.intensity),
                a.bound_label(),
                format!("{:.1}", a.floor_us),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let mut cells = vec![r.name.clone(), shape, ai, bound, floor];
        if measured {
            cells.extend([
                f(r.median_us, 1),
                f(r.spread_pct, 1),
                f(r.gbps, 0),
                f(r.tflops, 2),
                f(r.pct_of_roof, 1),
                x(r.speedup_vs_v01),
                x(r.predicted_speedup_vs_v01),
                r.peer.clone().unwrap_or_else(|| "-".into()),
                f(r.pct_of_peer, 1),
            ]);
            if compiled {
                cells.push(f(r.pct_of_compiled_peer, 1));
            }
            if twins {
                cells.push(twin_cell(r));
            }
            if let Some(threshold) = compared {
                cells.push(change_cell(r, threshold));
            }
            cells.push(if r.correct {
                "yes".into()
            } else if let Some(why) = &r.unavailable {
                format!("unavailable: {why}")
            } else {
                format!("NO: {}", r.error.as_deref().unwrap_or("?"))
            });
        } else {
            cells.extend([
                f(r.accounting.map(|a| a.variant_floor_us), 1),
                r.registers
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                r.spill_bytes
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                x(r.predicted_speedup_vs_v01),
                "needs a GPU".into(),
            ]);
        }
        t.add_row(cells);
    }
    for c in 2..t.column_count() {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// The whole report as JSON.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Report {
    pub rooflab_version: String,
    pub date_utc: String,
    pub device: Option<serde_json::Value>,
    /// True when a GPU ran the rows; false for a predicted report.
    pub measured: bool,
    pub ceilings: Option<crate::roofline::Ceilings>,
    pub roofs: Option<Roofs>,
    pub rows: Vec<Row>,
    pub note: Option<String>,
}

/// Write `report` as `bench.json` and `bench.csv` in `dir`, each through a temporary file
/// and a rename, so an interrupted run never leaves a half-written report.
pub fn write_report(dir: &Path, report: &Report) -> Result<()> {
    let io =
        |e: std::io::Error| Error::Other(format!("writing the report in {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let json = serde_json::to_string_pretty(report).map_err(|e| Error::Other(e.to_string()))?;
    atomic_write(&dir.join("bench.json"), json.as_bytes()).map_err(io)?;
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in &report.rows {
        w.serialize(CsvRow::from(r))
            .map_err(|e| Error::Other(e.to_string()))?;
    }
    let bytes = w.into_inner().map_err(|e| Error::Other(e.to_string()))?;
    atomic_write(&dir.join("bench.csv"), &bytes).map_err(io)?;
    Ok(())
}

/// A report row flattened for CSV (one column per number).
#[derive(serde::Serialize)]
struct CsvRow<'a> {
    name: &'a str,
    shape: &'a str,
    note: &'a str,
    flops: u64,
    min_bytes: u64,
    modelled_bytes: u64,
    scratch_bytes: u64,
    intensity: Option<f64>,
    bound: Option<Bound>,
    roof_gflops: Option<f64>,
    floor_us: Option<f64>,
    variant_floor_us: Option<f64>,
    median_us: Option<f64>,
    p10_us: Option<f64>,
    p90_us: Option<f64>,
    spread_pct: Option<f64>,
    gbps: Option<f64>,
    tflops: Option<f64>,
    pct_of_roof: Option<f64>,
    speedup_vs_v01: Option<f64>,
    predicted_speedup_vs_v01: Option<f64>,
    peer: Option<&'a str>,
    peer_median_us: Option<f64>,
    pct_of_peer: Option<f64>,
    compiled_peer: Option<&'a str>,
    compiled_peer_median_us: Option<f64>,
    pct_of_compiled_peer: Option<f64>,
    compiled_peer_compile_s: Option<f64>,
    twin: Option<&'a str>,
    twin_median_us: Option<f64>,
    rust_vs_twin: Option<f64>,
    twin_error: Option<&'a str>,
    registers: Option<u32>,
    spill_bytes: Option<u32>,
    old_median_us: Option<f64>,
    change_pct: Option<f64>,
    regressed: bool,
    reps: Option<usize>,
    wall_s: Option<f64>,
    correct: bool,
    error: Option<&'a str>,
}

impl<'a> From<&'a Row> for CsvRow<'a> {
    fn from(r: &'a Row) -> Self {
        let a = r.accounting.as_ref();
        CsvRow {
            name: &r.name,
            shape: &r.shape,
            note: &r.note,
            flops: r.flops,
            min_bytes: r.min_bytes,
            modelled_bytes: r.modelled_bytes,
            scratch_bytes: r.scratch_bytes,
            intensity: a.map(|a| a.intensity),
            bound: a.map(|a| a.bound),
            roof_gflops: a.map(|a| a.roof_gflops),
            floor_us: a.map(|a| a.floor_us),
            variant_floor_us: a.map(|a| a.variant_floor_us),
            median_us: r.median_us,
            p10_us: r.p10_us,
            p90_us: r.p90_us,
            spread_pct: r.spread_pct,
            gbps: r.gbps,
            tflops: r.tflops,
            pct_of_roof: r.pct_of_roof,
            speedup_vs_v01: r.speedup_vs_v01,
            predicted_speedup_vs_v01: r.predicted_speedup_vs_v01,
            peer: r.peer.as_deref(),
            peer_median_us: r.peer_median_us,
            pct_of_peer: r.pct_of_peer,
            compiled_peer: r.compiled_peer.as_deref(),
            compiled_peer_median_us: r.compiled_peer_median_us,
            pct_of_compiled_peer: r.pct_of_compiled_peer,
            compiled_peer_compile_s: r.compiled_peer_compile_s,
            twin: r.twin.as_deref(),
            twin_median_us: r.twin_median_us,
            rust_vs_twin: r.rust_vs_twin,
            twin_error: r.twin_error.as_deref(),
            registers: r.registers,
            spill_bytes: r.spill_bytes,
            old_median_us: r.old_median_us,
            change_pct: r.change_pct,
            regressed: r.regressed,
            reps: r.reps,
            wall_s: r.wall_s,
            correct: r.correct,
            error: r.error.as_deref(),
        }
    }
}

/// The "vs C++" cell: Rust time / C++ time ("1.01x"), "WRONG" when the twin failed its
/// check, "-" when the row has no twin figure.
pub fn twin_cell(r: &Row) -> String {
    match (&r.twin_error, r.rust_vs_twin) {
        (Some(_), _) => "C++ WRONG".into(),
        (None, Some(v)) => format!("{v:.3}x"),
        (None, None) => "-".into(),
    }
}

/// Several runs on one GPU as one report (`rooflab-bench --merge`), for a bench cut into
/// parts that each fit a time-limited call (the bundle's `./verify`): the rows of every part
/// in order, each keeping the figures its own run gave it (its % of roof is against its own
/// run's roofs); the ceilings and roofs shown are the first part's, and the note lists every
/// part's date, families and DRAM roof. Refused: no part, parts of different GPUs, of
/// different rooflab builds, measured beside predicted, or one row (name, shape, note) in
/// two parts.
pub fn merge(parts: Vec<(String, Report)>) -> Result<Report> {
    let bad = |what: String| Error::Other(format!("--merge: {what}"));
    let Some((first_name, first)) = parts.first() else {
        return Err(bad("no bench.json given".into()));
    };
    let gpu = |r: &Report| {
        r.device
            .as_ref()
            .and_then(|d| d.get("name"))
            .and_then(|v| v.as_str())
            .unwrap_or("unknown GPU")
            .to_string()
    };
    let mut seen = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for (i, (name, r)) in parts.iter().enumerate() {
        if gpu(r) != gpu(first) {
            return Err(bad(format!("{name} ran on {} and {first_name} on {}: merge runs of one GPU", gpu(r), gpu(first))));
        }
        if r.rooflab_version != first.rooflab_version {
            return Err(bad(format!(
                "{name} is rooflab {} and {first_name} rooflab {}: merge runs of one build",
                r.rooflab_version, first.rooflab_version
            )));
        }
        if r.measured != first.measured {
            return Err(bad(format!("{name} and {first_name}: one is measured, the other predicted")));
        }
        for row in &r.rows {
            let key = (row.name.clone(), row.shape.clone(), row.note.clone());
            if let Some(j) = seen.insert(key, i) {
                return Err(bad(format!(
                    "row {} at {} is in {} and {name}",
                    row.name, row.shape, parts[j].0
                )));
            }
        }
        let mut families: Vec<&str> = Vec::new();
        for x in &r.rows {
            if !families.contains(&x.family.as_str()) {
                families.push(&x.family);
            }
        }
        lines.push(format!(
            "{} ({}; {} rows; DRAM roof {})",
            r.date_utc,
            families.join(", "),
            r.rows.len(),
            r.roofs.as_ref().map_or("-".into(), |x| format!("{:.0} GB/s", x.dram_gbps))
        ));
    }
    let last = &parts[parts.len() - 1].1;
    let date_utc = if last.date_utc == first.date_utc {
        first.date_utc.clone()
    } else {
        format!("{} to {}", first.date_utc, last.date_utc)
    };
    Ok(Report {
        rooflab_version: first.rooflab_version.clone(),
        date_utc,
        device: first.device.clone(),
        measured: first.measured,
        ceilings: first.ceilings.clone(),
        roofs: first.roofs.clone(),
        rows: parts.iter().flat_map(|(_, r)| r.rows.clone()).collect(),
        note: Some(format!(
            "merged from {} runs on {}, each row's % of roof against its own run's roofs (the \
             ceilings shown are the first run's): {}",
            parts.len(),
            gpu(first),
            lines.join("; ")
        )),
    })
}

pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn row(name: &str, ladder: &str, median: f64, bytes: u64) -> Row {
        Row {
            name: name.into(),
            family: "memory".into(),
            variant: name.into(),
            ladder: ladder.into(),
            shape: "n".into(),
            min_bytes: 100,
            modelled_bytes: bytes,
            median_us: Some(median),
            gbps: Some(100.0 / median),
            correct: true,
            reps: Some(50),
            wall_s: Some(1.0),
            ..Row::default()
        }
    }

    #[test]
    fn relate_uses_first_row_of_ladder() {
        let mut rows = vec![
            row("a", "copy", 8.0, 800),
            row("b", "copy", 2.0, 100),
            row("c", "saxpy", 3.0, 100),
        ];
        let roofs = Roofs {
            dram_gbps: 100.0,
            l2_gbps: None,
            smem_gbps: None,
            fp32_gflops: 1000.0,
            compute: vec![],
            instruction_ceilings: vec![],
            launch_us: None,
            origin: "test".into(),
        };
        relate(&mut rows, Some(&roofs));
        assert_eq!(rows[1].speedup_vs_v01, Some(4.0));
        assert_eq!(rows[1].predicted_speedup_vs_v01, Some(8.0));
        assert_eq!(rows[2].speedup_vs_v01, Some(1.0));
        // 100 bytes at 100 GB/s: 0.001 µs floor; measured 2 µs -> 0.05 % of roof.
        assert!((rows[1].pct_of_roof.unwrap() - 0.05).abs() < 1e-9);
        assert_eq!(rows[1].accounting.unwrap().bound, Bound::Memory);
    }

    #[test]
    fn merge_keeps_every_part_and_refuses_what_does_not_belong_together() {
        let run = |date: &str, gpu: &str, rows: Vec<Row>, dram: f64| Report {
            rooflab_version: "1".into(),
            date_utc: date.into(),
            device: Some(serde_json::json!({ "name": gpu })),
            measured: true,
            ceilings: None,
            roofs: Some(Roofs {
                dram_gbps: dram,
                l2_gbps: None,
                smem_gbps: None,
                fp32_gflops: 1.0,
                compute: vec![],
                instruction_ceilings: vec![],
                launch_us: None,
                origin: "test".into(),
            }),
            rows,
            note: None,
        };
        let mut b = row("b", "copy", 2.0, 100);
        b.pct_of_roof = Some(50.0);
        let a = || run("2026-12-09 10:00", "H200", vec![row("a", "copy", 1.0, 100)], 4200.0);
        let m = merge(vec![("a.json".into(), a()), ("b.json".into(), run("2026-12-09 10:09", "H200", vec![b.clone()], 4300.0))])
            .unwrap();
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.rows[1].pct_of_roof, Some(50.0), "a row keeps its own run's figures");
        assert_eq!(m.date_utc, "2026-12-09 10:00 to 2026-12-09 10:09");
        assert_eq!(m.roofs.as_ref().unwrap().dram_gbps, 4200.0);
        let note = m.note.unwrap();
        assert!(note.contains("merged from 2 runs on H200") && note.contains("DRAM roof 4300 GB/s"), "{note}");
        let e = |parts: Vec<(String, Report)>| merge(parts).unwrap_err().to_string();
        assert!(e(vec![]).contains("no bench.json"));
        let other = run("d", "H100", vec![b.clone()], 3000.0);
        assert!(e(vec![("a.json".into(), a()), ("h.json".into(), other)]).contains("one GPU"));
        let twice = e(vec![("a.json".into(), a()), ("c.json".into(), a())]);
        assert!(twice.contains("row a at n is in a.json and c.json"), "{twice}");
        let mut pred = run("d", "H200", vec![b], 1.0);
        pred.measured = false;
        assert!(e(vec![("a.json".into(), a()), ("p.json".into(), pred)]).contains("predicted"));
    }

    #[test]
    fn compare_flags_regressions() {
        let old = Report {
            rooflab_version: "0".into(),
            date_utc: "d".into(),
            device: None,
            measured: true,
            ceilings: None,
            roofs: None,
            rows: vec![row("a", "copy", 10.0, 1), row("b", "copy", 10.0, 1)],
            note: None,
        };
        let mut rows = vec![
            row("a", "copy", 10.5, 1),
            row("b", "copy", 12.0, 1),
            row("c", "copy", 1.0, 1),
        ];
        let reg = compare(&mut rows, &old, 10.0);
        assert_eq!(reg.len(), 1);
        assert!(!rows[0].regressed && rows[1].regressed);
        assert!((rows[1].change_pct.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(rows[2].old_median_us, None);
        assert_eq!(change_cell(&rows[1], 10.0), "+20.0% SLOWER");

        // 12% slower, but the run's roof fell with it (80% -> 79.5% of the roof): the GPU ran
        // slower, not the kernel; not flagged. 12% slower at 80% -> 70%: flagged.
        let with_roof = |median: f64, pct: f64| Row {
            pct_of_roof: Some(pct),
            ..row("k", "gemm", median, 1)
        };
        let old = Report {
            rows: vec![with_roof(100.0, 80.0)],
            ..old
        };
        let mut rows = vec![with_roof(112.0, 79.5)];
        assert!(compare(&mut rows, &old, 10.0).is_empty());
        assert!(!rows[0].regressed && (rows[0].roof_change_pct.unwrap() - 0.625).abs() < 1e-9);
        assert_eq!(change_cell(&rows[0], 10.0), "+12.0% (roof too)");
        let mut rows = vec![with_roof(112.0, 70.0)];
        assert_eq!(compare(&mut rows, &old, 10.0).len(), 1);
        assert!(rows[0].regressed);
    }

    #[test]
    fn resources_attach_by_the_kernels_a_row_records() {
        let res = |name: &str, regs: u32| KernelResources {
            arch: "sm_90".into(),
            name: name.into(),
            registers: Some(regs),
            spill_stores: 0,
            spill_loads: 4,
            stack_frame: 0,
            smem: 0,
        };
        // Two kernels of one row (a stats and an apply pass), and one whose name shares
        // every word with them but the dtype.
        let all = [
            res("fam_stats_rms_bf16", 20),
            res("fam_apply_rms_bf16", 30),
            res("fam_apply_rms_f32", 99),
        ];
        let mut r = row("fam/two_pass_rms_bf16", "rms", 1.0, 8);
        r.kernels = vec!["fam_stats_rms_bf16".into(), "fam_apply_rms_bf16".into()];
        let mut other = row("fam/copy", "copy", 1.0, 8);
        other.kernels = vec!["fam_copy".into()];
        let mut rows = [r, other];
        attach_resources(&mut rows, &all, "sm_90");
        // The most registers of the row's two kernels, spills summed; the f32 entry is not
        // the row's although its name shares every word but one.
        assert_eq!(rows[0].registers, Some(30));
        assert_eq!(rows[0].spill_bytes, Some(8));
        assert_eq!(rows[1].registers, None);
    }
}
