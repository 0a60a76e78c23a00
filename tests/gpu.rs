//! GPU correctness tests: every `GpuTest` of every family (`rooflab::ops::all_tests`), each a
//! trial named after the kernel it checks (`memory_v02_coalesced_copy_matches_cpu`). Run by
//! `cargo xtask test` and by the bundle's `gpu-tests`. Without a GPU all are reported ignored.

use libtest_mimic::Arguments;
use rooflab::check::seed;
use rooflab_tests::{probe, trial};

fn main() {
    if std::env::var_os(rooflab::testing::CHILD_VAR).is_some() {
        rooflab::testing::run_fault_child();
    }
    let args = Arguments::from_args();
    let s = seed();
    let mut trials: Vec<_> = rooflab::ops::all_tests(s).into_iter().map(trial).collect();
    match probe() {
        Ok(()) => eprintln!("rooflab GPU tests: seed {s} (replay with ROOFLAB_SEED={s})"),
        Err(why) => {
            eprintln!(
                "rooflab GPU tests: {} SKIPPED, not run: {why}",
                trials.len()
            );
            trials = trials
                .into_iter()
                .map(|t| t.with_ignored_flag(true))
                .collect();
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
