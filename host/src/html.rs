//! The HTML report, `OUT/report/index.html` (`target/rooflab/report/index.html` by
//! default): one self-contained page per run, written by every bench run and by
//! `cargo xtask report RUN.json`. Inline CSS and SVG, no script, nothing fetched.
//!
//! The page: the device, date, clocks and roofs; with `--compare`, the changes, regressions
//! first; the overview roofline; then per family its ladder table (the model's prediction
//! next to the measurement, the peer, registers), its bar chart, its own roofline and its
//! sweeps, and a link to its guide chapter. Rows carry `data-row` and charts `data-chart`
//! attributes, which the browser test (`cargo xtask test`, step `browser`) counts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::docs::{families, stamp};
use crate::error::{Error, Result};
use crate::plot;
use crate::report::{Report, Row};

/// Where the page of a run whose files go to `out` is written.
pub fn page_path(out: &Path) -> PathBuf {
    out.join("report").join("index.html")
}

/// Write the page for `report` to [`page_path`]`(out)`; `docs` is the guide's folder (its
/// chapters are linked when it holds them). Returns the page's path.
pub fn write(report: &Report, out: &Path, docs: Option<&Path>) -> Result<PathBuf> {
    let path = page_path(out);
    let dir = path.parent().unwrap_or(out);
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Other(format!("creating {}: {e}", dir.display())))?;
    let chapters = docs.map(|d| chapters(d, dir)).unwrap_or_default();
    let html = page(report, &chapters)?;
    crate::report::atomic_write(&path, html.as_bytes())
        .map_err(|e| Error::Other(format!("writing {}: {e}", path.display())))?;
    Ok(path)
}

