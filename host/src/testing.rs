//! GPU correctness tests as data: each family's op file lists its [`GpuTest`]s, and the
//! `tests/gpu.rs` harness turns them into libtest trials (ignored, by name, without a GPU).

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use rooflab_kernels::kernel::KernelId;

/// The body of a GPU test.
pub type TestBody = Box<dyn FnOnce(&Gpu) -> Result<()> + Send>;

/// One named GPU test. Names follow the kernel: `memory_v02_coalesced_copy_matches_cpu`.
pub struct GpuTest {
    pub name: String,
    pub run: TestBody,
    /// Kernels the test needs: where one is unavailable on the GPU (built only for another
    /// architecture, `Gpu::available`), the harness reports the test skipped, by name and
    /// reason, instead of running it.
    pub requires: Vec<KernelId>,
    /// The test checks the cuBLAS peer: without libcublas it is reported skipped (with the
    /// reason), not passed.
    pub requires_cublas: bool,
    /// The test runs the CUDA C++ twins (`ops::twin_tests`): where none were built for this
    /// GPU's architecture it is reported skipped, with the build's reason.
    pub requires_twins: bool,
}

impl GpuTest {
    pub fn new(
        name: impl Into<String>,
        run: impl FnOnce(&Gpu) -> Result<()> + Send + 'static,
    ) -> GpuTest {
        GpuTest {
            name: name.into(),
            run: Box::new(run),
            requires: Vec::new(),
            requires_cublas: false,
            requires_twins: false,
        }
    }

    /// The test needs cuBLAS (see [`GpuTest::requires_cublas`]).
    pub fn requiring_cublas(mut self) -> GpuTest {
        self.requires_cublas = true;
        self
    }

    /// The test needs `kernel` (see [`GpuTest::requires`]).
    pub fn requiring(mut self, kernel: impl Into<KernelId>) -> GpuTest {
        self.requires.push(kernel.into());
        self
    }

    /// Why the test cannot run on `gpu` (an unavailable kernel, no cuBLAS), if so.
    pub fn unavailable_on(&self, gpu: &Gpu) -> Option<String> {
        let kernel = self.requires.iter().find_map(|k| match gpu.available(*k) {
            Err(e @ Error::Unavailable { .. }) => Some(e.to_string()),
            _ => None,
        });
        kernel
            .or_else(|| {
                self.requires_cublas
                    .then(crate::peer::cublas::missing)
                    .flatten()
            })
            .or_else(|| {
                self.requires_twins
                    .then(|| crate::ptx::twins_for(gpu.info.ptx_arch).err())
                    .flatten()
            })
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
                None => {
                    // The log of a GPU run then lists every refusal and its wording.
                    eprintln!("  refused as expected: {msg}");
                    Ok(())
                }
            }
        }
    }
}

/// True under `compute-sanitizer` (run-all and `cargo xtask test --sanitize` set
/// `ROOFLAB_SANITIZE` to the tool's name): tests then use smaller shapes, since every access
/// is instrumented and runs many times slower.
pub fn sanitizing() -> bool {
    sanitize_limit().is_some()
}

/// The most elements a test input may have now: none without a sanitizer; 2^20 under
/// memcheck, synccheck and initcheck; 2^16 under racecheck, which tracks every shared-memory
/// access of every block (races are within a block, so a few blocks per kernel find them as
/// well as thousands; at 2^16 the slowest test takes ~9 s there on an H200).
pub fn sanitize_limit() -> Option<usize> {
    match std::env::var("ROOFLAB_SANITIZE") {
        Err(_) => None,
        Ok(tool) if tool == "racecheck" => Some(1 << 16),
        Ok(_) => Some(1 << 20),
    }
}

/// The test lengths to use now: all of `lengths`, or only those within [`sanitize_limit`].
pub fn lengths(lengths: &[usize]) -> Vec<usize> {
    shapes(lengths, |&n| n)
}

/// The `(rows, cols)` test shapes to use now (see [`shapes`]).
pub fn matrices(shapes: &[(usize, usize)]) -> Vec<(usize, usize)> {
    self::shapes(shapes, |&(r, c)| r * c)
}

