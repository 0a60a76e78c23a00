//! The roofline: every row at its arithmetic intensity and achieved rate, under the DRAM
//! slope and the compute roofs of the run. One chart of all families (the overview) and one
//! per family, where each step has the colour it has in the family's bar chart.

use plotters::prelude::*;

use super::{
    AI_MAX, AI_MIN, COMPILED_PEER, LABEL_HEIGHT, LABEL_SPOTS, LabelBox, POINT_RADIUS,
    add_point_titles, colour, err, label_width, mark_texts, pct_or_predicted, position,
    position_at, rate_tick, tick, tooltip, variant_index,
};
use crate::cost::Precision;
use crate::error::Result;
use crate::report::Row;
use crate::roofline::{ComputeRoof, Roofs};

/// Which rows a roofline shows and how it tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every family, a colour per family, labels on each family's best step and its v01.
    Overview,
    /// One family, a colour per step (as in its bar chart), labels on each ladder's best
    /// step and its v01.
    Family(&'a str),
}

/// The roofline of `rows` (those `scope` selects) against `roofs`, as an SVG document.
pub fn roofline_svg(rows: &[Row], roofs: &Roofs, title: &str, scope: Scope<'_>) -> Result<String> {
    let rows: Vec<Row> = match scope {
        Scope::Overview => rows.to_vec(),
        Scope::Family(f) => rows.iter().filter(|r| r.family == f).cloned().collect(),
    };
    let rows = rows.as_slice();
    let mut svg = String::new();
    let (tooltips, labels) = draw(&mut svg, rows, roofs, title, scope)?;
    Ok(mark_texts(
        &add_point_titles(&svg, &tooltips)?,
        &labels,
        "point-label",
    ))
}

/// Draw into `svg`; returns the points' tooltips in drawing order and the labels drawn.
fn draw(
    svg: &mut String,
    rows: &[Row],
    roofs: &Roofs,
    title: &str,
    scope: Scope<'_>,
) -> Result<(Vec<String>, Vec<String>)> {
    // The overview is read on its own; a family's chart sits in the page at about 1000 px.
    let size = match scope {
        Scope::Overview => (1400, 900),
        Scope::Family(_) => (1000, 620),
    };
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
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
    // The overview spans every intensity; a family's chart zooms to its own points (and the
    // DRAM roof over them), and draws only the compute roofs inside that range.
    let ((x_lo, x_hi), (y_lo, y_hi)) = match scope {
        Scope::Overview => ((AI_MIN, AI_MAX), (AI_MIN * 100.0, peak * 3.0)),
        Scope::Family(_) => {
            let pts: Vec<(f64, f64)> = rows.iter().filter_map(position).collect();
            let (x0, x1, y0, y1) = pts.iter().fold(
                (f64::INFINITY, 0.0f64, f64::INFINITY, 0.0f64),
                |(a, b, c, d), &(x, y)| (a.min(x), b.max(x), c.min(y), d.max(y)),
            );
            if pts.is_empty() {
                ((AI_MIN, AI_MAX), (AI_MIN * 100.0, peak * 3.0))
            } else {
                let x_lo = (x0 / 4.0).max(AI_MIN);
                let x_hi = (x1 * 8.0).min(AI_MAX).max(x_lo * 16.0);
                let roof_hi = (x_hi * roofs.dram_gbps).min(peak);
                ((x_lo, x_hi), (y0 / 4.0, y1.max(roof_hi) * 2.0))
            }
        }
    };
    let visible = |gflops: f64| gflops > y_lo && gflops < y_hi;
    let compute: Vec<ComputeRoof> = compute.into_iter().filter(|r| visible(r.gflops)).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), (y_lo..y_hi).log_scale())
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
        let ridge = peak / bw;
        if ridge >= x_hi {
            vec![(x_lo, x_lo * bw), (x_hi, x_hi * bw)]
        } else if ridge <= x_lo {
            vec![(x_lo, peak), (x_hi, peak)]
        } else {
            vec![(x_lo, x_lo * bw), (ridge, ridge * bw), (x_hi, peak)]
        }
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
        let pts = vec![(x_lo, r.gflops), (x_hi, r.gflops)];
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
    for r in roofs
        .instruction_ceilings
        .iter()
        .filter(|r| visible(r.gflops))
    {
        let c = RGBColor(120, 0, 160);
        let pts = vec![(x_lo, r.gflops), (x_hi, r.gflops)];
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
    // The overview tells families apart; a family's chart tells its steps apart, in the
    // colours of its bar chart.
    let colour_of = |r: &Row| match scope {
        Scope::Overview => colour(families.iter().position(|f| *f == r.family).unwrap_or(0)),
        Scope::Family(_) => colour(variant_index(rows, r)),
    };
    let mut done: Vec<(&str, &str, &str)> = Vec::new();
    for r in rows {
        let key = (r.family.as_str(), r.ladder.as_str(), r.shape.as_str());
        if done.contains(&key) {
            continue;
        }
        done.push(key);
        let c = match scope {
            Scope::Overview => colour_of(r),
            Scope::Family(_) => RGBColor(150, 150, 150),
        };
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
        let c = match scope {
            Scope::Overview => colour(families.iter().position(|f| *f == family).unwrap_or(0)),
            Scope::Family(_) => RGBColor(90, 90, 90),
        };
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
        let name = match scope {
            Scope::Overview => &r.name,
            Scope::Family(_) => &r.variant,
        };
        if r.note.is_empty() {
            name.clone()
        } else {
            format!("{name} ({})", r.note)
        }
    };
    for (r, p) in &points {
        let c = colour_of(r);
        tooltips.push(tooltip(r, &name_of(r)));
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(*p) + Circle::new((0, 0), POINT_RADIUS, c.filled()),
            ))
            .map_err(err)?;
    }
    // A family's chart also marks where its peers sit on the same op and shape (black ×: the
    // peer library, red triangle: its compiled form), at the median of the rows' peer times.
    if let Scope::Family(family) = scope {
        peer_marks(&mut chart, rows, crate::report::peer_columns(family))?;
    }
    // Labels only where they teach: each family's (or in a family's chart, each ladder's)
    // best step and the v01 it started from.
    // Each goes to the first of a few spots around its point where its box overlaps no label
    // placed before and stays inside the plot.
    let area = chart.plotting_area().get_pixel_range();
    let mut boxes: Vec<LabelBox> = Vec::new();
    let mut labels = Vec::new();
    for r in labelled_rows(rows, scope) {
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
        labels.push(name.clone());
        let c = colour_of(r);
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
    Ok((tooltips, labels))
}

