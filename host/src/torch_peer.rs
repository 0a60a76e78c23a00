//! `--peer torch`: PyTorch eager and `torch.compile` on the same ops as the fusion families,
//! run by `host/peer/torch_peer.py` in its own process (one for the whole bench), each
//! output checked against rooflab's CPU reference before its time counts.
//!
//! For each distinct (op, shape, dtype) the bench sends one request line; the script times
//! eager and compiled calls (CUDA events, L2 rotation, compile time apart) and dumps its
//! first input set, the weights and both outputs as raw arrays into a scratch folder. Here
//! they are read back, the family's f64 reference is computed once, each output is compared
//! with the family's own tolerance, and the folder is deleted before the next request (one
//! case's files at a time: a 16384×4096 chain is ~1 GB). A wrong output, an eager fallback or
//! a recompile puts the reason in the row instead of a figure.

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bench::TorchSpec;
use crate::check::compare_f32;
use crate::ops::fused_elementwise::launch::{Gelu, Variant as ChainVariant};
use crate::ops::fused_elementwise::{reference::chain_ref, tests::tolerance as chain_tolerance};
use crate::ops::norm::launch::Kind;
use crate::ops::norm::{reference::norm_ref, tests as norm_tests};
use crate::ops::softmax::{reference::softmax_ref, tests::tolerance as softmax_tolerance};
use crate::report::Row;
use crate::tensor::Dtype;

/// The script: `ROOFLAB_TORCH_PEER`, next to the running executable (the bundle), or the
/// source tree.
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

pub fn key(s: &TorchSpec) -> String {
    let shape: Vec<String> = s.shape.iter().map(|d| d.to_string()).collect();
    format!("{}:{}:{}", s.op, shape.join("x"), s.dtype)
}

/// Which of the two peer columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Eager,
    Compiled,
}

impl Mode {
    fn field(self) -> &'static str {
        match self {
            Mode::Eager => "eager",
            Mode::Compiled => "compiled",
        }
    }
}

/// What one request gave for one column: a time that counts, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Timed {
        median_us: f64,
        /// torch.compile only: the first call's wall time, compilation included.
        compile_s: Option<f64>,
    },
    NoFigure(String),
}

/// The storage of `dtype` as the script names it.
fn dtype_of(spec: &TorchSpec) -> Result<Dtype, String> {
    Dtype::ALL
        .into_iter()
        .find(|d| d.torch() == spec.dtype)
        .ok_or_else(|| format!("unknown dtype {:?}", spec.dtype))
}

/// A raw little-endian array of `dt` from `path`, widened to f32; `len` elements expected.
fn read_array(path: &Path, dt: Dtype, len: usize) -> Result<Vec<f32>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let size = dt.size() as usize;
    if bytes.len() != len * size {
        return Err(format!(
            "{}: {} bytes, {} expected ({len} {} elements)",
            path.display(),
            bytes.len(),
            len * size,
            dt.name()
        ));
    }
    Ok(match dt {
        Dtype::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::Bf16 => bytes
            .chunks_exact(2)
            .map(|c| half::bf16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())
            .collect(),
    })
}

/// The files one request dumped (names as the script writes them).
type Files = serde_json::Map<String, serde_json::Value>;

fn file<'a>(files: &'a Files, name: &str) -> Result<&'a Path, String> {
    files
        .get(name)
        .and_then(|v| v.as_str())
        .map(Path::new)
        .ok_or_else(|| format!("the peer wrote no {name} array"))
}