/// The `--render` mode's report half: the page of the run in `json`, under `out`.
pub fn run(json: &Path, out: &Path, docs: &Path) -> std::process::ExitCode {
    let result =
        crate::docs::load(json).and_then(|r| write(&r, out, Some(docs)).map_err(|e| e.to_string()));
    match result {
        Ok(p) => {
            println!("  wrote {}", p.display());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rooflab: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The guide's chapters by family: the chapter whose text names `Ladder `FAMILY``, as a
/// link relative to the page's folder `from` (absolute when no relative path exists).
pub fn chapters(docs: &Path, from: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(docs) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let from = abs(from);
    let mut out = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for fam in crate::ops::family_names() {
            if text.contains(&format!("Ladder `{fam}`")) && !out.iter().any(|(n, _)| n == fam) {
                let target = abs(&f);
                let link = pathdiff::diff_paths(&target, &from).unwrap_or(target);
                out.push((fam.to_string(), link.to_string_lossy().replace('\\', "/")));
            }
        }
    }
    out
}

/// Escape text for HTML content and attribute values.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A plotters SVG made to scale with the page: a viewBox from its size, width 100%.
fn inline_svg(svg: &str, chart: &str) -> String {
    let start = svg.find("<svg").unwrap_or(0);
    let body = &svg[start..];
    let end = body.find('>').unwrap_or(0);
    let tag = &body[..end];
    let attr = |name: &str| -> Option<f64> {
        let i = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[i..].split('"').next()?.parse().ok()
    };
    let (w, h) = (
        attr("width").unwrap_or(1000.0),
        attr("height").unwrap_or(600.0),
    );
    let mut new_tag = tag.to_string();
    for name in ["width", "height", "viewBox"] {
        if let Some(i) = new_tag.find(&format!(" {name}=\"")) {
            let j = new_tag[i + name.len() + 3..]
                .find('"')
                .map_or(new_tag.len(), |j| i + name.len() + 3 + j + 1);
            new_tag.replace_range(i..j, "");
        }
    }
    new_tag = new_tag.replacen(
        "<svg",
        &format!(
            "<svg viewBox=\"0 0 {w} {h}\" width=\"100%\" role=\"img\" data-chart=\"{}\"",
            esc(chart)
        ),
        1,
    );
    format!("{new_tag}{}", &body[end..])
}

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1400px; padding: 0 1.5em 3em;
  color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.stamp { color: #555; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.8em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.5em; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td { background: #fde2e2; } tr.unavailable td { color: #888; }
td.worse { background: #f8b9b9; } td.slower { background: #fdeaea; }
td.faster { background: #dff3df; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.4em;
  vertical-align: baseline; }
figure { margin: 1em 0; } figcaption { color: #555; font-size: 0.9em; }
.charts figure { max-width: 1100px; }
td { white-space: nowrap; } td.note { white-space: normal; min-width: 12em; max-width: 22em; }
";

fn num(v: Option<f64>, digits: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

/// The roofs of the run as a small table.
fn roofs_table(report: &Report) -> String {
    let Some(roofs) = &report.roofs else {
        return "<p>No roofs in this run.</p>".into();
    };
    let mut s = String::from(
        "<table class=\"roofs\"><tr><th>roof</th><th>value</th><th>where from</th></tr>",
    );
    let mut line = |name: String, value: String, how: &str| {
        let _ = write!(
            s,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&name),
            esc(&value),
            esc(how)
        );
    };
    line(
        "DRAM".into(),
        format!("{:.0} GB/s", roofs.dram_gbps),
        &roofs.origin,
    );
    if let Some(l2) = roofs.l2_gbps {
        line("L2".into(), format!("{l2:.0} GB/s"), "measured ceiling");
    }
    if let Some(sm) = roofs.smem_gbps {
        line(
            "shared memory".into(),
            format!("{sm:.0} GB/s"),
            "measured ceiling",
        );
    }
    for c in &roofs.compute {
        let how = if c.measured {
            format!("measured: {}", c.how)
        } else {
            format!("not measured: {}", c.how)
        };
        line(
            c.precision.to_string(),
            format!("{:.1} TFLOP/s", c.gflops / 1e3),
            &how,
        );
    }
    for c in &roofs.instruction_ceilings {
        line(
            format!("{} (one instruction path, not a roof)", c.precision),
            format!("{:.1} TFLOP/s", c.gflops / 1e3),
            &c.how,
        );
    }
    if let Some(l) = roofs.launch_us {
        line("launch overhead".into(), format!("{l:.2} µs"), "measured");
    }
    s.push_str("</table>");
    s
}

/// A row's key in the page (and the browser test): name, shape and note.
pub fn row_key(r: &Row) -> String {
    format!("{}|{}|{}", r.name, r.shape, r.note)
}

/// The class of a change in percent (positive = slower now).
fn change_class(r: &Row) -> &'static str {
    match r.change_pct {
        _ if r.regressed => "worse",
        Some(c) if c > 0.0 => "slower",
        Some(c) if c < 0.0 => "faster",
        _ => "",
    }
}

/// With `--compare`: every row that has an earlier median, regressions first, then by
/// change (slowest first).
fn changes(report: &Report) -> Option<String> {
    let mut rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| r.change_pct.is_some())
        .collect();
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| {
        b.regressed.cmp(&a.regressed).then(
            b.change_pct
                .unwrap_or(0.0)
                .total_cmp(&a.change_pct.unwrap_or(0.0)),
        )
    });
    let n_reg = rows.iter().filter(|r| r.regressed).count();
    let table = |rows: &[&Row]| {
        let mut s = String::from(
            "<table><tr><th>row</th><th>shape</th><th>note</th><th>before µs</th>\
             <th>now µs</th><th>change %</th></tr>",
        );
        for r in rows {
            let _ = write!(
                s,
                "<tr data-change=\"{}\"><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num {}\">{}</td></tr>",
                esc(&row_key(r)),
                esc(&r.name),
                esc(&r.shape),
                esc(&r.note),
                num(r.old_median_us, 1),
                num(r.median_us, 1),
                change_class(r),
                r.change_pct.map_or("-".into(), |c| format!("{c:+.1}"))
            );
        }
        s.push_str("</table>");
        s
    };
    let mut s = format!(
        "<section id=\"changes\"><h2>Changes against the earlier run</h2><p>{} of {} rows \
         compared; {n_reg} flagged as regressions.</p>",
        rows.len(),
        report.rows.len()
    );
    let regressions: Vec<&Row> = rows.iter().copied().filter(|r| r.regressed).collect();
    if !regressions.is_empty() {
        s.push_str("<h3>Regressions</h3>");
        s.push_str(&table(&regressions));
    }
    let _ = write!(
        s,
        "<details><summary>Every compared row, regressions first, then slowest change \
         first</summary>{}</details>",
        table(&rows)
    );
    s.push_str("</section>");
    Some(s)
}

/// A family's ladder table.
fn ladder_table(rows: &[Row], family: &str, measured: bool, compared: bool) -> String {
    // The peer columns as the family names them (a peer library and torch.compile, or
    // PyTorch SDPA's backends: `report::peer_columns`).
    let peers = crate::report::peer_columns(family);
    let mut s = format!(
        "<table class=\"ladder\"><tr><th>step</th><th>shape</th><th>note</th>\
         <th>floor µs</th><th>model floor µs</th><th>median µs</th><th>spread %</th>\
         <th>GB/s</th><th>TFLOP/s</th><th>% of roof</th><th>vs v01</th><th>model vs v01</th>\
         <th>regs</th><th>{0}</th><th>% of {0}</th>",
        esc(peers.first)
    );
    // The second peer's columns only where a row of the family has one (`--peer torch`).
    let compiled = rows
        .iter()
        .any(|r| r.family == family && r.compiled_peer.is_some());
    // The CUDA C++ twin's column only where a row of the family is twinned.
    let twins = rows.iter().any(|r| r.family == family && r.twin.is_some());
    let span = 10 + if compiled { 2 } else { 0 } + if twins { 1 } else { 0 };
    if compiled {
        let _ = write!(s, "<th>{0}</th><th>% of {0}</th>", esc(peers.second));
    }
    if twins {
        s.push_str("<th title=\"Rust time / CUDA C++ twin time\">vs C++</th>");
    }
    if compared {
        s.push_str("<th>change %</th>");
    }
    s.push_str("</tr>");
    for r in rows.iter().filter(|r| r.family == family) {
        let class = if r.unavailable.is_some() {
            "unavailable"
        } else if !r.correct || r.error.is_some() {
            "failed"
        } else {
            ""
        };
        let a = r.accounting.as_ref();
        let swatch = plot::colour(plot::variant_index(rows, r));
        let _ = write!(
            s,
            "<tr class=\"{class}\" data-row=\"{}\"><td><span class=\"swatch\" \
             style=\"background: rgb({},{},{})\"></span><code>{}</code></td><td>{}</td>\
             <td class=\"note\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            esc(&row_key(r)),
            swatch.0,
            swatch.1,
            swatch.2,
            esc(&r.variant),
            esc(&r.shape),
            esc(&r.note),
            num(a.map(|a| a.floor_us), 1),
            num(a.map(|a| a.variant_floor_us), 1),
        );
        if let Some(why) = &r.unavailable {
            let _ = write!(s, "<td colspan=\"{span}\">not run here: {}</td>", esc(why));
        } else if let Some(e) = &r.error {
            let _ = write!(s, "<td colspan=\"{span}\">FAILED: {}</td>", esc(e));
        } else if !measured {
            let _ = write!(
                s,
                "<td colspan=\"{span}\">needs a GPU (predicted report)</td>"
            );
        } else {
            let tflops = r.tflops.filter(|&t| t > 0.0);
            let _ = write!(
                s,
                "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\"><b>{}</b></td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td>{}</td><td class=\"num\">{}</td>",
                num(r.median_us, 1),
                num(r.spread_pct, 1),
                num(r.gbps, 0),
                num(tflops, 2),
                num(r.pct_of_roof, 1),
                r.speedup_vs_v01.map_or("-".into(), |x| format!("{x:.2}x")),
                r.predicted_speedup_vs_v01
                    .map_or("-".into(), |x| format!("{x:.2}x")),
                r.registers.map_or("-".into(), |x| x.to_string()),
                esc(r.peer.as_deref().unwrap_or("-")),
                num(r.pct_of_peer, 1),
            );
            if compiled {
                let _ = write!(
                    s,
                    "<td>{}</td><td class=\"num\">{}</td>",
                    esc(r.compiled_peer.as_deref().unwrap_or("-")),
                    num(r.pct_of_compiled_peer, 1),
                );
            }
            if twins {
                let _ = write!(
                    s,
                    "<td class=\"num\" title=\"{}\">{}</td>",
                    esc(r.twin_error.as_deref().or(r.twin.as_deref()).unwrap_or("")),
                    esc(&crate::report::twin_cell(r)),
                );
            }
        }
        if compared {
            let _ = write!(
                s,
                "<td class=\"num {}\">{}</td>",
                change_class(r),
                r.change_pct.map_or("-".into(), |c| format!("{c:+.1}"))
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</table>");
    s
}

/// The whole page. `chapters` maps families to links of their guide chapters.
pub fn page(report: &Report, chapters: &[(String, String)]) -> Result<String> {
    let device = report
        .device
        .as_ref()
        .and_then(|d| d.get("name"))
        .and_then(|v| v.as_str())
        .unwrap_or(if report.measured { "GPU" } else { "no GPU" });
    let compared = report.rows.iter().any(|r| r.old_median_us.is_some());
    let fams = families(report);
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\
         <title>rooflab report: {} {}</title><style>{STYLE}</style></head><body>\
         <header><h1>rooflab report</h1><p class=\"stamp\">{}</p>",
        esc(device),
        esc(&report.date_utc),
        esc(&stamp(report))
    );
    if let Some(n) = &report.note {
        let _ = write!(s, "<p>{}</p>", esc(n));
    }
    s.push_str(&roofs_table(report));
    s.push_str("<nav>");
    if compared {
        s.push_str("<a href=\"#changes\">changes</a>");
    }
    s.push_str("<a href=\"#overview\">overview roofline</a>");
    for f in &fams {
        let _ = write!(s, "<a href=\"#family-{0}\">{0}</a>", esc(f));
    }
    s.push_str("</nav></header>");
    if let Some(c) = changes(report) {
        s.push_str(&c);
    }
    if let Some(roofs) = &report.roofs
        && !report.rows.is_empty()
    {
        let svg = plot::roofline_svg(
            &report.rows,
            roofs,
            "every family against this run's roofs",
            plot::Scope::Overview,
        )?;
        let _ = write!(
            s,
            "<section id=\"overview\"><h2>Overview roofline</h2><figure>{}<figcaption>Each \
             family's best step and its v01 are labelled; hover a point for its figures.\
             </figcaption></figure></section>",
            inline_svg(&svg, "roofline overview")
        );
    }
    for f in &fams {
        let title = crate::ops::family(f).map_or(f.as_str(), |fam| fam.title);
        let _ = write!(
            s,
            "<section id=\"family-{0}\"><h2>{1} (<code>{0}</code>)</h2>",
            esc(f),
            esc(title)
        );
        match chapters.iter().find(|(n, _)| n == f) {
            Some((_, link)) => {
                let _ = write!(
                    s,
                    "<p>Guide chapter: <a class=\"chapter\" href=\"{0}\">{0}</a></p>",
                    esc(link)
                );
            }
            None => s.push_str(
                "<p>Guide chapter: see <code>docs/</code> in the rooflab repository.</p>",
            ),
        }
        s.push_str(&ladder_table(&report.rows, f, report.measured, compared));
        s.push_str("<div class=\"charts\">");
        let bars = plot::family_bars_svg(&report.rows, f, report.measured)?;
        let _ = write!(
            s,
            "<figure>{}<figcaption>% of roof per step, grouped by ladder and shape; the black \
             tick is the {} on the same row.</figcaption></figure>",
            inline_svg(&bars, &format!("bars {f}")),
            esc(crate::report::peer_columns(f).first_legend)
        );
        if let Some(roofs) = &report.roofs {
            let svg = plot::roofline_svg(
                &report.rows,
                roofs,
                &format!("{f}: roofline"),
                plot::Scope::Family(f),
            )?;
            let _ = write!(
                s,
                "<figure>{}<figcaption>The family's steps in the colours of its bar chart.\
                 </figcaption></figure>",
                inline_svg(&svg, &format!("roofline {f}"))
            );
        }
        for sw in plot::sweeps(&report.rows, f) {
            let svg = plot::sweep_svg(&report.rows, &sw)?;
            let _ = write!(
                s,
                "<figure>{}<figcaption>Sweep <code>{}</code>: x in <code>{}</code>.\
                 </figcaption></figure>",
                inline_svg(&svg, &format!("sweep {f} {} {}", sw.ladder, sw.axis)),
                esc(&sw.ladder),
                esc(&sw.axis)
            );
        }
        s.push_str("</div></section>");
    }
    let _ = writeln!(
        s,
        "<footer><p>rooflab {}; generated from this run's bench.json. Re-render with \
         <code>cargo xtask report bench.json</code>.</p></footer></body></html>",
        esc(&report.rooflab_version)
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/testdata/sample-bench.json");
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    /// The page is well-formed (an XML parser reads it), has a table row per report row, a
    /// bar chart and a roofline per family, a tooltip per roofline point, and links each
    /// family's guide chapter.
    #[test]
    fn page_has_every_row_chart_and_chapter() {
        let report = sample();
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
        let dir = std::env::temp_dir().join(format!("rooflab-html-{}", std::process::id()));
        let path = write(&report, &dir, Some(&docs)).unwrap();
        let html = std::fs::read_to_string(&path).unwrap();
        // Self-contained: nothing to fetch.
        assert!(
            !html.contains(" src=") && !html.contains("href=\"http") && !html.contains("@import")
        );
        let body = html.trim_start_matches("<!DOCTYPE html>\n");
        let doc = roxmltree::Document::parse(body).expect("well-formed page");
        let rows: Vec<_> = doc
            .descendants()
            .filter_map(|n| n.attribute("data-row"))
            .collect();
        assert_eq!(rows.len(), report.rows.len());
        for r in &report.rows {
            assert!(rows.contains(&row_key(r).as_str()), "{}", row_key(r));
        }
        let charts: Vec<_> = doc
            .descendants()
            .filter_map(|n| n.attribute("data-chart"))
            .collect();
        let fams = families(&report);
        for f in &fams {
            assert!(charts.contains(&format!("bars {f}").as_str()), "{charts:?}");
            assert!(charts.contains(&format!("roofline {f}").as_str()));
        }
        assert!(charts.contains(&"roofline overview"));
        let overview = doc
            .descendants()
            .find(|n| n.attribute("data-chart") == Some("roofline overview"))
            .unwrap();
        let points = overview
            .descendants()
            .filter(|n| n.has_tag_name("title"))
            .count();
        let positioned = report
            .rows
            .iter()
            .filter(|r| plot::position(r).is_some())
            .count();
        assert_eq!(points, positioned);
        let links: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("chapter"))
            .filter_map(|n| n.attribute("href"))
            .collect();
        assert_eq!(links.len(), fams.len(), "{links:?}");
        for l in links {
            assert!(dir.join("report").join(l).exists(), "{l}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn changes_list_regressions_first() {
        let mut report = sample();
        let n = report.rows.len();
        assert!(n >= 3);
        for (i, r) in report.rows.iter_mut().enumerate() {
            r.old_median_us = r.median_us;
            r.change_pct = Some(1.0 - i as f64);
        }
        report.rows[0].regressed = true;
        report.rows[0].change_pct = Some(15.0);
        let html = changes(&report).unwrap();
        let first = html.find("data-change=").unwrap();
        assert!(html[first..].starts_with(&format!(
            "data-change=\"{}\"",
            esc(&row_key(&report.rows[0]))
        )));
        assert!(html.contains("class=\"num worse\""));
        assert!(html.contains("class=\"num faster\""));
    }
}
