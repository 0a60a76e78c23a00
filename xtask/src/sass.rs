//! What the machine code does, without a GPU: `nvdisasm` on the cubins that the ptxas step
//! wrote (`target/ptx/<arch>.cubin`), and per kernel the counts of the SASS instructions that
//! say which unit does the math and how data moves: tensor cores (`HMMA`, `HGMMA`, `QGMMA`,
//! `IMMA`), `FFMA`, `LDSM` (ldmatrix), `LDGSTS` (cp.async), `UTMALDG`/`UBLKCP` (TMA),
//! `LDL`/`STL` (local memory) and `BAR`.
//!
//! The check: a kernel whose PTX asks for the tensor cores must get them. An `.entry` whose
//! PTX body has `mma.sync` must have `HMMA` in its SASS (`IMMA`, `DMMA`, `BMMA` or `QMMA` for
//! integer, f64, b1 or fp8 operands), one with `wgmma.mma_async` must have `HGMMA` (`IGMMA`,
//! `BGMMA`, `QGMMA`). The rule reads the PTX, never a kernel's name.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::Result;
use comfy_table::{CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use crate::ptxas::ArchReport;

/// The opcodes counted, in table order (the base opcode: `HMMA.16816.F32.BF16` is `HMMA`).
pub const COUNTED: &[&str] = &[
    "HMMA", "HGMMA", "QGMMA", "IMMA", "FFMA", "LDSM", "LDGSTS", "UTMALDG", "UBLKCP", "LDL", "STL",
    "BAR",
];

/// One function of the SASS (a `.text.NAME` section).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    /// A kernel (`STO_CUDA_ENTRY`); otherwise a device function.
    pub entry: bool,
    /// Instructions, without the alignment padding after the last one (`BRA` to itself and
    /// `NOP`s).
    pub instructions: u64,
    /// Every base opcode with its count.
    pub ops: BTreeMap<String, u64>,
}

impl Function {
    pub fn count(&self, op: &str) -> u64 {
        self.ops.get(op).copied().unwrap_or(0)
    }
}

/// The opcode of one SASS line, `/*0070*/  @!P0 HMMA.16816.F32.BF16 R4, R4, R4, RZ ;` ->
/// `HMMA.16816.F32.BF16`; `None` for lines that are no instruction.
fn instruction(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    // VLIW pairs (`{ A ; B }`, older arches) show the first one.
    let rest = rest.trim_start().trim_start_matches('{').trim_start();
    let rest = if rest.starts_with('@') {
        rest.split_once(char::is_whitespace)?.1.trim_start()
    } else {
        rest
    };
    let op = rest.split_whitespace().next()?.trim_end_matches(';');
    (!op.is_empty() && !op.starts_with('}')).then_some(op)
}

/// Parses `nvdisasm -c` output. The lines of interest:
/// ```text
///     .section    .text.k,"ax",@progbits
///         .other          k,@"STO_CUDA_ENTRY STV_DEFAULT"
///         /*0070*/                   HMMA.16816.F32.BF16 R4, R4, R4, RZ ;
/// ```
pub fn parse(text: &str) -> Vec<Function> {
    let mut funcs: Vec<Function> = vec![];
    let mut seq: Vec<Vec<String>> = vec![]; // each function's base opcodes, in order
    let mut current: Option<usize> = None;
    for line in text.lines() {
        let t = line.trim();
        // `.section` (not `.sectionflags`) starts a section; `.text.NAME` is a function.
        let section = t
            .strip_prefix(".section")
            .filter(|r| r.starts_with(char::is_whitespace));
        if let Some(rest) = section
            && let Some(name) = rest.trim().strip_prefix(".text.")
        {
            let name = name.split(',').next().unwrap_or(name).trim();
            current = Some(match funcs.iter().position(|f| f.name == name) {
                Some(i) => i,
                None => {
                    funcs.push(Function {
                        name: name.to_string(),
                        ..Default::default()
                    });
                    seq.push(vec![]);
                    funcs.len() - 1
                }
            });
        } else if section.is_some() {
            current = None;
        } else if let Some(rest) = t.strip_prefix(".other")
            && rest.contains("STO_CUDA_ENTRY")
        {
            let name = rest.trim().split(',').next().unwrap_or("").trim();
            if let Some(f) = funcs.iter_mut().find(|f| f.name == name) {
                f.entry = true;
            }
        } else if let (Some(i), Some(op)) = (current, instruction(line)) {
            let base = op.split('.').next().unwrap_or(op);
            seq[i].push(base.to_string());
        }
    }
    for (f, mut ops) in funcs.iter_mut().zip(seq) {
        // The padding: NOPs up to the alignment, after a `BRA` to itself past the last EXIT.
        while ops.last().is_some_and(|o| o == "NOP") {
            ops.pop();
        }
        if ops.last().is_some_and(|o| o == "BRA") && ops.len() >= 2 && ops[ops.len() - 2] == "EXIT"
        {
            ops.pop();
        }
        f.instructions = ops.len() as u64;
        for op in ops {
            *f.ops.entry(op).or_default() += 1;
        }
    }
    funcs
}

