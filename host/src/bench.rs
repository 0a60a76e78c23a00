//! The bench: cases, timing, and the report (table, JSON, CSV).
//!
//! Each op file offers [`Case`]s: a variant at a shape, its [`Cost`], and a way to prepare a
//! [`Workload`] (buffers filled with random data). For every case the runner checks the
//! result once against the CPU reference, warms up, times many launches with CUDA events,
//! and reports the median and the spread. A failing case becomes a failed row; the run goes
//! on (unless the context died) and the caller exits non-zero at the end.

use std::path::Path;

use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::roofline::{Accounting, Bound, Roofs};

/// One prepared variant at one shape, with its buffers on the device.
pub trait Workload {
    /// Poison the output, launch once, compare every element with the CPU reference.
    fn check(&mut self, gpu: &Gpu) -> Result<()>;
    /// One launch for timing. `i` counts launches; workloads with several buffer sets (to
    /// keep inputs out of L2) use `i % sets`.
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()>;
    /// The library a user would pick instead (cuBLAS, ...), run in-process on the same
    /// buffers and shapes.
    fn peer(&self) -> Peer {
        Peer::None
    }
    /// One launch of the peer (called only when `peer()` is `Available`).
    fn launch_peer(&mut self, _gpu: &Gpu, _i: usize) -> Result<()> {
        Err(Error::Other("this workload has no in-process peer".into()))
    }
}

/// Whether a case has a peer library to compare with, and if so whether it can run here.
#[derive(Clone, Debug, PartialEq)]
pub enum Peer {
    None,
    /// e.g. "cuBLAS not found, peer column skipped".
    Unavailable(String),
    /// The peer's name, e.g. "cuBLAS SGEMM".
    Available(String),
}

/// A case PyTorch can run too (timed out of process by `host/peer/torch_peer.py`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TorchSpec {
    /// The op as the script names it, e.g. "softmax", "layer_norm", "rms_norm", "gelu_chain".
    pub op: String,
    pub shape: Vec<u64>,
    /// "float32" or "bfloat16".
    pub dtype: String,
}

pub type Prepare = Box<dyn Fn(&Gpu) -> Result<Box<dyn Workload>>>;

/// A variant at a shape, as the bench and the report see it.
pub struct Case {
    pub family: &'static str,
    /// The variant's stem plus op, e.g. `v02_coalesced_copy`: the kernel entry minus family.
    pub variant: &'static str,
    /// The ladder this row climbs (rows of one ladder at one shape share a baseline: its
    /// first row, the v01 step).
    pub ladder: &'static str,
    pub shape: String,
    /// Extra words for the row (e.g. "stride 32").
    pub note: String,
    pub cost: Cost,
    pub prepare: Prepare,
    /// Set when PyTorch has the same op: the bench's `--peer torch` times it.
    pub torch: Option<TorchSpec>,
}

impl Case {
    pub fn name(&self) -> String {
        format!("{}/{}", self.family, self.variant)
    }
}

/// How many buffer sets to rotate through so that one pass over all of them is at least
/// three times the L2: then no timed launch finds its inputs in cache.
pub fn rotation_sets(bytes_per_set: u64, l2_bytes: u64) -> usize {
    if bytes_per_set == 0 {
        return 1;
    }
    (3 * l2_bytes).div_ceil(bytes_per_set).clamp(1, 64) as usize
}

/// Timing statistics of one case, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub median_us: f64,
    pub p10_us: f64,
    pub p90_us: f64,
    pub min_us: f64,
    pub reps: usize,
}

impl Stats {
    pub fn from_samples(mut s: Vec<f64>) -> Stats {
        assert!(!s.is_empty(), "no timing samples");
        s.sort_by(f64::total_cmp);
        let q = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
        Stats {
            median_us: q(0.5),
            p10_us: q(0.1),
            p90_us: q(0.9),
            min_us: s[0],
            reps: s.len(),
        }
    }
    /// (p90 - p10) / median, in percent.
    pub fn spread_pct(&self) -> f64 {
        100.0 * (self.p90_us - self.p10_us) / self.median_us
    }
}

