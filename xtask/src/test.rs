//! `cargo xtask test`: the project's whole check, as CI runs it.
//!
//! a. deps (libcuda to link, ptxas, nvdisasm, NVRTC)   b. build everything (also builds the PTX
//! and the CUDA C++ twins)   c. ptxas on the PTX and the twins' PTX: must assemble, no spills   d. sass: nvdisasm on ptxas's cubins, a
//! kernel whose PTX has `mma.sync` / `wgmma.mma_async` must have HMMA / HGMMA in its SASS
//! (writes target/ptx/sass-summary.txt and sass.json)   e. `cargo test` (GPU tests say
//! whether they ran)   f. clippy with warnings denied, on the workspace and on the device
//! code (nvptx64)   g. browser: the HTML report of a committed run in headless Chromium
//! (skipped by name without a browser).   Every step runs that can; the exit status says
//! whether all passed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use anyhow::{Context, Result};

use crate::{browser, deps, ptxas, sass, util};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Skip the clippy step.
    #[arg(long)]
    no_clippy: bool,
    /// Build and test with the release profile.
    #[arg(long)]
    release: bool,
    /// On a GPU machine, also run the GPU tests under compute-sanitizer (memcheck,
    /// racecheck, synccheck, initcheck); any reported error fails the step.
    #[arg(long)]
    sanitize: bool,
    /// For GPU runners (CI with a GPU): fail unless every GPU test ran, i.e. none was
    /// skipped for want of a device, a driver, a kernel's architecture or cuBLAS.
    #[arg(long)]
    require_gpu: bool,
}

/// clippy on the kernels as the PTX build compiles them (nvptx64, `core` from source): the
/// host build of the crate cfg's every kernel out, so `--workspace` never sees them. The
/// newest arch of `host/build/ptx_arches.txt` sets the target features.
fn clippy_device(cuda: &Path) -> Result<()> {
    let arches = std::fs::read_to_string(util::workspace().join("host/build/ptx_arches.txt"))?;
    let arch = arches
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))
        .context("host/build/ptx_arches.txt lists no arch")?
        .to_string();
    let mut cmd = util::cargo(cuda);
    cmd.args([
        "clippy",
        "--package",
        "rooflab-kernels",
        "--lib",
        "--target",
        "nvptx64-nvidia-cuda",
        "-Zbuild-std=core",
        "--target-dir",
    ])
    .arg(util::target_dir().join("clippy-nvptx"))
    .args(["--", "-D", "warnings"])
    .env("CARGO_ENCODED_RUSTFLAGS", format!("-Ctarget-cpu={arch}"))
    .env_remove("RUSTFLAGS");
    util::run_ok(&mut cmd)
}

enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

