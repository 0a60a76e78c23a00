//! The guided lab's modes of `rooflab-bench`: `--explain`, `--render`, `--profile-one`,
//! `--timeline`, `--ncu`, `--check-metrics`. Flattened into the bench's arguments;
//! [`LabArgs::run`] handles them before the bench proper starts (it returns `None` when none
//! was asked for).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::{docs, explain, html, profile};

#[derive(clap::Args, Debug, Default)]
pub struct LabArgs {
    /// Print one case's shape, cost model and predicted floor on `--device`, then exit
    /// (no GPU needed). NAME is `family/variant`, e.g. `memory/v03_vectorized_copy`.
    #[arg(long, value_name = "NAME")]
    pub explain: Option<String>,
    /// Render the guide's generated files (Markdown tables, SVG plots) from a bench.json into
    /// `--docs`, and fill the `<!-- rooflab:table ... -->` markers of its chapters.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub render: Option<PathBuf>,
    /// The guide's folder for `--render` (and whose chapters the HTML report links).
    #[arg(long, default_value = "docs")]
    pub docs: PathBuf,
    /// With `--render`: write only the HTML report (`OUT/report/index.html`), not the guide.
    #[arg(long)]
    pub report_only: bool,
    /// Warm up, then run exactly one launch of NAME between cuProfilerStart/cuProfilerStop
    /// (what `--ncu` runs under Nsight Compute).
    #[arg(long, value_name = "NAME")]
    pub profile_one: Option<String>,
    /// Merge these bench.json files (repeatable; runs of one GPU and build, e.g. the
    /// bundle's `./verify` parts) into OUT/bench.json and bench.csv, for one `--render`.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub merge: Vec<PathBuf>,
    /// Where one launch of NAME (`family/variant[@shape]`) spends its time, block by block:
    /// every block's start, first data, end of its own work, end and SM from the GPU clock,
    /// summarized and written to OUT/timeline.csv (decode's stream-K steps v08-v11 record
    /// them).
    #[arg(long, value_name = "NAME")]
    pub timeline: Option<String>,
    /// Profile one launch of NAME under Nsight Compute (`ncu`) with rooflab's metric set and
    /// print it next to the cost model.
    #[arg(long, value_name = "NAME")]
    pub ncu: Option<String>,
    /// With `--ncu`/`--check-metrics`: the ncu executable (default: PATH, then
    /// /usr/local/cuda/bin/ncu).
    #[arg(long, value_name = "PATH")]
    pub ncu_path: Option<PathBuf>,
    /// With `--ncu`: also print these Nsight Compute sections for the same launch, as ncu
    /// formats them (repeatable), e.g. `--ncu-section WarpStateStats` for where warps stall.
    #[arg(long, value_name = "SECTION")]
    pub ncu_section: Vec<String>,
    /// Print which of rooflab's ncu metrics `ncu --query-metrics` knows on this GPU.
    #[arg(long)]
    pub check_metrics: bool,
}

impl LabArgs {
    /// Runs the requested lab mode, if any. `size`, `device` and `out` are the bench's own
    /// flags (`--render` writes the HTML report under `out`).
    pub fn run(&self, size: Option<u64>, device: &str, out: &Path) -> Option<ExitCode> {
        if let Some(name) = &self.explain {
            return Some(explain::run(name, size, device));
        }
        if !self.merge.is_empty() {
            return Some(merge_runs(&self.merge, out));
        }
        if let Some(json) = &self.render {
            if !self.report_only {
                let code = docs::run(json, &self.docs);
                if code != ExitCode::SUCCESS {
                    return Some(code);
                }
            }
            return Some(html::run(json, out, &self.docs));
        }
        if let Some(name) = &self.profile_one {
            return Some(profile::run_one(name, size));
        }
        if let Some(name) = &self.timeline {
            return Some(profile::run_timeline(name, size, out));
        }
        if self.check_metrics {
            return Some(profile::check_metrics(self.ncu_path.as_deref()));
        }
        if let Some(name) = &self.ncu {
            return Some(profile::run_ncu(
                name,
                size,
                self.ncu_path.as_deref(),
                device,
                &self.ncu_section,
            ));
        }
        None
    }
}

/// `--merge A.json B.json ..`: [`crate::report::merge`] into `out`.
fn merge_runs(jsons: &[PathBuf], out: &Path) -> ExitCode {
    let parts: Result<Vec<_>, String> = jsons
        .iter()
        .map(|j| docs::load(j).map(|r| (j.display().to_string(), r)))
        .collect();
    let merged = parts.and_then(|p| crate::report::merge(p).map_err(|e| e.to_string()));
    match merged.and_then(|r| {
        crate::report::write_report(out, &r).map_err(|e| e.to_string())?;
        Ok(r)
    }) {
        Ok(r) => {
            println!("merged {} rows into {}", r.rows.len(), out.join("bench.json").display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rooflab: {e}");
            ExitCode::from(2)
        }
    }
}
