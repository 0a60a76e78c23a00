//! `rooflab-bench --timeline NAME[@SHAPE]`: where one launch's time goes, block by block.
//!
//! A kernel that supports it (decode's stream-K steps v08-v11) is passed a buffer in which
//! thread 0 of every block writes the GPU's nanosecond clock (`%globaltimer`, one clock for
//! all SMs) when the block starts, when its first data is in, when its tiles are done and
//! when it ends, and its SM.
//! Nsight Compute gives per-SM active cycles, not when: this says whether a launch loses its
//! time at the start (blocks that begin late), in the middle (all blocks busy, the memory
//! system not), or at the end (a tail of blocks still working, a combine after the rest).
//!
//! `profile::run_timeline` checks the launch first, warms up, then runs it [`RUNS`] times
//! with stamps and as many times without (CUDA events), so the report shows whether stamping
//! changed the time. The median-span run is summarized ([`Summary`]) and written as CSV
//! (`OUT/timeline.csv`).

use std::path::Path;

use crate::error::{Error, Result};

/// Stamped launches (and as many unstamped, timed with events).
pub const RUNS: usize = 7;
/// Columns of the text histogram.
pub const COLUMNS: usize = 48;

/// One block's stamps (GPU clock, ns) and SM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStamps {
    pub start_ns: u64,
    /// When the block's first input tile had arrived (decode: warp 0's first buffer).
    pub first_data_ns: u64,
    /// When the block's own work (its tiles) was done, before any work that waits on other
    /// blocks (decode: the pair's combine in its last block).
    pub tiles_done_ns: u64,
    pub end_ns: u64,
    pub sm: u32,
}

/// Nearest-rank quantile of sorted values (`q` in [0, 1]).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Min, median and max of `v` (µs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        v.sort_by(f64::total_cmp);
        Spread {
            min: quantile(&v, 0.0),
            median: quantile(&v, 0.5),
            max: quantile(&v, 1.0),
        }
    }
}

impl std::fmt::Display for Spread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} / {:.1} / {:.1}", self.min, self.median, self.max)
    }
}

/// A launch's stamps reduced to what the report prints (times in µs from the first start).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub blocks: usize,
    pub sms: usize,
    /// First start to last end.
    pub span_us: f64,
    pub start: Spread,
    /// Per block, first data − start: the latency of its set-up and first load.
    pub to_first_data: Spread,
    /// Per block, tiles done − first data: how long its own work took once data came (for
    /// blocks of equal work, e.g. decode at batch 1, the spread is the SMs' imbalance).
    pub working: Spread,
    pub tiles_done: Spread,
    pub end: Spread,
    /// Per block, end − tiles done (decode: the combine of a pair's last block).
    pub after_tiles: Spread,
    /// Per SM, its last block's end.
    pub sm_end: Spread,
    /// Last start to first tiles done: the stretch in which every block is at its tiles.
    pub all_busy_us: f64,
    /// Blocks at their tiles in each of [`COLUMNS`] equal slices of the span (the mean over
    /// the slice), and blocks past their tiles but not yet ended.
    pub busy: Vec<f64>,
    pub finishing: Vec<f64>,
}

/// Why a set of stamps cannot be a timeline: no blocks, a block that never wrote its stamps
/// (0), or stamps out of order.
fn validate(stamps: &[BlockStamps]) -> Result<()> {
    if stamps.is_empty() {
        return Err(Error::Other("the launch recorded no blocks".into()));
    }
    for (g, s) in stamps.iter().enumerate() {
        if s.start_ns == 0 || s.first_data_ns == 0 || s.tiles_done_ns == 0 || s.end_ns == 0 {
            return Err(Error::Other(format!(
                "block {g} left a stamp unwritten ({s:?}): the kernel did not run every block \
                 to its end, or does not record stamps"
            )));
        }
        let ordered = s.start_ns <= s.first_data_ns
            && s.first_data_ns <= s.tiles_done_ns
            && s.tiles_done_ns <= s.end_ns;
        if !ordered {
            return Err(Error::Other(format!("block {g}'s stamps are out of order: {s:?}")));
        }
    }
    Ok(())
}