/// What a kernel's PTX asks of the tensor cores.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PtxEntry {
    pub name: String,
    /// `mma.sync` (warp-level MMA) instructions in the body.
    pub mma_sync: u64,
    /// `wgmma.mma_async` (warpgroup MMA) instructions in the body.
    pub wgmma: u64,
    /// The SASS opcodes those must become (`HMMA`, `HGMMA`, ...), each with the number of
    /// PTX instructions that ask for it.
    pub expects: BTreeMap<&'static str, u64>,
}

/// The SASS opcode a PTX tensor-core instruction becomes, by its operand types; `None` for
/// any other instruction. `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` -> `HMMA`.
pub fn tensor_op_for(ptx_op: &str) -> Option<&'static str> {
    let parts: Vec<&str> = ptx_op.split('.').collect();
    let has = |types: &[&str]| parts.iter().any(|p| types.contains(p));
    const INT: &[&str] = &["s8", "u8", "s4", "u4"];
    const FP8: &[&str] = &["e4m3", "e5m2", "e3m2", "e2m3", "e2m1"];
    // `mma.sync...`, `mma.sp.sync...`, `mma.sp::ordered_metadata.sync...`
    let warp_mma = parts.first() == Some(&"mma") && parts.contains(&"sync");
    if ptx_op.starts_with("wgmma.mma_async") {
        return Some(if has(FP8) {
            "QGMMA"
        } else if has(INT) {
            "IGMMA"
        } else if has(&["b1"]) {
            "BGMMA"
        } else {
            "HGMMA"
        });
    }
    if warp_mma {
        return Some(if has(&["f64"]) {
            "DMMA"
        } else if has(FP8) {
            "QMMA"
        } else if has(INT) {
            "IMMA"
        } else if has(&["b1"]) {
            "BMMA"
        } else {
            "HMMA"
        });
    }
    None
}

/// The opcode of a PTX line: `\t@%p1 mma.sync.aligned... {..};  // c` -> `mma.sync.aligned...`.
fn ptx_opcode(line: &str) -> Option<&str> {
    let t = line
        .split("//")
        .next()?
        .trim()
        .trim_start_matches('{')
        .trim_start();
    let t = if t.starts_with('@') {
        t.split_once(char::is_whitespace)?.1.trim_start()
    } else {
        t
    };
    t.split(|c: char| c.is_whitespace() || c == ';')
        .next()
        .filter(|s| !s.is_empty())
}

/// Every `.entry` of a PTX module with what its body asks of the tensor cores. The body ends
/// at the brace that closes its first `{` (inline asm brings `{`/`}` lines of its own).
pub fn ptx_entries(ptx: &str) -> Vec<PtxEntry> {
    let mut out: Vec<PtxEntry> = vec![];
    let mut inside = false;
    let mut depth = 0usize;
    let mut opened = false;
    for line in ptx.lines() {
        if let Some(rest) = line.split(".entry ").nth(1)
            && !line.trim_start().starts_with("//")
        {
            let name = rest
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .unwrap_or("");
            out.push(PtxEntry {
                name: name.to_string(),
                ..Default::default()
            });
            (inside, depth, opened) = (true, 0, false);
            continue;
        }
        if !inside {
            continue;
        }
        let code = line.split("//").next().unwrap_or("");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if opened && depth == 0 {
            inside = false;
            continue;
        }
        let (Some(op), Some(e)) = (ptx_opcode(line), out.last_mut()) else {
            continue;
        };
        if let Some(sass) = tensor_op_for(op) {
            if op.starts_with("wgmma") {
                e.wgmma += 1;
            } else {
                e.mma_sync += 1;
            }
            *e.expects.entry(sass).or_default() += 1;
        }
    }
    out
}

