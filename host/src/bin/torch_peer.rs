//! `--peer torch`: run `torch_peer.py` (PyTorch, eager, timed with CUDA events in its own
//! process) once for every case that has a `TorchSpec`, and fill the rows' peer columns.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use rooflab::bench::TorchSpec;
use rooflab::report::Row;

/// The script: `ROOFLAB_TORCH_PEER`, next to this executable (the bundle), or the source tree.
fn script() -> Option<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::var_os("ROOFLAB_TORCH_PEER")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.to_path_buf()))
    {
        candidates.push(dir.join("torch_peer.py"));
    }
    candidates.push(PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/peer/torch_peer.py"
    )));
    candidates.into_iter().find(|p| p.is_file())
}

fn key(s: &TorchSpec) -> String {
    let shape: Vec<String> = s.shape.iter().map(|d| d.to_string()).collect();
    format!("{}:{}:{}", s.op, shape.join("x"), s.dtype)
}

fn mark(rows: &mut [Row], specs: &[Option<TorchSpec>], why: &str) {
    for (r, s) in rows.iter_mut().zip(specs) {
        if s.is_some() {
            r.peer = Some(why.to_string());
        }
    }
    println!("peer: {why}");
}

pub fn fill(rows: &mut [Row], specs: &[Option<TorchSpec>]) {
    let mut unique: Vec<&TorchSpec> = Vec::new();
    for s in specs.iter().flatten() {
        if !unique.iter().any(|u| key(u) == key(s)) {
            unique.push(s);
        }
    }
    if unique.is_empty() {
        return;
    }
    let Some(path) = script() else {
        return mark(
            rows,
            specs,
            "torch peer script not found (set ROOFLAB_TORCH_PEER)",
        );
    };
    let input: Vec<serde_json::Value> = unique
        .iter()
        .map(|s| serde_json::json!({"key": key(s), "op": s.op, "shape": s.shape, "dtype": s.dtype}))
        .collect();
    eprintln!(
        "peer: timing {} op(s) in PyTorch ({})",
        unique.len(),
        path.display()
    );
    let child = Command::new("python3")
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let Ok(mut child) = child else {
        return mark(rows, specs, "torch not found (no python3)");
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(serde_json::Value::Array(input).to_string().as_bytes());
    }
    let out = match child.wait_with_output() {
        Ok(o) => o,
        Err(e) => return mark(rows, specs, &format!("torch peer failed: {e}")),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(v) = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    else {
        return mark(rows, specs, "torch peer printed no JSON");
    };
    if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
        return mark(rows, specs, e);
    }
    let version = v.get("torch").and_then(|t| t.as_str()).unwrap_or("?");
    for (r, s) in rows.iter_mut().zip(specs) {
        let Some(s) = s else { continue };
        let res = &v["results"][key(s)];
        match res.get("median_us").and_then(|m| m.as_f64()) {
            Some(m) => {
                r.peer = Some(format!("torch {version}"));
                r.peer_median_us = Some(m);
                r.pct_of_peer = r.median_us.map(|ours| 100.0 * m / ours);
            }
            None => {
                r.peer = Some(format!(
                    "torch: {}",
                    res.get("error")
                        .and_then(|e| e.as_str())
                        .unwrap_or("no result")
                ))
            }
        }
    }
}