impl Summary {
    pub fn new(stamps: &[BlockStamps]) -> Result<Summary> {
        validate(stamps)?;
        let t0 = stamps.iter().map(|s| s.start_ns).min().unwrap_or(0);
        let us = |t: u64| (t - t0) as f64 / 1e3;
        let span_us = us(stamps.iter().map(|s| s.end_ns).max().unwrap_or(t0));
        let col = |f: fn(&BlockStamps) -> u64| Spread::of(stamps.iter().map(|s| us(f(s))).collect());
        let mut sm_end = std::collections::BTreeMap::<u32, u64>::new();
        for s in stamps {
            let e = sm_end.entry(s.sm).or_default();
            *e = (*e).max(s.end_ns);
        }
        let last_start = stamps.iter().map(|s| s.start_ns).max().unwrap_or(t0);
        let first_done = stamps.iter().map(|s| s.tiles_done_ns).min().unwrap_or(t0);
        // Time-weighted occupancy of each slice: the overlap of [a, b) with the slice.
        let slice = span_us / COLUMNS as f64;
        let occupancy = |a: f64, b: f64, out: &mut Vec<f64>| {
            for (c, o) in out.iter_mut().enumerate() {
                let (lo, hi) = (c as f64 * slice, (c + 1) as f64 * slice);
                let overlap = (b.min(hi) - a.max(lo)).max(0.0);
                if slice > 0.0 {
                    *o += overlap / slice;
                }
            }
        };
        let (mut busy, mut finishing) = (vec![0.0; COLUMNS], vec![0.0; COLUMNS]);
        for s in stamps {
            occupancy(us(s.start_ns), us(s.tiles_done_ns), &mut busy);
            occupancy(us(s.tiles_done_ns), us(s.end_ns), &mut finishing);
        }
        Ok(Summary {
            blocks: stamps.len(),
            sms: sm_end.len(),
            span_us,
            start: col(|s| s.start_ns),
            to_first_data: Spread::of(
                stamps.iter().map(|s| (s.first_data_ns - s.start_ns) as f64 / 1e3).collect(),
            ),
            working: Spread::of(
                stamps.iter().map(|s| (s.tiles_done_ns - s.first_data_ns) as f64 / 1e3).collect(),
            ),
            tiles_done: col(|s| s.tiles_done_ns),
            end: col(|s| s.end_ns),
            after_tiles: Spread::of(
                stamps.iter().map(|s| (s.end_ns - s.tiles_done_ns) as f64 / 1e3).collect(),
            ),
            sm_end: Spread::of(sm_end.values().map(|&e| us(e)).collect()),
            all_busy_us: (first_done as f64 - last_start as f64).max(0.0) / 1e3,
            busy,
            finishing,
        })
    }

    /// The report's text: the spreads, then the histogram of blocks at work over the span.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let w = |s: &mut String, k: &str, v: String| s.push_str(&format!("  {k:<38} {v}\n"));
        w(&mut s, "blocks, SMs", format!("{}, {}", self.blocks, self.sms));
        w(&mut s, "span (first start to last end)", format!("{:.1} µs", self.span_us));
        w(&mut s, "start, µs (min / median / max)", self.start.to_string());
        w(&mut s, "first data − start, per block", self.to_first_data.to_string());
        w(&mut s, "tiles done − first data, per block", self.working.to_string());
        w(&mut s, "tiles done", self.tiles_done.to_string());
        w(&mut s, "end", self.end.to_string());
        w(&mut s, "end − tiles done, per block", self.after_tiles.to_string());
        w(&mut s, "last end per SM", self.sm_end.to_string());
        w(
            &mut s,
            "every block at its tiles",
            format!(
                "{:.1} µs ({:.0}% of the span)",
                self.all_busy_us,
                100.0 * self.all_busy_us / self.span_us.max(f64::MIN_POSITIVE)
            ),
        );
        let peak = self.busy.iter().chain(&self.finishing).fold(0.0f64, |a, &b| a.max(b));
        s.push_str(&format!(
            "  blocks at their tiles (#) and finishing (+), {} slices of {:.2} µs, full height \
             {:.0} blocks:\n",
            COLUMNS,
            self.span_us / COLUMNS as f64,
            peak
        ));
        const ROWS: usize = 8;
        for r in (0..ROWS).rev() {
            let level = peak * (r as f64 + 0.5) / ROWS as f64;
            let line: String = (0..COLUMNS)
                .map(|c| match () {
                    _ if self.busy[c] >= level => '#',
                    _ if self.busy[c] + self.finishing[c] >= level => '+',
                    _ => ' ',
                })
                .collect();
            s.push_str(&format!("  |{line}|\n"));
        }
        s
    }
}

