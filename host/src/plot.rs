//! Pictures of a report: the roofline (`roofline.svg`) and one bar chart of % of roof per
//! family (`bars-FAMILY.svg`). SVG through `plotters`, no system libraries.
//!
//! Ops with no FLOPs (copies, transposes) have intensity 0, which a log axis cannot show;
//! they are drawn at the axis minimum `AI_MIN`, at the height their achieved bandwidth
//! gives there (`AI_MIN * GB/s`), so their distance below the DRAM roof is still their MBU.

use std::path::Path;

use plotters::prelude::*;

use crate::cost::Precision;
use crate::error::{Error, Result};
use crate::report::Row;
use crate::roofline::{ComputeRoof, Roofs};

/// The smallest intensity on the x axis, FLOP/byte.
pub const AI_MIN: f64 = 1.0 / 64.0;
const AI_MAX: f64 = 4096.0;
/// Radius of the variant points (the SVG test finds points by it).
pub const POINT_RADIUS: u32 = 4;

/// Where a row sits on the roofline: (x = intensity, y = GFLOP/s), or `None` if it has
/// neither a measurement nor a prediction.
pub fn position(r: &Row) -> Option<(f64, f64)> {
    let a = r.accounting?;
    let x = a.intensity.max(AI_MIN);
    // Measured: the achieved rate. Predicted: the rate at the variant's own floor (its
    // modelled traffic at the DRAM roof), so wasteful variants sit below the roof.
    let t_us = r.median_us.unwrap_or(a.variant_floor_us);
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

/// Distinct colours for families.
fn colour(i: usize) -> RGBColor {
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

/// Draw the roofline of `rows` against `roofs` into `path`.
pub fn roofline(path: &Path, rows: &[Row], roofs: &Roofs, title: &str) -> Result<()> {
    let root = SVGBackend::new(path, (1400, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    // Every compute roof known for this run: FP32 always; the tensor-core ones measured in
    // the run (solid) or, where not measured, the datasheet's (dashed, labelled so).
    let compute: Vec<ComputeRoof> = Precision::ALL
        .iter()
        .filter_map(|&p| roofs.compute_roof(p))
        // FP16's datasheet peak is BF16's on every GPU here: one dashed line for both.
        .filter(|r| r.precision != Precision::Fp16Tensor || r.measured)
        .collect();
    let peak = compute
        .iter()
        .map(|r| r.gflops)
        .fold(roofs.fp32_gflops, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(
            (AI_MIN..AI_MAX).log_scale(),
            (AI_MIN * 100.0..peak * 3.0).log_scale(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (FLOP / byte of minimum DRAM traffic)")
        .y_desc("FLOP/s (0-FLOP ops: at AI = 1/64, height = GB/s / 64)")
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| rate_tick(*v))
        .draw()
        .map_err(err)?;

    // Roofs: bandwidth slopes capped by the FP32 peak, and the peak itself.
    let slope = |bw: f64| {
        let ridge = (peak / bw).min(AI_MAX);
        vec![(AI_MIN, AI_MIN * bw), (ridge, ridge * bw), (AI_MAX, peak)]
    };
    // DRAM only: the x axis is intensity per byte of *DRAM* traffic, against which the L2
    // and shared-memory bandwidths bound nothing (a point's L2 or shared bytes are not its
    // DRAM bytes). Those ceilings are in the ceilings table.
    let roof_lines = vec![(
        format!("DRAM {:.0} GB/s", roofs.dram_gbps),
        slope(roofs.dram_gbps),
        BLACK,
    )];
    for (label, pts, c) in roof_lines {
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    for (i, r) in compute.iter().enumerate() {
        let c = [
            RGBColor(200, 0, 0),
            RGBColor(150, 60, 0),
            RGBColor(120, 0, 160),
            RGBColor(0, 110, 160),
            RGBColor(0, 130, 60),
        ][i % 5];
        let pts = vec![(AI_MIN, r.gflops), (AI_MAX, r.gflops)];
        if r.measured {
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err)?
                .label(format!("{} {:.1} TFLOP/s", r.precision, r.gflops / 1e3))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        } else {
            chart
                .draw_series(DashedLineSeries::new(pts, 8, 6, c.stroke_width(2)))
                .map_err(err)?
                .label(format!(
                    "{} {:.1} TFLOP/s (datasheet, not measured)",
                    r.precision,
                    r.gflops / 1e3
                ))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 8, y)], c.stroke_width(2))
                });
        }
    }

    // Measured ceilings of one instruction path (BF16 through mma.sync): dotted, not roofs.
    for r in &roofs.instruction_ceilings {
        let c = RGBColor(120, 0, 160);
        let pts = vec![(AI_MIN, r.gflops), (AI_MAX, r.gflops)];
        chart
            .draw_series(DashedLineSeries::new(pts, 2, 4, c.stroke_width(1)))
            .map_err(err)?
            .label(format!(
                "{} via {} {:.1} TFLOP/s (measured ceiling, not the roof)",
                r.precision,
                r.how.split(',').next().unwrap_or(""),
                r.gflops / 1e3
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 4, y)], c.stroke_width(1)));
    }

    // Each ladder (family, ladder, shape) joined in order, then its points, labelled.
    let families: Vec<&str> =
        rows.iter()
            .map(|r| r.family.as_str())
            .fold(Vec::new(), |mut v, f| {
                if !v.contains(&f) {
                    v.push(f);
                }
                v
            });
    let mut done: Vec<(&str, &str, &str)> = Vec::new();
    for r in rows {
        let key = (r.family.as_str(), r.ladder.as_str(), r.shape.as_str());
        if done.contains(&key) {
            continue;
        }
        done.push(key);
        let c = colour(families.iter().position(|f| *f == r.family).unwrap_or(0));
        let ladder: Vec<(f64, f64)> = rows
            .iter()
            .filter(|o| (o.family.as_str(), o.ladder.as_str(), o.shape.as_str()) == key)
            .filter_map(position)
            .collect();
        chart
            .draw_series(LineSeries::new(ladder, c.mix(0.5).stroke_width(1)))
            .map_err(err)?;
    }
    // A sweep (a ladder named `sweep*`: one op at growing sizes) is one line across shapes,
    // through the fastest row at each shape in order of intensity: where it crosses the
    // ridge, the op turns from memory-bound to compute-bound.
    let mut sweeps: Vec<(&str, &str)> = Vec::new();
    for r in rows.iter().filter(|r| r.ladder.starts_with("sweep")) {
        if !sweeps.contains(&(r.family.as_str(), r.ladder.as_str())) {
            sweeps.push((r.family.as_str(), r.ladder.as_str()));
        }
    }
    for (family, ladder) in sweeps {
        let mut best: Vec<(f64, f64)> = Vec::new();
        let mut shapes: Vec<&str> = Vec::new();
        for r in rows
            .iter()
            .filter(|r| r.family == family && r.ladder == ladder)
        {
            if !shapes.contains(&r.shape.as_str()) {
                shapes.push(&r.shape);
            }
        }
        for s in shapes {
            let top = rows
                .iter()
                .filter(|r| r.family == family && r.ladder == ladder && r.shape == s)
                .filter_map(position)
                .max_by(|a, b| a.1.total_cmp(&b.1));
            best.extend(top);
        }
        best.sort_by(|a, b| a.0.total_cmp(&b.0));
        let c = colour(families.iter().position(|f| *f == family).unwrap_or(0));
        chart
            .draw_series(LineSeries::new(best, c.stroke_width(2)))
            .map_err(err)?
            .label(format!("{family} {ladder}: fastest step at each size"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    // Every point, with its name and figures as a tooltip (an SVG <title>, added below).
    let mut tooltips = Vec::new();
    let mut points: Vec<(&Row, (f64, f64))> = rows
        .iter()
        .filter_map(|r| position(r).map(|p| (r, p)))
        .collect();
    points.sort_by(|a, b| a.1.0.total_cmp(&b.1.0).then(b.1.1.total_cmp(&a.1.1)));
    let name_of = |r: &Row| {
        if r.note.is_empty() {
            r.name.clone()
        } else {
            format!("{} ({})", r.name, r.note)
        }
    };
    for (r, p) in &points {
        let c = colour(families.iter().position(|f| *f == r.family).unwrap_or(0));
        tooltips.push(tooltip(r, &name_of(r)));
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(*p) + Circle::new((0, 0), POINT_RADIUS, c.filled()),
            ))
            .map_err(err)?;
    }
    // Labels only where they teach: each family's best step and the v01 it started from.
    // Each goes to the first of a few spots around its point where its box overlaps no label
    // placed before and stays inside the plot.
    let area = chart.plotting_area().get_pixel_range();
    let mut boxes: Vec<LabelBox> = Vec::new();
    for r in labelled_rows(rows) {
        let Some(p) = position(r) else { continue };
        let (px, py) = chart.as_coord_spec().translate(&p);
        let name = name_of(r);
        let (w, h) = (label_width(&name), LABEL_HEIGHT);
        let spot = LABEL_SPOTS
            .iter()
            .map(|&(sx, dy)| {
                let dx = if sx > 0 { 7 } else { -7 - w };
                (
                    dx,
                    dy,
                    LabelBox {
                        x: px + dx,
                        y: py + dy,
                        w,
                        h,
                    },
                )
            })
            .find(|(_, _, b)| {
                b.x >= area.0.start
                    && b.x + b.w <= area.0.end
                    && b.y >= area.1.start
                    && b.y + b.h <= area.1.end
                    && !boxes.iter().any(|o| o.overlaps(b))
            });
        let Some((dx, dy, b)) = spot else { continue };
        boxes.push(b);
        let c = colour(families.iter().position(|f| *f == r.family).unwrap_or(0));
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(p)
                    + Text::new(name, (dx, dy), ("sans-serif", 11).into_font().color(&c)),
            ))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    drop(chart);
    drop(root);
    add_point_titles(path, &tooltips)
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

