//! Sweeps: one op measured at a range of one shape parameter (the BF16 GEMM's M, the SGEMM
//! cube size, the strided copy's stride), found in the rows themselves and drawn as a line
//! per step with the peer library as a dashed line.
//!
//! A step's rows form a sweep when their shapes (or, where the shapes are all the same,
//! their notes) are one text with one number changing: `1×8192×8192`, `8×8192×8192`, ...
//! (`8192^3` counts as `8192×8192×8192`), or `stride 1`, `stride 2`, ... Several numbers may
//! change together if they are equal in each row (`1024^3`, `2048^3`: the cube's side), or
//! if their product is the same in each row (`524288x128`, `131072x512`, ...: a row length
//! swept at a fixed element count), which sweeps the last of them over the axis
//! `(67108864/x)×x`.

use plotters::prelude::*;

use super::{
    COMPILED_PEER, POINT_RADIUS, add_point_titles, colour, compiled_peer_pct, err,
    pct_or_predicted, peer_pct, tick, tooltip, variant_index,
};
use crate::error::Result;
use crate::report::Row;

/// Fewest distinct values that make a sweep.
const MIN_POINTS: usize = 3;

/// One sweep of a family: its ladder, the swept text and a line per step.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub family: String,
    pub ladder: String,
    /// The swept text with the changing number as `x`, e.g. `x×8192×8192`, `stride x`.
    pub axis: String,
    /// Per step (variant), its points: (x, index of the row in the report's rows).
    pub lines: Vec<(String, Vec<(f64, usize)>)>,
}

/// The numbers in `text` (runs of digits, with a decimal point inside) and its skeleton:
/// the text with each number replaced by `#`.
fn numbers(text: &str) -> (Vec<f64>, String) {
    let mut nums = Vec::new();
    let mut skeleton = String::new();
    let mut cur = String::new();
    let flush = |cur: &mut String, nums: &mut Vec<f64>, skeleton: &mut String| {
        if !cur.is_empty() {
            nums.push(cur.parse().unwrap_or(f64::NAN));
            skeleton.push('#');
            cur.clear();
        }
    };
    for c in text.chars() {
        if c.is_ascii_digit() || (c == '.' && !cur.is_empty() && !cur.contains('.')) {
            cur.push(c);
        } else {
            flush(&mut cur, &mut nums, &mut skeleton);
            skeleton.push(c);
        }
    }
    flush(&mut cur, &mut nums, &mut skeleton);
    (nums, skeleton)
}

/// `N^3` written out as `N×N×N`, so a cube lines up with the `M×N×K` shapes beside it.
fn normalise(shape: &str) -> String {
    match shape.strip_suffix("^3") {
        Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
            format!("{n}×{n}×{n}")
        }
        _ => shape.to_string(),
    }
}

/// The sweeps among `family`'s rows, in order of first appearance.
pub fn sweeps(rows: &[Row], family: &str) -> Vec<Sweep> {
    // Steps of the family: (ladder, variant) in order.
    let mut steps: Vec<(&str, &str)> = Vec::new();
    for r in rows.iter().filter(|r| r.family == family) {
        if !steps.contains(&(r.ladder.as_str(), r.variant.as_str())) {
            steps.push((&r.ladder, &r.variant));
        }
    }
    let mut out: Vec<Sweep> = Vec::new();
    for (ladder, variant) in steps {
        let idx: Vec<usize> = (0..rows.len())
            .filter(|&i| {
                let r = &rows[i];
                r.family == family && r.ladder == ladder && r.variant == variant
            })
            .collect();
        let same_shape = idx.iter().all(|&i| rows[i].shape == rows[idx[0]].shape);
        let text = |i: usize| {
            if same_shape {
                rows[i].note.clone()
            } else {
                normalise(&rows[i].shape)
            }
        };
        // Rows of one skeleton are candidates for one sweep: (skeleton, [(row, numbers)]).
        type Members = Vec<(usize, Vec<f64>)>;
        let mut skeletons: Vec<(String, Members)> = Vec::new();
        for &i in &idx {
            let (nums, sk) = numbers(&text(i));
            if nums.is_empty() {
                continue;
            }
            match skeletons.iter_mut().find(|(s, _)| *s == sk) {
                Some((_, v)) => v.push((i, nums)),
                None => skeletons.push((sk, vec![(i, nums)])),
            }
        }
        for (sk, members) in skeletons {
            let n = members[0].1.len();
            let varying: Vec<usize> = (0..n)
                .filter(|&p| members.iter().any(|(_, v)| v[p] != members[0].1[p]))
                .collect();
            let Some(&first) = varying.first() else {
                continue;
            };
            // One x per row: every changing number equal to the first within the row; else
            // the changing numbers' product the same in every row of a group, x the last.
            let found = if members
                .iter()
                .all(|(_, v)| varying.iter().all(|&p| v[p] == v[first]))
            {
                vec![(
                    axis_text(&sk, &members[0].1, &varying, |_| "x".into()),
                    members.iter().map(|(i, v)| (v[first], *i)).collect(),
                )]
            } else {
                product_sweeps(&sk, &members, &varying)
            };
            for (axis, mut points) in found {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                points.dedup_by(|a, b| a.0 == b.0);
                if points.len() < MIN_POINTS || points.iter().any(|p| p.0.is_nan() || p.0 <= 0.0) {
                    continue;
                }
                match out
                    .iter_mut()
                    .find(|s| s.ladder == ladder && s.axis == axis)
                {
                    Some(s) => s.lines.push((variant.to_string(), points)),
                    None => out.push(Sweep {
                        family: family.to_string(),
                        ladder: ladder.to_string(),
                        axis,
                        lines: vec![(variant.to_string(), points)],
                    }),
                }
            }
        }
    }
    out
}