/// Repetition counts.
#[derive(Clone, Copy, Debug)]
pub struct Reps {
    pub warmup: usize,
    pub timed: usize,
}

/// GPU time the timed launches of one case may take: a case whose launch is long (an
/// 8192³ SGEMM step takes 25-60 ms) gets fewer samples than `Reps::timed`, never fewer than
/// [`MIN_TIMED`]; its median is already stable there, and the run stays within minutes.
pub const TIME_BUDGET_US: f64 = 1.0e6;
/// The fewest timed launches a case gets (unless `Reps::timed` asks for fewer).
pub const MIN_TIMED: usize = 10;

impl Reps {
    /// Timed launches for a kernel whose warm-up launches took `warm_us` each (median).
    pub fn timed_for(self, warm_us: f64) -> usize {
        let fit = (TIME_BUDGET_US / warm_us.max(1e-3)) as usize;
        fit.clamp(MIN_TIMED.min(self.timed), self.timed.max(1))
    }
}

/// Warm up (the warm-up launches' median sizes the timed run), then time: the samples.
pub fn time_launches(
    gpu: &Gpu,
    reps: Reps,
    mut launch: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<f64>> {
    let warm = gpu.time(0, reps.warmup.max(1), &mut launch)?;
    let warm_us = Stats::from_samples(warm).median_us;
    gpu.time(0, reps.timed_for(warm_us), launch)
}

/// One line of the report.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Row {
    pub name: String,
    pub family: String,
    pub variant: String,
    pub ladder: String,
    pub shape: String,
    pub note: String,
    pub flops: u64,
    pub min_bytes: u64,
    pub modelled_bytes: u64,
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
    /// The peer library (or why it did not run).
    pub peer: Option<String>,
    pub peer_median_us: Option<f64>,
    /// Peer time over this row's time, in percent (100 = as fast as the peer).
    pub pct_of_peer: Option<f64>,
    /// Timed launches behind the median (fewer than asked for long kernels: TIME_BUDGET_US).
    #[serde(default)]
    pub reps: Option<usize>,
    /// Wall-clock seconds the row took on the host: inputs, check, warm-up, timing, peer.
    #[serde(default)]
    pub wall_s: Option<f64>,
}

/// The row of a case before anything is measured.
fn run_case_row(case: &Case) -> Row {
    Row {
        name: case.name(),
        family: case.family.into(),
        variant: case.variant.into(),
        ladder: case.ladder.into(),
        shape: case.shape.clone(),
        note: case.note.clone(),
        flops: case.cost.flops.0,
        min_bytes: case.cost.min_bytes.0,
        modelled_bytes: case.cost.modelled_bytes.0,
        median_us: None,
        p10_us: None,
        p90_us: None,
        spread_pct: None,
        gbps: None,
        tflops: None,
        accounting: None,
        pct_of_roof: None,
        registers: None,
        spill_bytes: None,
        old_median_us: None,
        change_pct: None,
        regressed: false,
        speedup_vs_v01: None,
        predicted_speedup_vs_v01: None,
        correct: false,
        error: None,
        peer: None,
        peer_median_us: None,
        pct_of_peer: None,
        reps: None,
        wall_s: None,
    }
}

/// Peer timings already taken in this run, by family, shape and peer: every variant of a
/// ladder at one shape compares with the same peer call, which is timed once.
pub type PeerCache = std::collections::HashMap<String, f64>;

