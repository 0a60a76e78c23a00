//! `cargo xtask bundle`: everything the GPU machine needs, in `target/bundle/`.
//!
//! The GPU machine has no Rust toolchain and no network (docs/toolchain.md), so the build
//! machine ships release binaries plus a script that runs them there:
//!
//! ```text
//! target/bundle/
//!   rooflab-bench      release bench (PTX embedded)
//!   gpu-tests          release `gpu` integration test binary (libtest-mimic)
//!   ptx/sm_XX.ptx      the PTX, for reading and for ncu/cuobjdump
//!   ptxas-report.txt   `ptxas -v` output and the per-kernel table
//!   ptxas.json         the same per kernel (registers, spills), for the bench's columns
//!   sass-summary.txt   per kernel SASS counts (HMMA, FFMA, LDSM, LDGSTS, TMA, LDL/STL, BAR)
//!   torch_peer.py      the PyTorch peer script for `--peer torch`
//!   docs/*.md          the guide's chapters, which the HTML report links
//!   run-all            runs the tests (optionally under compute-sanitizer), then the bench
//!   verify             the same work in parts that each fit one time-limited device call
//!   profile            one variant under Nsight Compute (`./profile --help`)
//! ```

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::{deps, lab, ptxas, run_all, sass, util, verify};

/// The transfer limit is 64 MiB; keep a margin.
const MAX_BUNDLE_BYTES: u64 = 60 * 1024 * 1024;