/// The skeleton `sk` with its numbers back (`values`), the changing ones (`varying`) as
/// `changing(k)` says.
fn axis_text(
    sk: &str,
    values: &[f64],
    varying: &[usize],
    changing: impl Fn(usize) -> String,
) -> String {
    let mut k = 0;
    sk.chars()
        .map(|c| {
            if c == '#' {
                let s = if varying.contains(&k) {
                    changing(k)
                } else {
                    tick(values[k])
                };
                k += 1;
                s
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The fixed-total sweeps among rows whose changing numbers differ within a row: members
/// grouped by the product of their changing numbers (`rows×cols` at a fixed element count);
/// in each group the last changing number is x, the others are written as the product over
/// x, e.g. `(67108864/x)×x` (an `x` between two numbers is written `×` there, so that it
/// does not read as the variable). (axis, points) per group; too few points are dropped by
/// the caller.
fn product_sweeps(
    sk: &str,
    members: &[(usize, Vec<f64>)],
    varying: &[usize],
) -> Vec<(String, Vec<(f64, usize)>)> {
    // Two numbers trading off (rows and cols); more would need more than one x.
    let [_, last] = *varying else {
        return Vec::new();
    };
    let mut groups: Vec<(f64, Vec<(f64, usize)>)> = Vec::new();
    for (i, v) in members {
        let product: f64 = varying.iter().map(|&p| v[p]).product();
        match groups.iter_mut().find(|(p, _)| *p == product) {
            Some((_, pts)) => pts.push((v[last], *i)),
            None => groups.push((product, vec![(v[last], *i)])),
        }
    }
    let sk: String = {
        let c: Vec<char> = sk.chars().collect();
        (0..c.len())
            .map(|k| {
                let between = k > 0 && k + 1 < c.len() && c[k - 1] == '#' && c[k + 1] == '#';
                if c[k] == 'x' && between { '×' } else { c[k] }
            })
            .collect()
    };
    groups
        .into_iter()
        .map(|(product, points)| {
            let axis = axis_text(&sk, &members[0].1, varying, |k| {
                if k == last {
                    "x".into()
                } else {
                    format!("({}/x)", tick(product))
                }
            });
            (axis, points)
        })
        .collect()
}

/// The sweep as an SVG line chart: % of roof against the swept number, a line per step in
/// the family's colours, and the peer (the median of its times at each x) dashed.
pub fn sweep_svg(rows: &[Row], sweep: &Sweep) -> Result<String> {
    let mut svg = String::new();
    let tooltips = draw(&mut svg, rows, sweep)?;
    add_point_titles(&svg, &tooltips)
}

fn draw(svg: &mut String, rows: &[Row], sweep: &Sweep) -> Result<Vec<String>> {
    let xs: Vec<f64> = sweep
        .lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .collect();
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    let mut all_x = xs.clone();
    all_x.sort_by(f64::total_cmp);
    all_x.dedup();
    // A peer at each x: the median over the steps' rows there (each row may time it anew),
    // and its name (each row's): the first peer column, then the second (torch.compile, or
    // what the family's `report::peer_columns` says).
    let peer_line = |pct: fn(&Row) -> Option<f64>, name: fn(&Row) -> Option<&String>| {
        let mut pts: Vec<(f64, f64)> = Vec::new();
        let mut named = None;
        for &x in &all_x {
            let mut v: Vec<f64> = sweep
                .lines
                .iter()
                .flat_map(|(_, p)| p.iter().filter(|q| q.0 == x))
                .filter_map(|q| {
                    let r = &rows[q.1];
                    named = named.clone().or(pct(r).and(name(r).cloned()));
                    pct(r)
                })
                .collect();
            if !v.is_empty() {
                v.sort_by(f64::total_cmp);
                pts.push((x, v[v.len() / 2]));
            }
        }
        (pts, named)
    };
    let peers = crate::report::peer_columns(&sweep.family);
    let (peer_pts, peer_name) = peer_line(peer_pct, |r| r.peer.as_ref());
    let (compiled_pts, compiled_name) = peer_line(compiled_peer_pct, |r| r.compiled_peer.as_ref());
    let ymax = sweep
        .lines
        .iter()
        .flat_map(|(_, p)| p.iter().filter_map(|q| pct_or_predicted(&rows[q.1])))
        .chain(peer_pts.iter().chain(&compiled_pts).map(|p| p.1))
        .fold(100.0f64, f64::max)
        * 1.1;
    let title = format!(
        "{}/{}: % of roof against x in {}",
        sweep.family, sweep.ladder, sweep.axis
    );
    let root = SVGBackend::with_string(svg, (1000, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55);
    let mut tooltips = Vec::new();
    // A range that spans a factor of 8 or more is drawn on a log axis.
    let log = xmax / xmin >= 8.0;
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(format!("x in {}", sweep.axis))
                .y_desc("% of roof (MBU / MFU)")
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .draw()
                .map_err(err)?;
            for (variant, pts) in &sweep.lines {
                let Some(&(_, i0)) = pts.first() else {
                    continue;
                };
                let c = colour(variant_index(rows, &rows[i0]));
                let line: Vec<(f64, f64)> = pts
                    .iter()
                    .filter_map(|&(x, i)| pct_or_predicted(&rows[i]).map(|y| (x, y)))
                    .collect();
                chart
                    .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(variant.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
                for (&(x, i), &(_, y)) in pts.iter().zip(&line) {
                    let r = &rows[i];
                    tooltips.push(tooltip(r, &r.variant));
                    chart
                        .draw_series(std::iter::once(
                            EmptyElement::at((x, y))
                                + Circle::new((0, 0), POINT_RADIUS, c.filled()),
                        ))
                        .map_err(err)?;
                }
            }
            if !peer_pts.is_empty() {
                let name = peer_name
                    .clone()
                    .unwrap_or_else(|| peers.first.to_string());
                chart
                    .draw_series(DashedLineSeries::new(
                        peer_pts.clone(),
                        8,
                        5,
                        BLACK.stroke_width(2),
                    ))
                    .map_err(err)?
                    .label(format!("{name} (peer)"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2))
                    });
            }
            if !compiled_pts.is_empty() {
                let name = compiled_name
                    .clone()
                    .unwrap_or_else(|| peers.second.to_string());
                chart
                    .draw_series(DashedLineSeries::new(
                        compiled_pts.clone(),
                        8,
                        5,
                        COMPILED_PEER.stroke_width(2),
                    ))
                    .map_err(err)?
                    .label(format!("{name} (peer)"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], COMPILED_PEER.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(err)?;
        }};
    }
    if log {
        body!(
            builder
                .build_cartesian_2d((xmin / 1.5..xmax * 1.5).log_scale(), 0.0..ymax)
                .map_err(err)?
        );
    } else {
        let pad = (xmax - xmin) * 0.05;
        body!(
            builder
                .build_cartesian_2d(xmin - pad..xmax + pad, 0.0..ymax)
                .map_err(err)?
        );
    }
    root.present().map_err(err)?;
    Ok(tooltips)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_skeletons() {
        assert_eq!(
            numbers("8×28672×8192"),
            (vec![8.0, 28672.0, 8192.0], "#×#×#".to_string())
        );
        assert_eq!(numbers("stride 32"), (vec![32.0], "stride #".to_string()));
        assert_eq!(normalise("8192^3"), "8192×8192×8192");
        assert_eq!(normalise("n=2^28"), "n=2^28");
    }

    fn row(ladder: &str, variant: &str, shape: &str, note: &str, pct: f64) -> Row {
        serde_json::from_value(serde_json::json!({
            "name": format!("f/{variant}"), "family": "f", "variant": variant, "ladder": ladder,
            "shape": shape, "note": note, "flops": 1, "min_bytes": 1, "modelled_bytes": 1,
            "median_us": 1.0, "p10_us": null, "p90_us": null, "spread_pct": null,
            "gbps": null, "tflops": null, "accounting": null, "pct_of_roof": pct,
            "registers": null, "spill_bytes": null, "old_median_us": null, "change_pct": null,
            "regressed": false, "speedup_vs_v01": null, "predicted_speedup_vs_v01": null,
            "correct": true, "error": null, "peer": "lib", "peer_median_us": 2.0,
            "pct_of_peer": null
        }))
        .unwrap()
    }

    #[test]
    fn finds_sweeps_and_draws_them() {
        let rows = vec![
            // M sweep with a cube at the end: one sweep, two steps.
            row("sw", "v01", "1×64×64", "", 10.0),
            row("sw", "v02", "1×64×64", "", 20.0),
            row("sw", "v01", "8×64×64", "", 30.0),
            row("sw", "v02", "8×64×64", "", 40.0),
            row("sw", "v01", "64^3", "", 50.0),
            row("sw", "v02", "64^3", "", 60.0),
            // A stride sweep in the notes of one shape.
            row("copy", "v01", "n=2^28", "stride 2", 10.0),
            row("copy", "v01", "n=2^28", "stride 8", 20.0),
            row("copy", "v01", "n=2^28", "stride 32", 30.0),
            // Two shapes with two numbers changing differently: no sweep.
            row("sm", "v01", "2048×32768", "", 1.0),
            row("sm", "v01", "262144×128", "", 1.0),
            row("sm", "v01", "4×8", "", 1.0),
        ];
        let s = sweeps(&rows, "f");
        assert_eq!(s.len(), 2, "{s:#?}");
        assert_eq!(s[0].axis, "x×64×64");
        assert_eq!(s[0].lines.len(), 2);
        assert_eq!(
            s[0].lines[0].1.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 8.0, 64.0]
        );
        assert_eq!(s[1].axis, "stride x");
        let svg = sweep_svg(&rows, &s[0]).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("valid SVG");
        let titled = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle"))
            .filter(|n| n.children().any(|c| c.has_tag_name("title")))
            .count();
        assert_eq!(titled, 6, "a point with a tooltip per row");
        assert!(svg.contains("lib (peer)"));
    }

    /// A row length swept at a fixed element count (softmax's `auto` over cols at
    /// rows·cols = 2^26): both numbers change, their product does not; x is the last. A row
    /// of another product beside them stays out; so do steps with fewer than 3 such rows.
    #[test]
    fn finds_fixed_total_sweeps() {
        let rows = vec![
            row("sweep_cols", "auto", "524288x128", "auto→v06", 90.0),
            row("sweep_cols", "auto", "131072x512", "auto→v06", 91.0),
            row("sweep_cols", "auto", "262144x128", "auto→v06", 80.0),
            row("sweep_cols", "auto", "32768x2048", "auto→v05", 92.0),
            row("sweep_cols", "auto", "256x262144", "auto→v07", 85.0),
            row("sweep_cols", "v05", "16384x4096", "", 94.0),
            row("sweep_cols", "v05", "2048x32768", "", 94.0),
        ];
        let s = sweeps(&rows, "f");
        assert_eq!(s.len(), 1, "{s:#?}");
        assert_eq!(s[0].axis, "(67108864/x)×x");
        assert_eq!(s[0].lines.len(), 1);
        let (variant, points) = &s[0].lines[0];
        assert_eq!(variant, "auto");
        assert_eq!(
            points.iter().map(|p| p.0).collect::<Vec<_>>(),
            [128.0, 512.0, 2048.0, 262144.0]
        );
        // The points are the rows of that product, in x order.
        assert_eq!(points.iter().map(|p| p.1).collect::<Vec<_>>(), [0, 1, 3, 4]);
        let svg = sweep_svg(&rows, &s[0]).unwrap();
        roxmltree::Document::parse(&svg).expect("valid SVG");
        assert!(svg.contains("(67108864/x)×x"));
    }
}