/// nvdisasm's view of one arch's cubin, next to what the PTX asked for.
pub struct ArchSass {
    pub arch: String,
    /// Why there is no SASS for this arch (no cubin, nvdisasm failed), if so.
    pub error: Option<String>,
    pub functions: Vec<Function>,
    pub ptx: Vec<PtxEntry>,
}

impl ArchSass {
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// `nvdisasm -c` on each arch's cubin (all at once); the PTX read alongside.
pub fn disassemble_all(nvdisasm: &Path, reports: &[ArchReport]) -> Vec<ArchSass> {
    std::thread::scope(|s| {
        let jobs: Vec<_> = reports
            .iter()
            .map(|r| s.spawn(move || disassemble(nvdisasm, r)))
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("nvdisasm thread panicked"))
            .collect()
    })
}

/// nvdisasm 13.x prints these for cubins of ptxas 12.x; they change nothing in the listing.
const HARMLESS: &[&str] = &[
    "switching to Old format",
    "Dataflow analysis disabled due to previous warnings",
];

fn disassemble(nvdisasm: &Path, r: &ArchReport) -> ArchSass {
    let mut out = ArchSass {
        arch: r.arch.clone(),
        error: None,
        functions: vec![],
        ptx: vec![],
    };
    match std::fs::read_to_string(&r.ptx) {
        Ok(ptx) => out.ptx = ptx_entries(&ptx),
        Err(e) => {
            out.error = Some(format!("reading {}: {e}", r.ptx.display()));
            return out;
        }
    }
    if r.error.is_some() || !r.cubin.exists() {
        out.error = Some(format!(
            "no cubin ({} did not assemble: see the ptxas step)",
            r.ptx.display()
        ));
        return out;
    }
    match Command::new(nvdisasm).arg("-c").arg(&r.cubin).output() {
        Err(e) => out.error = Some(format!("could not run {}: {e}", nvdisasm.display())),
        Ok(o) => {
            let stderr = String::from_utf8_lossy(&o.stderr);
            let said: Vec<&str> = stderr
                .lines()
                .filter(|l| !l.trim().is_empty() && !HARMLESS.iter().any(|h| l.contains(h)))
                .collect();
            out.functions = parse(&String::from_utf8_lossy(&o.stdout));
            if !o.status.success() {
                out.error = Some(format!(
                    "nvdisasm failed ({}) on {}: {}",
                    o.status,
                    r.cubin.display(),
                    said.join(" / ")
                ));
            } else if out.functions.is_empty() {
                out.error = Some(format!(
                    "nvdisasm listed no function in {}{}",
                    r.cubin.display(),
                    if said.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", said.join(" / "))
                    }
                ));
            }
        }
    }
    out
}

/// Everything that must fail the check, one line each.
pub fn problems(archs: &[ArchSass]) -> Vec<String> {
    let mut out = vec![];
    for a in archs {
        if let Some(e) = &a.error {
            out.push(format!("{}: {e}", a.arch));
            continue;
        }
        for p in &a.ptx {
            let Some(f) = a.function(&p.name) else {
                out.push(format!(
                    "{}: PTX entry `{}` has no function in the SASS",
                    a.arch, p.name
                ));
                continue;
            };
            for (&want, &n) in &p.expects {
                if f.count(want) == 0 {
                    let ptx_op = if want.ends_with("GMMA") {
                        "wgmma.mma_async"
                    } else {
                        "mma.sync"
                    };
                    out.push(format!(
                        "{}: entry `{}` has {n} {ptx_op} in its PTX (for {want}) but no {want} in \
                         its SASS: the tensor cores are not used (its SASS: {})",
                        a.arch,
                        p.name,
                        brief(f)
                    ));
                }
            }
        }
    }
    out
}

