//! The CUDA C++ twins (`host/twins/*.cu`): the same algorithm as a family's best Rust step,
//! written in CUDA C++, compiled here with NVRTC into one PTX per architecture and embedded
//! beside the Rust PTX (`host/src/ptx.rs`), so that the bench can time both on the same
//! inputs through the same host code (docs/09-rust-vs-cuda-cpp.md).
//!
//! Why NVRTC and not nvcc: the PyPI CUDA wheels this project builds with carry `ptxas` but no
//! `nvcc` driver or `cicc`; NVRTC's wheel is a whole device compiler (the same NVVM front end
//! and optimizer nvcc runs), needs no host compiler and no GPU, and is loaded here with
//! `libloading`. `cargo xtask deps` fetches it; `ROOFLAB_NVRTC` points at another one. Without
//! it the build goes on and the bench's "vs C++" column says why it is empty.
//!
//! What the twins are compiled with, so that they run the same arithmetic as the Rust PTX:
//! - every constant a twin needs as `-DNAME=VALUE`, taken from the kernels crate
//!   (`rooflab_kernels::twins::TWINNED`, each variant file's `TWIN_DEFINES`), never retyped;
//! - `-fmad=false`: rustc's NVPTX path does not contract `a*b+c` into an FMA, and the Rust
//!   kernels write `math::fma` where they want one; a twin writes `fmaf` at the same places;
//! - the default `-ftz=false -prec-div=true -prec-sqrt=true` (the Rust PTX's IEEE defaults).
//!
//! Each twin entry is named `cuda_<the Rust entry>` and must take the same parameters: the
//! build refuses a twin whose PTX parameter list differs from its Rust entry's (one launch
//! path passes the same arguments to both) and a twin with no Rust entry.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};

/// The prefix of a twin entry's name.
pub const PREFIX: &str = rooflab_kernels::twins::ENTRY_PREFIX;

/// Where the twins' sources are, relative to the host crate.
pub const DIR: &str = "twins";

