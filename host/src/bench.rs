//! The bench: cases and how one is run (prepare, check, time, peer). Timing is in
//! [`crate::timing`], the report (rows, table, JSON, CSV) in [`crate::report`].
//!
//! Each op file offers [`Case`]s: a variant at a shape, its [`Cost`], and a way to prepare a
//! [`Workload`] (buffers filled with random data). For every case the runner checks the
//! result once against the CPU reference, warms up, times many launches with CUDA events,
//! and reports the median and the spread; an in-process peer is timed in blocks alternating
//! with the case's own launches (`timing::time_paired`). A failing case becomes a failed row; the run goes
//! on (unless the context died) and the caller exits non-zero at the end.

use crate::cost::Cost;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
pub use crate::gpu::KernelUse;
use crate::report::Row;
use crate::timing::{Reps, Stats, time_launches, time_paired};

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
    /// One launch that records every block's stamps (`--timeline`, [`crate::timeline`]);
    /// `None` for kernels that do not record them.
    fn timeline(&mut self, _gpu: &Gpu) -> Option<Result<Vec<crate::timeline::BlockStamps>>> {
        None
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

/// A case PyTorch can run too (timed out of process by `host/peer/torch_peer.py`, checked
/// by `torch_peer`): eager and compiled for the fusion families, SDPA's flash and cuDNN
/// backends for prefill attention, SDPA on a contiguous KV cache for decode.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TorchSpec {
    /// The op as the script names it: "softmax", "layer_norm", "rms_norm",
    /// "gelu_chain_tanh", "gelu_chain_erf", "sdpa", "sdpa_causal", "decode_sdpa".
    pub op: String,
    pub shape: Vec<u64>,
    /// "float32" or "bfloat16".
    pub dtype: String,
    /// Per-sequence context lengths ("decode_sdpa"; empty for every other op), sent with the
    /// request so that the peer attends over exactly the keys rooflab's row does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lens: Vec<u32>,
}

pub type Prepare = Box<dyn Fn(&Gpu) -> Result<Box<dyn Workload>>>;

/// A variant at a shape, as the bench and the report see it.
pub struct Case {
    pub family: &'static str,
    /// The variant's stem plus op, e.g. `v02_coalesced_copy`: the kernel entry minus family.
    pub variant: String,
    /// Every kernel one launch of the case runs (several for multi-kernel variants).
    pub kernels: Vec<KernelUse>,
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

/// The row of a case before anything is measured.
pub(crate) fn run_case_row(case: &Case) -> Row {
    Row {
        name: case.name(),
        family: case.family.into(),
        variant: case.variant.clone(),
        kernels: case
            .kernels
            .iter()
            .map(|k| k.kernel.name().to_string())
            .collect(),
        ladder: case.ladder.into(),
        shape: case.shape.clone(),
        note: case.note.clone(),
        flops: case.cost.flops.0,
        precision: case.cost.precision,
        min_bytes: case.cost.min_bytes.0,
        modelled_bytes: case.cost.modelled_bytes.0,
        scratch_bytes: case.cost.scratch_bytes.0,
        ..Row::default()
    }
}

/// Run one case: prepare, check, time. Errors become a failed row.
pub fn run_case(gpu: &Gpu, case: &Case, reps: Reps) -> (Row, Option<Error>) {
    let started = std::time::Instant::now();
    let mut row = run_case_row(case);
    // A step built only for another architecture is listed, not failed.
    if let Some(e) = case
        .kernels
        .iter()
        .find_map(|k| gpu.available(k.kernel).err())
    {
        match e {
            Error::Unavailable { .. } => {
                row.unavailable = Some(e.to_string());
                return (row, None);
            }
            e => {
                row.error = Some(e.to_string());
                return (row, Some(e));
            }
        }
    }
    let result = (|| -> Result<(Stats, Box<dyn Workload>)> {
        let mut w = (case.prepare)(gpu)?;
        w.check(gpu)?;
        // With a peer, both are timed alternately (`time_paired`): the same clock history
        // on both sides of the comparison.
        let samples = match w.peer() {
            Peer::None => time_launches(gpu, reps, |i| w.launch(gpu, i))?,
            Peer::Unavailable(why) => {
                row.peer = Some(why);
                time_launches(gpu, reps, |i| w.launch(gpu, i))?
            }
            Peer::Available(name) => {
                let w = std::cell::RefCell::new(&mut w);
                let (ours, theirs) = time_paired(
                    gpu,
                    reps,
                    |i| w.borrow_mut().launch(gpu, i),
                    |i| w.borrow_mut().launch_peer(gpu, i),
                )?;
                row.peer = Some(name);
                row.peer_median_us = Some(Stats::from_samples(theirs).median_us);
                ours
            }
        };
        Ok((Stats::from_samples(samples), w))
    })();
    let (result, twin_err) = match result {
        Ok((s, mut w)) => {
            let twin_err = run_twin(gpu, case, reps, &mut *w, &mut row);
            (Ok(s), twin_err)
        }
        Err(e) => (Err(e), None),
    };
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
            (row, twin_err)
        }
        Err(e) => {
            row.error = Some(e.to_string());
            (row, Some(e))
        }
    }
}

/// The CUDA C++ twin of a twinned step (`host/twins`, `rooflab_kernels::twins`): the same
/// workload, checked against the same CPU reference with every launch sent to the twin
/// (`Gpu::as_twin`), then timed alternating with the Rust kernel so both see the same clock
/// history. Fills the row's twin columns; returns the error of a twin that failed its check
/// (the bench counts it as a failure) or of a fault that killed the context.
fn run_twin(
    gpu: &Gpu,
    case: &Case,
    reps: Reps,
    w: &mut dyn Workload,
    row: &mut Row,
) -> Option<Error> {
    let ids: Vec<_> = case.kernels.iter().map(|k| k.kernel).collect();
    if !ids.iter().any(|&k| rooflab_kernels::twins::twinned(k)) {
        return None;
    }
    if let Err(why) = gpu.twins_available(&ids) {
        row.twin = Some(why);
        return None;
    }
    row.twin = Some(TWIN_NAME.into());
    if let Err(e) = gpu.as_twin(|| w.check(gpu)) {
        row.twin_error = Some(e.to_string());
        return Some(e);
    }
    let w = std::cell::RefCell::new(w);
    match time_paired(
        gpu,
        reps,
        |i| w.borrow_mut().launch(gpu, i),
        |i| gpu.as_twin(|| w.borrow_mut().launch(gpu, i)),
    ) {
        Ok((ours, theirs)) => {
            let (ours, theirs) = (
                Stats::from_samples(ours).median_us,
                Stats::from_samples(theirs).median_us,
            );
            row.twin_median_us = Some(theirs);
            row.rust_vs_twin = Some(ours / theirs);
            None
        }
        Err(e) => {
            row.twin_error = Some(e.to_string());
            Some(e)
        }
    }
}

/// What the twin column calls the twins.
pub const TWIN_NAME: &str = "CUDA C++ twin (NVRTC)";

/// A row for a case that was not run (no GPU): cost and accounting only.
pub fn unmeasured_row(case: &Case) -> Row {
    let mut r = run_case_row(case);
    r.error = Some("needs a GPU".into());
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_covers_three_l2() {
        let l2 = 60 << 20;
        assert_eq!(rotation_sets(1 << 30, l2), 1);
        assert_eq!(rotation_sets(16 << 20, l2), 12);
        assert_eq!(rotation_sets(1, l2), 64);
    }
}
