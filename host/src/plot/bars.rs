//! A family's bar chart: % of roof per row, grouped by ladder and shape, the peer marked.

use plotters::prelude::*;

use super::{
    COMPILED_PEER, colour, compiled_peer_pct, err, mark_texts, peer_pct, tick, variant_index,
};
use crate::error::Result;
use crate::report::Row;

/// A horizontal bar per row of `family`: % of roof (measured) or floor µs (predicted),
/// grouped by ladder and shape (a heading line per group), one colour per variant in every
/// group, and where the row has an in-process peer, a black tick at the peer's own % of
/// roof (its time against the same floor).
pub fn family_bars_svg(rows: &[Row], family: &str, measured: bool) -> Result<String> {
    let mut svg = String::new();
    let labels = draw(&mut svg, rows, family, measured)?;
    Ok(mark_texts(&svg, &labels, "bar-label"))
}

/// Draw into `svg`; returns the bars' labels.
fn draw(svg: &mut String, rows: &[Row], family: &str, measured: bool) -> Result<Vec<String>> {
    let mut labels = Vec::new();
    let mine: Vec<&Row> = rows.iter().filter(|r| r.family == family).collect();
    // Groups in order of first appearance; a variant's colour is its index among the
    // family's variants, so it is the same in every group.
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for r in &mine {
        if !groups.contains(&(r.ladder.as_str(), r.shape.as_str())) {
            groups.push((&r.ladder, &r.shape));
        }
    }
    let lines = (mine.len() + groups.len()).max(1);
    let root = SVGBackend::with_string(svg, (1000, 120 + 24 * lines as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let value = |r: &Row| {
        if measured {
            r.pct_of_roof
        } else {
            r.accounting.map(|a| a.variant_floor_us)
        }
    };
    // The peer's % of roof: the row's floor over the peer's time.
    let peer = |r: &Row| peer_pct(r).filter(|_| measured);
    let compiled = |r: &Row| compiled_peer_pct(r).filter(|_| measured);
    let any_compiled = mine.iter().any(|r| compiled(r).is_some());
    let peers = crate::report::peer_columns(family);
    let xmax = if measured {
        mine.iter()
            .filter_map(|r| peer(r))
            .chain(mine.iter().filter_map(|r| compiled(r)))
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
        .x_desc(if measured && any_compiled {
            format!(
                "% of roof (MBU / MFU); black tick: the {} on the same row, red: {}",
                peers.first_legend, peers.second_legend
            )
        } else if measured {
            format!(
                "% of roof (MBU / MFU); black tick: the {} on the same row",
                peers.first_legend
            )
        } else {
            what.to_string()
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
            let c = colour(variant_index(rows, r));
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
            if let Some(cv) = compiled(r) {
                let cv = cv.min(xmax);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(cv, y + 0.05), (cv, y + 0.95)],
                        COMPILED_PEER.stroke_width(3),
                    )))
                    .map_err(err)?;
            }
            let mut label = format!("{} {}  {:.1}", r.variant, r.note, v);
            let mut peers = Vec::new();
            if let (Some(pv), Some(name)) = (peer(r), &r.peer) {
                peers.push(format!("{name}: {pv:.1}"));
            }
            if let (Some(cv), Some(name)) = (compiled(r), &r.compiled_peer) {
                peers.push(format!("{name}: {cv:.1}"));
            }
            if !peers.is_empty() {
                label += &format!("   ({})", peers.join("; "));
            }
            labels.push(label.clone());
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
    Ok(labels)
}
