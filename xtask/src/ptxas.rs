//! Offline check of the generated PTX with `ptxas -v`: it must assemble for its target, and no
//! kernel may spill registers or keep anything else in local memory (a stack frame: an array
//! indexed at run time, an array iterated by value) — a silent performance cliff in a
//! benchmark suite. Also yields the per-kernel resource table (registers, stack, spills, shared memory).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use crate::util;

/// What `ptxas -v` says about one function.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    /// A kernel (`.entry`); otherwise a device function ptxas did not inline.
    pub entry: bool,
    pub registers: Option<u64>,
    pub barriers: Option<u64>,
    pub stack_frame: u64,
    pub spill_stores: u64,
    pub spill_loads: u64,
    /// Static shared memory in bytes (dynamic shared memory is sized at launch, not here).
    pub smem: u64,
}

impl Function {
    pub fn spills(&self) -> bool {
        self.spill_stores > 0 || self.spill_loads > 0
    }
}

/// One `ptxas -arch=sm_XX -v target/ptx/sm_XX.ptx` run.
pub struct ArchReport {
    pub arch: String,
    pub ptx: PathBuf,
    /// The cubin ptxas wrote (`target/ptx/<arch>.cubin`, for nvdisasm); present when `error`
    /// is `None`.
    pub cubin: PathBuf,
    /// Why ptxas could not report on this PTX (missing file, ptxas error), if so.
    pub error: Option<String>,
    /// ptxas's own output, as it printed it.
    pub output: String,
    pub functions: Vec<Function>,
}

/// The prefix of the twins' PTX files and of their reports' arch (`twins_sm_90`).
pub const TWINS_PREFIX: &str = rooflab_kernels::twins::PTX_PREFIX;

/// The arches to check: the same list host/build uses (`host/build/ptx_arches.txt`).
fn arches() -> Result<Vec<String>> {
    let file = util::workspace()
        .join("host")
        .join("build")
        .join("ptx_arches.txt");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Runs ptxas on `target/ptx/<arch>.ptx` for every arch (written by host/build.rs), all
/// arches at once, keeping each cubin as `target/ptx/<arch>.cubin`; and on the CUDA C++
/// twins' `target/ptx/twins_<arch>.ptx` (reported as arch `twins_<arch>`): they must be
/// built, assemble and not spill, like the Rust PTX.
pub fn check_all(ptxas: &Path) -> Result<Vec<ArchReport>> {
    let ptx_dir = util::target_dir().join("ptx");
    let mut arches = arches()?;
    let twins: Vec<String> = arches
        .iter()
        .map(|a| format!("{TWINS_PREFIX}{a}"))
        .collect();
    arches.extend(twins);
    Ok(std::thread::scope(|s| {
        let jobs: Vec<_> = arches
            .into_iter()
            .map(|arch| {
                let ptx_dir = &ptx_dir;
                s.spawn(move || check_one(ptxas, ptx_dir, arch))
            })
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("ptxas thread panicked"))
            .collect()
    }))
}

fn check_one(ptxas: &Path, ptx_dir: &Path, arch: String) -> ArchReport {
    let ptx = ptx_dir.join(format!("{arch}.ptx"));
    let cubin = ptx_dir.join(format!("{arch}.cubin"));
    // An old cubin must not pass for this PTX's if ptxas fails now.
    let _ = std::fs::remove_file(&cubin);
    let mut report = ArchReport {
        arch,
        ptx,
        cubin,
        error: None,
        output: String::new(),
        functions: vec![],
    };
    if !report.ptx.exists() {
        report.error = Some(format!(
            "{} is missing (host/build writes it during the build{})",
            report.ptx.display(),
            if report.arch.starts_with(TWINS_PREFIX) {
                "; the twins need NVRTC: see the build's warning"
            } else {
                ""
            }
        ));
        return report;
    }
    let out = Command::new(ptxas)
        .arg(format!(
            "-arch={}",
            report.arch.trim_start_matches(TWINS_PREFIX)
        ))
        .arg("-v")
        .arg(&report.ptx)
        .arg("-o")
        .arg(&report.cubin)
        .output();
    match out {
        Err(e) => report.error = Some(format!("could not run {}: {e}", ptxas.display())),
        Ok(out) => {
            // `-v` writes its info lines to stderr; keep both streams, in that order.
            report.output = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            report.functions = parse(&report.output);
            if !out.status.success() {
                report.error = Some(format!("ptxas failed ({})", out.status));
            } else if !report.functions.iter().any(|f| f.entry) {
                report.error = Some("ptxas reported no kernel".into());
            }
        }
    }
    report
}