/// The rows the roofline labels: per family, its best measured row (highest % of roof, or
/// the fastest predicted) and the v01 of the same ladder and shape.
fn labelled_rows(rows: &[Row]) -> Vec<&Row> {
    let mut out: Vec<&Row> = Vec::new();
    let mut families: Vec<&str> = Vec::new();
    for r in rows {
        if !families.contains(&r.family.as_str()) {
            families.push(&r.family);
        }
    }
    for f in families {
        let score = |r: &Row| {
            r.pct_of_roof
                .or_else(|| {
                    r.accounting
                        .map(|a| 100.0 * a.floor_us / a.variant_floor_us)
                })
                .unwrap_or(0.0)
        };
        let Some(best) = rows
            .iter()
            .filter(|r| r.family == f && position(r).is_some())
            .max_by(|a, b| score(a).total_cmp(&score(b)))
        else {
            continue;
        };
        out.push(best);
        if let Some(v01) = rows.iter().find(|r| {
            r.family == f
                && r.ladder == best.ladder
                && r.shape == best.shape
                && r.variant.starts_with("v01")
                && position(r).is_some()
        }) && !std::ptr::eq(v01, best)
        {
            out.push(v01);
        }
    }
    out
}

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
fn add_point_titles(path: &Path, titles: &[String]) -> Result<()> {
    let svg = std::fs::read_to_string(path).map_err(err)?;
    let marker = format!("r=\"{POINT_RADIUS}\"");
    let mut out = String::with_capacity(svg.len() + titles.len() * 80);
    let mut rest = svg.as_str();
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
    std::fs::write(path, out).map_err(err)
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

/// A horizontal bar per row of `family`: % of roof (measured) or floor µs (predicted),
/// grouped by ladder and shape (a heading line per group), one colour per variant in every
/// group, and where the row has an in-process peer, a black tick at the peer's own % of
/// roof (its time against the same floor).
pub fn family_bars(path: &Path, rows: &[Row], family: &str, measured: bool) -> Result<()> {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.family == family).collect();
    // Groups in order of first appearance; a variant's colour is its index among the
    // family's variants, so it is the same in every group.
    let mut groups: Vec<(&str, &str)> = Vec::new();
    let mut variants: Vec<&str> = Vec::new();
    for r in &mine {
        if !groups.contains(&(r.ladder.as_str(), r.shape.as_str())) {
            groups.push((&r.ladder, &r.shape));
        }
        if !variants.contains(&r.variant.as_str()) {
            variants.push(&r.variant);
        }
    }
    let lines = (mine.len() + groups.len()).max(1);
    let root = SVGBackend::new(path, (1000, 120 + 24 * lines as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let value = |r: &Row| {
        if measured {
            r.pct_of_roof
        } else {
            r.accounting.map(|a| a.variant_floor_us)
        }
    };
    // The peer's % of roof: the row's floor over the peer's time.
    let peer = |r: &Row| -> Option<f64> {
        let (p, m, t) = (r.pct_of_roof?, r.median_us?, r.peer_median_us?);
        (measured && t > 0.0).then(|| p * m / t)
    };
    let xmax = if measured {
        mine.iter()
            .filter_map(|r| peer(r))
            .fold(110.0, f64::max)
            .min(400.0)
    } else {
        mine.iter().filter_map(|r| value(r)).fold(1.0, f64::max) * 1.1
    };
    let what = if measured {
        "% of roof (MBU / MFU)"
    } else {
        "predicted floor time, µs"
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{family}: {what}"), ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(35)
        .y_label_area_size(10)
        .build_cartesian_2d(0.0..xmax, 0.0..lines as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc(if measured {
            "% of roof (MBU / MFU); black tick: the peer library on the same row"
        } else {
            what
        })
        .x_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
    let mut line = 0usize;
    let y_of = |line: &mut usize| {
        let y = (lines - 1 - *line) as f64;
        *line += 1;
        y
    };
    for &(ladder, shape) in &groups {
        let y = y_of(&mut line);
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{ladder} · {shape}"),
                (xmax * 0.005, y + 0.75),
                ("sans-serif", 13).into_font().style(FontStyle::Bold),
            )))
            .map_err(err)?;
        for r in mine
            .iter()
            .filter(|r| r.ladder == ladder && r.shape == shape)
        {
            let y = y_of(&mut line);
            let v = value(r).unwrap_or(0.0);
            let c = colour(variants.iter().position(|v| *v == r.variant).unwrap_or(0));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y + 0.15), (v.min(xmax), y + 0.85)],
                    c.mix(0.6).filled(),
                )))
                .map_err(err)?;
            if let Some(pv) = peer(r) {
                let pv = pv.min(xmax);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(pv, y + 0.05), (pv, y + 0.95)],
                        BLACK.stroke_width(3),
                    )))
                    .map_err(err)?;
            }
            let mut label = format!("{} {}  {:.1}", r.variant, r.note, v);
            if let (Some(pv), Some(name)) = (peer(r), &r.peer) {
                label += &format!("   ({name}: {pv:.1})");
            }
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (xmax * 0.01, y + 0.65),
                    ("sans-serif", 12).into_font(),
                )))
                .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
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