/// The reference for `mode`'s output and the tolerance it is held to: the family's f64
/// reference on the peer's own inputs, with the family's tolerance. Eager PyTorch stores
/// every intermediate of the GELU chain in the dtype, as rooflab's unfused v01 does (its
/// reference rounds them and its tolerance applies); the compiled chain is checked against
/// the unrounded chain with that same, looser, tolerance (Inductor may keep them in f32 or not).
pub fn reference(
    spec: &TorchSpec,
    files: &Files,
    mode: Mode,
) -> Result<(Vec<f32>, (f32, f32)), String> {
    let dt = dtype_of(spec)?;
    let [rows, cols] = spec.shape[..] else {
        return Err(format!("shape {:?} is not rows × cols", spec.shape));
    };
    let (rows, cols) = (rows as usize, cols as usize);
    let n = rows * cols;
    let x = read_array(file(files, "x")?, dt, n)?;
    let op = spec.op.as_str();
    if op == "softmax" {
        return Ok((softmax_ref(rows, cols, &x), softmax_tolerance(dt, cols)));
    }
    let w = read_array(file(files, "w")?, dt, cols)?;
    let b = read_array(file(files, "b")?, dt, cols)?;
    if let Some(k) = Kind::ALL.into_iter().find(|k| k.torch() == op) {
        let want = norm_ref(k, rows, cols, &x, &w, &b, norm_tests::EPS);
        return Ok((want, norm_tests::tolerance(dt, cols, false)));
    }
    if let Some(g) = [Gelu::Tanh, Gelu::Erf]
        .into_iter()
        .find(|g| op == format!("gelu_chain_{}", g.name()))
    {
        let res = read_array(file(files, "x2")?, dt, n)?;
        let rounded = mode == Mode::Eager;
        let round = move |u: f64| {
            if rounded {
                dt.quantize(u as f32) as f64
            } else {
                u
            }
        };
        let want = chain_ref(g, cols, &x, &w, &b, &res, round);
        return Ok((want, chain_tolerance(ChainVariant::V01Unfused, dt)));
    }
    Err(format!("no CPU reference for the torch op {op:?}"))
}

/// One column of one response: the time if the output matches the reference.
pub fn outcome(spec: &TorchSpec, resp: &serde_json::Value, mode: Mode) -> Outcome {
    let col = &resp[mode.field()];
    if let Some(e) = col.get("error").and_then(|e| e.as_str()) {
        return Outcome::NoFigure(e.to_string());
    }
    let Some(median_us) = col.get("median_us").and_then(|m| m.as_f64()) else {
        return Outcome::NoFigure("no time reported".into());
    };
    let empty = Files::new();
    let files = resp
        .get("files")
        .and_then(|f| f.as_object())
        .unwrap_or(&empty);
    let checked = reference(spec, files, mode).and_then(|(want, (rel, abs))| {
        let dt = dtype_of(spec)?;
        let got = read_array(file(files, mode.field())?, dt, want.len())?;
        compare_f32(
            &format!("{} {}", mode.field(), key(spec)),
            &got,
            &want,
            rel,
            abs,
        )
    });
    match checked {
        Ok(()) => Outcome::Timed {
            median_us,
            compile_s: col.get("compile_s").and_then(|c| c.as_f64()),
        },
        Err(e) => Outcome::NoFigure(format!("output not checked or wrong, no figure: {e}")),
    }
}

/// Fill one row's two peer columns from a request's outcomes.
pub fn apply(r: &mut Row, version: &str, eager: &Outcome, compiled: &Outcome) {
    match eager {
        Outcome::Timed { median_us, .. } => {
            r.peer = Some(format!("torch {version} eager"));
            r.peer_median_us = Some(*median_us);
            r.pct_of_peer = r.median_us.map(|ours| 100.0 * median_us / ours);
        }
        Outcome::NoFigure(why) => r.peer = Some(format!("torch eager: {why}")),
    }
    match compiled {
        Outcome::Timed {
            median_us,
            compile_s,
        } => {
            r.compiled_peer = Some(format!("torch.compile {version}"));
            r.compiled_peer_median_us = Some(*median_us);
            r.compiled_peer_compile_s = *compile_s;
            r.pct_of_compiled_peer = r.median_us.map(|ours| 100.0 * median_us / ours);
        }
        Outcome::NoFigure(why) => r.compiled_peer = Some(format!("torch.compile: {why}")),
    }
}

fn mark(rows: &mut [Row], specs: &[Option<TorchSpec>], why: &str) {
    for (r, s) in rows.iter_mut().zip(specs) {
        if s.is_some() {
            r.peer = Some(why.to_string());
            r.compiled_peer = Some(why.to_string());
        }
    }
    println!("peer: {why}");
}

