//! ceilings/empty_launch — launch overhead.
//!
//! What it does: nothing. Timing many back-to-back launches of it on one stream gives the
//! per-launch cost every small kernel pays (the floor under any kernel's time).
//!
//! Thread mapping: one block of `BLOCK_THREADS`.
//!
//! Memory traffic: none.
//!
//! Expected bound: launch latency (a few µs).

pub const BLOCK_THREADS: u32 = 32;
/// Launches timed per sample (the per-launch figure is the sample over this).
pub const LAUNCHES_PER_SAMPLE: usize = 100;

crate::kernel! {
    /// Does nothing.
    pub unsafe fn ceilings_empty_launch() {}
}
