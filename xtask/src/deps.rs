//! The two NVIDIA pieces a GPU-less build machine needs, fetched once and cached:
//!
//! * a `libcuda.so` to link against (`cust_raw` links `-lcuda`): Debian's non-free `libcuda1`
//!   package, downloaded with apt-get into a private folder (the system's apt configuration
//!   and installed packages are not touched) and unpacked with `dpkg -x` (no scripts run);
//! * `ptxas` (and `libdevice.10.bc`) from PyPI's `nvidia-cuda-nvcc-cu12` wheel, to assemble
//!   the PTX offline and read registers and spills;
//! * NVRTC (`libnvrtc.so.12` and its builtins) from PyPI's `nvidia-cuda-nvrtc-cu12` wheel, the
//!   device compiler `host/build` compiles the CUDA C++ twins (`host/twins/*.cu`) with;
//! * `nvdisasm` from PyPI's `nvidia-cuda-nvdisasm` wheel, to read the SASS of those cubins
//!   (which unit does the math, how data moves: see `sass.rs`).
//!
//! Downloads are cached in `${XDG_CACHE_HOME:-$HOME/.cache}/rooflab/` so that every clone on
//! a machine shares them; the libcuda is then linked into `<workspace>/target/cuda-stub/lib64/`.
//! See docs/toolchain.md for why these sources.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::util::{self, link_or_copy, scratch_next_to};

/// The wheel that carries ptxas; pinned so the `ptxas -v` report format does not drift.
const NVCC_WHEEL: &str = "nvidia-cuda-nvcc-cu12==12.9.86";
const NVCC_CACHE_NAME: &str = "cuda-nvcc-12.9.86";
/// The wheel that carries NVRTC, the same version as ptxas. `host/build/twins.rs` looks for
/// the library where this puts it (`NVRTC_CACHE_NAME/lib/libnvrtc.so.12`).
const NVRTC_WHEEL: &str = "nvidia-cuda-nvrtc-cu12==12.9.86";
const NVRTC_CACHE_NAME: &str = "cuda-nvrtc-12.9.86";
/// The wheel that carries nvdisasm; pinned so the SASS text format does not drift. (13.5
/// disassembles the cubins of ptxas 12.9 for sm_80 and sm_90, with two harmless "Old format"
/// warnings.)
const NVDISASM_WHEEL: &str = "nvidia-cuda-nvdisasm==13.5.37";
const NVDISASM_CACHE_NAME: &str = "cuda-nvdisasm-13.5.37";
/// Where nvdisasm lies inside that wheel.
const NVDISASM_MEMBER: &str = "nvidia/cu13/bin/nvdisasm";
/// Where the Debian package comes from (override with `ROOFLAB_DEBIAN_MIRROR`).
const DEBIAN_MIRROR: &str = "http://deb.debian.org/debian";
const DEBIAN_SUITE: &str = "bookworm";

fn cache_dir() -> Result<PathBuf> {
    let base = match env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(env::var_os("HOME").context("neither XDG_CACHE_HOME nor HOME is set")?)
                .join(".cache")
        }
    };
    Ok(base.join("rooflab"))
}

/// The folder to use as `CUDA_LIBRARY_PATH` (it has `lib64/libcuda.so`).
///
/// A `CUDA_LIBRARY_PATH` in the environment is the user's choice and is used as it is;
/// otherwise `<workspace>/target/cuda-stub`, created from the cache (downloading if needed).
pub fn ensure_libcuda() -> Result<PathBuf> {
    let stub = util::target_dir().join("cuda-stub");
    // `.cargo/config.toml` points CUDA_LIBRARY_PATH at our own stub folder, and cargo passes
    // that on to xtask: that value is ours to fill, not a user's choice.
    let user_dir = env::var_os("CUDA_LIBRARY_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|d| {
            d.canonicalize().ok().or_else(|| Some(d.clone()))
                != stub.canonicalize().ok().or_else(|| Some(stub.clone()))
        });
    if let Some(dir) = user_dir {
        if !dir.join("lib64").join("libcuda.so").exists() {
            util::note(&format!(
                "CUDA_LIBRARY_PATH={} has no lib64/libcuda.so; linking will likely fail \
                 (unset it to let xtask provide one)",
                dir.display()
            ));
        }
        return Ok(dir);
    }
    let lib64 = stub.join("lib64");
    if lib64.join("libcuda.so").exists() && lib64.join("libcuda.so.1").exists() {
        return Ok(stub);
    }
    materialize_stub(&stub, &cached_libcuda(false)?)?;
    Ok(stub)
}

/// Path of the `ptxas` executable (env `PTXAS` overrides the cached one).
pub fn ensure_ptxas() -> Result<PathBuf> {
    if let Some(p) = env::var_os("PTXAS").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(cached_nvcc(false)?.join("bin").join("ptxas"))
}