/// The peers' points of a family's rows, one per (ladder, shape) and peer, with a legend entry
/// per kind of peer present.
fn peer_marks<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>,
    rows: &[Row],
    peers: crate::report::PeerColumns,
) -> Result<()> {
    // The median of a group's times at each (ladder, shape) where the rows have them.
    let points = |time: fn(&Row) -> Option<f64>| {
        let mut groups: Vec<(&str, &str)> = Vec::new();
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for r in rows
            .iter()
            .filter(|r| r.median_us.is_some() && time(r).is_some())
        {
            let key = (r.ladder.as_str(), r.shape.as_str());
            if groups.contains(&key) {
                continue;
            }
            groups.push(key);
            let mut ts: Vec<f64> = rows
                .iter()
                .filter(|o| (o.ladder.as_str(), o.shape.as_str()) == key)
                .filter_map(time)
                .collect();
            ts.sort_by(f64::total_cmp);
            pts.extend(position_at(r, ts[ts.len() / 2]));
        }
        pts
    };
    let eager = points(|r| r.peer_median_us);
    if !eager.is_empty() {
        chart
            .draw_series(
                eager
                    .into_iter()
                    .map(|p| Cross::new(p, 5, BLACK.stroke_width(2))),
            )
            .map_err(err)?
            .label(format!("× {}, same op and shape", peers.first_legend))
            .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
    }
    let compiled = points(|r| r.compiled_peer_median_us);
    if !compiled.is_empty() {
        chart
            .draw_series(
                compiled
                    .into_iter()
                    .map(|p| TriangleMarker::new(p, 6, COMPILED_PEER.stroke_width(2))),
            )
            .map_err(err)?
            .label(format!("▲ {}", peers.second_legend))
            .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, COMPILED_PEER.stroke_width(2)));
    }
    Ok(())
}

/// The rows a roofline labels: per family (overview) or per ladder (a family's chart), its
/// best measured row (highest % of roof, or the fastest predicted) and the v01 of the same
/// ladder and shape.
fn labelled_rows<'a>(rows: &'a [Row], scope: Scope<'_>) -> Vec<&'a Row> {
    let mut out: Vec<&Row> = Vec::new();
    let group = |r: &'a Row| match scope {
        Scope::Overview => r.family.as_str(),
        Scope::Family(_) => r.ladder.as_str(),
    };
    let mut groups: Vec<&str> = Vec::new();
    for r in rows {
        if !groups.contains(&group(r)) {
            groups.push(group(r));
        }
    }
    for g in groups {
        let score = |r: &Row| pct_or_predicted(r).unwrap_or(0.0);
        let Some(best) = rows
            .iter()
            .filter(|r| group(r) == g && position(r).is_some())
            .max_by(|a, b| score(a).total_cmp(&score(b)))
        else {
            continue;
        };
        out.push(best);
        if let Some(v01) = rows.iter().find(|r| {
            r.family == best.family
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