/// `512 HMMA, 0 FFMA, 64 LDSM, 32 LDGSTS, 0 TMA, 0 LDL/STL, 4 BAR (2048 instructions)`: the
/// tensor opcodes present (or `0 tensor`), then the rest.
pub fn brief(f: &Function) -> String {
    let mut parts: Vec<String> = f
        .ops
        .iter()
        .filter(|(op, _)| op.ends_with("MMA"))
        .map(|(op, n)| format!("{n} {op}"))
        .collect();
    if parts.is_empty() {
        parts.push("0 tensor".into());
    }
    for op in ["FFMA", "LDSM", "LDGSTS"] {
        parts.push(format!("{} {op}", f.count(op)));
    }
    parts.push(format!("{} TMA", f.count("UTMALDG") + f.count("UBLKCP")));
    parts.push(format!("{} LDL/STL", f.count("LDL") + f.count("STL")));
    parts.push(format!("{} BAR", f.count("BAR")));
    format!("{} ({} instructions)", parts.join(", "), f.instructions)
}

/// The per-function table, sorted by arch then name; `-` is zero.
pub fn table(archs: &[ArchSass]) -> Table {
    let mut t = Table::new();
    let mut header = vec!["arch", "kernel", "instrs"];
    header.extend(COUNTED);
    t.load_preset(UTF8_FULL_CONDENSED).set_header(header);
    for a in archs {
        let mut funcs: Vec<&Function> = a.functions.iter().collect();
        funcs.sort_by(|x, y| x.name.cmp(&y.name));
        for f in funcs {
            let name = if f.entry {
                f.name.clone()
            } else {
                format!("{:#} (device fn)", rustc_demangle::demangle(&f.name))
            };
            let mut row = vec![a.arch.clone(), name, f.instructions.to_string()];
            row.extend(COUNTED.iter().map(|op| match f.count(op) {
                0 => "-".to_string(),
                n => n.to_string(),
            }));
            t.add_row(row);
        }
    }
    for col in 2..3 + COUNTED.len() {
        if let Some(c) = t.column_mut(col) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

/// `target/ptx/sass-summary.txt` (also in the bundle).
pub fn summary_text(nvdisasm: &Path, archs: &[ArchSass]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "SASS instruction counts per kernel: `{} -c target/ptx/<arch>.cubin` (cubins from ptxas).\n\
         Tensor cores: HMMA (mma.sync), HGMMA/QGMMA (wgmma), IMMA (integer mma); FFMA: fp32 FMA \
         on the CUDA cores;\nLDSM: ldmatrix; LDGSTS: cp.async; UTMALDG/UBLKCP: TMA; LDL/STL: \
         local memory; BAR: barriers. `-` is 0;\ninstrs excludes the trailing alignment padding.",
        nvdisasm.display()
    );
    for a in archs {
        if let Some(e) = &a.error {
            let _ = writeln!(s, "ERROR {}: {e}", a.arch);
        }
    }
    let _ = writeln!(s, "{}", table(archs));
    for p in problems(archs) {
        let _ = writeln!(s, "PROBLEM: {p}");
    }
    s
}

/// `target/ptx/sass.json`: one object per function (arch, name, entry, instructions, the
/// [`COUNTED`] opcodes' counts, and the PTX's `mma.sync` / `wgmma.mma_async` counts).
pub fn json(archs: &[ArchSass]) -> String {
    let items: Vec<serde_json::Value> = archs
        .iter()
        .flat_map(|a| {
            a.functions.iter().map(move |f| {
                let counts: serde_json::Map<String, serde_json::Value> = COUNTED
                    .iter()
                    .map(|op| (op.to_string(), f.count(op).into()))
                    .collect();
                let ptx = a.ptx.iter().find(|p| p.name == f.name);
                serde_json::json!({
                    "arch": a.arch, "name": f.name, "entry": f.entry,
                    "instructions": f.instructions, "counts": counts,
                    "ptx_mma_sync": ptx.map_or(0, |p| p.mma_sync),
                    "ptx_wgmma": ptx.map_or(0, |p| p.wgmma),
                })
            })
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::Value::Array(items)).unwrap_or_default()
}

/// Writes `target/ptx/sass-summary.txt` and `target/ptx/sass.json`; returns the summary text.
pub fn write_outputs(nvdisasm: &Path, archs: &[ArchSass]) -> Result<String> {
    let dir = crate::util::target_dir().join("ptx");
    std::fs::create_dir_all(&dir)?;
    let text = summary_text(nvdisasm, archs);
    std::fs::write(dir.join("sass-summary.txt"), &text)?;
    std::fs::write(dir.join("sass.json"), json(archs))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from `nvdisasm -c` (13.5) on a cubin of ptxas 12.9 for sm_90a, shortened.
    const SASS: &str = "\t.headerflags\t@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"
\t.elftype\t@\"ET_EXEC\"


//--------------------- .text.k_plain             --------------------------
\t.section\t.text.k_plain,\"ax\",@progbits
\t.align\t128
        .global         k_plain
        .type           k_plain,@function
        .size           k_plain,(.L_x_4 - k_plain)
        .other          k_plain,@\"STO_CUDA_ENTRY STV_DEFAULT\"
k_plain:
.text.k_plain:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   LDC.64 R2, c[0x0][0x210] ;
        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0030*/                   LDG.E R0, desc[UR4][R2.64] ;
        /*0040*/                   FFMA R5, R0, R0, R0 ;
        /*0045*/               @P0 FFMA R5, R5, R0, R0 ;
        /*0050*/                   STG.E desc[UR4][R2.64], R5 ;
.L_x_2:
        /*0060*/                   EXIT ;
.L_x_0:
        /*0070*/                   BRA `(.L_x_0);
        /*0080*/                   NOP;
        /*0090*/                   NOP;
.L_x_4:


//--------------------- .text.k_demo              --------------------------
\t.section\t.text.k_demo,\"ax\",@progbits
\t.sectionflags\t@\"SHF_BARRIERS=1\"
\t.align\t128
        .global         k_demo
        .type           k_demo,@function
        .size           k_demo,(.L_x_5 - k_demo)
        .other          k_demo,@\"STO_CUDA_ENTRY STV_DEFAULT\"
k_demo:
.text.k_demo:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2UR UR5, SR_CgaCtaId ;
        /*0050*/                   LDSM.16.M88.4 R4, [UR4] ;
        /*0060*/                   LDGSTS.E.BYPASS.128.ZFILL [R9], desc[UR10][R6.64], P3 ;
        /*0070*/                   HMMA.16816.F32.BF16 R4, R4, R4, RZ ;
        /*0075*/                   HGMMA.64x8x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0078*/                   STL.64 [R1], R4 ;
        /*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0090*/                   NOP ;
        /*00a0*/                   STG.E.128 desc[UR4][R2.64], R4 ;
        /*00b0*/                   EXIT ;
        /*00c0*/                   BRA `(.L_x_1);
        /*00d0*/                   NOP;
.L_x_5:


//--------------------- .text.helper_fn           --------------------------
\t.section\t.text.helper_fn,\"ax\",@progbits
        /*0000*/                   FFMA R5, R0, R0, R0 ;
        /*0010*/                   RET.REL.NODEC R20 `(k_demo) ;


//--------------------- SYMBOLS --------------------------

\t.type\t\t.nv.reservedSmem.offset0,@object
";

    #[test]
    fn parses_nvdisasm() {
        let f = parse(SASS);
        assert_eq!(
            f.iter()
                .map(|f| (f.name.as_str(), f.entry))
                .collect::<Vec<_>>(),
            vec![("k_plain", true), ("k_demo", true), ("helper_fn", false)]
        );
        let plain = &f[0];
        assert_eq!(plain.instructions, 8, "padding dropped: {:?}", plain.ops);
        assert_eq!(plain.count("FFMA"), 2, "a predicated FFMA counts");
        assert_eq!(plain.count("HMMA"), 0);
        let demo = &f[1];
        assert_eq!(demo.instructions, 11, "the NOP inside the code stays");
        for op in ["HMMA", "HGMMA", "LDSM", "LDGSTS", "STL", "BAR", "NOP"] {
            assert_eq!(demo.count(op), 1, "{op}");
        }
        assert_eq!(
            brief(demo),
            "1 HGMMA, 1 HMMA, 0 FFMA, 1 LDSM, 1 LDGSTS, 0 TMA, 1 LDL/STL, 1 BAR (11 instructions)"
        );
        assert_eq!(
            brief(plain),
            "0 tensor, 2 FFMA, 0 LDSM, 0 LDGSTS, 0 TMA, 0 LDL/STL, 0 BAR (8 instructions)"
        );
        assert_eq!(f[2].instructions, 2);
        assert_eq!(instruction("        /*0080*/ NOP;"), Some("NOP"));
        assert_eq!(instruction("/* comment */ x"), None);
        assert_eq!(instruction(".L_x_4:"), None);
    }

    const PTX: &str = "//
// .entry k_commented( in a comment
.visible .entry k_demo(
\t.param .u64 k_demo_param_0
)
{
\t// begin inline asm
\t{
.reg .u64 g;
cvta.to.global.u64 g, %rd58;
}
\t// end inline asm
\t// begin inline asm
\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f1, %f2, %f3, %f4}, {%r2, %r3, %r4, %r5}, {%r2, %r3}, {%f1, %f2, %f3, %f4};
\t// end inline asm
\t@%p1 mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r1, %r2, %r3, %r4}, {%r2, %r3, %r4, %r5}, {%r2, %r3}, {%r1, %r2, %r3, %r4};
\tret;
}
.visible .entry k_plain(
\t.param .u64 k_plain_param_0
)
{
\tfma.rn.f32 %f2, %f1, %f1, %f1;  // mma.sync in a comment
\twgmma.fence.sync.aligned;
\tret;
}
.visible .entry k_wg(
)
{
\twgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%f1, %f2, %f3, %f4}, %rd1, %rd1, 1, 1, 1, 0, 0;
}
";

    #[test]
    fn reads_what_the_ptx_asks() {
        let e = ptx_entries(PTX);
        let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["k_demo", "k_plain", "k_wg"]);
        assert_eq!((e[0].mma_sync, e[0].wgmma), (2, 0));
        assert_eq!(e[0].expects, BTreeMap::from([("HMMA", 1), ("IMMA", 1)]));
        assert_eq!(
            e[1],
            PtxEntry {
                name: "k_plain".into(),
                ..Default::default()
            }
        );
        assert_eq!((e[2].mma_sync, e[2].wgmma), (0, 1));
        assert_eq!(e[2].expects, BTreeMap::from([("HGMMA", 1)]));
        assert_eq!(
            tensor_op_for("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64"),
            Some("DMMA")
        );
        assert_eq!(
            tensor_op_for("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3"),
            Some("QGMMA")
        );
        assert_eq!(
            tensor_op_for(
                "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32"
            ),
            Some("HMMA")
        );
        assert_eq!(
            tensor_op_for("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
            None
        );
        assert_eq!(tensor_op_for("wgmma.fence.sync.aligned"), None);
    }

    #[test]
    fn tensor_core_rule() {
        let arch = |functions: Vec<Function>| ArchSass {
            arch: "sm_90".into(),
            error: None,
            functions,
            ptx: ptx_entries(PTX),
        };
        let funcs = parse(SASS);
        // k_demo has HMMA but no IMMA; k_plain asks nothing; k_wg is missing from the SASS.
        let p = problems(&[arch(funcs.clone())]);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with(
                "sm_90: entry `k_demo` has 1 mma.sync in its PTX (for IMMA) but no IMMA"
            ),
            "{p:?}"
        );
        assert_eq!(p[1], "sm_90: PTX entry `k_wg` has no function in the SASS");
        // With the HMMA gone, k_demo is named for it too.
        let mut no_hmma = funcs.clone();
        no_hmma[1].ops.remove("HMMA");
        no_hmma.push(Function {
            name: "k_wg".into(),
            entry: true,
            ..Default::default()
        });
        let p = problems(&[arch(no_hmma)]);
        assert!(
            p.iter()
                .any(|l| l.contains("`k_demo`") && l.contains("no HMMA")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|l| l.contains("`k_wg`")
                && l.contains("1 wgmma.mma_async")
                && l.contains("no HGMMA")),
            "{p:?}"
        );
        let text = table(&[arch(funcs)]).to_string();
        assert!(text.contains("helper_fn (device fn)"), "{text}");
    }
}
