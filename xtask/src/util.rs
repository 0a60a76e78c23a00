//! Small helpers shared by the subcommands: where things are, how to run cargo and GPU
//! programs, and step headers.

use std::env;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use anyhow::{Context, Result, bail};

/// The workspace root (xtask lives one level below it).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

/// `<workspace>/target`. Fixed rather than `CARGO_TARGET_DIR`: host/build.rs also writes
/// `target/ptx/` and `target/ptx-build/` there, so one place keeps everything together.
pub fn target_dir() -> PathBuf {
    workspace().join("target")
}

/// A `cargo` command in the workspace, using the cargo that runs xtask (env `CARGO`), with
/// `CUDA_LIBRARY_PATH` pointing at a libcuda to link against (`cust_raw` needs one at build
/// time). `cuda_dir` comes from `deps::ensure_libcuda`, which already respects a user's own
/// `CUDA_LIBRARY_PATH`.
pub fn cargo(cuda_dir: &Path) -> Command {
    let mut cmd = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace())
        .env("CUDA_LIBRARY_PATH", cuda_dir);
    cmd
}

/// Lets GPU programs (bench, gpu tests) start on a machine without an NVIDIA driver.
///
/// They link `libcuda.so.1` dynamically; with none on the system the loader would refuse to
/// start them. With our stub on `LD_LIBRARY_PATH` they start, `cuInit` returns
/// `CUDA_ERROR_NO_DEVICE` and the program says so itself. Where the system has a libcuda
/// (a GPU machine), nothing is added: the real driver must be the one loaded.
pub fn add_runtime_libcuda(cmd: &mut Command, cuda_dir: &Path) {
    if system_has_libcuda() {
        return;
    }
    let lib64 = cuda_dir.join("lib64");
    if !lib64.join("libcuda.so.1").exists() {
        note(&format!(
            "no libcuda.so.1 on this system and none in {}: GPU programs will not start",
            lib64.display()
        ));
        return;
    }
    let mut paths = vec![lib64];
    if let Some(old) = env::var_os("LD_LIBRARY_PATH") {
        paths.extend(env::split_paths(&old));
    }
    let joined: OsString = env::join_paths(paths).expect("library paths contain no ':'");
    cmd.env("LD_LIBRARY_PATH", joined);
}

/// Does the dynamic loader find a `libcuda.so.1` without our help?
pub fn system_has_libcuda() -> bool {
    // The user's own LD_LIBRARY_PATH counts (but not our stub, if it is already on it).
    let stub = target_dir().join("cuda-stub");
    if let Some(paths) = env::var_os("LD_LIBRARY_PATH")
        && env::split_paths(&paths)
            .any(|d| !d.starts_with(&stub) && d.join("libcuda.so.1").exists())
    {
        return true;
    }
    // `ldconfig` is in /sbin for non-root users' PATHs on Debian.
    for ldconfig in ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"] {
        if let Ok(out) = Command::new(ldconfig).arg("-p").output()
            && out.status.success()
        {
            return String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim_start().starts_with("libcuda.so.1 "));
        }
    }
    // No ldconfig at all: look where drivers usually put it.
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
    ]
    .iter()
    .any(|d| Path::new(d).join("libcuda.so.1").exists())
}

/// Runs `cmd` with inherited stdio; an error if it cannot start, else its status.
pub fn status(cmd: &mut Command) -> Result<ExitStatus> {
    cmd.status()
        .with_context(|| format!("could not run {}", show(cmd)))
}

/// Runs `cmd` with inherited stdio and fails unless it succeeds.
pub fn run_ok(cmd: &mut Command) -> Result<()> {
    let st = status(cmd)?;
    if !st.success() {
        bail!("`{}` failed ({st})", show(cmd));
    }
    Ok(())
}

/// The command line, for messages.
pub fn show(cmd: &Command) -> String {
    let prog = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(cmd.get_program())
        .to_string_lossy()
        .into_owned();
    std::iter::once(prog)
        .chain(cmd.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn styled(code: &str, text: &str) -> String {
    if std::io::stderr().is_terminal() && env::var_os("NO_COLOR").is_none() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A step header, so a CI log shows where each step starts.
pub fn header(text: &str) {
    eprintln!("\n{}", styled("1;36", &format!("==> {text}")));
}

pub fn note(text: &str) {
    eprintln!("{} {text}", styled("1;33", "note:"));
}

pub fn good(text: &str) -> String {
    styled("1;32", text)
}

pub fn bad(text: &str) -> String {
    styled("1;31", text)
}

/// Hard-links `from` to `to` (copies across file systems), replacing `to`.
pub fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    let _ = std::fs::remove_file(to);
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to)
            .with_context(|| format!("copy {} -> {}", from.display(), to.display()))?;
    }
    Ok(())
}

/// A scratch folder name unique to this process, next to `final_path`, so that a finished
/// result can be moved into place with one rename (concurrent runs never see half a result).
pub fn scratch_next_to(final_path: &Path) -> PathBuf {
    let name = final_path.file_name().unwrap_or_default().to_string_lossy();
    final_path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Runs a cargo build-like command with `--message-format=json-render-diagnostics` and returns
/// the executables it produced as `(target name, is a test, path)`. Diagnostics still reach
/// the terminal; reading paths from cargo (rather than guessing `target/release/...`) keeps
/// this right under `CARGO_TARGET_DIR` and for test binaries with hashed names.
pub fn cargo_executables(mut cmd: Command) -> Result<Vec<(String, bool, PathBuf)>> {
    cmd.arg("--message-format=json-render-diagnostics")
        .stdout(std::process::Stdio::piped());
    let out = cmd
        .spawn()
        .and_then(|c| c.wait_with_output())
        .with_context(|| format!("could not run {}", show(&cmd)))?;
    if !out.status.success() {
        bail!("`{}` failed ({})", show(&cmd), out.status);
    }
    let mut found = vec![];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        if let Some(exe) = msg["executable"].as_str() {
            let name = msg["target"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let test = msg["profile"]["test"].as_bool().unwrap_or(false);
            found.push((name, test, PathBuf::from(exe)));
        }
    }
    Ok(found)
}

/// Exit code to hand on from a child: its own, or 128 + signal like a shell.
pub fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(1),
        _ => 1,
    }
}
