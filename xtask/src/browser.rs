//! Step [g] of `cargo xtask test`: the HTML report of a committed H200 run, rendered in a
//! real browser (headless Chromium), checked the way a reader would see it: every table
//! row and every chart point is there, no point label's box overlaps another's (measured by
//! the browser's own layout, not our estimate of text widths), the page fetched nothing and
//! its console is silent.
//!
//! The page gets a checking script appended (the report itself has none); Chromium loads it
//! with `--dump-dom`, and the script's findings come back as JSON in the dumped DOM. With no
//! browser the test reports itself skipped by name (`.ci/run` installs Debian's `chromium`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::util;

/// The test's name, as the summary prints it when it did not run.
pub const TEST_NAME: &str = "browser_renders_the_report_of_a_committed_run";

/// The committed run the page is rendered from (the README's run).
pub const SAMPLE_RUN: &str = "docs/runs/2026-12-03-h200-1359.json";

/// A browser to run: `$ROOFLAB_CHROMIUM`, else the first of the usual names on PATH.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ROOFLAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
    .find(|p| p.is_file())
}

/// Runs in the page after it has loaded; writes its findings into `<pre id=rooflab-check>`.
const CHECKER: &str = r#"<script>
(function () {
  const out = { rows: [], charts: [], resources: 0, errors: window.__rooflabErrors || [] };
  document.querySelectorAll('tr[data-row]').forEach(tr => out.rows.push(tr.getAttribute('data-row')));
  document.querySelectorAll('svg[data-chart]').forEach(svg => {
    const box = svg.getBoundingClientRect();
    const c = { chart: svg.getAttribute('data-chart'), titles: [], bars: 0, labels: [],
                width: box.width, height: box.height, box: [box.x, box.y, box.width, box.height] };
    svg.querySelectorAll('circle > title').forEach(t => c.titles.push(t.textContent));
    c.bars = svg.querySelectorAll('text.bar-label').length;
    svg.querySelectorAll('text.point-label').forEach(t => {
      const b = t.getBoundingClientRect();
      c.labels.push({ text: t.textContent.trim(), x: b.x, y: b.y, w: b.width, h: b.height });
    });
    out.charts.push(c);
  });
  out.resources = performance.getEntriesByType('resource').length;
  const pre = document.createElement('pre');
  pre.id = 'rooflab-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

/// Installed before anything else runs: records uncaught errors.
const ERROR_HOOK: &str = r#"<script>window.__rooflabErrors = [];
window.addEventListener('error', e => window.__rooflabErrors.push(String(e.message)));</script>"#;

#[derive(Deserialize, Debug)]
struct Found {
    rows: Vec<String>,
    charts: Vec<Chart>,
    resources: u64,
    errors: Vec<String>,
}

#[derive(Deserialize, Debug)]
struct Chart {
    chart: String,
    titles: Vec<String>,
    /// Bar labels (`text.bar-label`): one per row of a bar chart.
    bars: usize,
    labels: Vec<Label>,
    #[serde(rename = "box")]
    bbox: [f64; 4],
}

#[derive(Deserialize, Debug, Clone)]
struct Label {
    text: String,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn overlaps(a: &Label, b: &Label) -> bool {
    a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h
}

/// What the run says the page must hold: row keys, and per family the rows that have a
/// place on the roofline (measured time, or a prediction).
struct Expected {
    rows: Vec<(String, String, bool)>,
}

fn expected(run: &Path) -> Result<Expected> {
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run).with_context(|| format!("reading {}", run.display()))?,
    )
    .with_context(|| format!("{} is not a bench.json", run.display()))?;
    let rows = v["rows"]
        .as_array()
        .context("no rows in the run")?
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            let placed = !r["accounting"].is_null()
                && (r["median_us"].as_f64().is_some_and(|m| m > 0.0)
                    || r["median_us"].is_null() && v["measured"] == false);
            (
                format!("{}|{}|{}", s("name"), s("shape"), s("note")),
                s("family"),
                placed,
            )
        })
        .collect();
    Ok(Expected { rows })
}

