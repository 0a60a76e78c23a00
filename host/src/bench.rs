//! The bench: cases, timing, and the report (table, JSON, CSV).
//!
//! Each op file offers [`Case`]s: a variant at a shape, its [`Cost`], and a way to prepare a
//! [`Workload`] (buffers filled with random data). For every case the runner checks the
//! result once against the CPU reference, warms up, times many launches with CUDA events,
//! and reports the median and the spread. A failing case becomes a failed row; the run goes
//! on (unless the context died) and the caller exits non-zero at the end.

use std::path::Path;

use crate::cost::Cost;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

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
    /// `gbps` as a percentage of the copy ceiling measured in this run.
    pub pct_of_copy: Option<f64>,
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
}

/// Ceilings measured in this run.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ceilings {
    /// Device-to-device copy (cuMemcpyDtoD), bytes read + written per second, in GB/s.
    pub copy_gbps: f64,
    pub copy_bytes: u64,
    pub copy_stats: Stats,
}

/// Measure the copy ceiling: `cuMemcpyDtoD` of `bytes` (read + written counted).
pub fn measure_copy_ceiling(gpu: &Gpu, bytes: u64, reps: Reps) -> Result<Ceilings> {
    let n = (bytes / 4) as usize;
    let src = gpu.upload(&crate::check::random_f32(
        &mut crate::check::rng(1),
        n,
        -1.0,
        1.0,
    ))?;
    let mut dst = gpu.alloc::<f32>(n)?;
    let samples = gpu.time(reps.warmup, reps.timed, |_| {
        gpu.copy_device(src.view(), dst.view_mut())
    })?;
    let stats = Stats::from_samples(samples);
    let moved = crate::cost::Bytes(2 * n as u64 * 4);
    Ok(Ceilings {
        copy_gbps: moved.gbps(stats.median_us),
        copy_bytes: moved.0,
        copy_stats: stats,
    })
}

/// Run one case: prepare, check, time. Errors become a failed row.
pub fn run_case(gpu: &Gpu, case: &Case, reps: Reps) -> (Row, Option<Error>) {
    let mut row = Row {
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
        pct_of_copy: None,
        speedup_vs_v01: None,
        predicted_speedup_vs_v01: None,
        correct: false,
        error: None,
        peer: None,
        peer_median_us: None,
        pct_of_peer: None,
    };
    let result = (|| -> Result<Stats> {
        let mut w = (case.prepare)(gpu)?;
        w.check(gpu)?;
        let samples = gpu.time(reps.warmup, reps.timed, |i| w.launch(gpu, i))?;
        match w.peer() {
            Peer::None => {}
            Peer::Unavailable(why) => row.peer = Some(why),
            Peer::Available(name) => {
                row.peer = Some(name);
                let p = Stats::from_samples(
                    gpu.time(reps.warmup, reps.timed, |i| w.launch_peer(gpu, i))?,
                );
                row.peer_median_us = Some(p.median_us);
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
            row.gbps = Some(case.cost.min_bytes.gbps(s.median_us));
            (row, None)
        }
        Err(e) => {
            row.error = Some(e.to_string());
            (row, Some(e))
        }
    }
}

/// Fill the columns that relate rows to each other and to the ceilings.
pub fn relate(rows: &mut [Row], ceilings: Option<&Ceilings>) {
    for i in 0..rows.len() {
        if let (Some(g), Some(c)) = (rows[i].gbps, ceilings) {
            rows[i].pct_of_copy = Some(100.0 * g / c.copy_gbps);
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

/// The report as a terminal table.
pub fn table(rows: &[Row]) -> comfy_table::Table {
    use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "family/variant",
        "shape",
        "median µs",
        "spread %",
        "GB/s",
        "% copy",
        "vs v01",
        "model vs v01",
        "correct",
    ]);
    let f = |v: Option<f64>, d: usize| v.map(|x| format!("{x:.d$}")).unwrap_or_else(|| "-".into());
    for r in rows {
        let shape = if r.note.is_empty() {
            r.shape.clone()
        } else {
            format!("{} {}", r.shape, r.note)
        };
        t.add_row(vec![
            r.name.clone(),
            shape,
            f(r.median_us, 1),
            f(r.spread_pct, 1),
            f(r.gbps, 0),
            f(r.pct_of_copy, 1),
            r.speedup_vs_v01
                .map(|x| format!("{x:.2}x"))
                .unwrap_or("-".into()),
            r.predicted_speedup_vs_v01
                .map(|x| format!("{x:.2}x"))
                .unwrap_or("-".into()),
            if r.correct {
                "yes".into()
            } else {
                format!("NO: {}", r.error.as_deref().unwrap_or("?"))
            },
        ]);
    }
    for c in 2..8 {
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
    pub ceilings: Option<Ceilings>,
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
        w.serialize(r).map_err(|e| Error::Other(e.to_string()))?;
    }
    let bytes = w.into_inner().map_err(|e| Error::Other(e.to_string()))?;
    atomic_write(&dir.join("bench.csv"), &bytes).map_err(io)?;
    Ok(())
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
            pct_of_copy: None,
            speedup_vs_v01: None,
            predicted_speedup_vs_v01: None,
            correct: true,
            error: None,
            peer: None,
            peer_median_us: None,
            pct_of_peer: None,
        }
    }

    #[test]
    fn relate_uses_first_row_of_ladder() {
        let mut rows = vec![
            row("a", "copy", 8.0, 800),
            row("b", "copy", 2.0, 100),
            row("c", "saxpy", 3.0, 100),
        ];
        let c = Ceilings {
            copy_gbps: 100.0,
            copy_bytes: 0,
            copy_stats: Stats::from_samples(vec![1.0]),
        };
        relate(&mut rows, Some(&c));
        assert_eq!(rows[1].speedup_vs_v01, Some(4.0));
        assert_eq!(rows[1].predicted_speedup_vs_v01, Some(8.0));
        assert_eq!(rows[2].speedup_vs_v01, Some(1.0));
        assert!((rows[1].pct_of_copy.unwrap() - 50.0).abs() < 1e-9);
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
