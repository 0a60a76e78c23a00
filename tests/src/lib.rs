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

/// A trial that opens its own `Gpu` and runs the test on it. Under a sanitizer each test's
/// time is logged too: that is where a sanitizer pass's minutes go.
pub fn trial(t: GpuTest) -> Trial {
    let run = t.run;
    let name = t.name.clone();
    Trial::test(t.name, move || {
        let t0 = std::time::Instant::now();
        let gpu = Gpu::new().map_err(|e| Failed::from(e.to_string()))?;
        let r = run(&gpu).map_err(|e| Failed::from(e.to_string()));
        if let Ok(tool) = std::env::var("ROOFLAB_SANITIZE") {
            eprintln!("  [{tool}] {name}: {:.1} s", t0.elapsed().as_secs_f64());
        }
        r
    })
}
