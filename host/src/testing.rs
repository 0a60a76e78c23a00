//! GPU correctness tests as data: each family's op file lists its [`GpuTest`]s, and the
//! `tests/gpu.rs` harness turns them into libtest trials (ignored, by name, without a GPU).

use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// The body of a GPU test.
pub type TestBody = Box<dyn FnOnce(&Gpu) -> Result<()> + Send>;

/// One named GPU test. Names follow the kernel: `memory_v02_coalesced_copy_matches_cpu`.
pub struct GpuTest {
    pub name: String,
    pub run: TestBody,
}

impl GpuTest {
    pub fn new(
        name: impl Into<String>,
        run: impl FnOnce(&Gpu) -> Result<()> + Send + 'static,
    ) -> GpuTest {
        GpuTest {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// `Ok` if `r` is an error whose message contains every one of `needles`.
pub fn expect_error<T>(r: Result<T>, needles: &[&str]) -> Result<()> {
    match r {
        Ok(_) => Err(Error::Other(format!(
            "expected an error mentioning {needles:?}, got Ok"
        ))),
        Err(e) => {
            let msg = e.to_string();
            match needles.iter().find(|n| !msg.contains(*n)) {
                Some(n) => Err(Error::Other(format!("error message lacks {n:?}: {msg}"))),
                None => Ok(()),
            }
        }
    }
}

/// Tests of the device layer itself (allocation, launch path), not of any family.
pub fn device_tests() -> Vec<GpuTest> {
    use crate::gpu::LaunchConfig;
    vec![
        GpuTest::new("alloc_larger_than_free_memory_is_refused", |gpu| {
            let (free, _) = gpu.memory_info()?;
            expect_error(
                gpu.alloc::<f32>((free / 4 + (1 << 30)) as usize),
                &["out of device memory", "free"],
            )
        }),
        GpuTest::new("unknown_kernel_is_named", |gpu| {
            let cfg = LaunchConfig::for_threads("x", 1, 32)?;
            // SAFETY: refused before anything runs: there is no such kernel.
            let r = unsafe { gpu.launch("memory_v99_nonexistent", cfg, &[]) };
            expect_error(r, &["memory_v99_nonexistent", "not in the loaded PTX"])
        }),
        GpuTest::new("grid_past_the_32_bit_limit_is_refused", |_| {
            expect_error(
                LaunchConfig::for_threads("op", 1u64 << 40, 256),
                &["blocks in x", "limit"],
            )
        }),
    ]
}
