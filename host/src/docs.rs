//! The guide's generated parts, from one bench.json (`rooflab-bench --render RESULTS --docs
//! DIR`, run by `cargo xtask report`):
//!
//! - `DIR/generated/<family>.md`: the family's rows (the key columns);
//! - `DIR/generated/ceilings.md`: the measured ceilings and the roofs;
//! - `DIR/generated/roofline.svg`, `DIR/generated/bars-<family>.svg`;
//! - in every `DIR/*.md`, and in `DIR/../README.md`, the text between
//!   `<!-- rooflab:table NAME -->` and `<!-- /rooflab:table -->` is replaced by the table
//!   `NAME` (a family, or `ceilings`);
//! - and the text between `<!-- rooflab:value KEY -->` and `<!-- /rooflab:value -->` by one
//!   figure of the run, so that prose quotes the run too: KEY is
//!   `row;FAMILY/VARIANT;SHAPE;FIELD;DECIMALS` (FIELD: median_us, tflops, gbps, tbps,
//!   pct_of_roof, pct_of_peer, peer_tflops, pct_of_compiled_peer, compiled_peer_us, peer_gbps,
//!   compiled_peer_gbps,
//!   rust_vs_twin, twin_median_us,
//!   spread_pct, speedup_vs_v01) or
//!   `ceiling;RESOURCE;FIELD;DECIMALS` (FIELD: value, value_k = value / 1000, pct_of_vendor).
//!   A key that starts `run=FILE;` (FILE relative to the repository root, e.g.
//!   `run=docs/runs/2026-12-06-h100-1304-norm.json;row;...`) is pinned to that stored run
//!   instead: prose about another run than the one rendered (an H100 measurement in a chapter
//!   whose tables are from an H200) still quotes its run, and a figure that run lacks is an
//!   error.
//!   The first row with that name and shape is taken (a ladder's row before a sweep row of
//!   the same shape); a row the run does not have, or a figure it did not measure (a peer
//!   or twin column the run had no peer or twins for), keeps the text an earlier run wrote.
//!
//! Every file states the run's date, device, driver and clocks, so a table is never read
//! without knowing where it was measured. Nothing here is typed by hand.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::{Error, Result};
use crate::plot;
use crate::report::{Report, Row};
use crate::roofline::Roofs;

pub const MARK_OPEN: &str = "<!-- rooflab:table ";
pub const MARK_CLOSE: &str = "<!-- /rooflab:table -->";
pub const VALUE_OPEN: &str = "<!-- rooflab:value ";
pub const VALUE_CLOSE: &str = "<!-- /rooflab:value -->";

/// One line saying where and when the numbers come from.
pub fn stamp(report: &Report) -> String {
    let dev = report.device.as_ref();
    let get = |k: &str| dev.and_then(|d| d.get(k));
    let name = get("name")
        .and_then(|v| v.as_str())
        .unwrap_or("unknown GPU");
    let driver = get("driver_cuda_version")
        .and_then(|v| v.as_i64())
        .map_or("?".to_string(), |v| {
            format!("{}.{}", v / 1000, v % 1000 / 10)
        });
    let mhz = |k: &str| {
        get(k)
            .and_then(|v| v.as_u64())
            .map_or("?".to_string(), |v| v.to_string())
    };
    if report.measured {
        format!(
            "Measured {} UTC on {name} (driver CUDA {driver}, SM clock {} MHz, memory clock {} MHz), rooflab {}.",
            report.date_utc,
            mhz("sm_clock_mhz"),
            mhz("memory_clock_mhz"),
            report.rooflab_version
        )
    } else {
        format!(
            "Predicted {} UTC without a GPU ({}), rooflab {}: not a measurement.",
            report.date_utc,
            report.note.as_deref().unwrap_or("datasheet roofs"),
            report.rooflab_version
        )
    }
}

