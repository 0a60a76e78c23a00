//! The GPU test harness's one helper: turn rooflab's `GpuTest`s into libtest trials.

use libtest_mimic::{Failed, Trial};
use rooflab::testing::GpuTest;
use rooflab::{Error, Gpu};

/// Whether a GPU is usable here: `Ok(())`, or `Err(reason)` when there is no device (the
/// only reason to skip). Any other error (old driver, PTX refused) is not a skip: the trials
/// run and fail with it.
pub fn probe() -> Result<(), String> {
    match Gpu::new() {
        Err(e @ Error::NoDevice(_)) => Err(e.to_string()),
        _ => Ok(()),
    }
}

/// A trial that opens its own `Gpu` and runs the test on it.
pub fn trial(t: GpuTest) -> Trial {
    let run = t.run;
    Trial::test(t.name, move || {
        let gpu = Gpu::new().map_err(|e| Failed::from(e.to_string()))?;
        run(&gpu).map_err(|e| Failed::from(e.to_string()))
    })
}
