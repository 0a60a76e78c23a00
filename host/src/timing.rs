//! Timing: warm up, time many launches with CUDA events, and the statistics of the samples
//! (median and spread). Used by the bench and by the ceilings.

use crate::error::Result;
use crate::gpu::Gpu;

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

/// How many alternating blocks [`time_paired`] splits each side's timed launches into.
pub const PAIRED_BLOCKS: usize = 5;

/// Time a kernel (`a`) and its peer (`b`) under the same conditions: warm both up, then
/// alternate blocks of launches, a, b, a, b, ... ([`PAIRED_BLOCKS`] of each). A GPU at full
/// tensor load leaves its boost clock within milliseconds and settles by power, so a peer
/// timed once, earlier in the run, can see another clock than the row it is compared with
/// (seen on the H200: one kernel's 8192³ median moved 13% between two rows of one run).
/// Alternating puts the same clock history on both sides. Launch indices keep counting
/// across blocks (input rotation). The samples of `a`, then of `b`.
pub fn time_paired(
    gpu: &Gpu,
    reps: Reps,
    mut a: impl FnMut(usize) -> Result<()>,
    mut b: impl FnMut(usize) -> Result<()>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let warmup = reps.warmup.max(1);
    let warm_a = Stats::from_samples(gpu.time(0, warmup, &mut a)?).median_us;
    let warm_b = Stats::from_samples(gpu.time(0, warmup, &mut b)?).median_us;
    let n = reps.timed_for(warm_a.max(warm_b));
    let block = n.div_ceil(PAIRED_BLOCKS).max(1);
    let (mut sa, mut sb) = (Vec::with_capacity(n), Vec::with_capacity(n));
    while sa.len() < n {
        let (first, k) = (warmup + sa.len(), block.min(n - sa.len()));
        sa.extend(gpu.time(0, k, |i| a(first + i))?);
        sb.extend(gpu.time(0, k, |i| b(first + i))?);
    }
    Ok((sa, sb))
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
}