/// Families with rows in the report, in the bench's order (unknown ones after).
pub fn families(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = crate::ops::family_names()
        .into_iter()
        .filter(|f| report.rows.iter().any(|r| r.family == *f))
        .map(str::to_string)
        .collect();
    for r in &report.rows {
        if !out.contains(&r.family) {
            out.push(r.family.clone());
        }
    }
    out
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// A Markdown cell: pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The family's rows as a Markdown table (no stamp).
pub fn family_table(rows: &[Row], family: &str) -> String {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.family == family).collect();
    if mine.is_empty() {
        return format!("_No `{family}` rows in this run._\n");
    }
    // The peer columns as the family names them (`report::peer_columns`: a peer library and
    // torch.compile, or PyTorch SDPA's backends).
    let peers = crate::report::peer_columns(family);
    // Columns a family shows only where one of its rows has the figure: the second peer
    // (`--peer torch`), the CUDA C++ twin, scratch memory (attention v01): (header, cell).
    type Column = (String, fn(&Row) -> String);
    let optional: [(bool, Column); 3] = [
        (
            mine.iter().any(|r| r.compiled_peer.is_some()),
            (format!("% of {}", peers.second), |r| {
                opt(r.pct_of_compiled_peer, 1)
            }),
        ),
        (
            mine.iter().any(|r| r.twin.is_some()),
            ("Rust / C++ time".into(), |r| {
                cell(&crate::report::twin_cell(r))
            }),
        ),
        (
            mine.iter().any(|r| r.scratch_bytes > 0),
            ("scratch MiB".into(), |r| {
                format!("{:.0}", r.scratch_bytes as f64 / (1u64 << 20) as f64)
            }),
        ),
    ];
    let extra: Vec<Column> = optional
        .into_iter()
        .filter(|(shown, _)| *shown)
        .map(|(_, c)| c)
        .collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "| variant | shape | AI F/B | bound | floor µs | model floor µs | median µs | spread % | GB/s | TFLOP/s | % of roof | vs v01 | model vs v01 | regs | % of {} |",
        peers.first
    );
    for (header, _) in &extra {
        let _ = write!(s, " {header} |");
    }
    s.push_str("\n|---|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    s.push_str(&"--:|".repeat(extra.len()));
    s.push('\n');
    for r in mine {
        let shape = if r.note.is_empty() {
            r.shape.clone()
        } else {
            format!("{} {}", r.shape, r.note)
        };
        let a = r.accounting;
        let median = match (r.median_us, &r.error) {
            (Some(m), _) => format!("{m:.1}"),
            (None, Some(e)) if e == "needs a GPU" => "-".into(),
            (None, Some(e)) => format!("FAILED: {e}"),
            (None, None) => "-".into(),
        };
        let x = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}x"));
        let _ = write!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.variant,
            cell(&shape),
            opt(a.map(|a| a.intensity), 2),
            a.map_or("-".into(), |a| a.bound_label()),
            opt(a.map(|a| a.floor_us), 1),
            opt(a.map(|a| a.variant_floor_us), 1),
            cell(&median),
            opt(r.spread_pct, 1),
            opt(r.gbps, 0),
            opt(r.tflops, 2),
            opt(r.pct_of_roof, 1),
            x(r.speedup_vs_v01),
            x(r.predicted_speedup_vs_v01),
            r.registers.map_or("-".into(), |v| v.to_string()),
            opt(r.pct_of_peer, 1),
        );
        for (_, value) in &extra {
            let _ = write!(s, " {} |", value(r));
        }
        s.push('\n');
    }
    s
}

fn roofs_line(roofs: &Roofs) -> String {
    let o = |v: Option<f64>, unit: &str| v.map_or("-".into(), |v| format!("{v:.0} {unit}"));
    format!(
        "Roofs: DRAM {:.0} GB/s, L2 {}, shared {}, {}, launch {} ({}).\n",
        roofs.dram_gbps,
        o(roofs.l2_gbps, "GB/s"),
        o(roofs.smem_gbps, "GB/s"),
        roofs.compute_summary(),
        roofs.launch_us.map_or("-".into(), |v| format!("{v:.2} µs")),
        roofs.origin
    )
}

/// The ceilings and roofs as Markdown (no stamp).
pub fn ceilings_table(report: &Report) -> String {
    let mut s = String::new();
    match &report.ceilings {
        Some(c) => {
            s.push_str(
                "| resource | how | value | spread % | datasheet | % of datasheet | roof |\n",
            );
            s.push_str("|---|---|--:|--:|--:|--:|---|\n");
            for r in &c.rows {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.1} {} | {:.1} | {} | {} | {} |",
                    r.resource,
                    cell(&r.how),
                    r.value,
                    r.unit,
                    r.spread_pct,
                    opt(r.vendor, 0),
                    opt(r.pct_of_vendor, 1),
                    if r.is_roof { "yes" } else { "" }
                );
            }
        }
        None => s.push_str("_No ceilings were measured in this run._\n"),
    }
    if let Some(roofs) = &report.roofs {
        s.push('\n');
        s.push_str(&roofs_line(roofs));
    }
    s
}