/// Parses `ptxas -v` output. The lines of interest:
/// ```text
/// ptxas info    : Compiling entry function 'k' for 'sm_90'
/// ptxas info    : Function properties for k
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 18 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
/// ```
/// "Function properties" also appears for non-inlined device functions; "Used" lines belong
/// to the entry being compiled.
pub fn parse(text: &str) -> Vec<Function> {
    let mut funcs: Vec<Function> = vec![];
    let mut entry: Option<usize> = None; // the kernel being compiled
    let mut props: Option<usize> = None; // whose "stack frame" line comes next
    let index_of = |funcs: &mut Vec<Function>, name: &str, is_entry: bool| match funcs
        .iter()
        .position(|f| f.name == name)
    {
        Some(i) => {
            funcs[i].entry |= is_entry;
            i
        }
        None => {
            funcs.push(Function {
                name: name.to_string(),
                entry: is_entry,
                ..Default::default()
            });
            funcs.len() - 1
        }
    };
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or(rest);
            entry = Some(index_of(&mut funcs, name, true));
        } else if let Some(rest) = line.split("Function properties for ").nth(1) {
            props = Some(index_of(&mut funcs, rest.trim(), false));
        } else if line.contains("bytes stack frame")
            && let Some(i) = props.take()
        {
            let f = &mut funcs[i];
            for (n, what) in numbered_fields(line) {
                match what.as_str() {
                    "bytes stack frame" => f.stack_frame = n,
                    "bytes spill stores" => f.spill_stores = n,
                    "bytes spill loads" => f.spill_loads = n,
                    _ => {}
                }
            }
        } else if let Some(rest) = line.split(": Used ").nth(1)
            && let Some(i) = entry
        {
            let f = &mut funcs[i];
            for (n, what) in numbered_fields(&format!("Used {rest}")) {
                match what.as_str() {
                    "registers" => f.registers = Some(n),
                    "barriers" => f.barriers = Some(n),
                    "bytes smem" => f.smem = n,
                    _ => {}
                }
            }
        }
    }
    funcs
}

