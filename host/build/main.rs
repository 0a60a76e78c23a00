//! rooflab's PTX build: the project's own equivalent of rust-cuda's `cuda_builder`.
//!
//! `cargo build` of the host runs this script, which
//!  1. compiles `kernels-gpu` for `nvptx64-nvidia-cuda` (`-Zbuild-std=core`, crate type
//!     `cdylib`) once per target architecture, in its own target dir;
//!  2. acts as the linker rustc calls for that cdylib: rustc hands over bitcode, and this same
//!     executable, re-invoked with `ROOFLAB_PTX_LINKER=1`, links it with `llvm-link`,
//!     internalizes everything but the exported kernels, optimizes with `opt` and writes PTX
//!     with `llc` (all three from the `llvm-tools` component);
//!  3. copies `sm_XX.ptx` into `OUT_DIR`, where `host/src/ptx.rs` embeds them;
//!  4. compiles the CUDA C++ twins (`host/twins/*.cu`) with NVRTC for the same architectures
//!     and checks each against its Rust entry (`twins.rs`).
//!
//! Why not cuda_builder itself: see docs/toolchain.md (it needs LLVM 7 and CUDA 11's
//! libNVVM, neither of which can be had here).

mod linker;
mod twins;

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Architectures a PTX is built for; the host picks the newest one the device can run.
/// Listed in `ptx_arches.txt` (one line each) so that host code reads the same list.
const ARCHES_FILE: &str = "build/ptx_arches.txt";