/// Finds NVRTC: `ROOFLAB_NVRTC`, then `cargo xtask deps`'s cache, then the loader's search
/// path and a CUDA toolkit under `/usr/local/cuda`. `Err` says where it looked.
fn find_nvrtc() -> Result<PathBuf, String> {
    println!("cargo:rerun-if-env-changed=ROOFLAB_NVRTC");
    if let Some(p) = std::env::var_os("ROOFLAB_NVRTC").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.exists() {
            Ok(p)
        } else {
            Err(format!("ROOFLAB_NVRTC={} does not exist", p.display()))
        };
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("rooflab").join("cuda-nvrtc-12.9.86").join("lib"));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(c) = &cache {
        // Rerun once `cargo xtask deps` has put it there.
        println!("cargo:rerun-if-changed={}", c.display());
        candidates.push(c.join("libnvrtc.so.12"));
    }
    candidates.push("/usr/local/cuda/lib64/libnvrtc.so".into());
    if let Some(p) = candidates.iter().find(|p| p.exists()) {
        return Ok(p.clone());
    }
    Err(format!(
        "no NVRTC found (looked at ROOFLAB_NVRTC, {}): run `cargo xtask deps`, or set \
         ROOFLAB_NVRTC to a libnvrtc.so",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

type Program = *mut c_void;

/// The handful of NVRTC calls the build needs (nvrtc.h), bound at run time.
struct Nvrtc {
    _lib: libloading::Library,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> c_int,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> c_int,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Program) -> c_int,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
}

impl Nvrtc {
    fn load(path: &Path) -> Result<Nvrtc, String> {
        // SAFETY: loading NVRTC runs its initializers, which have no preconditions; each
        // symbol is bound to the signature nvrtc.h declares for it.
        unsafe {
            let lib = libloading::Library::new(path)
                .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
            macro_rules! sym {
                ($name:literal) => {
                    *lib.get($name)
                        .map_err(|e| format!("{}: {e}", path.display()))?
                };
            }
            Ok(Nvrtc {
                create: sym!(b"nvrtcCreateProgram\0"),
                compile: sym!(b"nvrtcCompileProgram\0"),
                log_size: sym!(b"nvrtcGetProgramLogSize\0"),
                log: sym!(b"nvrtcGetProgramLog\0"),
                ptx_size: sym!(b"nvrtcGetPTXSize\0"),
                ptx: sym!(b"nvrtcGetPTX\0"),
                destroy: sym!(b"nvrtcDestroyProgram\0"),
                version: sym!(b"nvrtcVersion\0"),
                _lib: lib,
            })
        }
    }

    fn version(&self) -> String {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints.
        unsafe { (self.version)(&mut major, &mut minor) };
        format!("{major}.{minor}")
    }

    /// Compiles one source with `headers` (name, text) and `options`; the PTX, or the log.
    fn compile(
        &self,
        name: &str,
        source: &str,
        headers: &[(String, String)],
        options: &[String],
    ) -> Result<String, String> {
        let c = |s: &str| CString::new(s).map_err(|e| e.to_string());
        let src = c(source)?;
        let cname = c(name)?;
        let h_text: Vec<CString> = headers.iter().map(|h| c(&h.1)).collect::<Result<_, _>>()?;
        let h_name: Vec<CString> = headers.iter().map(|h| c(&h.0)).collect::<Result<_, _>>()?;
        let h_text_p: Vec<*const c_char> = h_text.iter().map(|s| s.as_ptr()).collect();
        let h_name_p: Vec<*const c_char> = h_name.iter().map(|s| s.as_ptr()).collect();
        let opts: Vec<CString> = options.iter().map(|o| c(o)).collect::<Result<_, _>>()?;
        let opts_p: Vec<*const c_char> = opts.iter().map(|s| s.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: every pointer is to a live NUL-terminated string (or array of them) of the
        // length passed; NVRTC copies what it keeps.
        unsafe {
            let code = (self.create)(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                headers.len() as c_int,
                h_text_p.as_ptr(),
                h_name_p.as_ptr(),
            );
            if code != 0 {
                return Err(format!("nvrtcCreateProgram failed (code {code})"));
            }
            let code = (self.compile)(prog, opts_p.len() as c_int, opts_p.as_ptr());
            let mut n = 0usize;
            (self.log_size)(prog, &mut n);
            let mut log = vec![0 as c_char; n.max(1)];
            (self.log)(prog, log.as_mut_ptr());
            let log = CStr::from_ptr(log.as_ptr()).to_string_lossy().into_owned();
            if code != 0 {
                (self.destroy)(&mut prog);
                return Err(log);
            }
            if !log.trim().is_empty() {
                // Warnings fail the build: a twin must compile cleanly, like the Rust code.
                (self.destroy)(&mut prog);
                return Err(format!("warnings (the twins must compile cleanly):\n{log}"));
            }
            (self.ptx_size)(prog, &mut n);
            let mut ptx = vec![0 as c_char; n.max(1)];
            (self.ptx)(prog, ptx.as_mut_ptr());
            (self.destroy)(&mut prog);
            Ok(CStr::from_ptr(ptx.as_ptr()).to_string_lossy().into_owned())
        }
    }
}

/// The sources: every `*.cu` in `dir` (sorted, concatenated into one program with `#line`
/// directives so that errors name the right file) and every `*.cuh` as an include.
fn sources(dir: &Path) -> Result<(String, Vec<(String, String)>), String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    let mut program = String::new();
    let mut headers = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        if name.ends_with(".cuh") {
            headers.push((name, text));
        } else if name.ends_with(".cu") {
            program.push_str(&format!("#line 1 \"host/twins/{name}\"\n{text}\n"));
        }
    }
    Ok((program, headers))
}

/// `sm_90a` -> NVRTC's `--gpu-architecture=compute_90a`.
fn arch_option(arch: &str) -> String {
    format!("--gpu-architecture={}", arch.replace("sm_", "compute_"))
}

/// The options every twin is compiled with (see the module docs for why each).
pub fn options(arch: &str) -> Vec<String> {
    let mut o = vec![
        arch_option(arch),
        "-std=c++17".to_string(),
        "-fmad=false".to_string(),
        "-ftz=false".to_string(),
        "-prec-div=true".to_string(),
        "-prec-sqrt=true".to_string(),
    ];
    for (name, value) in rooflab_kernels::twins::TWINNED
        .iter()
        .flat_map(|(_, d)| d.iter())
    {
        o.push(format!("-D{name}={value}"));
    }
    o
}