/// The marker name of the Rust-vs-CUDA-C++ table (every twinned row of the run).
pub const TWINS_TABLE: &str = "twins";

/// Every row with a CUDA C++ twin: both medians from the paired timing's Rust/C++ ratio,
/// and whether Rust is within 3% either way.
pub fn twins_table(rows: &[Row]) -> String {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.twin.is_some()).collect();
    if mine.is_empty() {
        return "_No row of this run has a CUDA C++ twin._\n".into();
    }
    let mut s = String::from(
        "| row | shape | Rust µs | C++ µs | Rust / C++ time | within 3% |\n|---|---|--:|--:|--:|---|\n",
    );
    for r in mine {
        let shape = if r.note.is_empty() {
            r.shape.clone()
        } else {
            format!("{} {}", r.shape, r.note)
        };
        let verdict = match (&r.twin_error, r.rust_vs_twin) {
            (Some(e), _) => format!("C++ twin FAILED: {e}"),
            (None, Some(v)) if (v - 1.0).abs() <= 0.03 => "yes".into(),
            (None, Some(v)) if v > 1.0 => "no: Rust slower".into(),
            (None, Some(_)) => "no: Rust faster".into(),
            (None, None) => r.twin.clone().unwrap_or_default(),
        };
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.name,
            cell(&shape),
            opt(r.median_us, 1),
            opt(r.twin_median_us, 1),
            opt(r.rust_vs_twin, 3),
            cell(&verdict),
        );
    }
    s
}

/// The table a marker names, with its stamp.
fn marker_body(report: &Report, name: &str) -> String {
    let table = if name == "ceilings" {
        ceilings_table(report)
    } else if name == TWINS_TABLE {
        twins_table(&report.rows)
    } else {
        family_table(&report.rows, name)
    };
    format!(
        "\n_{}_ Generated by `cargo xtask report`; do not edit.\n\n{table}",
        stamp(report)
    )
}

/// Replace the body of every `<!-- rooflab:table NAME -->` ... `<!-- /rooflab:table -->`,
/// then the values (`root`: the repository root, where pinned `run=` files are found).
pub fn fill_markers(text: &str, report: &Report, root: &Path) -> Result<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(MARK_OPEN) {
        let after = &rest[i + MARK_OPEN.len()..];
        let Some(end_name) = after.find("-->") else {
            return Err(Error::Other(format!("unterminated `{MARK_OPEN}` marker")));
        };
        let name = after[..end_name].trim();
        let body_start = &after[end_name + 3..];
        let Some(close) = body_start.find(MARK_CLOSE) else {
            return Err(Error::Other(format!(
                "marker `{MARK_OPEN}{name} -->` has no `{MARK_CLOSE}`"
            )));
        };
        out.push_str(&rest[..i]);
        let _ = write!(out, "{MARK_OPEN}{name} -->");
        // A family this run did not measure keeps what an earlier run wrote there, so a
        // guide can be filled from several runs, each table stamped with its own.
        let absent = match name {
            "ceilings" => false,
            TWINS_TABLE => !report.rows.iter().any(|r| r.twin.is_some()),
            _ => !report.rows.iter().any(|r| r.family == name),
        };
        if absent {
            out.push_str(&body_start[..close]);
        } else {
            out.push_str(&marker_body(report, name));
        }
        out.push_str(MARK_CLOSE);
        rest = &body_start[close + MARK_CLOSE.len()..];
    }
    out.push_str(rest);
    fill_values(&out, report, root)
}