/// Path of the `nvdisasm` executable (env `NVDISASM` overrides the cached one).
pub fn ensure_nvdisasm() -> Result<PathBuf> {
    if let Some(p) = env::var_os("NVDISASM").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(cached_nvdisasm(false)?.join("bin").join("nvdisasm"))
}

/// `libdevice.10.bc`, which came with ptxas (for kernels that call `__nv_*` math functions).
pub fn libdevice() -> Result<PathBuf> {
    Ok(cached_nvcc(false)?
        .join("nvvm")
        .join("libdevice")
        .join("libdevice.10.bc"))
}

/// `cargo xtask deps [--refresh]`: make sure everything is there and say where.
pub fn cmd_deps(refresh: bool) -> Result<()> {
    if refresh {
        if env::var_os("CUDA_LIBRARY_PATH").is_none() {
            let stub = util::target_dir().join("cuda-stub");
            materialize_stub(&stub, &cached_libcuda(true)?)?;
        }
        cached_nvcc(true)?;
        cached_nvdisasm(true)?;
        cached_nvrtc(true)?;
    }
    let cuda = ensure_libcuda()?;
    let ptxas = ensure_ptxas()?;
    let nvdisasm = ensure_nvdisasm()?;
    let libdevice = libdevice()?;
    let nvrtc = ensure_nvrtc()?;
    println!("CUDA_LIBRARY_PATH  {}", cuda.display());
    println!("ptxas              {}", ptxas.display());
    println!("nvdisasm           {}", nvdisasm.display());
    println!("libdevice          {}", libdevice.display());
    println!("NVRTC (C++ twins)  {}", nvrtc.display());
    println!("download cache     {}", cache_dir()?.display());
    let runtime = if util::system_has_libcuda() {
        "the system's libcuda.so.1 (a driver is installed)".to_string()
    } else {
        format!(
            "{} (stub: no driver here; programs will report no CUDA device)",
            cuda.join("lib64").display()
        )
    };
    println!("libcuda at runtime {runtime}");
    Ok(())
}

/// The cached `libcuda.so.1` (a real file), downloading it first if needed or asked.
fn cached_libcuda(refresh: bool) -> Result<PathBuf> {
    let dir = cache_dir()?.join("libcuda");
    let lib = dir.join("libcuda.so.1");
    if lib.exists() && !refresh {
        return Ok(lib);
    }
    util::header("fetching libcuda (Debian non-free libcuda1) for linking");
    let work = scratch_next_to(&dir);
    let _ = fs::remove_dir_all(&work);
    let result = download_libcuda(&work);
    let outcome = result.and_then(|(real, deb)| {
        let done = work.join("done");
        fs::create_dir_all(&done)?;
        fs::copy(&real, done.join("libcuda.so.1"))?;
        fs::write(done.join("SOURCE"), format!("{deb}\n"))?;
        replace_dir(&done, &dir)
    });
    let _ = fs::remove_dir_all(&work);
    outcome.map_err(|e| {
        e.context(
            "could not get a libcuda.so to link against. By hand: put one (for example from \
             Debian's `libcuda1` or `nvidia-cuda-dev` package, or a CUDA toolkit's \
             lib64/stubs) at DIR/lib64/libcuda.so and set CUDA_LIBRARY_PATH=DIR",
        )
    })?;
    Ok(lib)
}

/// apt-get with its own sources, lists and cache under `work`: nothing system-wide changes.
/// Returns the unpacked library file and the package file name.
fn download_libcuda(work: &Path) -> Result<(PathBuf, String)> {
    let lists = work.join("lists");
    let archives = work.join("cache").join("archives");
    fs::create_dir_all(lists.join("partial"))?;
    fs::create_dir_all(archives.join("partial"))?;
    let mirror = env::var("ROOFLAB_DEBIAN_MIRROR").unwrap_or_else(|_| DEBIAN_MIRROR.into());
    let sources = work.join("sources.list");
    fs::write(
        &sources,
        format!(
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {mirror} {DEBIAN_SUITE} non-free\n"
        ),
    )?;
    let apt = |args: &[&str]| {
        let mut cmd = Command::new("apt-get");
        cmd.current_dir(work)
            .arg("-q")
            .arg("-o")
            .arg(format!("Dir::Etc::SourceList={}", sources.display()))
            .arg("-o")
            .arg("Dir::Etc::SourceParts=/dev/null")
            .arg("-o")
            .arg(format!("Dir::State::Lists={}", lists.display()))
            .arg("-o")
            .arg(format!("Dir::Cache={}", work.join("cache").display()))
            // As root, apt would drop to user `_apt`, which cannot write into $HOME/.cache.
            .arg("-o")
            .arg("APT::Sandbox::User=root")
            .args(args);
        cmd
    };
    util::run_ok(&mut apt(&["update"])).context("apt-get update (Debian non-free index) failed")?;
    util::run_ok(&mut apt(&["download", "libcuda1"]))
        .context("apt-get download libcuda1 failed")?;

    let deb = fs::read_dir(work)?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .find(|n| n.starts_with("libcuda1_") && n.ends_with(".deb"))
        .context("apt-get download produced no libcuda1_*.deb")?;
    let unpacked = work.join("x");
    util::run_ok(
        Command::new("dpkg")
            .arg("-x")
            .arg(work.join(&deb))
            .arg(&unpacked),
    )
    .context("dpkg -x failed")?;
    // The real file is libcuda.so.<version>; the .so and .so.1 next to it are symlinks.
    let real = find_file(&unpacked, &|p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        name.starts_with("libcuda.so.") && name != "libcuda.so.1" && !p.is_symlink()
    })
    .with_context(|| format!("no libcuda.so.<version> inside {deb}"))?;
    Ok((real, deb))
}

