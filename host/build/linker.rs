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
/// PTX ISA the PTX declares: 7.8 is what sm_90 needs at least (CUDA 11.8 drivers accept it);
/// the arch-specific sm_90a (wgmma, setmaxnreg, `cp.async.bulk.tensor`) needs 8.0 (CUDA 12.0).
fn ptx_isa(cpu: &str) -> &'static str {
    if cpu.ends_with('a') {
        "+ptx80"
    } else {
        "+ptx78"
    }
}

/// The marker a kernel body leaves in its PTX (through `gpu::launch_bounds`, an inline-asm
/// comment) to ask for `.maxntid THREADS, 1, 1` and `.minnctapersm BLOCKS`, which rustc has no
/// attribute for (CUDA C++ writes `__launch_bounds__(THREADS, BLOCKS)`). ptxas then caps the
/// registers so that BLOCKS blocks of THREADS fit, and `setmaxnreg` takes effect.
pub const LAUNCH_BOUNDS_MARKER: &str = "// rooflab:launch_bounds ";
/// The marker of `gpu::hopper::cluster_dims`: `.reqnctapercluster CTAS, 1, 1` (CUDA C++'s
/// `__cluster_dims__`), so that a plain launch makes clusters.
pub const CLUSTER_MARKER: &str = "// rooflab:cluster_dims ";

/// Puts the directives each marker asks for in front of its entry's body. Errors on a marker
/// that is malformed or outside any entry.
pub fn apply_launch_bounds(ptx: &str) -> Result<String, String> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 8);
    // Index in `out` of the current entry's opening `{` line.
    let mut body_open: Option<usize> = None;
    let mut in_entry_header = false;
    for line in lines {
        let t = line.trim();
        if t.starts_with(".visible .entry") || t.starts_with(".entry") {
            in_entry_header = true;
            body_open = None;
        } else if in_entry_header && t == "{" {
            in_entry_header = false;
            body_open = Some(out.len());
        }
        for (marker, arity, directive) in [
            (LAUNCH_BOUNDS_MARKER, 2, ".maxntid"),
            (CLUSTER_MARKER, 1, ".reqnctapercluster"),
        ] {
            let Some(rest) = t.strip_prefix(marker) else {
                continue;
            };
            let nums: Vec<u32> = rest
                .split_whitespace()
                .map(|n| n.parse::<u32>())
                .collect::<Result<_, _>>()
                .map_err(|_| format!("malformed marker: {t}"))?;
            let (true, Some(open)) = (nums.len() == arity, body_open) else {
                return Err(format!("marker outside an entry or malformed: {t}"));
            };
            let text = match *nums.as_slice() {
                [threads, blocks] => format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}"),
                [ctas] => format!(".reqnctapercluster {ctas}, 1, 1"),
                _ => unreachable!(),
            };
            // Once per entry, even if the body was inlined twice.
            let header = &out[open.saturating_sub(4)..open];
            if !header.iter().any(|l| l.starts_with(directive)) {
                out.insert(open, text);
                body_open = Some(open + 1);
            }
        }
        out.push(line.to_owned());
    }
    let mut s = out.join("\n");
    s.push('\n');
    Ok(s)
}

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
        .arg(format!("-mattr={}", ptx_isa(&cpu)))
        .arg(&optimized)
        .arg("-o")
        .arg(&output))?;
    let ptx = std::fs::read_to_string(&output).map_err(|e| format!("{}: {e}", output.display()))?;
    let bounded = apply_launch_bounds(&ptx)?;
    std::fs::write(&output, bounded).map_err(|e| format!("{}: {e}", output.display()))?;
    Ok(())
}