/// The figure a `rooflab:value` KEY names in `report`: `Ok(None)` when the run has no such
/// row or ceiling (the text stays), an error for a malformed key or an unknown field.
fn value_of(report: &Report, key: &str) -> Result<Option<String>> {
    let bad = |why: &str| Error::Other(format!("`{VALUE_OPEN}{key} -->`: {why}"));
    let parts: Vec<&str> = key.split(';').map(str::trim).collect();
    let digits = |s: &str| {
        s.parse::<usize>()
            .map_err(|_| bad("the last field is the decimals"))
    };
    // `row;NAME;SHAPE;FIELD;D`, or with the note between shape and field where rows of one
    // name and shape differ only by it (`row;memory/v01_strided_copy;n=2^28;stride 8;gbps;0`)
    // or `ladder=LADDER` where they differ by ladder (a ladder row and the same in a sweep).
    let row_key = match parts.as_slice() {
        ["row", name, shape, field, d] => Some((*name, *shape, None, *field, *d)),
        ["row", name, shape, note, field, d] => Some((*name, *shape, Some(*note), *field, *d)),
        _ => None,
    };
    let (v, d) = match (row_key, parts.as_slice()) {
        (Some((name, shape, note, field, d)), _) => {
            let matches: Vec<&crate::report::Row> = report
                .rows
                .iter()
                .filter(|r| r.name == name && r.shape == shape)
                .filter(|r| {
                    note.is_none_or(|n| match n.strip_prefix("ladder=") {
                        Some(ladder) => r.ladder == ladder,
                        None => r.note == n,
                    })
                })
                .collect();
            let Some(r) = matches.first() else {
                return Ok(None);
            };
            if matches.len() > 1 {
                return Err(bad(&format!(
                    "{} rows have this name and shape; add the note or ladder=LADDER (row;NAME;SHAPE;NOTE;FIELD;D): {}",
                    matches.len(),
                    matches
                        .iter()
                        .map(|r| format!("{:?} in {}", r.note, r.ladder))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            let v = match field {
                "median_us" => r.median_us,
                "tflops" => r.tflops,
                "gbps" => r.gbps,
                "tbps" => r.gbps.map(|g| g / 1e3),
                "speedup_vs_v01" => r.speedup_vs_v01,
                "pct_of_roof" => r.pct_of_roof,
                "pct_of_peer" => r.pct_of_peer,
                "spread_pct" => r.spread_pct,
                "peer_tflops" => r.peer_median_us.map(|p| r.flops as f64 / (p * 1e6)),
                "pct_of_compiled_peer" => r.pct_of_compiled_peer,
                "compiled_peer_us" => r.compiled_peer_median_us,
                "rust_vs_twin" => r.rust_vs_twin,
                "twin_median_us" => r.twin_median_us,
                // The peers' effective bandwidth, by the row's own minimum bytes.
                "peer_gbps" => r.peer_median_us.map(|p| r.min_bytes as f64 / (p * 1e3)),
                "compiled_peer_gbps" => r
                    .compiled_peer_median_us
                    .map(|p| r.min_bytes as f64 / (p * 1e3)),
                _ => return Err(bad("unknown row field")),
            };
            // A figure the run did not measure (a peer without `--peer torch`, the twins'
            // without NVRTC) keeps the earlier text, as a row the run lacks does.
            let d = digits(d)?;
            let Some(v) = v else {
                return Ok(None);
            };
            (v, d)
        }
        (None, ["ceiling", resource, field, d]) => {
            let Some(c) = report
                .ceilings
                .as_ref()
                .and_then(|c| c.rows.iter().find(|r| r.resource == *resource))
            else {
                return Ok(None);
            };
            let v = match *field {
                "value" => Some(c.value),
                // GFLOP/s or GB/s in thousands: TFLOP/s, TB/s.
                "value_k" => Some(c.value / 1e3),
                "pct_of_vendor" => c.pct_of_vendor,
                _ => return Err(bad("unknown ceiling field")),
            };
            let d = digits(d)?;
            let Some(v) = v else {
                return Ok(None);
            };
            (v, d)
        }
        _ => {
            return Err(bad(
                "expected row;NAME;SHAPE[;NOTE];FIELD;DECIMALS or ceiling;RESOURCE;FIELD;DECIMALS",
            ));
        }
    };
    Ok(Some(format!("{v:.d$}")))
}

/// Replace the body of every `<!-- rooflab:value KEY -->` ... `<!-- /rooflab:value -->`: from
/// `report`, or, for a key pinned with `run=FILE;`, from that bench.json under `root` (each
/// file read once).
pub fn fill_values(text: &str, report: &Report, root: &Path) -> Result<String> {
    let mut pinned: std::collections::HashMap<&str, Report> = std::collections::HashMap::new();
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(VALUE_OPEN) {
        let after = &rest[i + VALUE_OPEN.len()..];
        let Some(end_key) = after.find("-->") else {
            return Err(Error::Other(format!("unterminated `{VALUE_OPEN}` marker")));
        };
        let key = after[..end_key].trim();
        let body = &after[end_key + 3..];
        let Some(close) = body.find(VALUE_CLOSE) else {
            return Err(Error::Other(format!(
                "marker `{VALUE_OPEN}{key} -->` has no `{VALUE_CLOSE}`"
            )));
        };
        out.push_str(&rest[..i]);
        let _ = write!(out, "{VALUE_OPEN}{key} -->");
        let value = match key.split_once(';') {
            Some((run, rest)) if run.trim().starts_with("run=") => {
                let file = run.trim()["run=".len()..].trim();
                let bad = |why: String| Error::Other(format!("`{VALUE_OPEN}{key} -->`: {why}"));
                if !pinned.contains_key(file) {
                    pinned.insert(file, load(&root.join(file)).map_err(bad)?);
                }
                // The file is fixed: a figure it lacks is a wrong key, not an older text.
                Some(value_of(&pinned[file], rest)?.ok_or_else(|| {
                    bad(format!("{file} has no such figure"))
                })?)
            }
            _ => value_of(report, key)?,
        };
        match value {
            Some(v) => out.push_str(&v),
            None => out.push_str(&body[..close]),
        }
        out.push_str(VALUE_CLOSE);
        rest = &body[close + VALUE_CLOSE.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// XML-escape for SVG text.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Add the stamp as a last line of text in an SVG written by [`plot`].
fn stamp_svg(path: &Path, stamp: &str) -> Result<()> {
    let io = |e: std::io::Error| Error::Other(format!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(io)?;
    let Some(end) = text.rfind("</svg>") else {
        return Err(Error::Other(format!("{} is not an SVG", path.display())));
    };
    let line = format!(
        "<text x=\"8\" y=\"14\" font-family=\"sans-serif\" font-size=\"11\" fill=\"#555555\">{}</text>\n",
        xml(stamp)
    );
    std::fs::write(path, format!("{}{line}{}", &text[..end], &text[end..])).map_err(io)
}

fn write(path: &Path, text: &str, written: &mut Vec<PathBuf>) -> Result<()> {
    crate::report::atomic_write(path, text.as_bytes())
        .map_err(|e| Error::Other(format!("writing {}: {e}", path.display())))?;
    written.push(path.to_path_buf());
    Ok(())
}

/// Render everything into `docs`; returns the files written (generated ones, then chapters
/// whose markers changed).
pub fn render(report: &Report, docs: &Path) -> Result<Vec<PathBuf>> {
    let gen_dir = docs.join("generated");
    std::fs::create_dir_all(&gen_dir)
        .map_err(|e| Error::Other(format!("creating {}: {e}", gen_dir.display())))?;
    let stamp = stamp(report);
    let mut written = Vec::new();
    let head = |title: &str| {
        format!("# {title}\n\n_{stamp}_ Generated by `cargo xtask report`; do not edit.\n\n")
    };

    for f in families(report) {
        let text = format!(
            "{}{}",
            head(&format!(
                "{} (`{f}`): measured ladder",
                crate::ops::family(&f).map_or(f.as_str(), |fam| fam.title)
            )),
            family_table(&report.rows, &f)
        );
        write(&gen_dir.join(format!("{f}.md")), &text, &mut written)?;
        let svg = gen_dir.join(format!("bars-{f}.svg"));
        plot::family_bars(&svg, &report.rows, &f, report.measured)?;
        stamp_svg(&svg, &stamp)?;
        written.push(svg);
    }
    let text = format!("{}{}", head("Ceilings and roofs"), ceilings_table(report));
    write(&gen_dir.join("ceilings.md"), &text, &mut written)?;
    if let Some(roofs) = &report.roofs
        && !report.rows.is_empty()
    {
        let svg = gen_dir.join("roofline.svg");
        let title = if report.measured {
            "rooflab roofline (measured)"
        } else {
            "rooflab roofline (predicted, no GPU)"
        };
        plot::roofline(&svg, &report.rows, roofs, title)?;
        stamp_svg(&svg, &stamp)?;
        written.push(svg);
    }

    // The chapters' markers.
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(docs)
        .map_err(|e| Error::Other(format!("reading {}: {e}", docs.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    chapters.sort();
    for p in chapters {
        let old = std::fs::read_to_string(&p)
            .map_err(|e| Error::Other(format!("reading {}: {e}", p.display())))?;
        let new = fill_markers(&old, report, &docs.join(".."))
            .map_err(|e| Error::Other(format!("{}: {e}", p.display())))?;
        if new != old {
            write(&p, &new, &mut written)?;
        }
    }
    Ok(written)
}

/// A bench.json, read.
pub fn load(json: &Path) -> std::result::Result<Report, String> {
    std::fs::read_to_string(json)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<Report>(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: not a bench.json: {e}", json.display()))
}

/// The `--render` mode's guide half: the generated files and the chapters' markers.
pub fn run(json: &Path, docs: &Path) -> ExitCode {
    let report = match load(json) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rooflab: {e}");
            return ExitCode::from(2);
        }
    };
    if !report.measured {
        eprintln!(
            "rooflab: note: {} is a predicted report (no GPU); the guide's tables will say so",
            json.display()
        );
    }
    // The README beside the guide carries the same markers for its results section.
    let readme = docs.join("..").join("README.md");
    let result = render(&report, docs).and_then(|mut files| {
        if let Ok(old) = std::fs::read_to_string(&readme) {
            let new = fill_markers(&old, &report, &docs.join(".."))
                .map_err(|e| Error::Other(format!("{}: {e}", readme.display())))?;
            if new != old {
                write(&readme, &new, &mut files)?;
            }
        }
        Ok(files)
    });
    match result {
        Ok(files) => {
            println!("{}", stamp(&report));
            for f in files {
                println!("  wrote {}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rooflab: --render: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .join("docs")
            .join("testdata")
    }

    fn all_files(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                all_files(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }

    /// Regenerates from `docs/testdata/sample-bench.json` (plus a chapter with markers) and
    /// compares every file with `docs/testdata/expected/`. After an intended change to the
    /// output: `ROOFLAB_BLESS=1 cargo test -p rooflab docs::` and review the diff.
    #[test]
    fn render_matches_golden_files() {
        let td = testdata();
        let report: Report =
            serde_json::from_str(&std::fs::read_to_string(td.join("sample-bench.json")).unwrap())
                .unwrap();
        let dir = std::env::temp_dir().join(format!("rooflab-docs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(td.join("sample-chapter.md"), dir.join("sample-chapter.md")).unwrap();
        render(&report, &dir).unwrap();
        // Rendering again changes nothing (markers are replaced, not appended to).
        let again = render(&report, &dir).unwrap();
        assert!(!again.iter().any(|p| p.ends_with("sample-chapter.md")));

        let expected = td.join("expected");
        if std::env::var_os("ROOFLAB_BLESS").is_some() {
            let _ = std::fs::remove_dir_all(&expected);
            let mut got = Vec::new();
            all_files(&dir, &dir, &mut got);
            for f in got {
                std::fs::create_dir_all(expected.join(&f).parent().unwrap()).unwrap();
                std::fs::copy(dir.join(&f), expected.join(&f)).unwrap();
            }
        }
        let (mut got, mut want) = (Vec::new(), Vec::new());
        all_files(&dir, &dir, &mut got);
        all_files(&expected, &expected, &mut want);
        got.sort();
        want.sort();
        assert_eq!(got, want, "the same files");
        for f in &want {
            let g = std::fs::read_to_string(dir.join(f)).unwrap();
            let w = std::fs::read_to_string(expected.join(f)).unwrap();
            assert!(
                g == w,
                "{} differs from the golden file (ROOFLAB_BLESS=1 to update)",
                f.display()
            );
        }
        let chapter = std::fs::read_to_string(dir.join("sample-chapter.md")).unwrap();
        assert!(chapter.contains("Measured 2026-12-02"), "{chapter}");
        assert!(chapter.contains("| `v03_vectorized_copy` |"), "{chapter}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A PTX line with register numbers and labels blanked (`%r123` -> `%r`, `$L__BB0_4` ->
    /// `$L`) and whitespace collapsed: what stays the same from one build to the next.
    fn ptx_shape(line: &str) -> String {
        let mut out = String::new();
        let mut chars = line.trim().trim_end_matches(';').chars().peekable();
        while let Some(c) = chars.next() {
            if c == '%' || c == '$' {
                out.push(c);
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphabetic() && n != 'L' || n == 'L' && c == '$' {
                        out.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                while chars
                    .peek()
                    .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_')
                {
                    chars.next();
                }
            } else if c.is_whitespace() {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    /// Every line of a ```ptx block in the guide's chapters is in the PTX built now (up to
    /// register numbers and offsets of labels), so "the PTX line that shows it" stays true
    /// when a kernel changes.
    #[test]
    fn guide_ptx_lines_exist_in_the_built_ptx() {
        let built: std::collections::HashSet<String> = crate::ptx::built()
            .iter()
            .flat_map(|(_, ptx)| ptx.lines().map(ptx_shape))
            .collect();
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
        let mut checked = 0;
        let mut missing = Vec::new();
        for e in std::fs::read_dir(&docs).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let mut in_ptx = false;
            for line in text.lines() {
                match line.trim() {
                    "```ptx" => in_ptx = true,
                    "```" => in_ptx = false,
                    l if in_ptx && !l.is_empty() => {
                        checked += 1;
                        if !built.contains(&ptx_shape(l)) {
                            missing.push(format!("{}: {l}", p.file_name().unwrap().display()));
                        }
                    }
                    _ => {}
                }
            }
        }
        assert!(checked > 10, "only {checked} PTX lines found in docs/");
        assert!(
            missing.is_empty(),
            "guide PTX lines not in the built PTX:\n{}",
            missing.join("\n")
        );
        assert_eq!(
            ptx_shape("ld.shared.v4.b32 \t{%r131, %r132}, [%rd311+-140];"),
            "ld.shared.v4.b32 {%r, %r}, [%rd+-140]"
        );
    }

    /// Figures pinned to a stored run (`run=FILE;...`) are that run's, in every chapter and in
    /// the README: filling them again from their files changes nothing, so none was typed by
    /// hand or went stale. A pinned key whose file lacks the figure is an error.
    #[test]
    fn pinned_values_match_their_runs() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let empty = Report {
            rooflab_version: "0".into(),
            date_utc: "d".into(),
            device: None,
            measured: false,
            ceilings: None,
            roofs: None,
            rows: vec![],
            note: None,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.push(root.join("README.md"));
        let mut pinned = 0;
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            pinned += text.matches(&format!("{VALUE_OPEN}run=")).count();
            let filled = fill_values(&text, &empty, &root)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            for (a, b) in text.lines().zip(filled.lines()) {
                assert_eq!(a, b, "{}: a pinned figure is not its run's", p.display());
            }
        }
        assert!(pinned > 10, "only {pinned} pinned figures found");
        let run = "docs/runs/2026-12-06-h100-1304-norm.json";
        let key = |k: &str| format!("{VALUE_OPEN}run={run};{k} -->x{VALUE_CLOSE}");
        let ok = key("row;norm/v06_cluster_row_layernorm_bf16;256x262144;median_us;1");
        assert!(fill_values(&ok, &empty, &root).unwrap().contains("-->133.0<"));
        let absent = key("row;norm/v99_nope;256x262144;median_us;1");
        let e = fill_values(&absent, &empty, &root).unwrap_err().to_string();
        assert!(e.contains("has no such figure"), "{e}");
        let nofile = format!("{VALUE_OPEN}run=docs/runs/nope.json;row;a;b;median_us;1 -->x{VALUE_CLOSE}");
        assert!(fill_values(&nofile, &empty, &root).is_err());
    }

    #[test]
    fn markers_need_a_close() {
        let r = Report {
            rooflab_version: "0".into(),
            date_utc: "d".into(),
            device: None,
            measured: false,
            ceilings: None,
            roofs: None,
            rows: vec![],
            note: None,
        };
        assert!(fill_markers("a <!-- rooflab:table memory --> b", &r, Path::new(".")).is_err());
        let t = fill_markers(
            "a\n<!-- rooflab:table gemm -->old<!-- /rooflab:table -->\nz",
            &r,
            Path::new("."),
        )
        .unwrap();
        // A family absent from this run keeps the earlier table.
        assert!(t.contains("old"), "{t}");
        assert!(t.starts_with("a\n") && t.ends_with("\nz"));
        assert!(stamp(&r).starts_with("Predicted d UTC"));
    }

    /// Rows of one name and shape that differ by note or ladder need the note (or
    /// `ladder=`) in the key; without it the key is an error, not the first row's figure.
    #[test]
    fn ambiguous_value_keys_are_refused() {
        let mut r: Report = serde_json::from_str(
            &std::fs::read_to_string(testdata().join("sample-bench.json")).unwrap(),
        )
        .unwrap();
        let mut a = r
            .rows
            .iter()
            .find(|x| x.median_us.is_some())
            .unwrap()
            .clone();
        a.note = "stride 2".into();
        a.median_us = Some(2.0);
        let mut b = a.clone();
        b.note = "stride 8".into();
        b.median_us = Some(8.0);
        let mut c = a.clone();
        c.ladder = "sweep_x".into();
        c.note = "stride 8".into();
        c.median_us = Some(9.0);
        let (name, shape) = (a.name.clone(), format!("{}-dup", a.shape));
        for x in [&mut a, &mut b, &mut c] {
            x.shape = shape.clone();
        }
        r.rows.extend([a, b, c]);
        let key = |k: &str| format!("<!-- rooflab:value {k} -->x<!-- /rooflab:value -->");
        let plain = key(&format!("row;{name};{shape};median_us;0"));
        let err = fill_values(&plain, &r, Path::new(".")).unwrap_err().to_string();
        assert!(err.contains("3 rows") && err.contains("stride 8"), "{err}");
        let by_note = key(&format!("row;{name};{shape};stride 2;median_us;0"));
        assert!(fill_values(&by_note, &r, Path::new(".")).unwrap().contains("-->2<"));
        // Two rows have note "stride 8": still ambiguous; the ladder picks one.
        let note8 = key(&format!("row;{name};{shape};stride 8;median_us;0"));
        assert!(fill_values(&note8, &r, Path::new(".")).is_err());
        let by_ladder = key(&format!("row;{name};{shape};ladder=sweep_x;median_us;0"));
        assert!(fill_values(&by_ladder, &r, Path::new(".")).unwrap().contains("-->9<"));
    }

    #[test]
    fn values_come_from_the_run() {
        let r: Report = serde_json::from_str(
            &std::fs::read_to_string(testdata().join("sample-bench.json")).unwrap(),
        )
        .unwrap();
        // Inline figures: from the run, stale text replaced; a row the run lacks keeps its
        // text; an unknown field is an error, not a silent blank.
        let row = r.rows.iter().find(|x| x.median_us.is_some()).unwrap();
        let key = format!("row;{};{};{};median_us;1", row.name, row.shape, row.note);
        let text = format!("took <!-- rooflab:value {key} -->999<!-- /rooflab:value --> µs");
        let filled = fill_values(&text, &r, Path::new(".")).unwrap();
        assert_eq!(
            filled,
            format!(
                "took <!-- rooflab:value {key} -->{:.1}<!-- /rooflab:value --> µs",
                row.median_us.unwrap()
            )
        );
        let absent = "<!-- rooflab:value row;nope/v01;1;tflops;0 -->7<!-- /rooflab:value -->";
        assert_eq!(fill_values(absent, &r, Path::new(".")).unwrap(), absent);
        // A row the run has, without the figure (no twin measured): the text stays too.
        assert!(row.rust_vs_twin.is_none());
        let unmeasured = format!(
            "<!-- rooflab:value row;{};{};{};rust_vs_twin;3 -->0.950<!-- /rooflab:value -->",
            row.name, row.shape, row.note
        );
        assert_eq!(fill_values(&unmeasured, &r, Path::new(".")).unwrap(), unmeasured);
        let wrong = format!(
            "<!-- rooflab:value row;{};{};{};speed;0 -->7<!-- /rooflab:value -->",
            row.name, row.shape, row.note
        );
        let err = fill_values(&wrong, &r, Path::new(".")).unwrap_err().to_string();
        assert!(err.contains("unknown row field"), "{err}");
        assert!(fill_values("<!-- rooflab:value row;a -->1<!-- /rooflab:value -->", &r, Path::new(".")).is_err());
        // Ceilings too.
        let c = &r.ceilings.as_ref().unwrap().rows[0];
        let key = format!("ceiling;{};value;0", c.resource);
        let text = format!("<!-- rooflab:value {key} -->x<!-- /rooflab:value -->");
        assert!(
            fill_values(&text, &r, Path::new("."))
                .unwrap()
                .contains(&format!("-->{:.0}<", c.value))
        );
    }
}