/// The cached nvcc pieces (`bin/ptxas`, `nvvm/libdevice/libdevice.10.bc`).
fn cached_nvcc(refresh: bool) -> Result<PathBuf> {
    let dir = cache_dir()?.join(NVCC_CACHE_NAME);
    if dir.join("bin").join("ptxas").exists() && !refresh {
        return Ok(dir);
    }
    util::header(&format!("fetching ptxas (PyPI {NVCC_WHEEL}, about 40 MB)"));
    let work = scratch_next_to(&dir);
    let _ = fs::remove_dir_all(&work);
    let outcome = download_nvcc(&work).and_then(|done| replace_dir(&done, &dir));
    let _ = fs::remove_dir_all(&work);
    outcome.map_err(|e| {
        e.context(format!(
            "could not get ptxas. By hand: `python3 -m pip download --no-deps {NVCC_WHEEL} -d DIR`, \
             unzip the wheel and set PTXAS=<unzipped>/nvidia/cuda_nvcc/bin/ptxas \
             (needs python3 with pip: `apt-get install python3-pip`); or install a CUDA toolkit \
             and set PTXAS to its ptxas"
        ))
    })?;
    Ok(dir)
}

fn download_nvcc(work: &Path) -> Result<PathBuf> {
    let wheel = pip_download(work, NVCC_WHEEL)?;
    // Only the two members we use (the whole wheel unpacks to several times its size).
    let done = work.join("done");
    unzip_members(
        &wheel,
        &done,
        &[
            ("nvidia/cuda_nvcc/bin/ptxas", "bin/ptxas"),
            (
                "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
                "nvvm/libdevice/libdevice.10.bc",
            ),
        ],
    )?;
    check_runs(&done.join("bin").join("ptxas"))?;
    Ok(done)
}

/// `libnvrtc.so.12` (env `ROOFLAB_NVRTC` overrides the cached one): what the host build
/// compiles the CUDA C++ twins with.
pub fn ensure_nvrtc() -> Result<PathBuf> {
    if let Some(p) = env::var_os("ROOFLAB_NVRTC").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(cached_nvrtc(false)?.join("lib").join("libnvrtc.so.12"))
}