/// Time every distinct op of `specs` in PyTorch, eager and compiled, check the outputs and
/// fill the rows' peer columns (`specs[i]` belongs to `rows[i]`).
pub fn fill(rows: &mut [Row], specs: &[Option<TorchSpec>]) {
    match script() {
        Some(path) => fill_with(&path, rows, specs),
        None => mark(
            rows,
            specs,
            "torch peer script not found (set ROOFLAB_TORCH_PEER)",
        ),
    }
}

/// [`fill`] with the script at `path`.
pub fn fill_with(path: &Path, rows: &mut [Row], specs: &[Option<TorchSpec>]) {
    let mut unique: Vec<&TorchSpec> = Vec::new();
    for s in specs.iter().flatten() {
        if !unique.iter().any(|u| key(u) == key(s)) {
            unique.push(s);
        }
    }
    if unique.is_empty() {
        return;
    }
    let child = Command::new("python3")
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let Ok(mut child) = child else {
        return mark(rows, specs, "torch not found (no python3)");
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return mark(rows, specs, "torch peer: no pipes to python3");
    };
    let mut lines = BufReader::new(stdout).lines();
    // Lines that are not JSON (a library's chatter) are skipped.
    let mut next_json = || {
        lines
            .by_ref()
            .map_while(|l| l.ok())
            .find_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
    };
    let Some(head) = next_json() else {
        let _ = child.wait();
        return mark(rows, specs, "torch peer printed no JSON");
    };
    if let Some(e) = head.get("error").and_then(|e| e.as_str()) {
        let _ = child.wait();
        return mark(rows, specs, &format!("torch: {e}"));
    }
    let version = head
        .get("torch")
        .and_then(|t| t.as_str())
        .unwrap_or("?")
        .to_string();
    if let Some(why) = head.get("compile").and_then(|c| c.as_str()) {
        println!("peer: torch {version}; torch.compile column skipped: {why}");
    }
    let scratch = std::env::temp_dir().join(format!("rooflab-torch-peer-{}", std::process::id()));
    eprintln!(
        "peer: timing {} op(s) in PyTorch {version}, eager and compiled ({})",
        unique.len(),
        path.display()
    );
    for (i, s) in unique.iter().enumerate() {
        let dump = scratch.join(i.to_string());
        let req = serde_json::json!({
            "key": key(s), "op": s.op, "shape": s.shape, "dtype": s.dtype,
            "dump": dump.to_string_lossy(),
        });
        let sent = writeln!(stdin, "{req}").and_then(|_| stdin.flush());
        let resp = match sent {
            Ok(()) => next_json(),
            Err(_) => None,
        };
        let (eager, compiled) = match &resp {
            Some(v) if v.get("error").is_some() => {
                let e = v["error"].as_str().unwrap_or("?").to_string();
                (Outcome::NoFigure(e.clone()), Outcome::NoFigure(e))
            }
            Some(v) => (outcome(s, v, Mode::Eager), outcome(s, v, Mode::Compiled)),
            None => {
                let e = "the torch peer stopped answering".to_string();
                (Outcome::NoFigure(e.clone()), Outcome::NoFigure(e))
            }
        };
        let _ = std::fs::remove_dir_all(&dump);
        for (what, o) in [("eager", &eager), ("compiled", &compiled)] {
            if let Outcome::NoFigure(why) = o {
                eprintln!("peer: {} {what}: {why}", key(s));
            }
        }
        for (r, rs) in rows.iter_mut().zip(specs) {
            if rs.as_ref().is_some_and(|rs| key(rs) == key(s)) {
                apply(r, &version, &eager, &compiled);
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&scratch);
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::check::{random_f32, rng};

    fn write(dir: &Path, name: &str, dt: Dtype, v: &[f32]) -> String {
        let p = dir.join(format!("{name}.bin"));
        let bytes: Vec<u8> = match dt {
            Dtype::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Dtype::Bf16 => v
                .iter()
                .flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes())
                .collect(),
        };
        std::fs::write(&p, bytes).unwrap();
        p.to_string_lossy().into_owned()
    }

    /// A response as the script writes it, with `eager` and `compiled` outputs given.
    fn response(
        dir: &Path,
        spec: &TorchSpec,
        inputs: &[(&str, Vec<f32>)],
        eager: &[f32],
        compiled: &[f32],
    ) -> serde_json::Value {
        let dt = dtype_of(spec).unwrap();
        let mut files = Files::new();
        for (name, v) in inputs {
            files.insert(name.to_string(), write(dir, name, dt, v).into());
        }
        files.insert("eager".into(), write(dir, "eager", dt, eager).into());
        files.insert(
            "compiled".into(),
            write(dir, "compiled", dt, compiled).into(),
        );
        serde_json::json!({
            "key": key(spec),
            "eager": {"median_us": 10.0, "p10_us": 9.0, "p90_us": 11.0},
            "compiled": {"median_us": 8.0, "p10_us": 7.0, "p90_us": 9.0, "compile_s": 3.5,
                         "kernels": 1},
            "files": files,
        })
    }

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("rooflab-peer-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn right_outputs_count_and_a_wrong_one_does_not() {
        let dir = scratch("softmax");
        let spec = TorchSpec {
            op: "softmax".into(),
            shape: vec![3, 37],
            dtype: "float32".into(),
        };
        let x = random_f32(&mut rng(5), 3 * 37, -4.0, 4.0);
        let good = softmax_ref(3, 37, &x);
        let mut bad = good.clone();
        bad[40] *= 1.001; // one element 1e-3 off: far past the f32 tolerance
        let resp = response(&dir, &spec, &[("x", x)], &good, &bad);
        assert_eq!(
            outcome(&spec, &resp, Mode::Eager),
            Outcome::Timed {
                median_us: 10.0,
                compile_s: None
            }
        );
        match outcome(&spec, &resp, Mode::Compiled) {
            Outcome::NoFigure(why) => assert!(why.contains("1 of 111 elements wrong"), "{why}"),
            o => panic!("a wrong output counted: {o:?}"),
        }
        // A NaN never passes.
        let mut nan = good.clone();
        nan[0] = f32::NAN;
        let resp = response(
            &dir,
            &spec,
            &[("x", random_f32(&mut rng(5), 111, -4.0, 4.0))],
            &nan,
            &good,
        );
        assert!(matches!(
            outcome(&spec, &resp, Mode::Eager),
            Outcome::NoFigure(_)
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn norms_and_chains_use_their_families_references() {
        let dir = scratch("norm");
        let (rows, cols) = (4usize, 33usize);
        let mut r = rng(9);
        let x = random_f32(&mut r, rows * cols, -2.0, 2.0);
        let x2 = random_f32(&mut r, rows * cols, -1.0, 1.0);
        let w = random_f32(&mut r, cols, 0.5, 1.5);
        let b = random_f32(&mut r, cols, -0.5, 0.5);
        for dt in Dtype::ALL {
            let q = |v: &[f32]| v.iter().map(|&a| dt.quantize(a)).collect::<Vec<_>>();
            let (x, x2, w, b) = (q(&x), q(&x2), q(&w), q(&b));
            for op in [
                "layer_norm",
                "rms_norm",
                "gelu_chain_tanh",
                "gelu_chain_erf",
            ] {
                let spec = TorchSpec {
                    op: op.into(),
                    shape: vec![rows as u64, cols as u64],
                    dtype: dt.torch().into(),
                };
                let inputs = [
                    ("x", x.clone()),
                    ("x2", x2.clone()),
                    ("w", w.clone()),
                    ("b", b.clone()),
                ];
                // Build the expected outputs through the same reference the check uses.
                let mut files = Files::new();
                for (name, v) in &inputs {
                    files.insert(name.to_string(), write(&dir, name, dt, v).into());
                }
                let (eager, _) = reference(&spec, &files, Mode::Eager).unwrap();
                let (compiled, _) = reference(&spec, &files, Mode::Compiled).unwrap();
                let resp = response(&dir, &spec, &inputs, &q(&eager), &q(&compiled));
                for m in [Mode::Eager, Mode::Compiled] {
                    assert!(
                        matches!(outcome(&spec, &resp, m), Outcome::Timed { .. }),
                        "{op} {dt:?} {m:?}: {:?}",
                        outcome(&spec, &resp, m)
                    );
                }
                // The output of another op (here: x itself) is refused.
                let resp = response(&dir, &spec, &inputs, &x, &x);
                assert!(matches!(
                    outcome(&spec, &resp, Mode::Eager),
                    Outcome::NoFigure(_)
                ));
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The whole exchange with a stand-in script that speaks the protocol (no torch needed):
    /// a right eager softmax counts, a wrong compiled one and an unknown op do not.
    #[test]
    fn fill_talks_to_the_script_and_checks_what_it_dumps() {
        let dir = scratch("fill");
        let fake = dir.join("fake_peer.py");
        std::fs::write(
            &fake,
            r#"import json, math, os, struct, sys
print("some library chatter")
print(json.dumps({"torch": "9.9", "compile": None}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] != "softmax":
        print(json.dumps({"key": req["key"], "error": "unknown op"}), flush=True)
        continue
    rows, cols = req["shape"]
    x = [((i * 37) % 11) - 5.0 for i in range(rows * cols)]
    y = []
    for r in range(rows):
        row = x[r * cols:(r + 1) * cols]
        e = [math.exp(v - max(row)) for v in row]
        y += [v / sum(e) for v in e]
    d = req["dump"]
    os.makedirs(d, exist_ok=True)
    files = {}
    for name, v in (("x", x), ("eager", y), ("compiled", [v * 1.01 for v in y])):
        files[name] = os.path.join(d, name + ".bin")
        open(files[name], "wb").write(struct.pack("<%df" % len(v), *v))
    t = {"median_us": 5.0, "p10_us": 4.0, "p90_us": 6.0}
    print(json.dumps({"key": req["key"], "eager": t, "compiled": dict(t, compile_s=2.0),
                      "files": files}), flush=True)
"#,
        )
        .unwrap();
        let spec = |op: &str| TorchSpec {
            op: op.into(),
            shape: vec![3, 9],
            dtype: "float32".into(),
        };
        let mut rows: Vec<Row> = (0..3)
            .map(|_| {
                let mut r = crate::report::tests::row("softmax/x", "l", 10.0, 100);
                r.family = "softmax".into();
                r
            })
            .collect();
        let specs = vec![Some(spec("softmax")), None, Some(spec("layer_norm"))];
        fill_with(&fake, &mut rows, &specs);
        assert_eq!(rows[0].peer.as_deref(), Some("torch 9.9 eager"));
        assert_eq!(rows[0].pct_of_peer, Some(50.0));
        let c = rows[0].compiled_peer.as_deref().unwrap();
        assert!(
            c.contains("wrong, no figure") || c.contains("elements wrong"),
            "{c}"
        );
        assert_eq!(rows[0].pct_of_compiled_peer, None);
        assert_eq!(rows[1].peer, None);
        assert!(rows[2].peer.as_deref().unwrap().contains("unknown op"));
        assert!(
            std::fs::read_dir(&dir).unwrap().count() == 1,
            "dumps left behind"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn errors_and_missing_files_give_no_figure() {
        let spec = TorchSpec {
            op: "softmax".into(),
            shape: vec![2, 2],
            dtype: "bfloat16".into(),
        };
        let resp = serde_json::json!({
            "eager": {"median_us": 1.0},
            "compiled": {"error": "RuntimeError: torch.compile generated no kernel (an eager fallback): no figure"},
        });
        match outcome(&spec, &resp, Mode::Eager) {
            Outcome::NoFigure(why) => assert!(why.contains("no x array"), "{why}"),
            o => panic!("{o:?}"),
        }
        match outcome(&spec, &resp, Mode::Compiled) {
            Outcome::NoFigure(why) => assert!(why.contains("eager fallback")),
            o => panic!("{o:?}"),
        }
    }
}
