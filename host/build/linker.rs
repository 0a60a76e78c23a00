//! The link step rustc calls (linker flavor `llbc`) for the nvptx64 cdylib.
//!
//! rustc passes: `--export-symbol NAME` per kernel, the fat-LTO bitcode object(s), rlibs
//! (compiler_builtins), `-L` dirs, `--target`, `--target-cpu sm_XX`, `-O<n>`, `-o OUT`.
//! We link the bitcode, keep only the exported kernels external, optimize, and emit PTX.

use std::path::PathBuf;
use std::process::Command;

/// Set in the environment of the nested cargo: "you are the linker now".
pub const MODE_VAR: &str = "ROOFLAB_PTX_LINKER";
/// Where `llvm-link`, `opt` and `llc` live (the `llvm-tools` component).
pub const TOOLS_VAR: &str = "ROOFLAB_LLVM_TOOLS";
/// PTX ISA the PTX declares. 7.8 is what sm_90 needs at least and CUDA 12.0 drivers accept.
const PTX_ISA: &str = "+ptx78";

/// `$(rustc --print sysroot)/lib/rustlib/<host>/bin`, checked to hold the three tools.
pub fn llvm_tools_dir() -> Result<PathBuf, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("could not run {rustc}: {e}"))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let host = std::env::var("HOST").unwrap_or_else(|_| "x86_64-unknown-linux-gnu".into());
    let dir = sysroot.join("lib/rustlib").join(host).join("bin");
    for tool in ["llvm-link", "opt", "llc"] {
        if !dir.join(tool).is_file() {
            return Err(format!(
                "{} is missing: add the `llvm-tools` component (rust-toolchain.toml lists it; \
                 run `rustup toolchain install` in the repository)",
                dir.join(tool).display()
            ));
        }
    }
    Ok(dir)
}

fn expand_response_files(args: Vec<String>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for a in args {
        if let Some(file) = a.strip_prefix('@') {
            let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
            out.extend(text.lines().map(str::to_owned));
        } else {
            out.push(a);
        }
    }
    Ok(out)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} exited with {status}"))
    }
}

pub fn link(args: Vec<String>) -> Result<(), String> {
    let args = expand_response_files(args)?;
    let tools =
        PathBuf::from(std::env::var(TOOLS_VAR).map_err(|_| format!("{TOOLS_VAR} not set"))?);
    let (mut exports, mut inputs) = (Vec::new(), Vec::new());
    let (mut cpu, mut output) = (None, None);
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--export-symbol" => exports.push(it.next().ok_or("--export-symbol without a name")?),
            "--target-cpu" => cpu = it.next(),
            "-o" => output = it.next(),
            "--target" | "-L" => {
                it.next();
            }
            s if s.starts_with("-L") || s.starts_with("-O") || s.starts_with("--") => {}
            // compiler_builtins: the kernels need none of it (nvptx has native 64-bit integer
            // ops); an unresolved call would show up as `.extern .func` and fail the build.
            s if s.ends_with(".rlib") => {}
            s => inputs.push(s.to_owned()),
        }
    }
    let cpu = cpu.ok_or("rustc passed no --target-cpu; build with -Ctarget-cpu=sm_XX")?;
    let output = PathBuf::from(output.ok_or("rustc passed no -o")?);
    if exports.is_empty() {
        return Err("no kernels exported (no `extern \"gpu-kernel\"` #[no_mangle] fn?)".into());
    }
    let linked = output.with_extension("linked.bc");
    let optimized = output.with_extension("opt.bc");
    run(Command::new(tools.join("llvm-link"))
        .args(&inputs)
        .arg("-o")
        .arg(&linked))?;
    run(Command::new(tools.join("opt"))
        .arg(format!(
            "-internalize-public-api-list={}",
            exports.join(",")
        ))
        .arg("-passes=internalize,globaldce,default<O3>")
        .arg(&linked)
        .arg("-o")
        .arg(&optimized))?;
    run(Command::new(tools.join("llc"))
        .args(["-O3", "-mtriple=nvptx64-nvidia-cuda"])
        .arg(format!("-mcpu={cpu}"))
        .arg(format!("-mattr={PTX_ISA}"))
        .arg(&optimized)
        .arg("-o")
        .arg(&output))?;
    Ok(())
}
