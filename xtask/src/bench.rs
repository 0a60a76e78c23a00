//! `cargo xtask bench [ARGS...]`: build `rooflab-bench` (release) and run it, results under
//! `target/rooflab/` unless ARGS name their own `--out`.

use anyhow::{Context, Result};

use crate::{deps, ptxas, util};

/// Returns the bench's exit code.
pub fn run(args: &[String]) -> Result<u8> {
    let cuda = deps::ensure_libcuda()?;
    util::header("cargo build --release -p rooflab --bin rooflab-bench");
    let mut build = util::cargo(&cuda);
    build.args([
        "build",
        "--release",
        "-p",
        "rooflab",
        "--bin",
        "rooflab-bench",
    ]);
    let exe = util::cargo_executables(build)?
        .into_iter()
        .find(|(name, _, _)| name == "rooflab-bench")
        .map(|(_, _, path)| path)
        .context("cargo built no rooflab-bench executable")?;

    // The bench runs in the caller's directory (relative paths in ARGS mean what they say);
    // the default output folder is absolute so it does not depend on that.
    // ptxas's resource report (registers, spills) joins the bench rows; without a GPU it is
    // part of the predicted report.
    let ptxas = deps::ensure_ptxas()?;
    let reports = ptxas::check_all(&ptxas)?;
    let report_path = util::target_dir().join("rooflab").join("ptxas.json");
    std::fs::create_dir_all(report_path.parent().unwrap())?;
    std::fs::write(&report_path, ptxas::resources_json(&reports))?;
    println!("{}", ptxas::table(&reports));

    let mut cmd = std::process::Command::new(&exe);
    if !args.iter().any(|a| a == "--out" || a.starts_with("--out=")) {
        cmd.arg("--out").arg(util::target_dir().join("rooflab"));
    }
    cmd.arg("--ptxas-report").arg(&report_path);
    cmd.args(args);
    util::add_runtime_libcuda(&mut cmd, &cuda);
    util::header(&util::show(&cmd));
    Ok(util::exit_code(util::status(&mut cmd)?))
}