/// The cached NVRTC (`lib/libnvrtc.so.12` beside the builtins library it loads).
fn cached_nvrtc(refresh: bool) -> Result<PathBuf> {
    let dir = cache_dir()?.join(NVRTC_CACHE_NAME);
    if dir.join("lib").join("libnvrtc.so.12").exists() && !refresh {
        return Ok(dir);
    }
    util::header(&format!("fetching NVRTC (PyPI {NVRTC_WHEEL}, about 90 MB)"));
    let work = scratch_next_to(&dir);
    let _ = fs::remove_dir_all(&work);
    let outcome = pip_download(&work, NVRTC_WHEEL)
        .and_then(|wheel| {
            let done = work.join("done");
            // The `.alt` builds in the wheel are not needed; libnvrtc finds its builtins
            // library beside itself.
            unzip_members(
                &wheel,
                &done,
                &[
                    ("nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "lib/libnvrtc.so.12"),
                    (
                        "nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.9",
                        "lib/libnvrtc-builtins.so.12.9",
                    ),
                ],
            )?;
            Ok(done)
        })
        .and_then(|done| replace_dir(&done, &dir));
    let _ = fs::remove_dir_all(&work);
    outcome.map_err(|e| {
        e.context(format!(
            "could not get NVRTC. By hand: `python3 -m pip download --no-deps {NVRTC_WHEEL} -d DIR`, \
             unzip the wheel and set ROOFLAB_NVRTC=<unzipped>/nvidia/cuda_nvrtc/lib/libnvrtc.so.12; \
             or point ROOFLAB_NVRTC at a CUDA toolkit's lib64/libnvrtc.so"
        ))
    })?;
    Ok(dir)
}

/// The cached nvdisasm (`bin/nvdisasm`).
fn cached_nvdisasm(refresh: bool) -> Result<PathBuf> {
    let dir = cache_dir()?.join(NVDISASM_CACHE_NAME);
    if dir.join("bin").join("nvdisasm").exists() && !refresh {
        return Ok(dir);
    }
    util::header(&format!(
        "fetching nvdisasm (PyPI {NVDISASM_WHEEL}, about 5 MB)"
    ));
    let work = scratch_next_to(&dir);
    let _ = fs::remove_dir_all(&work);
    let outcome = pip_download(&work, NVDISASM_WHEEL)
        .and_then(|wheel| {
            let done = work.join("done");
            unzip_members(&wheel, &done, &[(NVDISASM_MEMBER, "bin/nvdisasm")])?;
            check_runs(&done.join("bin").join("nvdisasm"))?;
            Ok(done)
        })
        .and_then(|done| replace_dir(&done, &dir));
    let _ = fs::remove_dir_all(&work);
    outcome.map_err(|e| {
        e.context(format!(
            "could not get nvdisasm. By hand: `python3 -m pip download --no-deps {NVDISASM_WHEEL} -d DIR`, \
             unzip the wheel and set NVDISASM=<unzipped>/{NVDISASM_MEMBER} \
             (needs python3 with pip: `apt-get install python3-pip`); or install a CUDA toolkit \
             and set NVDISASM to its nvdisasm"
        ))
    })?;
    Ok(dir)
}

/// `pip download --no-deps SPEC` into `work/wheel/`; the wheel's path.
fn pip_download(work: &Path, spec: &str) -> Result<PathBuf> {
    let wheels = work.join("wheel");
    fs::create_dir_all(&wheels)?;
    util::run_ok(
        Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
            ])
            .arg(spec)
            .arg("-d")
            .arg(&wheels),
    )
    .context("pip download failed")?;
    fs::read_dir(&wheels)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("pip download produced no .whl")
}

/// Extracts `(member, relative destination)` pairs of a wheel (a zip) into `dest`.
fn unzip_members(wheel: &Path, dest: &Path, members: &[(&str, &str)]) -> Result<()> {
    let script = r#"
import os, shutil, sys, zipfile
wheel, dest, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(wheel) as z:
    for src, dst in zip(pairs[0::2], pairs[1::2]):
        out = os.path.join(dest, dst)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(src) as f, open(out, "wb") as g:
            shutil.copyfileobj(f, g)
"#;
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(script).arg(wheel).arg(dest);
    for (src, dst) in members {
        cmd.arg(src).arg(dst);
    }
    util::run_ok(&mut cmd).context("unpacking the wheel failed")
}

/// Makes `exe` executable and checks that `exe --version` runs.
fn check_runs(exe: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(exe, fs::Permissions::from_mode(0o755))?;
    let name = exe.file_name().unwrap_or_default().to_string_lossy();
    let out = Command::new(exe)
        .arg("--version")
        .output()
        .with_context(|| format!("the downloaded {name} does not run"))?;
    if !out.status.success() {
        bail!(
            "the downloaded {name} does not run: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// `target/cuda-stub/lib64/libcuda.so{,.1}` from the cached file, swapped in whole.
fn materialize_stub(stub: &Path, lib: &Path) -> Result<()> {
    let tmp = scratch_next_to(stub);
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(tmp.join("lib64"))?;
    // Both names: the linker looks for libcuda.so, the loader (SONAME) for libcuda.so.1.
    for name in ["libcuda.so", "libcuda.so.1"] {
        link_or_copy(lib, &tmp.join("lib64").join(name))?;
    }
    replace_dir(&tmp, stub).with_context(|| format!("could not create {}", stub.display()))
}

/// Moves `from` to `to`, replacing what was there, with as short a gap as renames allow.
fn replace_dir(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent)?;
    }
    let old = to.with_file_name(format!(
        ".{}.old-{}",
        to.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let had_old = fs::rename(to, &old).is_ok();
    fs::rename(from, to)
        .with_context(|| format!("rename {} -> {}", from.display(), to.display()))?;
    if had_old {
        let _ = fs::remove_dir_all(&old);
    }
    Ok(())
}

fn find_file(dir: &Path, pred: &dyn Fn(&Path) -> bool) -> Option<PathBuf> {
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            if let Some(found) = find_file(&path, pred) {
                return Some(found);
            }
        } else if pred(&path) {
            return Some(path);
        }
    }
    None
}