pub fn run() -> Result<()> {
    let cuda = deps::ensure_libcuda()?;
    let ptxas_path = deps::ensure_ptxas()?;
    let nvdisasm = deps::ensure_nvdisasm()?;
    // The build compiles the CUDA C++ twins with it (the bench's "vs C++" column).
    deps::ensure_nvrtc()?;

    util::header("cargo build --release -p rooflab --bin rooflab-bench");
    let mut cmd = util::cargo(&cuda);
    cmd.args([
        "build",
        "--release",
        "-p",
        "rooflab",
        "--bin",
        "rooflab-bench",
    ]);
    let bench = util::cargo_executables(cmd)?
        .into_iter()
        .find(|(name, _, _)| name == "rooflab-bench")
        .map(|(_, _, p)| p)
        .context("cargo built no rooflab-bench executable")?;

    util::header("cargo test --release -p rooflab-tests --test gpu --no-run");
    let mut cmd = util::cargo(&cuda);
    cmd.args([
        "test",
        "--release",
        "-p",
        "rooflab-tests",
        "--test",
        "gpu",
        "--no-run",
    ]);
    let gpu_tests = util::cargo_executables(cmd)?
        .into_iter()
        .find(|(name, test, _)| name == "gpu" && *test)
        .map(|(_, _, p)| p)
        .context("cargo built no `gpu` test executable")?;

    util::header("ptxas report");
    let reports = ptxas::check_all(&ptxas_path)?;
    let problems = ptxas::problems(&reports);
    for p in &problems {
        // Not fatal here (`cargo xtask test` is the gate), but worth knowing before shipping.
        util::note(&format!("ptxas: {p}"));
    }
    util::header("SASS summary (nvdisasm)");
    let sass_archs = sass::disassemble_all(&nvdisasm, &reports);
    let sass_text = sass::write_outputs(&nvdisasm, &sass_archs)?;
    for p in sass::problems(&sass_archs) {
        util::note(&format!("sass: {p}"));
    }

    util::header("assembling target/bundle/");
    let dir = util::target_dir().join("bundle");
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing the old {}", dir.display()))?;
    }
    fs::create_dir_all(dir.join("ptx"))?;
    copy(&bench, &dir.join("rooflab-bench"))?;
    copy(&gpu_tests, &dir.join("gpu-tests"))?;
    // Without their symbol tables (the binaries travel to the GPU machine, under a 64 MiB
    // limit); where there is no `strip`, they go as they are.
    for b in ["rooflab-bench", "gpu-tests"] {
        let ok = std::process::Command::new("strip")
            .arg(dir.join(b))
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            util::note(&format!("bundle: could not strip {b} (no `strip`?); left as built"));
        }
    }
    // The PyTorch peer (`rooflab-bench --peer torch` looks next to itself).
    copy(
        &util::workspace().join("host/peer/torch_peer.py"),
        &dir.join("torch_peer.py"),
    )?;
    // The guide's chapters: the HTML report a bench run writes links each family's chapter
    // (`rooflab-bench --docs`, default `docs` beside it).
    fs::create_dir_all(dir.join("docs"))?;
    for e in fs::read_dir(util::workspace().join("docs"))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "md") {
            copy(
                &p,
                &dir.join("docs").join(p.file_name().unwrap_or_default()),
            )?;
        }
    }
    // The PTX of each arch, except one that differs from an arch already copied only in its
    // `.target` line (sm_80 and sm_90 are the same code): a line in ptx/SAME.txt says so,
    // which keeps the bundle under the transfer limit.
    let mut copied: Vec<(String, String)> = Vec::new();
    let mut same = String::new();
    for r in &reports {
        if !r.ptx.exists() {
            continue;
        }
        let text = fs::read_to_string(&r.ptx)
            .with_context(|| format!("reading {}", r.ptx.display()))?;
        let body = without_target(&text);
        if let Some((arch, _)) = copied.iter().find(|(_, b)| *b == body) {
            same.push_str(&format!(
                "{}.ptx: {arch}.ptx with `.target {}`\n",
                r.arch,
                r.arch.trim_start_matches("twins_")
            ));
            continue;
        }
        copy(&r.ptx, &dir.join("ptx").join(format!("{}.ptx", r.arch)))?;
        copied.push((r.arch.to_string(), body));
    }
    if !same.is_empty() {
        fs::write(dir.join("ptx").join("SAME.txt"), same)?;
    }
    fs::write(
        dir.join("ptxas-report.txt"),
        ptxas::report_text(&ptxas_path, &reports),
    )?;
    fs::write(dir.join("ptxas.json"), ptxas::resources_json(&reports))?;
    fs::write(dir.join("sass-summary.txt"), sass_text)?;
    fs::write(dir.join("run-all"), run_all::SCRIPT)?;
    set_executable(&dir.join("run-all"))?;
    fs::write(dir.join("verify"), verify::SCRIPT)?;
    set_executable(&dir.join("verify"))?;
    fs::write(dir.join("profile"), lab::PROFILE_SCRIPT)?;
    set_executable(&dir.join("profile"))?;

    let mut total = 0;
    for (path, size) in files(&dir)? {
        println!(
            "  {:>10}  {}",
            size,
            path.strip_prefix(&dir).unwrap_or(&path).display()
        );
        total += size;
    }
    let mib = total as f64 / (1024.0 * 1024.0);
    println!("bundle: {} ({mib:.1} MiB)", dir.display());
    if total > MAX_BUNDLE_BYTES {
        bail!(
            "the bundle is {mib:.1} MiB, over the {} MiB limit",
            MAX_BUNDLE_BYTES / (1024 * 1024)
        );
    }
    println!(
        "on the GPU machine: copy the folder over and run `./run-all` (`./run-all --help` for options)"
    );
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).with_context(|| format!("copy {} -> {}", from.display(), to.display()))?;
    Ok(())
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// Every file under `dir` with its size, sorted by path.
fn files(dir: &Path) -> Result<Vec<(std::path::PathBuf, u64)>> {
    let mut out = vec![];
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            out.extend(files(&entry.path())?);
        } else {
            out.push((entry.path(), meta.len()));
        }
    }
    out.sort();
    Ok(out)
}

/// A PTX module's text without its `.target` line.
fn without_target(ptx: &str) -> String {
    ptx.lines()
        .filter(|l| !l.trim_start().starts_with(".target"))
        .collect::<Vec<_>>()
        .join("\n")
}