/// Run one case: prepare, check, time. Errors become a failed row.
pub fn run_case(gpu: &Gpu, case: &Case, reps: Reps, peers: &mut PeerCache) -> (Row, Option<Error>) {
    let started = std::time::Instant::now();
    let mut row = run_case_row(case);
    let result = (|| -> Result<Stats> {
        let mut w = (case.prepare)(gpu)?;
        w.check(gpu)?;
        let samples = time_launches(gpu, reps, |i| w.launch(gpu, i))?;
        match w.peer() {
            Peer::None => {}
            Peer::Unavailable(why) => row.peer = Some(why),
            Peer::Available(name) => {
                let key = format!("{}|{}|{}", case.family, case.shape, name);
                let median = match peers.get(&key) {
                    Some(&m) => m,
                    None => {
                        let m = Stats::from_samples(time_launches(gpu, reps, |i| {
                            w.launch_peer(gpu, i)
                        })?)
                        .median_us;
                        peers.insert(key, m);
                        m
                    }
                };
                row.peer = Some(name);
                row.peer_median_us = Some(median);
            }
        }
        Ok(Stats::from_samples(samples))
    })();
    match result {
        Ok(s) => {
            row.pct_of_peer = row.peer_median_us.map(|p| 100.0 * p / s.median_us);
            row.correct = true;
            row.median_us = Some(s.median_us);
            row.p10_us = Some(s.p10_us);
            row.p90_us = Some(s.p90_us);
            row.spread_pct = Some(s.spread_pct());
            row.reps = Some(s.reps);
            row.wall_s = Some(started.elapsed().as_secs_f64());
            row.gbps = Some(case.cost.min_bytes.gbps(s.median_us));
            row.tflops = Some(case.cost.flops.tflops(s.median_us));
            (row, None)
        }
        Err(e) => {
            row.error = Some(e.to_string());
            (row, Some(e))
        }
    }
}

/// A row for a case that was not run (no GPU): cost and accounting only.
pub fn unmeasured_row(case: &Case) -> Row {
    let mut r = run_case_row(case);
    r.error = Some("needs a GPU".into());
    r
}