struct Steps(Vec<(&'static str, Outcome)>);

impl Steps {
    fn record(&mut self, name: &'static str, result: Result<()>) -> bool {
        let ok = result.is_ok();
        let outcome = match result {
            Ok(()) => Outcome::Passed,
            Err(e) => {
                eprintln!("{} {e:#}", util::bad(&format!("{name} failed:")));
                Outcome::Failed(format!("{e:#}"))
            }
        };
        self.0.push((name, outcome));
        ok
    }
    fn skip(&mut self, name: &'static str, why: &str) {
        self.0.push((name, Outcome::Skipped(why.to_string())));
    }
    fn failed(&self) -> Vec<&'static str> {
        self.0
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
            .map(|(n, _)| *n)
            .collect()
    }
}

/// Returns whether every step passed.
pub fn run(args: &Args) -> Result<bool> {
    let mut steps = Steps(vec![]);
    let profile: &[&str] = if args.release { &["--release"] } else { &[] };
    let mut gpu_line = None;
    let mut gpu_result = None;

    util::header("[a] deps: libcuda (to link), ptxas, nvdisasm, NVRTC (the C++ twins)");
    let cuda = deps::ensure_libcuda();
    let ptxas_path = deps::ensure_ptxas();
    let nvdisasm_path = deps::ensure_nvdisasm();
    // The build compiles the twins with it; without it the ptxas step finds no twins' PTX.
    let nvrtc = deps::ensure_nvrtc();
    let deps_result = match (&cuda, &ptxas_path, &nvdisasm_path) {
        _ if nvrtc.is_err() => Err(anyhow::anyhow!("{:#}", nvrtc.as_ref().unwrap_err())),
        (Ok(c), Ok(p), Ok(n)) => {
            eprintln!(
                "CUDA_LIBRARY_PATH={}\nptxas={}\nnvdisasm={}",
                c.display(),
                p.display(),
                n.display()
            );
            Ok(())
        }
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(anyhow::anyhow!("{e:#}")),
    };
    steps.record("deps", deps_result);

    // Without a libcuda nothing links; everything after needs the build.
    let built = match &cuda {
        Err(_) => {
            steps.skip("build", "no libcuda to link against");
            false
        }
        Ok(cuda) => {
            util::header("[b] cargo build --workspace --all-targets");
            let mut cmd = util::cargo(cuda);
            cmd.args(["build", "--workspace", "--all-targets"])
                .args(profile);
            steps.record("build", util::run_ok(&mut cmd))
        }
    };

    const AFTER_BUILD: &str = "the build failed";
    let mut reports = None;
    match (&ptxas_path, built) {
        (_, false) => steps.skip("ptxas", AFTER_BUILD),
        (Err(_), true) => steps.skip("ptxas", "no ptxas (see deps)"),
        (Ok(p), true) => {
            util::header("[c] ptxas -v on target/ptx/*.ptx (must assemble, no spills)");
            let (result, r) = ptxas_check(p);
            reports = r;
            steps.record("ptxas", result);
        }
    }

    match (&nvdisasm_path, &reports) {
        (_, None) => steps.skip("sass", "no cubins (see ptxas)"),
        (Err(_), Some(_)) => steps.skip("sass", "no nvdisasm (see deps)"),
        (Ok(n), Some(r)) => {
            util::header(
                "[d] nvdisasm on the cubins (mma.sync -> HMMA, wgmma -> HGMMA): target/ptx/sass-summary.txt",
            );
            steps.record("sass", sass_check(n, r));
        }
    }

    match (&cuda, built) {
        (Ok(cuda), true) => {
            util::header("[e] cargo test --workspace");
            let mut cmd = util::cargo(cuda);
            cmd.args(["test", "--workspace"]).args(profile);
            util::add_runtime_libcuda(&mut cmd, cuda);
            let result = run_tee(cmd).and_then(|(status, output)| {
                gpu_line = Some(gpu_summary(&output));
                gpu_result = gpu_target_result(&output);
                if status.success() {
                    Ok(())
                } else {
                    Err(anyhow::anyhow!("cargo test failed ({status})"))
                }
            });
            steps.record("test", result);
        }
        _ => steps.skip("test", AFTER_BUILD),
    }

    match (&cuda, built, browser::find()) {
        (Ok(cuda), true, Some(b)) => {
            util::header("[g] browser: the HTML report of a committed run in headless Chromium");
            let bench = util::workspace()
                .join("target")
                .join(if args.release { "release" } else { "debug" })
                .join("rooflab-bench");
            steps.record("browser", browser::run(&bench, cuda, &b));
        }
        (_, true, None) => steps.skip(
            "browser",
            &format!(
                "{} NOT run: no Chromium here (apt-get install chromium, or set ROOFLAB_CHROMIUM)",
                browser::TEST_NAME
            ),
        ),
        _ => steps.skip("browser", AFTER_BUILD),
    }

    if args.no_clippy {
        steps.skip("clippy", "--no-clippy");
    } else if let (Ok(cuda), true) = (&cuda, built) {
        util::header("[f] cargo clippy --workspace --all-targets -- -D warnings");
        let mut cmd = util::cargo(cuda);
        cmd.args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]);
        steps.record("clippy", util::run_ok(&mut cmd));
        util::header(
            "[f] device code: cargo clippy -p rooflab-kernels --target nvptx64-nvidia-cuda -- -D warnings",
        );
        steps.record("clippy-device", clippy_device(cuda));
    } else {
        steps.skip("clippy", AFTER_BUILD);
    }

    if args.require_gpu {
        steps.record("require-gpu", require_gpu(gpu_result.as_ref()));
    }

    if args.sanitize {
        match (&cuda, built) {
            (Ok(cuda), true) if util::system_has_libcuda() => {
                util::header("[g] compute-sanitizer on the GPU tests");
                steps.record("sanitize", sanitize(cuda, profile));
            }
            (_, true) => steps.skip("sanitize", "no GPU driver here"),
            _ => steps.skip("sanitize", AFTER_BUILD),
        }
    }

    util::header("summary");
    for (name, outcome) in &steps.0 {
        match outcome {
            Outcome::Passed => eprintln!("  {:<7} {}", name, util::good("ok")),
            Outcome::Failed(why) => {
                let first = why.lines().next().unwrap_or("");
                eprintln!("  {:<7} {}  {first}", name, util::bad("FAILED"))
            }
            Outcome::Skipped(why) => eprintln!("  {:<7} skipped ({why})", name),
        }
    }
    let failed = steps.failed();
    if failed.is_empty() {
        eprintln!("{}", util::good("all steps passed"));
    } else {
        eprintln!(
            "{}",
            util::bad(&format!("FAILED steps: {}", failed.join(", ")))
        );
    }
    // Last, so it is the line nobody misses: were the GPU tests actually run?
    if let Some(line) = gpu_line {
        eprintln!("{line}");
    }
    Ok(failed.is_empty())
}