/// The stamps as CSV: block, SM, then start, first data, tiles done and end in ns from the
/// first start.
pub fn write_csv(path: &Path, stamps: &[BlockStamps]) -> Result<()> {
    let t0 = stamps.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let mut w = csv::Writer::from_path(path)
        .map_err(|e| Error::Other(format!("cannot write {}: {e}", path.display())))?;
    let io = |e: csv::Error| Error::Other(format!("cannot write {}: {e}", path.display()));
    w.write_record(["block", "sm", "start_ns", "first_data_ns", "tiles_done_ns", "end_ns"])
        .map_err(io)?;
    for (g, s) in stamps.iter().enumerate() {
        w.write_record([
            g.to_string(),
            s.sm.to_string(),
            (s.start_ns - t0).to_string(),
            (s.first_data_ns - t0).to_string(),
            (s.tiles_done_ns - t0).to_string(),
            (s.end_ns - t0).to_string(),
        ])
        .map_err(io)?;
    }
    w.flush().map_err(|e| Error::Other(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A block whose first data comes 300 ns after its start.
    fn b(start: u64, done: u64, end: u64, sm: u32) -> BlockStamps {
        BlockStamps { start_ns: start, first_data_ns: start + 300, tiles_done_ns: done, end_ns: end, sm }
    }

    #[test]
    fn summary_of_a_known_launch() {
        // Four blocks on two SMs, clock offset by 10^9 ns; block 3 combines for 4 µs.
        let t = 1_000_000_000;
        let st = [
            b(t, t + 10_000, t + 10_500, 7),
            b(t + 1_000, t + 12_000, t + 12_000, 7),
            b(t + 500, t + 14_000, t + 14_000, 9),
            b(t + 2_000, t + 16_000, t + 20_000, 9),
        ];
        let s = Summary::new(&st).unwrap();
        assert_eq!((s.blocks, s.sms), (4, 2));
        assert!((s.span_us - 20.0).abs() < 1e-9);
        assert_eq!(s.start, Spread { min: 0.0, median: 1.0, max: 2.0 });
        assert_eq!(s.to_first_data, Spread { min: 0.3, median: 0.3, max: 0.3 });
        // Own work: 9.7, 10.7, 13.2 and 13.7 µs (nearest rank: the third is the median).
        assert!((s.working.min - 9.7).abs() < 1e-9 && (s.working.max - 13.7).abs() < 1e-9);
        assert!((s.working.median - 13.2).abs() < 1e-9, "{:?}", s.working);
        assert_eq!(s.end.max, 20.0);
        assert_eq!(s.after_tiles.max, 4.0);
        assert_eq!(s.sm_end, Spread { min: 12.0, median: 20.0, max: 20.0 });
        // Every block at its tiles from the last start (2 µs) to the first done (10 µs).
        assert!((s.all_busy_us - 8.0).abs() < 1e-9);
        // Block-time is conserved by the histogram: Σ busy · slice = Σ (done − start).
        let slice = s.span_us / COLUMNS as f64;
        let busy: f64 = s.busy.iter().sum::<f64>() * slice;
        assert!((busy - (10.0 + 11.0 + 13.5 + 14.0)).abs() < 1e-6, "{busy}");
        let fin: f64 = s.finishing.iter().sum::<f64>() * slice;
        assert!((fin - 4.5).abs() < 1e-6, "{fin}");
        // The first slice (0-0.42 µs) has only block 0 started; the last only block 3,
        // finishing.
        assert!((s.busy[0] - 1.0).abs() < 1e-9, "{}", s.busy[0]);
        assert_eq!(s.busy[COLUMNS - 1], 0.0);
        assert!((s.finishing[COLUMNS - 1] - 1.0).abs() < 1e-9);
        let text = s.render();
        assert!(text.contains("20.0 µs") && text.contains('#') && text.contains('+'), "{text}");
    }

    #[test]
    fn unwritten_or_disordered_stamps_are_refused() {
        assert!(Summary::new(&[]).is_err());
        let e = Summary::new(&[b(5, 600, 700, 0), b(5, 0, 700, 1)]).unwrap_err().to_string();
        assert!(e.contains("block 1") && e.contains("unwritten"), "{e}");
        let e = Summary::new(&[b(5, 900, 700, 0)]).unwrap_err().to_string();
        assert!(e.contains("out of order"), "{e}");
        // First data after the block's tiles were done, and before its start.
        let mut late = b(5, 600, 700, 0);
        late.first_data_ns = 650;
        assert!(Summary::new(&[late]).unwrap_err().to_string().contains("out of order"));
        let mut early = b(500, 600, 700, 0);
        early.first_data_ns = 400;
        assert!(Summary::new(&[early]).unwrap_err().to_string().contains("out of order"));
    }

    #[test]
    fn csv_is_relative_to_the_first_start() {
        let dir = std::env::temp_dir().join(format!("rooflab-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.csv");
        write_csv(&p, &[b(100, 1500, 1700, 3), b(90, 950, 2000, 4)]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "block,sm,start_ns,first_data_ns,tiles_done_ns,end_ns\n0,3,10,310,1410,1610\n1,4,0,300,860,1910\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
