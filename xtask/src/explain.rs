//! `cargo xtask explain FAMILY/VARIANT`: everything about one variant on one screen, no GPU
//! needed. The variant file's `//!` header and launch-geometry constants; the cost model and
//! predicted floor (from `rooflab-bench --explain`); ptxas's registers, spills and shared
//! memory with the occupancy they allow on sm_90; the SASS instruction counts per arch
//! (tensor cores, FFMA, ldmatrix, cp.async, TMA, local memory: see `sass.rs`); the PTX of the kernel's loops with the
//! instructions that matter marked; and the last measured row when a bench.json is given.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::{deps, lab, ptxas, sass, util};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `family/variant`, as the bench rows name it, e.g. `memory/v03_vectorized_copy`.
    pub name: String,
    /// Problem size for the cost model (as rooflab-bench's `--size`: 2^28, 64M, ...).
    #[arg(long)]
    pub size: Option<String>,
    /// Datasheet profile for the predicted floor (rooflab-bench's `--device`).
    #[arg(long, default_value = "h200")]
    pub device: String,
    /// A bench.json: show this variant's measured row(s) from it.
    #[arg(long)]
    pub results: Option<PathBuf>,
}

/// The instructions worth seeing (memory, reductions, tensor cores), by opcode prefix.
pub const HIGHLIGHT: &[&str] = &[
    "ld.global.v4",
    "ld.global.nc",
    "st.global.v4",
    "ld.shared",
    "st.shared",
    "bar.sync",
    "barrier.sync",
    "shfl.sync",
    "cp.async",
    "ldmatrix",
    "mma",
    "wgmma",
    "mbarrier",
    "setmaxnreg",
    "fence.proxy",
    "mapa",
    "barrier.cluster",
    "fma.rn",
    "atom",
    "red",
    "ex2",
];