/// Step g: each compute-sanitizer tool over the GPU test binary, with small shapes
/// (`ROOFLAB_SANITIZE=<tool>`) and without the deliberate-fault and multi-GB tests.
fn sanitize(cuda: &Path, profile: &[&str]) -> Result<()> {
    let mut build = util::cargo(cuda);
    build
        .args(["test", "-p", "rooflab-tests", "--test", "gpu", "--no-run"])
        .args(profile);
    let exe = util::cargo_executables(build)?
        .into_iter()
        .find(|(name, test, _)| name == "gpu" && *test)
        .map(|(_, _, p)| p)
        .context("cargo built no gpu test binary")?;
    let san = which("compute-sanitizer")
        .or_else(|| {
            Some(PathBuf::from("/usr/local/cuda/bin/compute-sanitizer")).filter(|p| p.exists())
        })
        .context("compute-sanitizer not found (CUDA toolkit's bin/ on PATH?)")?;
    const SKIP: [&str; 4] = ["--skip", "fault_", "--skip", "past_2_31"];
    const INITCHECK_SKIP: [&str; 2] = ["--skip", "cublas_peer"];
    let mut failed = Vec::new();
    for tool in ["memcheck", "racecheck", "synccheck", "initcheck"] {
        let errors = if tool == "racecheck" {
            // racecheck stalls on a test binary running its tests on several threads (on the
            // H200: 10 of 79 tests done after 420 s); one process per test finishes.
            one_process_per_test(&san, tool, &exe, &SKIP)?
        } else {
            let mut cmd = Command::new(&san);
            cmd.args(["--tool", tool, "--error-exitcode", "1"])
                .arg(&exe)
                .args(SKIP)
                .env("ROOFLAB_SANITIZE", tool);
            if tool == "initcheck" {
                // cuBLAS 13's split-K reduce kernel reads workspace its GEMM kernel left
                // unwritten (the K-tail defect the bf16 peer test reports): vendor code, so
                // the cuBLAS peer tests run under the other three tools only.
                cmd.args(INITCHECK_SKIP);
            }
            let listed = list_tests(&exe, &cmd_skips(tool, &SKIP, &INITCHECK_SKIP))?.len();
            let (status, out) = run_tee(cmd)?;
            match ran_all(&out, listed) {
                Ok(()) => sanitizer_errors(&out).filter(|_| status.success()),
                Err(why) => {
                    eprintln!("compute-sanitizer {tool}: {why}");
                    None
                }
            }
        };
        eprintln!(
            "compute-sanitizer {tool}: {} error(s)",
            errors.map_or("? (or a failed test)".into(), |e| e.to_string())
        );
        if errors != Some(0) {
            failed.push(tool);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("compute-sanitizer found errors with: {}", failed.join(", "))
    }
}

/// The error count of a compute-sanitizer run: `ERROR SUMMARY: N errors`, or racecheck's
/// `RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)`; the last one printed.
fn sanitizer_errors(out: &str) -> Option<u64> {
    out.lines().rev().find_map(|l| {
        let n = if let Some(t) = l.split("ERROR SUMMARY: ").nth(1) {
            t.split_whitespace().next()
        } else {
            l.split("RACECHECK SUMMARY: ")
                .nth(1)?
                .split('(')
                .nth(1)?
                .split_whitespace()
                .next()
        };
        n?.parse().ok()
    })
}

/// The skip arguments of `tool`'s whole-binary run.
fn cmd_skips<'a>(tool: &str, skip: &[&'a str], initcheck: &[&'a str]) -> Vec<&'a str> {
    let mut v = skip.to_vec();
    if tool == "initcheck" {
        v.extend_from_slice(initcheck);
    }
    v
}

/// The tests `exe` would run with `skip` (libtest's `--list`).
fn list_tests(exe: &Path, skip: &[&str]) -> Result<Vec<String>> {
    let list = Command::new(exe)
        .arg("--list")
        .args(skip)
        .output()
        .context("listing the GPU tests")?;
    Ok(String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test").map(str::to_owned))
        .collect())
}

/// A sanitizer run counts only if its tests ran: libtest's summary must say every one of the
/// `listed` tests passed or was skipped by name, at least one passed, none failed (an exit
/// status and "ERROR SUMMARY: 0" alone are also what a run of zero tests prints).
fn ran_all(out: &str, listed: usize) -> std::result::Result<(), String> {
    let r = out
        .lines()
        .rev()
        .find_map(parse_test_result)
        .ok_or("no libtest summary in its output: the tests did not run")?;
    if r.failed > 0 || r.passed == 0 || (r.passed + r.ignored) as usize != listed {
        return Err(format!(
            "{} passed, {} failed, {} ignored of {listed} listed: not a run of every test",
            r.passed, r.failed, r.ignored
        ));
    }
    Ok(())
}

/// Each test of `exe` (minus `skip`) under `tool` in a process of its own, several at a time;
/// a line per test, then the summed error count, or `None` when a test failed.
fn one_process_per_test(san: &Path, tool: &str, exe: &Path, skip: &[&str]) -> Result<Option<u64>> {
    let names = list_tests(exe, skip)?;
    if names.is_empty() {
        eprintln!("compute-sanitizer {tool}: no test listed, nothing checked");
        return Ok(None);
    }
    let jobs = std::thread::available_parallelism().map_or(4, |n| n.get().min(8));
    eprintln!(
        "compute-sanitizer {tool}: {} tests, one process each, {jobs} at a time",
        names.len()
    );
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..jobs {
            sc.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(name) = names.get(i) else { break };
                    let out = Command::new(san)
                        .args(["--tool", tool, "--error-exitcode", "1"])
                        .arg(exe)
                        .args(["--exact", name])
                        .env("ROOFLAB_SANITIZE", tool)
                        .output();
                    let verdict = match out {
                        Ok(o) => {
                            let text = format!(
                                "{}{}",
                                String::from_utf8_lossy(&o.stdout),
                                String::from_utf8_lossy(&o.stderr)
                            );
                            let passed = text.contains("test result: ok. 1 passed");
                            (passed && o.status.success(), sanitizer_errors(&text), text)
                        }
                        Err(e) => (false, None, format!("could not run {}: {e}", san.display())),
                    };
                    let (ok, errors, text) = verdict;
                    let line = format!(
                        "  {tool} {name}: {} ({} errors)",
                        if ok { "ok" } else { "FAILED" },
                        errors.map_or("?".into(), |e| e.to_string())
                    );
                    eprintln!("{line}");
                    if !ok {
                        eprintln!("{text}");
                    }
                    results.lock().unwrap().push((ok, errors));
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    if results.iter().all(|(ok, _)| *ok) {
        Ok(results.iter().map(|(_, e)| *e).sum())
    } else {
        Ok(None)
    }
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// Step c: prints the table and fails on spills or ptxas errors. The reports (with the
/// cubins) go on to step d.
fn ptxas_check(ptxas: &Path) -> (Result<()>, Option<Vec<ptxas::ArchReport>>) {
    match ptxas::check_all(ptxas) {
        Ok(reports) => {
            let result = ptxas_verdict(&reports);
            (result, Some(reports))
        }
        Err(e) => (Err(e), None),
    }
}

fn ptxas_verdict(reports: &[ptxas::ArchReport]) -> Result<()> {
    println!("{}", ptxas::table(reports));
    for w in ptxas::warnings(reports) {
        util::note(&w);
    }
    let problems = ptxas::problems(reports);
    for r in reports.iter().filter(|r| r.error.is_some()) {
        // Show what ptxas said when it failed.
        eprint!("{}", r.output);
    }
    for p in &problems {
        eprintln!("  {}", util::bad(p));
    }
    match problems.len() {
        0 => Ok(()),
        n => anyhow::bail!("{n} problem(s) in the PTX (listed above)"),
    }
}

/// Step d: nvdisasm on each cubin; writes the summary files, prints the kernels that use the
/// tensor cores (the whole table is in the file) and fails when a kernel's PTX asks for
/// them and its SASS has none.
fn sass_check(nvdisasm: &Path, reports: &[ptxas::ArchReport]) -> Result<()> {
    let archs = sass::disassemble_all(nvdisasm, reports);
    sass::write_outputs(nvdisasm, &archs)?;
    let file = util::target_dir().join("ptx").join("sass-summary.txt");
    for a in &archs {
        let tensor: Vec<&sass::Function> = a
            .functions
            .iter()
            .filter(|f| f.ops.keys().any(|op| op.ends_with("MMA")))
            .collect();
        let asking = a.ptx.iter().filter(|p| !p.expects.is_empty()).count();
        eprintln!(
            "{}: {} functions, {} with tensor-core instructions, {asking} whose PTX asks for them",
            a.arch,
            a.functions.len(),
            tensor.len()
        );
        for f in tensor {
            eprintln!("  {}: {}", f.name, sass::brief(f));
        }
    }
    eprintln!("table: {}", file.display());
    let problems = sass::problems(&archs);
    for p in &problems {
        eprintln!("  {}", util::bad(p));
    }
    match problems.len() {
        0 => Ok(()),
        n => anyhow::bail!(
            "{n} problem(s) in the SASS (listed above and in {})",
            file.display()
        ),
    }
}

/// Runs `cmd` with stdout and stderr merged into one pipe, echoing every line as it comes and
/// returning the whole text. One pipe keeps cargo's "Running <target>" lines (stderr) in
/// order with each test binary's output (stdout).
fn run_tee(mut cmd: Command) -> Result<(ExitStatus, String)> {
    let (reader, writer) = std::io::pipe().context("creating a pipe")?;
    cmd.stdout(writer.try_clone()?).stderr(writer);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("could not run {}", util::show(&cmd)))?;
    // The Command holds the pipe's write ends: drop it, or reading never sees end-of-file.
    drop(cmd);
    let mut reader = BufReader::new(reader);
    let mut all = String::new();
    let mut line = Vec::new();
    let mut stdout = std::io::stdout();
    while reader.read_until(b'\n', &mut line)? > 0 {
        stdout.write_all(&line)?;
        stdout.flush()?;
        all.push_str(&String::from_utf8_lossy(&line));
        line.clear();
    }
    Ok((child.wait()?, all))
}

/// libtest's `test result: ok. P passed; F failed; I ignored; ...` line, as numbers.
#[derive(Debug, PartialEq, Eq)]
struct TestResult {
    passed: u64,
    failed: u64,
    ignored: u64,
}

fn parse_test_result(line: &str) -> Option<TestResult> {
    let rest = line.trim().strip_prefix("test result:")?;
    let mut r = TestResult {
        passed: 0,
        failed: 0,
        ignored: 0,
    };
    for part in rest.split(['.', ';']) {
        let mut w = part.split_whitespace();
        if let (Some(n), Some(what)) = (w.next().and_then(|n| n.parse().ok()), w.next()) {
            match what {
                "passed" => r.passed = n,
                "failed" => r.failed = n,
                "ignored" => r.ignored = n,
                _ => {}
            }
        }
    }
    Some(r)
}

/// `--require-gpu`: every GPU test ran (some passed, none ignored or failed).
fn require_gpu(r: Option<&TestResult>) -> Result<()> {
    match r {
        None => Err(anyhow::anyhow!(
            "no result from the GPU tests (did they build and run?)"
        )),
        Some(r) if r.ignored > 0 || r.passed == 0 => Err(anyhow::anyhow!(
            "--require-gpu: {} GPU tests were skipped and {} passed; every one must run here",
            r.ignored,
            r.passed
        )),
        Some(_) => Ok(()),
    }
}

/// The `gpu` test target's section of the `cargo test` output (from cargo's `Running ...
/// (.../deps/gpu-<hash>)` line to the next target) and its `test result:` line.
fn gpu_section(output: &str) -> (String, Option<TestResult>) {
    let mut in_gpu = false;
    let mut section = String::new();
    let mut result = None;
    for line in output.lines() {
        let t = line.trim();
        if t.starts_with("Running ") || t.starts_with("Doc-tests ") {
            in_gpu = is_gpu_target(t);
            continue;
        }
        if in_gpu {
            section.push_str(line);
            section.push('\n');
            if let Some(r) = parse_test_result(t) {
                result = Some(r);
            }
        }
    }
    (section, result)
}

/// The `test result:` line of the `gpu` test target in the `cargo test` output.
fn gpu_target_result(output: &str) -> Option<TestResult> {
    gpu_section(output).1
}

/// The one-line verdict on the `gpu` test target (tests/, harness = false), read from the
/// `cargo test` output.
fn gpu_summary(output: &str) -> String {
    let (section, result) = gpu_section(output);
    let Some(r) = result else {
        return util::bad("GPU tests: no result seen from the `gpu` test target (did it run?)");
    };
    let lower = section.to_lowercase();
    let says_no_device = ["no cuda device", "cuda_error_no_device", "no device"]
        .iter()
        .any(|s| lower.contains(s));
    if r.passed == 0 && r.failed == 0 && r.ignored > 0 {
        // Without a driver on this machine they cannot have run, whatever the harness said.
        let why = if says_no_device || !util::system_has_libcuda() {
            "no CUDA device here"
        } else {
            "ignored"
        };
        util::bad(&format!(
            "GPU tests: {} skipped ({why}): they were NOT run",
            r.ignored
        ))
    } else if r.failed > 0 {
        util::bad(&format!(
            "GPU tests: {} passed, {} FAILED, {} ignored",
            r.passed, r.failed, r.ignored
        ))
    } else {
        util::good(&format!(
            "GPU tests: {} passed, {} ignored (ran on a CUDA device)",
            r.passed, r.ignored
        ))
    }
}

/// `Running tests/gpu.rs (target/debug/deps/gpu-0123abcd)` -> true.
fn is_gpu_target(running_line: &str) -> bool {
    let path = running_line
        .rsplit_once('(')
        .map(|(_, p)| p.trim_end_matches(')'))
        .unwrap_or("");
    let file = Path::new(path)
        .file_name()
        .unwrap_or_default()
        .to_string_lossy();
    file.strip_prefix("gpu-")
        .is_some_and(|hash| !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizer_error_counts() {
        assert_eq!(
            sanitizer_errors("x\n========= ERROR SUMMARY: 0 errors\n"),
            Some(0)
        );
        assert_eq!(
            sanitizer_errors("========= ERROR SUMMARY: 3 errors"),
            Some(3)
        );
        let race = "========= RACECHECK SUMMARY: 2 hazards displayed (1 errors, 1 warnings)";
        assert_eq!(sanitizer_errors(race), Some(1));
        assert_eq!(sanitizer_errors("test result: ok. 1 passed"), None);
    }

    #[test]
    fn reads_libtest_summary() {
        let line = "test result: ok. 0 passed; 0 failed; 23 ignored; 0 measured; 0 filtered out; finished in 0.00s";
        assert_eq!(
            parse_test_result(line),
            Some(TestResult {
                passed: 0,
                failed: 0,
                ignored: 23
            })
        );
    }

    #[test]
    fn a_sanitizer_run_of_no_tests_is_not_ok() {
        let ok = "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured\n========= ERROR SUMMARY: 0 errors";
        assert!(ran_all(ok, 13).is_ok());
        assert!(ran_all(ok, 14).is_err(), "a listed test missing");
        let none = "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured\n========= ERROR SUMMARY: 0 errors";
        assert!(ran_all(none, 0).is_err());
        assert!(ran_all("========= ERROR SUMMARY: 0 errors", 13).is_err());
    }

    #[test]
    fn finds_the_gpu_section() {
        let out = "\
     Running unittests src/lib.rs (target/debug/deps/rooflab-0a1b)
test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
     Running tests/gpu.rs (target/debug/deps/gpu-9f8e7d)
no CUDA device: GPU tests are ignored
test memory::copy ... ignored
test result: ok. 0 passed; 0 failed; 23 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        let s = gpu_summary(out);
        assert!(
            s.contains("23 skipped (no CUDA device here): they were NOT run"),
            "{s}"
        );
        // --require-gpu fails on this output (all skipped) and passes when all ran.
        let r = gpu_target_result(out).unwrap();
        assert_eq!((r.passed, r.ignored), (0, 23));
        assert!(require_gpu(Some(&r)).is_err());
        assert!(require_gpu(None).is_err());
        let ran = out.replace(
            "0 passed; 0 failed; 23 ignored",
            "23 passed; 0 failed; 0 ignored",
        );
        assert!(require_gpu(gpu_target_result(&ran).as_ref()).is_ok());
        let one_skipped = out.replace(
            "0 passed; 0 failed; 23 ignored",
            "22 passed; 0 failed; 1 ignored",
        );
        assert!(require_gpu(gpu_target_result(&one_skipped).as_ref()).is_err());
        assert!(is_gpu_target(
            "Running tests/gpu/main.rs (target/release/deps/gpu-00ff)"
        ));
        assert!(!is_gpu_target(
            "Running tests/gpu_util.rs (target/release/deps/gpu_util-00ff)"
        ));
    }
}