/// `"Used 18 registers, used 0 barriers, 1024 bytes smem"` ->
/// `[(18, "registers"), (0, "barriers"), (1024, "bytes smem")]` (leading "Used"/"used" dropped).
fn numbered_fields(line: &str) -> Vec<(u64, String)> {
    line.split(',')
        .filter_map(|part| {
            let mut words = part
                .split_whitespace()
                .skip_while(|w| w.eq_ignore_ascii_case("used"));
            let n = words.next()?.parse().ok()?;
            Some((n, words.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

/// Everything that must fail the check, one line each.
pub fn problems(reports: &[ArchReport]) -> Vec<String> {
    let mut out = vec![];
    for r in reports {
        if let Some(e) = &r.error {
            out.push(format!("{}: {e}", r.arch));
        }
        for f in r.functions.iter().filter(|f| f.spills()) {
            out.push(format!(
                "{}: {} `{}` spills ({} bytes stored, {} bytes loaded)",
                r.arch,
                if f.entry { "kernel" } else { "function" },
                f.name,
                f.spill_stores,
                f.spill_loads
            ));
        }
        // A stack frame without spills is still local memory (decode v04 had one from an
        // array iterated by value: 16 LDL and 48 STL in its SASS, found 2026-12-03).
        for f in r.functions.iter().filter(|f| !f.spills() && f.stack_frame > 0) {
            out.push(format!(
                "{}: {} `{}` has a {}-byte stack frame (local memory: an array indexed at run \
                 time or iterated by value; index it with constants or unroll the loop)",
                r.arch,
                if f.entry { "kernel" } else { "function" },
                f.name,
                f.stack_frame
            ));
        }
    }
    out
}

/// The per-function table, sorted by arch then name.
pub fn table(reports: &[ArchReport]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "arch",
        "kernel",
        "regs",
        "barriers",
        "stack B",
        "spill st B",
        "spill ld B",
        "smem B",
        "note",
    ]);
    for r in reports {
        let mut funcs: Vec<&Function> = r.functions.iter().collect();
        funcs.sort_by(|a, b| a.name.cmp(&b.name));
        for f in funcs {
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
            // Kernels are `no_mangle`; other functions keep Rust (v0) mangled names.
            let name = if f.entry {
                f.name.clone()
            } else {
                format!("{:#} (device fn)", rustc_demangle::demangle(&f.name))
            };
            t.add_row(vec![
                r.arch.clone(),
                name,
                opt(f.registers),
                opt(f.barriers),
                f.stack_frame.to_string(),
                f.spill_stores.to_string(),
                f.spill_loads.to_string(),
                f.smem.to_string(),
                if f.spills() {
                    "SPILLS".into()
                } else {
                    String::new()
                },
            ]);
        }
    }
    for col in 2..8 {
        if let Some(c) = t.column_mut(col) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// ptxas's raw output per arch plus the table: the bundle's `ptxas-report.txt`.
pub fn report_text(ptxas: &Path, reports: &[ArchReport]) -> String {
    let mut s = String::new();
    for r in reports {
        let _ = writeln!(
            s,
            "### {} -arch={} -v {}",
            ptxas.display(),
            r.arch,
            r.ptx.display()
        );
        s.push_str(&r.output);
        if let Some(e) = &r.error {
            let _ = writeln!(s, "ERROR: {e}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "{}", table(reports));
    for p in problems(reports) {
        let _ = writeln!(s, "PROBLEM: {p}");
    }
    s
}

/// ptxas warnings, worth showing even when nothing fails.
pub fn warnings(reports: &[ArchReport]) -> Vec<String> {
    reports
        .iter()
        .flat_map(|r| {
            r.output
                .lines()
                .filter(|l| l.contains("ptxas warning"))
                .map(move |l| format!("{}: {}", r.arch, l.trim()))
        })
        .collect()
}

/// The kernels' resources as JSON for `rooflab-bench --ptxas-report` (one object per kernel:
/// arch, name, registers, spill_stores, spill_loads, stack_frame, smem).
pub fn resources_json(reports: &[ArchReport]) -> String {
    let items: Vec<serde_json::Value> = reports
        .iter()
        .flat_map(|r| {
            r.functions.iter().filter(|f| f.entry).map(move |f| {
                serde_json::json!({
                    "arch": r.arch, "name": f.name, "registers": f.registers,
                    "spill_stores": f.spill_stores, "spill_loads": f.spill_loads,
                    "stack_frame": f.stack_frame, "smem": f.smem,
                })
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'reduce_v02_shared' for 'sm_90'
ptxas info    : Function properties for reduce_v02_shared
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]
ptxas info    : Compile time = 3.125 ms
ptxas info    : Compiling entry function 'memory_v02_coalesced_copy' for 'sm_90'
ptxas info    : Function properties for memory_v02_coalesced_copy
    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
";

    #[test]
    fn parses_ptxas_v() {
        let f = parse(SAMPLE);
        assert_eq!(f.len(), 3);
        assert_eq!(
            f[0],
            Function {
                name: "helper".into(),
                stack_frame: 8,
                spill_stores: 4,
                spill_loads: 4,
                ..Default::default()
            }
        );
        assert_eq!(
            f[1],
            Function {
                name: "reduce_v02_shared".into(),
                entry: true,
                registers: Some(18),
                barriers: Some(1),
                smem: 1024,
                ..Default::default()
            }
        );
        let copy = &f[2];
        assert!(copy.entry && copy.spills());
        assert_eq!(
            (
                copy.registers,
                copy.stack_frame,
                copy.spill_stores,
                copy.spill_loads
            ),
            (Some(8), 16, 12, 8)
        );
    }

    #[test]
    fn spills_and_stack_frames_are_problems() {
        let mut f = parse(SAMPLE);
        // A stack frame without spills (an array in local memory) is refused too.
        f.push(Function {
            name: "decode_x".into(),
            entry: true,
            stack_frame: 32,
            ..Default::default()
        });
        let r = ArchReport {
            arch: "sm_90".into(),
            ptx: PathBuf::new(),
            cubin: PathBuf::new(),
            error: None,
            output: String::new(),
            functions: f,
        };
        let p = problems(&[r]);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("`helper` spills"));
        assert!(p[1].contains("`memory_v02_coalesced_copy` spills"));
        assert!(p[2].contains("`decode_x` has a 32-byte stack frame"));
        assert!(!p.iter().any(|l| l.contains("reduce_v02_shared")));
    }
}
