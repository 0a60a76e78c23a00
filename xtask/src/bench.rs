//! `cargo xtask bench [ARGS...]`: build `rooflab-bench` (release) and run it, results under
//! `target/rooflab/` unless ARGS name their own `--out`.

use anyhow::{Context, Result};

use crate::{deps, util};

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
    let mut cmd = std::process::Command::new(&exe);
    if !args.iter().any(|a| a == "--out" || a.starts_with("--out=")) {
        cmd.arg("--out").arg(util::target_dir().join("rooflab"));
    }
    cmd.args(args);
    util::add_runtime_libcuda(&mut cmd, &cuda);
    util::header(&util::show(&cmd));
    Ok(util::exit_code(util::status(&mut cmd)?))
}
