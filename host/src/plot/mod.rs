//! Pictures of a report: the roofline (`roofline.svg`, and one per family in the HTML
//! report), one bar chart of % of roof per family (`bars-FAMILY.svg`), and a line chart per
//! sweep (one op at a range of one shape parameter). SVG through `plotters`, no system
//! libraries; each chart is drawn into a string (the HTML report inlines them) and written
//! to a file by the `*` wrappers here.
//!
//! Ops with no FLOPs (copies, transposes) have intensity 0, which a log axis cannot show;
//! they are drawn at the axis minimum `AI_MIN`, at the height their achieved bandwidth
//! gives there (`AI_MIN * GB/s`), so their distance below the DRAM roof is still their MBU.

mod bars;
mod roofline;
mod sweep;

use std::path::Path;

use plotters::prelude::*;

pub use bars::family_bars_svg;
pub use roofline::{Scope, roofline_svg};
pub use sweep::{Sweep, sweep_svg, sweeps};

use crate::error::{Error, Result};
use crate::report::Row;
use crate::roofline::Roofs;

/// Write the overview roofline of `rows` to `path`.
pub fn roofline(path: &Path, rows: &[Row], roofs: &Roofs, title: &str) -> Result<()> {
    write_svg(path, &roofline_svg(rows, roofs, title, Scope::Overview)?)
}

/// Write `family`'s bar chart to `path`.
pub fn family_bars(path: &Path, rows: &[Row], family: &str, measured: bool) -> Result<()> {
    write_svg(path, &family_bars_svg(rows, family, measured)?)
}

fn write_svg(path: &Path, svg: &str) -> Result<()> {
    std::fs::write(path, svg).map_err(|e| Error::Other(format!("writing {}: {e}", path.display())))
}

/// A row's % of roof: measured, else predicted (the op's floor over the variant's own
/// modelled floor), as the charts rank and draw it.
fn pct_or_predicted(r: &Row) -> Option<f64> {
    r.pct_of_roof.or_else(|| {
        r.accounting
            .filter(|a| a.variant_floor_us > 0.0)
            .map(|a| 100.0 * a.floor_us / a.variant_floor_us)
    })
}

/// The peer library's own % of roof on a measured row: the row's floor over the peer's time.
fn peer_pct(r: &Row) -> Option<f64> {
    pct_at(r, r.peer_median_us?)
}

/// The compiled peer's (torch.compile's) own % of roof on a measured row.
fn compiled_peer_pct(r: &Row) -> Option<f64> {
    pct_at(r, r.compiled_peer_median_us?)
}

/// The % of roof a time of `t` µs would give on a measured row.
fn pct_at(r: &Row, t: f64) -> Option<f64> {
    let (p, m) = (r.pct_of_roof?, r.median_us?);
    (t > 0.0).then(|| p * m / t)
}

/// The colour of the compiled peer's marks (the eager peer's are black).
const COMPILED_PEER: RGBColor = RGBColor(200, 0, 0);

/// A step's index among its family's variants in `rows` (first appearance order): its
/// colour in every chart of the family.
pub fn variant_index(rows: &[Row], r: &Row) -> usize {
    let mut seen: Vec<&str> = Vec::new();
    for o in rows.iter().filter(|o| o.family == r.family) {
        if o.variant == r.variant {
            return seen.len();
        }
        if !seen.contains(&o.variant.as_str()) {
            seen.push(&o.variant);
        }
    }
    seen.len()
}

/// The smallest intensity on the x axis, FLOP/byte.
pub const AI_MIN: f64 = 1.0 / 64.0;
pub const AI_MAX: f64 = 4096.0;
/// Radius of the variant points (the SVG test finds points by it).
pub const POINT_RADIUS: u32 = 4;

/// Where a row sits on the roofline: (x = intensity, y = GFLOP/s), or `None` if it has
/// neither a measurement nor a prediction.
pub fn position(r: &Row) -> Option<(f64, f64)> {
    let a = r.accounting?;
    // Measured: the achieved rate. Predicted: the rate at the variant's own floor (its
    // modelled traffic at the DRAM roof), so wasteful variants sit below the roof.
    position_at(r, r.median_us.unwrap_or(a.variant_floor_us))
}

/// Where the row's op would sit if it took `t_us` (a peer's time on the same op).
pub fn position_at(r: &Row, t_us: f64) -> Option<(f64, f64)> {
    let a = r.accounting?;
    let x = a.intensity.max(AI_MIN);
    let y = if a.intensity > 0.0 {
        r.flops as f64 / (t_us * 1e3)
    } else {
        AI_MIN * r.min_bytes as f64 / (t_us * 1e3)
    };
    (y > 0.0 && y.is_finite()).then_some((x, y))
}

fn err(e: impl std::fmt::Display) -> Error {
    Error::Other(format!("plotting: {e}"))
}

/// Distinct colours: families in the overview, steps in a family's charts.
pub fn colour(i: usize) -> RGBColor {
    // Twelve: a ladder has up to eleven steps, each with its own colour.
    const C: [RGBColor; 12] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(23, 190, 207),
        RGBColor(188, 189, 34),
        RGBColor(127, 127, 127),
        RGBColor(0, 0, 128),
        RGBColor(230, 171, 2),
    ];
    C[i % C.len()]
}