/// Each `.entry NAME(` of `ptx` with the bit widths of its parameters, in order.
pub fn entries(ptx: &str) -> Vec<(String, Vec<u32>)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, Vec<u32>)> = None;
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(rest) = t
            .strip_prefix(".visible .entry ")
            .or_else(|| t.strip_prefix(".entry "))
        {
            if let Some(done) = cur.take() {
                out.push(done);
            }
            let name = rest.split('(').next().unwrap_or("").trim().to_string();
            cur = Some((name, Vec::new()));
            if rest.trim_end().ends_with("()") {
                out.push(cur.take().unwrap());
            }
            continue;
        }
        let Some((_, params)) = cur.as_mut() else {
            continue;
        };
        if let Some(rest) = t.strip_prefix(".param ") {
            // `.param .u64 .ptr .align 4 NAME_param_0,` or `.param .f32 NAME_param_1`:
            // the width is in the type's name; a `.b8 X[16]` array is 8 * 16 bits.
            let ty = rest.split_whitespace().next().unwrap_or("");
            let width: u32 = ty
                .trim_start_matches('.')
                .trim_start_matches(|c: char| c.is_alphabetic())
                .parse()
                .unwrap_or(0);
            let count: u32 = rest
                .split('[')
                .nth(1)
                .and_then(|s| s.split(']').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            params.push(width * count);
        } else if t.starts_with(')') {
            out.push(cur.take().unwrap());
        }
    }
    if let Some(done) = cur {
        out.push(done);
    }
    out
}

/// Checks every twin entry against the Rust entry it is the twin of.
fn check_against_rust(twin_ptx: &str, rust_ptx: &str, arch: &str) -> Result<usize, String> {
    let rust = entries(rust_ptx);
    let mut count = 0;
    for (name, params) in entries(twin_ptx) {
        let Some(of) = name.strip_prefix(PREFIX) else {
            return Err(format!(
                "twin entry `{name}` ({arch}): twin entries are named {PREFIX}<the Rust entry>"
            ));
        };
        let Some((_, rust_params)) = rust.iter().find(|(n, _)| n == of) else {
            return Err(format!(
                "twin entry `{name}` ({arch}): the Rust PTX has no entry `{of}`"
            ));
        };
        if *rust_params != params {
            return Err(format!(
                "twin entry `{name}` ({arch}) takes parameters of {params:?} bits, the Rust \
                 entry `{of}` {rust_params:?}: one host launch passes the same arguments to both"
            ));
        }
        count += 1;
    }
    Ok(count)
}

/// Builds the twins for every arch (`rust_ptx(arch)` is the Rust PTX already built for it)
/// and writes `twins_ARCH.ptx` and `twins_list.rs` into `out_dir` (and the PTX into
/// `shown`, for tools). Without NVRTC the list is empty and says why; a twin that does not
/// compile or does not match its Rust entry fails the build.
pub fn build(
    manifest_dir: &Path,
    out_dir: &Path,
    shown: &Path,
    arches: &[&str],
    rust_ptx: impl Fn(&str) -> Result<String, String>,
) -> Result<(), String> {
    let dir = manifest_dir.join(DIR);
    println!("cargo:rerun-if-changed={}", dir.display());
    let list = out_dir.join("twins_list.rs");
    let nvrtc = match find_nvrtc().and_then(|p| Nvrtc::load(&p).map(|n| (n, p))) {
        Ok(n) => n,
        Err(why) => {
            println!("cargo:warning=the CUDA C++ twins are not built: {why}");
            let text = format!("(&[], Some({:?}))", format!("not built: {why}"));
            return std::fs::write(&list, text).map_err(|e| e.to_string());
        }
    };
    let (program, headers) = sources(&dir)?;
    let mut items = Vec::new();
    for arch in arches {
        let ptx = nvrtc
            .0
            .compile("rooflab_twins.cu", &program, &headers, &options(arch))
            .map_err(|log| {
                format!(
                    "NVRTC {} ({}) could not compile the CUDA C++ twins for {arch}:\n{log}",
                    nvrtc.0.version(),
                    nvrtc.1.display()
                )
            })?;
        check_against_rust(&ptx, &rust_ptx(arch)?, arch)?;
        let file = format!("{}{arch}.ptx", rooflab_kernels::twins::PTX_PREFIX);
        std::fs::write(out_dir.join(&file), &ptx).map_err(|e| e.to_string())?;
        std::fs::write(shown.join(&file), &ptx).map_err(|e| e.to_string())?;
        items.push(format!(
            "(\"{arch}\", include_str!(concat!(env!(\"OUT_DIR\"), \"/{file}\"))),"
        ));
    }
    let text = format!("(&[{}], None)", items.join("\n"));
    std::fs::write(&list, text).map_err(|e| e.to_string())
}