/// The check proper, on what the browser found.
fn verdict(found: &Found, want: &Expected, console: &[String]) -> Result<()> {
    let mut problems = Vec::new();
    if !console.is_empty() {
        problems.push(format!("the console printed: {}", console.join(" | ")));
    }
    if !found.errors.is_empty() {
        problems.push(format!("script errors: {}", found.errors.join(" | ")));
    }
    if found.resources != 0 {
        problems.push(format!(
            "the page fetched {} resources; it must be self-contained",
            found.resources
        ));
    }
    let mut rows = found.rows.clone();
    rows.sort();
    let mut keys: Vec<String> = want.rows.iter().map(|r| r.0.clone()).collect();
    keys.sort();
    if rows != keys {
        let missing: Vec<_> = keys.iter().filter(|k| !rows.contains(k)).collect();
        problems.push(format!(
            "{} table rows for {} report rows; missing: {missing:?}",
            rows.len(),
            keys.len()
        ));
    }
    let chart = |name: &str| found.charts.iter().find(|c| c.chart == name);
    let mut families: Vec<&str> = Vec::new();
    for (_, f, _) in &want.rows {
        if !families.contains(&f.as_str()) {
            families.push(f);
        }
    }
    let placed = |f: Option<&str>| {
        want.rows
            .iter()
            .filter(|(_, fam, p)| *p && f.is_none_or(|f| f == fam))
            .count()
    };
    let mut expect_points = vec![("roofline overview".to_string(), placed(None))];
    for f in &families {
        expect_points.push((format!("roofline {f}"), placed(Some(f))));
        // One label per row in the family's bar chart, each starting with its step's name.
        match chart(&format!("bars {f}")) {
            None => problems.push(format!("no bar chart for {f}")),
            Some(c) => {
                let n = want.rows.iter().filter(|r| r.1 == *f).count();
                let bars = c.bars;
                if bars != n {
                    problems.push(format!("bars {f}: {bars} bar labels for {n} rows"));
                }
            }
        }
    }
    for (name, n) in expect_points {
        match chart(&name) {
            None => problems.push(format!("no chart {name:?}")),
            Some(c) if c.titles.len() != n => problems.push(format!(
                "{name}: {} points with a tooltip for {n} rows",
                c.titles.len()
            )),
            Some(_) => {}
        }
    }
    for c in &found.charts {
        if c.chart.starts_with("sweep") && c.titles.len() < 3 {
            problems.push(format!("{}: a sweep of {} points", c.chart, c.titles.len()));
        }
        if c.bbox[2] < 200.0 || c.bbox[3] < 100.0 {
            problems.push(format!("{}: drawn {}×{} px", c.chart, c.bbox[2], c.bbox[3]));
        }
        for (i, a) in c.labels.iter().enumerate() {
            for b in &c.labels[i + 1..] {
                if overlaps(a, b) {
                    problems.push(format!(
                        "{}: label {:?} overlaps {:?}",
                        c.chart, a.text, b.text
                    ));
                }
            }
            let [x, y, w, h] = c.bbox;
            if a.x < x || a.y < y || a.x + a.w > x + w + 0.5 || a.y + a.h > y + h + 0.5 {
                problems.push(format!("{}: label {:?} outside the chart", c.chart, a.text));
            }
        }
    }
    if found.charts.iter().all(|c| c.labels.is_empty()) {
        problems.push("no point labels at all".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        bail!("{}", problems.join("\n"))
    }
}

/// `cargo xtask browser-test`: this step alone, with the debug rooflab-bench.
pub fn run_alone() -> Result<()> {
    let cuda = crate::deps::ensure_libcuda()?;
    let browser = find().with_context(|| {
        format!("{TEST_NAME}: no Chromium here (apt-get install chromium, or set ROOFLAB_CHROMIUM)")
    })?;
    let mut cmd = util::cargo(&cuda);
    cmd.args(["build", "-p", "rooflab", "--bin", "rooflab-bench"]);
    util::run_ok(&mut cmd)?;
    let bench = util::workspace().join("target/debug/rooflab-bench");
    run(&bench, &cuda, &browser)
}

/// Render the committed run's page with `bench` (the rooflab-bench executable) and check it
/// in `browser`. Writes the page and a screenshot under target/rooflab-browser-test/.
pub fn run(bench: &Path, cuda: &Path, browser: &Path) -> Result<()> {
    let ws = util::workspace();
    let dir = ws.join("target").join("rooflab-browser-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let run = ws.join(SAMPLE_RUN);
    let mut cmd = Command::new(bench);
    cmd.arg("--render")
        .arg(&run)
        .arg("--report-only")
        .arg("--docs")
        .arg(ws.join("docs"))
        .arg("--out")
        .arg(&dir);
    util::add_runtime_libcuda(&mut cmd, cuda);
    util::run_ok(&mut cmd)?;
    let page = dir.join("report").join("index.html");
    let html = std::fs::read_to_string(&page).with_context(|| page.display().to_string())?;
    let checked = html
        .replacen("<head>", &format!("<head>{ERROR_HOOK}"), 1)
        .replacen("</body>", &format!("{CHECKER}</body>"), 1);
    let checked_path = dir.join("report").join("checked.html");
    std::fs::write(&checked_path, checked)?;
    let url = format!("file://{}", checked_path.display());
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1400,1000",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let out = Command::new(browser)
        .args(common)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .with_context(|| format!("running {}", browser.display()))?;
    let dom = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = dom
        .split("<pre id=\"rooflab-check\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .with_context(|| {
            format!(
                "{} printed no findings (exit {}); its stderr:\n{stderr}",
                browser.display(),
                out.status
            )
        })?;
    let json = json
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let found: Found = serde_json::from_str(&json).context("reading the page's findings")?;
    let console: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_string)
        .collect();
    let want = expected(&run)?;
    verdict(&found, &want, &console)?;
    // A picture of the top of the page, for a person to look at.
    let shot = dir.join("report.png");
    let _ = Command::new(browser)
        .args(common)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output();
    let points: usize = found.charts.iter().map(|c| c.titles.len()).sum();
    let labels: usize = found.charts.iter().map(|c| c.labels.len()).sum();
    eprintln!(
        "{TEST_NAME}: {} table rows, {} charts, {points} points, {labels} labels, none \
         overlapping; console silent; nothing fetched ({})",
        found.rows.len(),
        found.charts.len(),
        page.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(x: f64, y: f64) -> Label {
        Label {
            text: "a".into(),
            x,
            y,
            w: 10.0,
            h: 5.0,
        }
    }

    /// The verdict refuses what it is there to catch: a missing row, a missing point, two
    /// labels on top of each other, a console message, a fetched resource.
    #[test]
    fn verdict_catches_planted_faults() {
        let want = Expected {
            rows: vec![
                ("f/v01|n|".into(), "f".into(), true),
                ("f/v02|n|".into(), "f".into(), true),
            ],
        };
        let chart = |name: &str, titles: usize, labels: Vec<Label>| Chart {
            chart: name.into(),
            titles: vec!["t".into(); titles],
            bars: 2,
            labels,
            bbox: [0.0, 0.0, 1000.0, 600.0],
        };
        let good = || Found {
            rows: vec!["f/v01|n|".into(), "f/v02|n|".into()],
            charts: vec![
                chart(
                    "roofline overview",
                    2,
                    vec![label(0.0, 0.0), label(20.0, 0.0)],
                ),
                chart("roofline f", 2, vec![]),
                chart("bars f", 0, vec![]),
            ],
            resources: 0,
            errors: vec![],
        };
        verdict(&good(), &want, &[]).unwrap();
        let mut f = good();
        f.rows.pop();
        assert!(verdict(&f, &want, &[]).is_err());
        let mut f = good();
        f.charts[1].titles.pop();
        assert!(verdict(&f, &want, &[]).is_err());
        let mut f = good();
        f.charts[0].labels[1].x = 5.0;
        assert!(verdict(&f, &want, &[]).is_err());
        let mut f = good();
        f.resources = 1;
        assert!(verdict(&f, &want, &[]).is_err());
        assert!(verdict(&good(), &want, &["INFO:CONSOLE(1) boom".into()]).is_err());
    }
}
