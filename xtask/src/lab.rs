//! The guided lab's commands besides `explain`: `cargo xtask report` (the guide's generated
//! tables and plots from a bench.json) and `cargo xtask profile` (one variant under Nsight
//! Compute). Both run modes of the release `rooflab-bench`, where the rendering and the
//! profiling live; plus the bundle's `profile` script, which does the same on the GPU machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::{deps, util};

/// Build the release `rooflab-bench` and return its path.
pub fn build_bench(cuda: &Path) -> Result<PathBuf> {
    util::header("cargo build --release -p rooflab --bin rooflab-bench");
    let mut build = util::cargo(cuda);
    build.args([
        "build",
        "--release",
        "-p",
        "rooflab",
        "--bin",
        "rooflab-bench",
    ]);
    util::cargo_executables(build)?
        .into_iter()
        .find(|(name, _, _)| name == "rooflab-bench")
        .map(|(_, _, path)| path)
        .context("cargo built no rooflab-bench executable")
}

fn run_bench(args: &[&std::ffi::OsStr]) -> Result<u8> {
    let cuda = deps::ensure_libcuda()?;
    let exe = build_bench(&cuda)?;
    let mut cmd = Command::new(&exe);
    cmd.args(args);
    util::add_runtime_libcuda(&mut cmd, &cuda);
    util::header(&util::show(&cmd));
    Ok(util::exit_code(util::status(&mut cmd)?))
}

/// `cargo xtask report RESULTS.json [--docs DIR]`.
pub fn report(results: &Path, docs: Option<&Path>) -> Result<u8> {
    // Paths as the caller typed them, but the bench runs in the caller's directory anyway;
    // the default guide folder is the workspace's, wherever xtask is run from.
    // The HTML report goes where `cargo xtask bench` writes its own: target/rooflab/report/.
    let docs = docs.map_or_else(|| util::workspace().join("docs"), Path::to_path_buf);
    let out = util::workspace().join("target").join("rooflab");
    run_bench(&[
        "--render".as_ref(),
        results.as_os_str(),
        "--docs".as_ref(),
        docs.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ])
}

/// `cargo xtask profile FAMILY/VARIANT [--size N] [--check-metrics]`.
pub fn profile(
    name: Option<&str>,
    size: Option<&str>,
    check_metrics: bool,
    sections: &[String],
) -> Result<u8> {
    let mut args: Vec<&std::ffi::OsStr> = Vec::new();
    if check_metrics {
        args.push("--check-metrics".as_ref());
    } else {
        args.push("--ncu".as_ref());
        args.push(
            name.context("which variant? `cargo xtask profile FAMILY/VARIANT`")?
                .as_ref(),
        );
    }
    if let Some(s) = size {
        args.push("--size".as_ref());
        args.push(s.as_ref());
    }
    for sec in sections {
        args.push("--ncu-section".as_ref());
        args.push(sec.as_ref());
    }
    run_bench(&args)
}

/// The bundle's `profile` script (written by `cargo xtask bundle`).
pub const PROFILE_SCRIPT: &str = r##"#!/usr/bin/env bash
# rooflab: profile one variant under Nsight Compute on the GPU machine (made by `cargo xtask bundle`).
set -uo pipefail
usage() {
  cat <<'EOF'
Usage: ./profile FAMILY/VARIANT [--size N] [--ncu-section S]...
                                             one launch under ncu, next to the cost model
                                             (and ncu's own sections S, e.g. WarpStateStats)
       ./profile --check-metrics             which of rooflab's ncu metrics this GPU/ncu knows
       ./profile --list                      the valid FAMILY/VARIANT names
Env: NCU  the ncu to use (default: PATH, then /usr/local/cuda/bin/ncu)
Without ncu or without counter permission (ERR_NVGPUCTRPERM) it says so and exits 0.
EOF
}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NCU_ARGS=()
[[ -n "${NCU:-}" ]] && NCU_ARGS=(--ncu-path "$NCU")
case "${1:-}" in
  ""|-h|--help) usage; exit 0 ;;
  --check-metrics) exec "$HERE/rooflab-bench" --check-metrics "${NCU_ARGS[@]}" ;;
  --list) exec "$HERE/rooflab-bench" --list ;;
  *) name="$1"; shift; exec "$HERE/rooflab-bench" --ncu "$name" "${NCU_ARGS[@]}" "$@" ;;
esac
"##;

#[cfg(test)]
mod tests {
    #[test]
    fn profile_script_is_bash_and_checks_metrics() {
        let s = super::PROFILE_SCRIPT;
        assert!(s.starts_with("#!/usr/bin/env bash\n"));
        assert!(s.contains("--check-metrics") && s.contains("--ncu \"$name\""));
        if let Ok(out) = std::process::Command::new("bash")
            .args(["-n", "-c", s])
            .output()
        {
            assert!(
                out.status.success(),
                "bash -n: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