fn main() {
    if env::var_os(linker::MODE_VAR).is_some() {
        // We are rustc's linker for the nvptx cdylib, not the build script.
        if let Err(e) = linker::link(env::args().skip(1).collect()) {
            eprintln!("rooflab PTX link step failed: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = build_ptx() {
        // A build-script panic prints its message to the user; make it the whole story.
        panic!("\n\nrooflab: building the PTX failed:\n{e}\n");
    }
}

fn build_ptx() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let kernels_dir = workspace.join("kernels-gpu");
    println!(
        "cargo:rerun-if-changed={}",
        kernels_dir.join("src").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        kernels_dir.join("Cargo.toml").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir.join(ARCHES_FILE).display()
    );
    println!("cargo:rerun-if-changed=build");

    let arches_text =
        std::fs::read_to_string(manifest_dir.join(ARCHES_FILE)).map_err(|e| e.to_string())?;
    let arches: Vec<&str> = arches_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();

    // A separate target dir: the outer cargo holds the lock on the workspace's.
    let ptx_target = workspace.join("target").join("ptx-build");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let me = env::current_exe().map_err(|e| e.to_string())?;
    let tools = linker::llvm_tools_dir()?;
    let profile_dir = ptx_target.join("nvptx64-nvidia-cuda").join("release");

    for arch in &arches {
        let flags = [
            format!("-Ctarget-cpu={arch}"),
            format!("-Clinker={}", me.display()),
        ]
        .join("\x1f");
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(&workspace)
            .args([
                "rustc",
                "--package",
                "rooflab-kernels",
                "--lib",
                "--release",
                "--crate-type",
                "cdylib",
            ])
            .args([
                "--target",
                "nvptx64-nvidia-cuda",
                "-Zbuild-std=core",
                "--target-dir",
            ])
            .arg(&ptx_target)
            // The outer build's flags are for the host; the nested build gets exactly ours.
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS")
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("CARGO_BUILD_TARGET")
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("RUSTC_WRAPPER")
            .env("CARGO_ENCODED_RUSTFLAGS", flags)
            // Fat LTO merges `core` into the one bitcode object rustc hands the linker.
            .env("CARGO_PROFILE_RELEASE_LTO", "fat")
            .env("CARGO_PROFILE_RELEASE_PANIC", "abort")
            .env(linker::MODE_VAR, "1")
            .env(linker::TOOLS_VAR, &tools);
        let out = cmd
            .output()
            .map_err(|e| format!("could not run {cargo}: {e}"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let hint = if stderr.contains("rust-src") || stderr.contains("is not installed") {
                "\nNeeds the toolchain in rust-toolchain.toml with its rust-src and llvm-tools \
                 components: run `rustup toolchain install` in the repository."
            } else {
                ""
            };
            return Err(format!(
                "`cargo rustc --target nvptx64-nvidia-cuda` for {arch} failed.\n{stderr}{hint}"
            ));
        }
        forward_warnings(&String::from_utf8_lossy(&out.stderr), arch);
        let ptx = profile_dir.join("rooflab_kernels.ptx");
        let dest = out_dir.join(format!("{arch}.ptx"));
        std::fs::copy(&ptx, &dest)
            .map_err(|e| format!("copy {} -> {}: {e}", ptx.display(), dest.display()))?;
        check_ptx(&dest, arch)?;
        // A stable place for tools (`cargo xtask test` runs ptxas on it, `explain` reads it).
        let shown = workspace.join("target").join("ptx");
        std::fs::create_dir_all(&shown).map_err(|e| e.to_string())?;
        std::fs::copy(&dest, shown.join(format!("{arch}.ptx"))).map_err(|e| e.to_string())?;
    }
    // host/src/ptx.rs embeds these, deflated (three arches of ~4 MB of PTX text made each
    // binary ~30 MB; the GPU machine's transfer limit is 64 MiB); the list is generated so it
    // always matches the files.
    for a in &arches {
        let text = std::fs::read(out_dir.join(format!("{a}.ptx"))).map_err(|e| e.to_string())?;
        std::fs::write(
            out_dir.join(format!("{a}.ptx.deflate")),
            miniz_oxide::deflate::compress_to_vec(&text, 6),
        )
        .map_err(|e| e.to_string())?;
    }
    let list: Vec<String> = arches
        .iter()
        .map(|a| {
            format!("(\"{a}\", include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{a}.ptx.deflate\"))),")
        })
        .collect();
    std::fs::write(
        out_dir.join("ptx_list.rs"),
        format!("&[{}]", list.join("\n")),
    )
    .map_err(|e| e.to_string())?;
    let shown = workspace.join("target").join("ptx");
    twins::build(&manifest_dir, &out_dir, &shown, &arches, |arch| {
        std::fs::read_to_string(out_dir.join(format!("{arch}.ptx"))).map_err(|e| e.to_string())
    })
}

/// Refuse PTX that would only fail at load time: no kernel entries, or calls left to
/// functions nothing defines (for example a math routine that needed libdevice).
/// rustc's warnings from the nested device build, passed on as `cargo:warning` lines so that
/// they show in every build, not only when the device build fails. Only the first arch's are
/// shown (the others repeat them).
fn forward_warnings(stderr: &str, arch: &str) {
    static SHOWN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SHOWN.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let mut in_warning = false;
    for line in stderr.lines() {
        let status = line.trim_start();
        if line.starts_with("warning") || line.starts_with("error") {
            // cargo's summary ("warning: `x` (lib) generated 3 warnings") is not a diagnostic.
            in_warning = line.starts_with("warning") && !line.contains(" generated ");
        } else if ["Compiling", "Finished", "Checking", "Building"]
            .iter()
            .any(|s| status.starts_with(s))
        {
            in_warning = false;
        }
        if in_warning {
            println!("cargo:warning=[device code, {arch}] {line}");
        }
    }
}

fn check_ptx(path: &Path, arch: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    if !text.contains(".entry") {
        return Err(format!(
            "{}: no .entry in the PTX for {arch}",
            path.display()
        ));
    }
    if let Some(line) = text
        .lines()
        .find(|l| l.trim_start().starts_with(".extern .func"))
    {
        return Err(format!(
            "{}: unresolved device function in the PTX for {arch}: {line}",
            path.display()
        ));
    }
    Ok(())
}