pub fn run(args: &Args) -> Result<u8> {
    let (family, variant) = args
        .name
        .split_once('/')
        .with_context(|| format!("`{}`: expected FAMILY/VARIANT", args.name))?;
    let cuda = deps::ensure_libcuda()?;
    let exe = lab::build_bench(&cuda)?;

    // The cost model first: it also validates the name (exit 2 with the valid ones).
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["--explain", &args.name, "--device", &args.device]);
    if let Some(s) = &args.size {
        cmd.args(["--size", s]);
    }
    util::add_runtime_libcuda(&mut cmd, &cuda);
    let out = cmd
        .output()
        .with_context(|| format!("running {}", util::show(&cmd)))?;
    if !out.status.success() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        return Ok(util::exit_code(out.status));
    }
    let cost_text = String::from_utf8_lossy(&out.stdout).into_owned();
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let title = |t: &str| {
        if colour {
            format!("\n\x1b[1;36m== {t}\x1b[0m")
        } else {
            format!("\n== {t}")
        }
    };

    // Source.
    let dir = util::workspace()
        .join("kernels-gpu")
        .join("src")
        .join(family);
    // A host-side dispatcher (e.g. `softmax/auto`) has no variant file of its own.
    let src = match variant_file(&dir, variant) {
        Ok(file) => {
            let rel = file
                .strip_prefix(util::workspace())
                .unwrap_or(&file)
                .to_path_buf();
            println!("{}", title(&format!("{} ({})", args.name, rel.display())));
            let src = std::fs::read_to_string(&file)?;
            println!("{}", header(&src));
            src
        }
        Err(_) => {
            println!("{}", title(&args.name));
            println!(
                "no variant file: `{variant}` is chosen on the host at run time (see host/src/ops/{family}.rs); \
                 explain the variant it picks for the detail"
            );
            String::new()
        }
    };
    let mut consts = consts(&src);
    // Constants a variant takes over from an earlier step (`pub use super::vNN_x::{..}`).
    for (from, names) in reexports(&src) {
        let file = match from.strip_prefix("crate::") {
            Some(module) => dir.join("..").join(format!("{module}.rs")),
            None => dir.join(format!("{from}.rs")),
        };
        if let Ok(other) = std::fs::read_to_string(file) {
            consts.extend(
                self::consts(&other)
                    .into_iter()
                    .filter(|c| names.iter().any(|n| const_name(c) == Some(n.as_str())))
                    .map(|c| format!("{c}  // from {from}")),
            );
        }
    }
    println!("{}", title("launch geometry (pub const)"));
    if consts.is_empty() {
        println!("(none)");
    }
    for c in &consts {
        println!("{c}");
    }
    println!("{}", title("cost model"));
    print!("{cost_text}");

    // ptxas and occupancy.
    let entry_prefix = format!("{family}_{variant}");
    let ptxas = deps::ensure_ptxas()?;
    let reports = ptxas::check_all(&ptxas)?;
    // The SASS counts are a bonus here: without nvdisasm, say so and go on.
    let sass_archs = match deps::ensure_nvdisasm() {
        Ok(nvdisasm) => sass::disassemble_all(&nvdisasm, &reports),
        Err(e) => {
            util::note(&format!("no SASS counts: {e:#}"));
            vec![]
        }
    };
    // Block size and dynamic shared memory of each kernel, as the host launches it at the
    // explained shape (`launch NAME block=.. dynamic_smem=..` lines of the cost text).
    let launches = launch_shapes(&cost_text);
    // The host names the row's kernels (several for multi-kernel variants).
    let wanted: Vec<&str> = cost_text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("kernels"))
        .map(|l| l.split_whitespace().filter(|w| w.contains('_')).collect())
        .unwrap_or_default();
    // sm_90, or sm_90a for the Hopper-only steps (wgmma, setmaxnreg), which only it has.
    let pick = |arch: &str| -> Vec<&ptxas::Function> {
        reports
            .iter()
            .find(|r| r.arch == arch)
            .map(|r| {
                r.functions
                    .iter()
                    .filter(|f| f.entry && wanted.contains(&f.name.as_str()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (arch, mut entries) = match pick("sm_90") {
        e if e.is_empty() => ("sm_90a", pick("sm_90a")),
        e => ("sm_90", e),
    };
    println!(
        "{}",
        title(&format!("ptxas -v, {arch}, and the occupancy it allows"))
    );
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    if entries.is_empty() {
        println!(
            "no sm_90 or sm_90a kernel entry for `{entry_prefix}` (a host-side choice, or not built: `cargo xtask test`)"
        );
    }
    for f in &entries {
        println!(
            "{}: {} registers, {} B spill stores, {} B spill loads, {} B static smem, {} barriers",
            f.name,
            f.registers.map_or("?".into(), |r| r.to_string()),
            f.spill_stores,
            f.spill_loads,
            f.smem,
            f.barriers.unwrap_or(0)
        );
        let (block, dynamic) = match launches.iter().find(|l| l.0 == f.name) {
            Some(&(_, b, d)) => (Some(b), d),
            None => (None, 0),
        };
        println!("  {}", occupancy_text(f.registers, block, f.smem, dynamic));
        for a in sass_archs
            .iter()
            .filter(|a| !a.arch.starts_with(ptxas::TWINS_PREFIX))
        {
            println!("  {}", sass_line(a, &f.name));
        }
        // The CUDA C++ twin of the entry, if the step has one (host/twins): the same lines,
        // so that the two compilers' output can be read side by side.
        let twin_arch = format!("{}{arch}", ptxas::TWINS_PREFIX);
        let twin_name = format!("{}{}", rooflab_kernels::twins::ENTRY_PREFIX, f.name);
        if let Some(t) = reports
            .iter()
            .find(|r| r.arch == twin_arch)
            .and_then(|r| r.functions.iter().find(|t| t.entry && t.name == twin_name))
        {
            println!(
                "  CUDA C++ twin {}: {} registers, {} B spill stores, {} B spill loads, {} B static smem",
                t.name,
                t.registers.map_or("?".into(), |r| r.to_string()),
                t.spill_stores,
                t.spill_loads,
                t.smem,
            );
            println!(
                "    {}",
                occupancy_text(t.registers, block, t.smem, dynamic)
            );
            for a in sass_archs
                .iter()
                .filter(|a| a.arch.starts_with(ptxas::TWINS_PREFIX))
            {
                println!("    {}", sass_line(a, &t.name));
            }
        }
    }

    // PTX.
    let ptx_path = util::target_dir().join("ptx").join(format!("{arch}.ptx"));
    let ptx = std::fs::read_to_string(&ptx_path)
        .with_context(|| format!("reading {}", ptx_path.display()))?;
    for f in &entries {
        println!("{}", title(&format!("PTX of {} ({arch})", f.name)));
        match entry_body(&ptx, &f.name) {
            Some(body) => print!("{}", show_loops(&body, colour)),
            None => println!("no `.entry {}` in {}", f.name, ptx_path.display()),
        }
        let twin_path = util::target_dir()
            .join("ptx")
            .join(format!("{}{arch}.ptx", ptxas::TWINS_PREFIX));
        let twin_name = format!("{}{}", rooflab_kernels::twins::ENTRY_PREFIX, f.name);
        if let Some(body) = std::fs::read_to_string(&twin_path)
            .ok()
            .and_then(|t| entry_body(&t, &twin_name))
        {
            println!(
                "{}",
                title(&format!(
                    "PTX of its CUDA C++ twin {twin_name} (NVRTC, {arch})"
                ))
            );
            print!("{}", show_loops(&body, colour));
        }
    }

    if let Some(p) = &args.results {
        println!("{}", title(&format!("measured ({})", p.display())));
        print!("{}", measured_rows(p, &args.name)?);
    }
    Ok(0)
}

/// `SASS sm_90: 512 HMMA, 0 FFMA, 64 LDSM, ...` for one kernel, or why there is none.
fn sass_line(a: &sass::ArchSass, kernel: &str) -> String {
    match (a.function(kernel), &a.error) {
        (Some(f), _) => format!("SASS {}: {}", a.arch, sass::brief(f)),
        (None, Some(e)) => format!("SASS {}: none ({e})", a.arch),
        (None, None) => format!("SASS {}: no function `{kernel}` in the cubin", a.arch),
    }
}

/// The `vNN_*.rs` in `dir` whose stem is the longest prefix of `variant`.
pub fn variant_file(dir: &Path, variant: &str) -> Result<PathBuf> {
    let mut best: Option<(usize, PathBuf)> = None;
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        let Some(stem) = p.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let is_variant =
            stem.starts_with('v') && stem[1..].chars().take(2).all(|c| c.is_ascii_digit());
        if p.extension().is_some_and(|x| x == "rs")
            && is_variant
            && (variant == stem || variant.starts_with(&format!("{stem}_")))
            && best.as_ref().is_none_or(|(n, _)| stem.len() > *n)
        {
            best = Some((stem.len(), p.clone()));
        }
    }
    best.map(|(_, p)| p).with_context(|| {
        format!(
            "no vNN_*.rs in {} is a prefix of `{variant}`",
            dir.display()
        )
    })
}

/// The file's leading `//!` lines, without the markers.
pub fn header(src: &str) -> String {
    src.lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| {
            l.trim_start_matches("//!")
                .strip_prefix(' ')
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Top-level `pub const` items (not `const fn`), each with its `///` doc lines, in order.
pub fn consts(src: &str) -> Vec<String> {
    let lines: Vec<&str> = src.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with("pub const ") && !l.starts_with("pub const fn") {
            let mut doc_start = i;
            while doc_start > 0 && lines[doc_start - 1].starts_with("///") {
                doc_start -= 1;
            }
            let mut end = i;
            while !lines[end].trim_end().ends_with(';') && end + 1 < lines.len() {
                end += 1;
            }
            out.push(lines[doc_start..=end].join("\n"));
            i = end + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The name declared by one item of [`consts`].
fn const_name(item: &str) -> Option<&str> {
    let decl = item.lines().find(|l| l.starts_with("pub const "))?;
    Some(decl.strip_prefix("pub const ")?.split_once(':')?.0.trim())
}

/// `pub use super::FILE::{A, B, ..};` items (a sibling step's constants): (FILE, [A, B, ..]);
/// and `pub use crate::MODULE::{A, B, ..};` (a layout shared across families, e.g.
/// `cluster_row`): ("crate::MODULE", [A, B, ..]).
pub fn reexports(src: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("pub use ") {
        let after = &rest[i + "pub use ".len()..];
        let Some(end) = after.find(';') else { break };
        let item = &after[..end];
        let (prefix, item) = if let Some(x) = item.strip_prefix("super::") {
            ("", x)
        } else if let Some(x) = item.strip_prefix("crate::") {
            ("crate::", x)
        } else {
            rest = &after[end..];
            continue;
        };
        if let Some((file, list)) = item.split_once("::") {
            let file = format!("{prefix}{}", file.trim());
            let names = list
                .trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .split(',')
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect();
            out.push((file, names));
        }
        rest = &after[end..];
    }
    out
}

/// sm_90 per-SM limits.
pub const SM90_REGS: u64 = 65536;
pub const SM90_THREADS: u64 = 2048;
pub const SM90_BLOCKS: u64 = 32;
pub const SM90_SMEM: u64 = 228 * 1024;
pub const SM90_SMEM_PER_BLOCK: u64 = 227 * 1024;
/// The driver reserves 1 KiB of shared memory per resident block.
pub const SM90_SMEM_RESERVED: u64 = 1024;

/// Resident blocks per SM and what limits them.
#[derive(Debug, PartialEq)]
pub struct Occupancy {
    pub blocks: u64,
    pub limiter: &'static str,
    pub warps: u64,
}

/// Blocks per SM on sm_90 for `regs` registers per thread, `block` threads, `smem` bytes of
/// shared memory per block. Registers are allocated per warp in 256-register units (a
/// thread's count rounded up to 8).
pub fn occupancy(regs: u64, block: u64, smem: u64) -> Occupancy {
    let warps_per_block = block.div_ceil(32).max(1);
    let regs = regs.div_ceil(8) * 8;
    let by_regs = if regs == 0 {
        u64::MAX
    } else {
        (SM90_REGS / (regs * 32)) / warps_per_block
    };
    let by_threads = SM90_THREADS / (warps_per_block * 32);
    let by_smem = if smem > SM90_SMEM_PER_BLOCK {
        0
    } else {
        SM90_SMEM / (smem + SM90_SMEM_RESERVED)
    };
    let (blocks, limiter) = [
        (by_regs, "registers"),
        (by_threads, "threads (2048/SM)"),
        (SM90_BLOCKS, "blocks (32/SM)"),
        (by_smem, "shared memory"),
    ]
    .into_iter()
    .min_by_key(|(b, _)| *b)
    .expect("four limits");
    Occupancy {
        blocks,
        limiter,
        warps: blocks * warps_per_block,
    }
}

/// `(kernel, block threads, dynamic shared bytes)` from the `launch` lines the host's
/// `--explain` prints.
pub fn launch_shapes(cost_text: &str) -> Vec<(String, u64, u64)> {
    cost_text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("launch "))
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let name = w.next()?.to_string();
            let mut field = |key: &str| {
                w.next()?
                    .strip_prefix(key)?
                    .strip_prefix('=')?
                    .parse::<u64>()
                    .ok()
            };
            Some((name, field("block")?, field("dynamic_smem")?))
        })
        .collect()
}

fn occupancy_text(regs: Option<u64>, block: Option<u64>, static_smem: u64, dynamic: u64) -> String {
    match (regs, block) {
        (Some(r), Some(b)) => {
            let o = occupancy(r, b, static_smem + dynamic);
            format!(
                "occupancy at {b} threads/block, {} B shared ({static_smem} static + {dynamic} dynamic): \
                 {} blocks/SM, {} warps of 64 ({:.0} %), limited by {}",
                static_smem + dynamic,
                o.blocks,
                o.warps,
                100.0 * o.warps as f64 / 64.0,
                o.limiter,
            )
        }
        (_, None) => "occupancy: the host reported no launch shape for this kernel".into(),
        (None, _) => "occupancy: ptxas reported no register count".into(),
    }
}

/// The body of `.entry name(` up to its closing brace (the one that closes its first `{`:
/// inline asm brings `{`/`}` lines of its own).
pub fn entry_body(ptx: &str, name: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = ptx.lines().collect();
    let start = lines.iter().position(|l| {
        l.split(".entry ")
            .nth(1)
            .is_some_and(|rest| rest.trim_end().trim_end_matches('(') == name)
    })?;
    let mut depth = 0usize;
    let mut opened = false;
    let end = (start..lines.len()).find(|&i| {
        for c in lines[i].split("//").next().unwrap_or("").chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        opened && depth == 0
    })?;
    Some(lines[start..=end].iter().map(|l| l.to_string()).collect())
}

/// The label a branch line jumps to: `@%p3 bra $L__BB4_3;` / `bra.uni $L__BB4_3;`.
fn branch_target(line: &str) -> Option<&str> {
    let t = line.trim();
    let t = if t.starts_with('@') {
        t.split_once(char::is_whitespace)?.1.trim()
    } else {
        t
    };
    let rest = t.strip_prefix("bra")?;
    let rest = rest.strip_prefix(".uni").unwrap_or(rest);
    Some(rest.trim().trim_end_matches(';').trim())
}

/// A label definition: `$L__BB4_3:  // comment` -> `$L__BB4_3`.
fn label_def(line: &str) -> Option<&str> {
    let t = line.split("//").next()?.trim();
    t.strip_suffix(':').filter(|l| l.starts_with('$'))
}

/// Loops as `(first, last)` line ranges: a branch back to an earlier label. Nested or
/// overlapping ranges are merged.
pub fn loops(body: &[String]) -> Vec<(usize, usize)> {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (i, l) in body.iter().enumerate() {
        let Some(target) = branch_target(l) else {
            continue;
        };
        if let Some(j) = body[..i].iter().position(|d| label_def(d) == Some(target)) {
            ranges.push((j, i));
        }
    }
    ranges.sort();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for r in ranges {
        match merged.last_mut() {
            Some(last) if r.0 <= last.1 => last.1 = last.1.max(r.1),
            _ => merged.push(r),
        }
    }
    merged
}

/// Whether a PTX line's instruction is one of [`HIGHLIGHT`].
pub fn highlighted(line: &str) -> bool {
    let t = line.split("//").next().unwrap_or("").trim();
    let t = if t.starts_with('@') {
        t.split_once(char::is_whitespace).map_or("", |x| x.1.trim())
    } else {
        t
    };
    let op = t.split_whitespace().next().unwrap_or("");
    HIGHLIGHT
        .iter()
        .any(|h| op.starts_with(h) && (op.len() == h.len() || op[h.len()..].starts_with('.')))
}

fn mark(line: &str, colour: bool) -> String {
    if !highlighted(line) {
        format!("   {line}")
    } else if colour {
        format!("   \x1b[1;33m{line}\x1b[0m")
    } else {
        format!(">> {line}")
    }
}

const STRAIGHT_MAX: usize = 160;

/// The loops of an entry body, highlighted; a loop-free kernel is shown whole (up to
/// `STRAIGHT_MAX` lines, else its marked lines only) since every instruction runs once.
pub fn show_loops(body: &[String], colour: bool) -> String {
    let mut s = String::new();
    let ls = loops(body);
    let n_marked = body.iter().filter(|l| highlighted(l)).count();
    if ls.is_empty() {
        let _ = writeln!(
            s,
            "no loop (no backward branch): straight-line kernel, {} lines, {n_marked} marked",
            body.len()
        );
        if body.len() <= STRAIGHT_MAX {
            for l in body {
                let _ = writeln!(s, "{}", mark(l, colour));
            }
        } else {
            let _ = writeln!(s, "(long: only the marked lines, with their line numbers)");
            for (i, l) in body.iter().enumerate().filter(|(_, l)| highlighted(l)) {
                let _ = writeln!(s, "{:>5} {}", i + 1, mark(l, colour));
            }
        }
        return s;
    }
    for (k, (a, b)) in ls.iter().enumerate() {
        let _ = writeln!(
            s,
            "loop {} (lines {}..{} of the entry, {} marked):",
            k + 1,
            a + 1,
            b + 1,
            body[*a..=*b].iter().filter(|l| highlighted(l)).count()
        );
        for l in &body[*a..=*b] {
            let _ = writeln!(s, "{}", mark(l, colour));
        }
    }
    s
}

/// The rows named `name` in a bench.json, one line each.
pub fn measured_rows(path: &Path, name: &str) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let mut s = String::new();
    let dev = v["device"]["name"].as_str().unwrap_or("no GPU");
    let _ = writeln!(
        s,
        "run of {} on {dev}{}",
        v["date_utc"].as_str().unwrap_or("?"),
        if v["measured"].as_bool() == Some(true) {
            ""
        } else {
            " (predicted, nothing measured)"
        }
    );
    let rows: Vec<&serde_json::Value> = v["rows"]
        .as_array()
        .map(|a| a.iter().filter(|r| r["name"] == name).collect())
        .unwrap_or_default();
    if rows.is_empty() {
        let _ = writeln!(s, "no row named {name} in this run");
    }
    let f = |r: &serde_json::Value, k: &str, d: usize| {
        r[k].as_f64().map_or("-".into(), |x| format!("{x:.d$}"))
    };
    for r in rows {
        let _ = writeln!(
            s,
            "{}: median {} µs (spread {} %), {} GB/s, {} TFLOP/s, {} % of roof, {}x vs v01 (model {}x){}",
            format!(
                "{} {}",
                r["shape"].as_str().unwrap_or(""),
                r["note"].as_str().unwrap_or("")
            )
            .trim(),
            f(r, "median_us", 1),
            f(r, "spread_pct", 1),
            f(r, "gbps", 0),
            f(r, "tflops", 2),
            f(r, "pct_of_roof", 1),
            f(r, "speedup_vs_v01", 2),
            f(r, "predicted_speedup_vs_v01", 2),
            r["error"]
                .as_str()
                .map_or(String::new(), |e| format!(", error: {e}"))
        );
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reexported_constants_are_found() {
        let src = "pub use super::v08_double_buffered::{\n    BK, BM,\n    THREADS,\n};\n";
        assert_eq!(
            reexports(src),
            vec![(
                "v08_double_buffered".to_string(),
                vec!["BK".to_string(), "BM".to_string(), "THREADS".to_string()]
            )]
        );
        assert_eq!(const_name("/// doc\npub const BM: u32 = 128;"), Some("BM"));
        // A crate-level layout module, beside a sibling step; other `pub use` items skipped.
        let src = "pub use crate::cluster_row::{CLUSTER, slice};\npub use core::mem;\n\
                   pub use super::v04_x::TILE;\n";
        assert_eq!(
            reexports(src),
            vec![
                (
                    "crate::cluster_row".to_string(),
                    vec!["CLUSTER".to_string(), "slice".to_string()]
                ),
                ("v04_x".to_string(), vec!["TILE".to_string()]),
            ]
        );
    }

    const SRC: &str = "//! memory/v09_demo — a demo.
//!
//! Changed: nothing.

/// Threads per block.
pub const BLOCK_THREADS: u32 = TILE * 8;
/// Tile edge.
pub const TILE: u32 = 32;
pub const SHARED_BYTES: u32 =
    TILE * TILE * 4;
pub const fn threads(n: u64) -> u64 { n }

#[cfg(target_arch = \"nvptx64\")]
mod kernels {
    pub const INNER: u32 = 1;
}
";

    #[test]
    fn header_and_consts() {
        assert_eq!(
            header(SRC),
            "memory/v09_demo — a demo.\n\nChanged: nothing."
        );
        let c = consts(SRC);
        assert_eq!(c.len(), 3, "{c:?}");
        assert!(c[0].starts_with("/// Threads per block.\npub const BLOCK_THREADS"));
    }

    #[test]
    fn launch_shapes_come_from_the_host() {
        let text = "  kernels        softmax_v05_a softmax_v05_b\n  launch         softmax_v05_a block=128 dynamic_smem=0\n  launch         softmax_v05_b block=1024 dynamic_smem=16384\n";
        assert_eq!(
            launch_shapes(text),
            vec![
                ("softmax_v05_a".to_string(), 128, 0),
                ("softmax_v05_b".to_string(), 1024, 16384)
            ]
        );
        assert!(
            launch_shapes("  kernels        (none: chosen on the host at run time)\n").is_empty()
        );
    }

    #[test]
    fn finds_the_longest_stem() {
        let dir = util::workspace().join("kernels-gpu/src/memory");
        let f = variant_file(&dir, "v03_vectorized_copy").unwrap();
        assert!(f.ends_with("v03_vectorized.rs"));
        let f = variant_file(&dir, "v04_grid_stride_ilp_saxpy").unwrap();
        assert!(f.ends_with("v04_grid_stride_ilp.rs"));
        assert!(variant_file(&dir, "v03").is_err() || variant_file(&dir, "v03").is_ok());
        assert!(variant_file(&dir, "v99_none").is_err());
    }

    #[test]
    fn sm90_occupancy() {
        // 32 regs, 256 threads: 8 warps/block; regs allow 64 warps = 8 blocks; threads 8.
        let o = occupancy(32, 256, 0);
        assert_eq!((o.blocks, o.warps), (8, 64));
        // 128 regs: 65536 / (128*32) = 16 warps -> 2 blocks of 8 warps.
        let o = occupancy(128, 256, 0);
        assert_eq!((o.blocks, o.limiter), (2, "registers"));
        // 33 regs round up to 40: 65536/1280 = 51 warps -> 6 blocks.
        assert_eq!(occupancy(33, 256, 0).blocks, 6);
        // One-warp blocks with few registers: 32 blocks/SM is the cap (32 of 64 warps).
        let o = occupancy(16, 32, 0);
        assert_eq!((o.blocks, o.warps, o.limiter), (32, 32, "blocks (32/SM)"));
        // 100 KiB smem per block: 228 KiB / 101 KiB = 2.
        let o = occupancy(32, 256, 100 * 1024);
        assert_eq!((o.blocks, o.limiter), (2, "shared memory"));
        assert_eq!(occupancy(32, 256, 228 * 1024).blocks, 0);
    }

    const PTX: &str = ".visible .entry k_v01_x(
\t.param .u64 k_param_0
)
{
\tld.param.u64 \t%rd1, [k_param_0];
$L__BB0_2:                              // =>This Inner Loop Header: Depth=1
\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd2];
\tfma.rn.f32 \t%f5, %f1, %f2, %f3;
\tadd.s64 \t%rd2, %rd2, 16;
\t@%p2 bra \t$L__BB0_2;
\tst.global.v4.f32 \t[%rd3], {%f1, %f2, %f3, %f4};
\tbar.sync \t0;
\tret;
}
.visible .entry other(
)
{
}
";

    #[test]
    fn ptx_loops_and_marks() {
        let body = entry_body(PTX, "k_v01_x").unwrap();
        assert_eq!(body.len(), 14);
        assert_eq!(loops(&body), vec![(5, 9)]);
        let text = show_loops(&body, false);
        assert!(text.contains(">> \tld.global.nc.v4.f32"), "{text}");
        assert!(text.contains(">> \tfma.rn.f32"), "{text}");
        assert!(text.contains("   \tadd.s64"), "{text}");
        assert!(
            !text.contains("st.global.v4"),
            "only the loop is shown: {text}"
        );
        assert!(highlighted("\tst.global.v4.f32 \t[%rd3], {%f1};"));
        assert!(highlighted("\tbar.sync \t0;"));
        assert!(highlighted(
            "\t@%p1 atom.global.add.f32 \t%f1, [%rd1], %f2;"
        ));
        assert!(highlighted("\tred.global.add.f32 \t[%rd1], %f2;"));
        assert!(highlighted("\tex2.approx.f32 \t%f1, %f2;"));
        assert!(highlighted("\tshfl.sync.bfly.b32 \t%r1, %r2, 16, 31, -1;"));
        assert!(highlighted(
            "\tcp.async.cg.shared.global [%r1], [%rd1], 16;"
        ));
        assert!(highlighted(
            "\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1}, {%r1}, {%r2}, {%f1};"
        ));
        assert!(highlighted(
            "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];"
        ));
        assert!(!highlighted("\tld.global.f32 \t%f1, [%rd1];"));
        assert!(!highlighted("\tready.f32 \t%f1;"));
        assert!(!highlighted("\tadd.f32 \t%f1, %f2, %f3;"));
        assert!(entry_body(PTX, "k_v01").is_none());
    }

    #[test]
    fn inline_asm_braces_stay_in_the_body() {
        let ptx = ".visible .entry k_demo(\n)\n{\n\t// begin inline asm\n\t{\n.reg .u64 g;\n}\n\t// end inline asm\n\tret;\n}\n.visible .entry k_next(\n)\n{\n}\n";
        let body = entry_body(ptx, "k_demo").unwrap();
        assert_eq!(body.len(), 10, "{body:?}");
        assert_eq!(body.last().map(String::as_str), Some("}"));
        assert_eq!(entry_body(ptx, "k_next").unwrap().len(), 4);
    }
}