/// A label's box in pixels, for the overlap test.
#[derive(Clone, Copy, Debug)]
pub struct LabelBox {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
}

impl LabelBox {
    pub fn overlaps(&self, o: &LabelBox) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// Height of an 11-px label's box, and its width estimate (sans-serif averages under 6.3 px
/// a character at 11 px).
const LABEL_HEIGHT: i32 = 13;
fn label_width(text: &str) -> i32 {
    (text.chars().count() as f64 * 6.3).ceil() as i32
}

/// Where a label may go around its point: (side: right > 0 / left < 0, dy of its top).
const LABEL_SPOTS: [(i32, i32); 10] = [
    (1, -7),
    (1, -20),
    (1, 6),
    (-1, -7),
    (-1, -20),
    (-1, 6),
    (1, -33),
    (1, 19),
    (-1, -33),
    (-1, 19),
];

/// A point's tooltip: its name and figures.
fn tooltip(r: &Row, name: &str) -> String {
    let mut t = format!("{name} {}", r.shape);
    if let Some(m) = r.median_us {
        t += &format!(": {m:.1} µs");
    }
    if r.tflops.is_some_and(|x| x > 0.0) {
        t += &format!(", {:.2} TFLOP/s", r.tflops.unwrap_or(0.0));
    } else if let Some(g) = r.gbps {
        t += &format!(", {g:.0} GB/s");
    }
    if let Some(p) = r.pct_of_roof {
        t += &format!(", {p:.1}% of roof");
    }
    t
}

/// plotters draws no SVG `<title>`: give the k-th point circle (radius [`POINT_RADIUS`],
/// drawn in the order of `titles`) its tooltip by rewriting the file.
fn add_point_titles(svg: &str, titles: &[String]) -> Result<String> {
    let marker = format!("r=\"{POINT_RADIUS}\"");
    let mut out = String::with_capacity(svg.len() + titles.len() * 80);
    let mut rest = svg;
    let mut k = 0;
    while let Some(i) = rest.find("<circle") {
        let end = i + rest[i..]
            .find("/>")
            .ok_or_else(|| err("unclosed <circle"))?;
        let element = &rest[i..end];
        out.push_str(&rest[..i]);
        match titles.get(k).filter(|_| element.contains(&marker)) {
            Some(t) => {
                out.push_str(element);
                out.push_str("><title>");
                out.push_str(&xml_escape(t));
                out.push_str("</title></circle>");
                k += 1;
            }
            None => {
                out.push_str(element);
                out.push_str("/>");
            }
        }
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    if k != titles.len() {
        return Err(err(format!(
            "{} point circles for {} tooltips",
            k,
            titles.len()
        )));
    }
    Ok(out)
}

/// Give each `<text>` whose text is one of `texts` the class `class` (once per entry), so a
/// reader of the SVG (the browser test, a stylesheet) can tell point labels or bar labels
/// from axis text.
fn mark_texts(svg: &str, texts: &[String], class: &str) -> String {
    let mut wanted: Vec<String> = texts.iter().map(|t| xml_escape(t)).collect();
    let mut out = String::with_capacity(svg.len() + texts.len() * 24);
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let (Some(open_end), Some(close)) = (rest.find('>'), rest.find("</text>")) else {
            break;
        };
        let content = rest[open_end + 1..close].trim();
        match wanted.iter().position(|w| w == content) {
            Some(k) if !rest[..open_end].contains("class=") => {
                wanted.swap_remove(k);
                out.push_str(&format!("<text class=\"{class}\""));
                rest = &rest["<text".len()..];
            }
            _ => {
                out.push_str("<text");
                rest = &rest["<text".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// An axis tick as people write it: 0.1, 1, 10, 1000, 1/64 (no trailing zeros).
fn tick(v: f64) -> String {
    if v > 0.0 && v < 0.1 {
        let inv = 1.0 / v;
        if (inv - inv.round()).abs() < 1e-9 {
            return format!("1/{}", inv.round());
        }
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A rate tick from GFLOP/s: "100 GFLOP/s", "10 TFLOP/s".
fn rate_tick(gflops: f64) -> String {
    if gflops >= 1000.0 {
        format!("{} TFLOP/s", tick(gflops / 1000.0))
    } else {
        format!("{} GFLOP/s", tick(gflops))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::relate;

    fn row(name: &str, flops: u64, bytes: u64, median: f64) -> Row {
        let mut r: Row = serde_json::from_value(serde_json::json!({
            "name": format!("memory/{name}"), "family": "memory", "variant": name, "ladder": "copy",
            "shape": "n", "note": "", "flops": flops, "min_bytes": bytes, "modelled_bytes": bytes,
            "median_us": median, "p10_us": null, "p90_us": null, "spread_pct": null,
            "gbps": bytes as f64 / (median * 1e3), "tflops": flops as f64 / (median * 1e6),
            "accounting": null, "pct_of_roof": null, "registers": null, "spill_bytes": null,
            "old_median_us": null, "change_pct": null, "regressed": false,
            "speedup_vs_v01": null, "predicted_speedup_vs_v01": null, "correct": true, "error": null,
            "peer": null, "peer_median_us": null, "pct_of_peer": null
        }))
        .unwrap();
        r.median_us = Some(median);
        r
    }

    #[test]
    fn svg_has_every_point_and_label() {
        let roofs = Roofs {
            dram_gbps: 4000.0,
            l2_gbps: Some(12000.0),
            smem_gbps: Some(30000.0),
            fp32_gflops: 60000.0,
            compute: vec![],
            instruction_ceilings: vec![],
            launch_us: Some(3.0),
            origin: "test".into(),
        };
        let mut rows = vec![
            row("v01_strided_copy", 0, 8_000_000, 40.0),
            row("v02_coalesced_copy", 0, 8_000_000, 3.0),
            row("v03_saxpy", 2_000_000, 12_000_000, 3.5),
            row("v04_gemm", 2_000_000_000_000, 100_000_000, 40_000.0),
        ];
        relate(&mut rows, Some(&roofs));
        let dir = std::env::temp_dir().join(format!("rooflab-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("roofline.svg");
        roofline(&path, &rows, &roofs, "test").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = roxmltree::Document::parse(&text).expect("valid SVG");
        let r = POINT_RADIUS.to_string();
        let points: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle") && n.attribute("r") == Some(r.as_str()))
            .collect();
        assert_eq!(points.len(), rows.len(), "one point per row");
        // Every point has its tooltip, naming the row.
        for (p, row) in points.iter().zip(&rows) {
            let title = p
                .children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|t| t.text())
                .unwrap_or_default();
            assert!(rows.iter().any(|r| title.contains(&r.name)), "{title:?}");
            let _ = row;
        }
        let texts: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text().map(|t| t.trim().to_string()))
            .collect();
        // Labels: the family's best step (the highest % of roof) and the v01 it started
        // from; not every row.
        let labelled = rows
            .iter()
            .filter(|r| texts.iter().any(|t| t.contains(&r.name)))
            .count();
        assert!(labelled >= 2 && labelled < rows.len(), "{labelled} labels");
        assert!(texts.iter().any(|t| t.contains("memory/v01_strided_copy")));
        // No two point labels overlap (boxes from the SVG's own text positions).
        let label_boxes: Vec<LabelBox> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter(|n| {
                n.text()
                    .is_some_and(|t| rows.iter().any(|r| t.contains(&r.name)))
            })
            .map(|n| {
                let num = |a: &str| {
                    n.attribute(a)
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(0.0) as i32
                };
                let t = n.text().unwrap().trim();
                LabelBox {
                    x: num("x"),
                    y: num("y"),
                    w: label_width(t),
                    h: LABEL_HEIGHT,
                }
            })
            .collect();
        for (i, a) in label_boxes.iter().enumerate() {
            for b in &label_boxes[i + 1..] {
                assert!(!a.overlaps(b), "{a:?} overlaps {b:?}");
            }
        }
        // Ticks as people write them.
        assert!(
            texts.iter().any(|t| t == "1/64" || t == "0.1" || t == "1"),
            "{texts:?}"
        );
        assert!(texts.iter().any(|t| t == "1 TFLOP/s"), "{texts:?}");
        assert!(!texts.iter().any(|t| t.contains("100000.0")));
        assert!(texts.iter().any(|t| t.contains("DRAM 4000 GB/s")));
        // No L2 or shared roof against DRAM intensity (they bound nothing there).
        assert!(
            !texts
                .iter()
                .any(|t| t.contains("L2 12000") || t.contains("shared 30000"))
        );
        // Zero-FLOP rows sit at AI_MIN at GB/s/64: v02 (8 MB in 3 µs = 2667 GB/s) at 41.7.
        let (x, y) = position(&rows[1]).unwrap();
        assert_eq!(x, AI_MIN);
        assert!((y - 8_000_000.0 / 3e3 / 64.0).abs() < 1e-9);

        let bars = dir.join("bars.svg");
        family_bars(&bars, &rows, "memory", true).unwrap();
        let text = std::fs::read_to_string(&bars).unwrap();
        let doc = roxmltree::Document::parse(&text).expect("valid SVG");
        let labels = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .filter(|t| t.contains("v0"))
            .count();
        assert_eq!(labels, rows.len());
        // Grouped: one heading per ladder and shape.
        assert!(
            doc.descendants()
                .filter_map(|n| n.text())
                .any(|t| t.trim() == "copy · n"),
            "group heading"
        );
        // With a peer: a black tick and the peer's own % of roof in the label.
        let mut with_peer = rows.clone();
        with_peer[1].peer = Some("cuBLAS".into());
        with_peer[1].peer_median_us = with_peer[1].median_us.map(|m| m * 2.0);
        family_bars(&bars, &with_peer, "memory", true).unwrap();
        let text = std::fs::read_to_string(&bars).unwrap();
        let want = format!("(cuBLAS: {:.1})", with_peer[1].pct_of_roof.unwrap() / 2.0);
        assert!(text.contains(&want), "{want}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