/// The test shapes to use now: all of `shapes`, or only those whose `elements` are within
/// [`sanitize_limit`] (the shapes that exercise edges and tails stay; the big ones go).
pub fn shapes<T: Copy>(shapes: &[T], elements: impl Fn(&T) -> usize) -> Vec<T> {
    let limit = sanitize_limit().unwrap_or(usize::MAX);
    shapes
        .iter()
        .copied()
        .filter(|s| elements(s) <= limit)
        .collect()
}

/// Environment variable that makes the GPU test binary run one fault scenario as a child
/// process (a device fault leaves the CUDA context unusable, so it cannot share a process).
pub const CHILD_VAR: &str = "ROOFLAB_FAULT_CHILD";
/// Exit code of a child that saw the expected fault reported.
pub const CHILD_FAULT_REPORTED: i32 = 3;

/// The child side of `device_trap_is_reported_and_exits_cleanly`: launch a kernel that
/// traps and report the error the way the bench does. Never returns.
pub fn run_fault_child() -> ! {
    let r = (|| -> Result<()> {
        let gpu = Gpu::new()?;
        let kernel = rooflab_kernels::testing::testing_trap;
        let cfg = crate::gpu::LaunchConfig::for_threads(kernel.name(), 32, 32)?;
        // SAFETY: the kernel touches no memory; the trap it raises is the point of the test.
        unsafe { gpu.launch(kernel, cfg, (1u32,))? };
        gpu.sync()
    })();
    match r {
        Err(e) if e.is_fatal() => {
            eprintln!("rooflab: {e}");
            std::process::exit(CHILD_FAULT_REPORTED)
        }
        other => {
            eprintln!("fault child: expected a device fault, got {other:?}");
            std::process::exit(1)
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
        GpuTest::new("fault_unknown_kernel_is_named", |gpu| {
            let kernel = rooflab_kernels::testing::testing_not_in_ptx;
            let cfg = LaunchConfig::for_threads(kernel.name(), 1, 32)?;
            // SAFETY: refused before anything runs: the module has no such kernel.
            let r = unsafe { gpu.launch(kernel, cfg, ()) };
            expect_error(r, &[kernel.name(), "not in the loaded PTX"])
        }),
        GpuTest::new("grid_past_the_32_bit_limit_is_refused", |_| {
            expect_error(
                LaunchConfig::for_threads("op", 1u64 << 40, 256),
                &["blocks in x", "limit"],
            )
        }),
        GpuTest::new("fault_ptx_newer_than_the_driver_is_explained", |gpu| {
            // The built PTX, claiming an ISA no driver of today knows.
            let (arch, text) =
                crate::ptx::choose(gpu.info.compute_capability.0, gpu.info.compute_capability.1)
                    .ok_or_else(|| Error::Other("no PTX for this device".into()))?;
            let isa = crate::ptx::isa_version(text);
            let future = text.replacen(&format!(".version {isa}"), ".version 9.9", 1);
            expect_error(
                crate::gpu::load_module(arch, &future, gpu.info.driver_cuda_version),
                &["refused", "9.9", "update the NVIDIA driver", "CUDA 13.9"],
            )
        }),
        GpuTest::new("fault_device_trap_is_reported_and_exits_cleanly", |_| {
            // In a child process: the fault poisons the context for everything after it.
            let exe = std::env::current_exe().map_err(|e| Error::Other(e.to_string()))?;
            let out = std::process::Command::new(exe)
                .env(CHILD_VAR, "trap")
                .output()
                .map_err(|e| Error::Other(format!("spawning the fault child: {e}")))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.code() != Some(CHILD_FAULT_REPORTED) {
                return Err(Error::Other(format!(
                    "fault child exited with {:?}: {stderr}",
                    out.status
                )));
            }
            for needle in [
                rooflab_kernels::testing::testing_trap.name(),
                "faulted on the device",
                "must exit",
            ] {
                if !stderr.contains(needle) {
                    return Err(Error::Other(format!(
                        "fault message lacks {needle:?}: {stderr}"
                    )));
                }
            }
            Ok(())
        }),
    ]
}