/// Fill the columns that relate rows to each other and to the roofs.
pub fn relate(rows: &mut [Row], roofs: Option<&Roofs>) {
    for i in 0..rows.len() {
        if let Some(roofs) = roofs {
            let cost = Cost {
                flops: Flops(rows[i].flops),
                min_bytes: Bytes(rows[i].min_bytes),
                modelled_bytes: Bytes(rows[i].modelled_bytes),
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
            if change > threshold_pct {
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

/// Whether kernel entry `entry` belongs to a row: it starts with `family_vNN_` and carries
/// every word of the row's variant (so `norm_v01_two_pass_stats_rmsnorm_bf16` and
/// `..._apply_...` both belong to row `v01_two_pass_rmsnorm_bf16`).
pub fn entry_belongs_to(entry: &str, family: &str, variant: &str) -> bool {
    let Some(rest) = entry.strip_prefix(family).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    let words: Vec<&str> = rest.split('_').collect();
    let mut want = variant.split('_');
    want.next().is_some_and(|step| words.first() == Some(&step)) && want.all(|w| words.contains(&w))
}

/// Attach ptxas figures (for `arch`) to rows: every kernel entry of the row (several for
/// multi-kernel variants; the largest register count shown, spills summed).
pub fn attach_resources(rows: &mut [Row], res: &[KernelResources], arch: &str) {
    for r in rows.iter_mut() {
        let mine: Vec<_> = res
            .iter()
            .filter(|k| k.arch == arch && entry_belongs_to(&k.name, &r.family, &r.variant))
            .collect();
        if !mine.is_empty() {
            r.registers = mine.iter().filter_map(|k| k.registers).max();
            r.spill_bytes = Some(mine.iter().map(|k| k.spill_stores + k.spill_loads).sum());
        }
    }
}

/// The report as a terminal table. Without a GPU the measured columns say "needs a GPU" and
/// the predicted floor time is shown instead.
pub fn table(rows: &[Row], measured: bool, compared: bool) -> comfy_table::Table {
    use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let f = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    let x = |v: Option<f64>| v.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".into());
    let mut header = vec!["family/variant", "shape", "AI F/B", "bound", "floor µs"];
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
        if compared {
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
                match a.bound {
                    Bound::Memory => "memory".to_string(),
                    Bound::Compute => "compute".to_string(),
                },
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
            if compared {
                cells.push(match r.change_pct {
                    Some(c) if r.regressed => format!("{c:+.1}% SLOWER"),
                    Some(c) => format!("{c:+.1}%"),
                    None => "new".into(),
                });
            }
            cells.push(if r.correct {
                "yes".into()
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
    pub ceilings: Option<crate::ceilings::Ceilings>,
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

pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_median_and_spread() {
        let s = Stats::from_samples(vec![5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median_us, 3.0);
        assert_eq!(s.min_us, 1.0);
        assert_eq!(s.reps, 5);
        let s = Stats::from_samples((1..=11).map(|x| x as f64).collect());
        assert_eq!((s.p10_us, s.median_us, s.p90_us), (2.0, 6.0, 10.0));
        assert!((s.spread_pct() - 800.0 / 6.0).abs() < 1e-9);
    }

    #[test]
    fn rotation_covers_three_l2() {
        let l2 = 60 << 20;
        assert_eq!(rotation_sets(1 << 30, l2), 1);
        assert_eq!(rotation_sets(16 << 20, l2), 12);
        assert_eq!(rotation_sets(1, l2), 64);
    }

    fn row(name: &str, ladder: &str, median: f64, bytes: u64) -> Row {
        Row {
            name: name.into(),
            family: "memory".into(),
            variant: name.into(),
            ladder: ladder.into(),
            shape: "n".into(),
            note: String::new(),
            flops: 0,
            min_bytes: 100,
            modelled_bytes: bytes,
            median_us: Some(median),
            p10_us: None,
            p90_us: None,
            spread_pct: None,
            gbps: Some(100.0 / median),
            tflops: None,
            accounting: None,
            pct_of_roof: None,
            registers: None,
            spill_bytes: None,
            old_median_us: None,
            change_pct: None,
            regressed: false,
            speedup_vs_v01: None,
            predicted_speedup_vs_v01: None,
            correct: true,
            error: None,
            peer: None,
            peer_median_us: None,
            pct_of_peer: None,
            reps: Some(50),
            wall_s: Some(1.0),
        }
    }

    #[test]
    fn long_kernels_get_fewer_timed_launches() {
        let reps = Reps {
            warmup: 10,
            timed: 50,
        };
        assert_eq!(reps.timed_for(5.0), 50);
        assert_eq!(reps.timed_for(40_000.0), 25);
        assert_eq!(reps.timed_for(500_000.0), MIN_TIMED);
        let few = Reps {
            warmup: 1,
            timed: 3,
        };
        assert_eq!(few.timed_for(500_000.0), 3);
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
    fn entries_belong_to_their_rows() {
        assert!(entry_belongs_to(
            "norm_v01_two_pass_stats_rmsnorm_bf16",
            "norm",
            "v01_two_pass_rmsnorm_bf16"
        ));
        assert!(entry_belongs_to(
            "norm_v01_two_pass_apply_rmsnorm_bf16",
            "norm",
            "v01_two_pass_rmsnorm_bf16"
        ));
        assert!(!entry_belongs_to(
            "norm_v01_two_pass_apply_rmsnorm_f32",
            "norm",
            "v01_two_pass_rmsnorm_bf16"
        ));
        assert!(entry_belongs_to(
            "memory_v01_strided_copy",
            "memory",
            "v01_strided_copy"
        ));
        assert!(!entry_belongs_to(
            "memory_v01_strided_saxpy",
            "memory",
            "v01_strided_copy"
        ));
        assert!(!entry_belongs_to(
            "memory_v02_coalesced_copy",
            "memory",
            "v01_strided_copy"
        ));
        assert!(!entry_belongs_to(
            "softmax_v05_row_in_registers_f32",
            "softmax",
            "auto_f32"
        ));
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
    }

    #[test]
    fn atomic_write_replaces_whole_file() {
        let dir = std::env::temp_dir().join(format!("rooflab-aw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        atomic_write(&p, b"old").unwrap();
        atomic_write(&p, b"new").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
