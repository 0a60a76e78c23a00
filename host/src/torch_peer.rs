//! `--peer torch`: PyTorch on the same ops, run by `host/peer/torch_peer.py` in its own
//! process (one for the whole bench), each output checked against rooflab's CPU reference
//! before its time counts. What fills a row's two peer columns depends on the op ([`modes`]):
//! eager PyTorch and `torch.compile` for the fusion families (softmax, norms, GELU chain);
//! `scaled_dot_product_attention` held to its flash backend and to its cuDNN backend for
//! prefill attention; SDPA on a contiguous, padded copy of the paged KV cache with
//! `enable_gqa` (whichever backend SDPA then picks, named in the row) for decode. The
//! headers say so per family (`report::peer_columns`).
//!
//! For each distinct [`TorchSpec`] the bench sends one request line; the script times each
//! column (CUDA events, L2 rotation where rooflab's row rotates, compile time apart) and
//! dumps its first input set and the outputs as raw arrays into a scratch folder. Here they
//! are read back, the family's f64 reference is computed once, each output is compared with
//! the family's own tolerance (attention and decode: widened by the bf16 roundings SDPA's
//! kernels are documented to make, `ops::attention::peer`), and the folder is deleted before
//! the next request (one case's files at a time: a 16384×4096 chain is ~1 GB). A wrong
//! output, an unavailable backend, an eager fallback or a recompile puts the reason in the
//! row instead of a figure.

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bench::TorchSpec;
use crate::check::compare_f32;
use crate::ops::attention::peer::{self as attention_peer, SDPA, SDPA_CAUSAL};
use crate::ops::attention::Attn;
use crate::ops::decode::peer::{self as decode_peer, DECODE_SDPA};
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

/// The spec as the log names it, e.g. `softmax:16384x4096:bfloat16`; decode adds the keys
/// its lengths add up to (`decode_sdpa:64x32x8x128:bfloat16:131072 keys`).
pub fn key(s: &TorchSpec) -> String {
    let shape: Vec<String> = s.shape.iter().map(|d| d.to_string()).collect();
    let mut k = format!("{}:{}:{}", s.op, shape.join("x"), s.dtype);
    if !s.lens.is_empty() {
        let keys: u64 = s.lens.iter().map(|&l| l as u64).sum();
        k += &format!(":{keys} keys");
    }
    k
}

/// One column of a response: the field the script writes it under, and which of the row's
/// two peer columns it fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Eager PyTorch (the fusion families): the first column.
    Eager,
    /// `torch.compile` of the same function: the second.
    Compiled,
    /// SDPA held to its flash backend (`sdpa_kernel([FLASH_ATTENTION])`, prefill): the first.
    SdpaFlash,
    /// SDPA held to its cuDNN backend (prefill): the second.
    SdpaCudnn,
    /// SDPA over a contiguous copy of the KV cache, each sequence padded to the longest and
    /// masked, `enable_gqa=True`, the backend SDPA picks (decode): the first.
    SdpaContiguous,
}

impl Mode {
    /// The response's field for this column, and the dumped output's name.
    pub fn field(self) -> &'static str {
        match self {
            Mode::Eager => "eager",
            Mode::Compiled => "compiled",
            Mode::SdpaFlash => "flash",
            Mode::SdpaCudnn => "cudnn",
            Mode::SdpaContiguous => "sdpa",
        }
    }

    /// Fills the row's second peer column (`compiled_peer*`), else the first (`peer*`).
    pub fn second(self) -> bool {
        matches!(self, Mode::Compiled | Mode::SdpaCudnn)
    }

    /// The row's peer string when the time counts; `detail` is what the script adds (the
    /// cuDNN version; the backend SDPA picked for decode and whether a mask was passed).
    pub fn name(self, version: &str, detail: Option<&str>) -> String {
        let d = |pre: &str| detail.map_or(String::new(), |d| format!("{pre}{d}"));
        match self {
            Mode::Eager => format!("torch {version} eager"),
            Mode::Compiled => format!("torch.compile {version}"),
            Mode::SdpaFlash => format!("torch {version} SDPA flash{}", d(" ")),
            Mode::SdpaCudnn => format!("torch {version} SDPA cuDNN{}", d(" ")),
            Mode::SdpaContiguous => format!(
                "torch {version} SDPA{} on a contiguous KV copy (padded to the longest context)",
                detail.map_or(String::new(), |d| format!(" ({d})"))
            ),
        }
    }

    /// The row's peer string when there is no figure.
    pub fn failed(self, why: &str) -> String {
        match self {
            Mode::Eager => format!("torch eager: {why}"),
            Mode::Compiled => format!("torch.compile: {why}"),
            Mode::SdpaFlash => format!("SDPA flash: {why}"),
            Mode::SdpaCudnn => format!("SDPA cuDNN: {why}"),
            Mode::SdpaContiguous => format!("SDPA on a contiguous KV copy: {why}"),
        }
    }
}

/// The columns the script answers for `op`, the first peer column's then the second's.
pub fn modes(op: &str) -> &'static [Mode] {
    match op {
        SDPA | SDPA_CAUSAL => &[Mode::SdpaFlash, Mode::SdpaCudnn],
        DECODE_SDPA => &[Mode::SdpaContiguous],
        _ => &[Mode::Eager, Mode::Compiled],
    }
}

/// What a request gave for one column: a time that counts, or why there is none.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Timed {
        median_us: f64,
        /// torch.compile only: the first call's wall time, compilation included.
        compile_s: Option<f64>,
        /// What the script says of the column beside its time ([`Mode::name`]).
        detail: Option<String>,
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

/// The request line for `s`, its dumps going to `dump`: decode adds the context lengths and
/// the sequences whose keys and values the script dumps for the check.
pub fn request(s: &TorchSpec, dump: &Path) -> serde_json::Value {
    let mut req = serde_json::json!({
        "key": key(s), "op": s.op, "shape": s.shape, "dtype": s.dtype,
        "dump": dump.to_string_lossy(),
    });
    if !s.lens.is_empty() {
        req["lens"] = serde_json::json!(s.lens);
    }
    if s.op == DECODE_SDPA {
        req["check"] = serde_json::json!(decode_peer::checked(s.lens.len()));
    }
    req
}

/// The reference for the fusion families' `mode` output and the tolerance it is held to:
/// the family's f64 reference on the peer's own inputs, with the family's tolerance. Eager
/// PyTorch stores every intermediate of the GELU chain in the dtype, as rooflab's unfused
/// v01 does (its reference rounds them and its tolerance applies); the compiled chain is
/// checked against the unrounded chain with that same, looser, tolerance (Inductor may keep
/// them in f32 or not).
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

/// What one column's output is held to.
pub enum Expected {
    /// Every element against the family's reference within (rel, abs) (fusion families).
    Elementwise(Vec<f32>, (f32, f32)),
    /// Prefill attention: the sampled rows of every head.
    Attention(attention_peer::Expected),
    /// Decode: the checked sequences, every head.
    Decode(decode_peer::Expected),
}

impl Expected {
    /// Elements of the output the dump must hold.
    fn output_len(&self) -> usize {
        match self {
            Expected::Elementwise(want, _) => want.len(),
            Expected::Attention(e) => e.output_len(),
            Expected::Decode(e) => e.output_len(),
        }
    }

    fn check(&self, what: &str, got: &[f32]) -> Result<(), String> {
        match self {
            Expected::Elementwise(want, (rel, abs)) => compare_f32(what, got, want, *rel, *abs),
            Expected::Attention(e) => e.check(what, got),
            Expected::Decode(e) => e.check(what, got),
        }
    }
}

/// A `usize` of the spec's shape.
fn dims<const N: usize>(spec: &TorchSpec, what: &str) -> Result<[usize; N], String> {
    let d: Vec<usize> = spec.shape.iter().map(|&x| x as usize).collect();
    d.try_into()
        .map_err(|_| format!("shape {:?} is not {what}", spec.shape))
}

/// The reference `mode`'s output of `spec` is checked against, from the peer's dumped inputs.
pub fn expected(spec: &TorchSpec, files: &Files, mode: Mode) -> Result<Expected, String> {
    let dt = dtype_of(spec)?;
    match spec.op.as_str() {
        SDPA | SDPA_CAUSAL => {
            let [b, h, s, d] = dims(spec, "[B, H, S, D]")?;
            let a = Attn::new(b, h, s, d, spec.op == SDPA_CAUSAL);
            let n = a.elements();
            let (q, k, v) = (
                read_array(file(files, "q")?, dt, n)?,
                read_array(file(files, "k")?, dt, n)?,
                read_array(file(files, "v")?, dt, n)?,
            );
            Ok(Expected::Attention(attention_peer::Expected::new(
                a, &q, &k, &v,
            )))
        }
        DECODE_SDPA => {
            let [b, hq, hkv, d] = dims(spec, "[B, Hq, Hkv, D]")?;
            if spec.lens.len() != b {
                return Err(format!("{} context lengths for a batch of {b}", spec.lens.len()));
            }
            let seqs = decode_peer::checked(b);
            let kv = decode_peer::kv_elements(hkv, d, &spec.lens, &seqs);
            let (q, k, v) = (
                read_array(file(files, "q")?, dt, b * hq * d)?,
                read_array(file(files, "k")?, dt, kv)?,
                read_array(file(files, "v")?, dt, kv)?,
            );
            decode_peer::Expected::new(hq, hkv, d, &spec.lens, &seqs, &q, &k, &v)
                .map(Expected::Decode)
        }
        _ => reference(spec, files, mode).map(|(want, tol)| Expected::Elementwise(want, tol)),
    }
}

/// Whether two columns of `op` share one reference (all but the GELU chain's eager and
/// compiled, which differ in rounding).
fn shared_reference(op: &str) -> bool {
    !op.starts_with("gelu_chain")
}

/// One column of one response: the time if the output matches the reference.
pub fn outcome(spec: &TorchSpec, resp: &serde_json::Value, mode: Mode) -> Outcome {
    outcome_with(spec, resp, mode, &mut None)
}

/// [`outcome`], the reference computed at most once per request where its columns share it
/// (`memo`: the first column's, kept for the second).
fn outcome_with(
    spec: &TorchSpec,
    resp: &serde_json::Value,
    mode: Mode,
    memo: &mut Option<Result<Expected, String>>,
) -> Outcome {
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
    let fresh;
    let exp = if shared_reference(&spec.op) {
        memo.get_or_insert_with(|| expected(spec, files, mode))
            .as_ref()
    } else {
        fresh = expected(spec, files, mode);
        fresh.as_ref()
    };
    let checked = exp.map_err(|e| e.clone()).and_then(|exp| {
        let dt = dtype_of(spec)?;
        let got = read_array(file(files, mode.field())?, dt, exp.output_len())?;
        exp.check(&format!("{} {}", mode.field(), key(spec)), &got)
    });
    match checked {
        Ok(()) => Outcome::Timed {
            median_us,
            compile_s: col.get("compile_s").and_then(|c| c.as_f64()),
            detail: col
                .get("detail")
                .and_then(|d| d.as_str())
                .map(str::to_string),
        },
        Err(e) => Outcome::NoFigure(format!("output not checked or wrong, no figure: {e}")),
    }
}

/// Every column `spec`'s op answers, from one response (the reference computed once where
/// the columns share it).
pub fn outcomes(spec: &TorchSpec, resp: &serde_json::Value) -> Vec<(Mode, Outcome)> {
    let mut memo = None;
    modes(&spec.op)
        .iter()
        .map(|&m| (m, outcome_with(spec, resp, m, &mut memo)))
        .collect()
}

/// Fill one row's peer columns from a request's outcomes.
pub fn apply(r: &mut Row, version: &str, outcomes: &[(Mode, Outcome)]) {
    for (mode, o) in outcomes {
        let (name, median, pct) = match o {
            Outcome::Timed {
                median_us, detail, ..
            } => (
                mode.name(version, detail.as_deref()),
                Some(*median_us),
                r.median_us.map(|ours| 100.0 * median_us / ours),
            ),
            Outcome::NoFigure(why) => (mode.failed(why), None, None),
        };
        if mode.second() {
            r.compiled_peer = Some(name);
            r.compiled_peer_median_us = median;
            r.pct_of_compiled_peer = pct;
            r.compiled_peer_compile_s = match o {
                Outcome::Timed { compile_s, .. } => *compile_s,
                Outcome::NoFigure(_) => None,
            };
        } else {
            r.peer = Some(name);
            r.peer_median_us = median;
            r.pct_of_peer = pct;
        }
    }
}

/// Every row with a spec gets `why` in each peer column its op fills.
fn mark(rows: &mut [Row], specs: &[Option<TorchSpec>], why: &str) {
    for (r, s) in rows.iter_mut().zip(specs) {
        for m in s.iter().flat_map(|s| modes(&s.op)) {
            if m.second() {
                r.compiled_peer = Some(why.to_string());
            } else {
                r.peer = Some(why.to_string());
            }
        }
    }
    println!("peer: {why}");
}

/// Time every distinct op of `specs` in PyTorch, check the outputs and fill the rows' peer
/// columns (`specs[i]` belongs to `rows[i]`).
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
        if !unique.contains(&s) {
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
    // One scratch folder per call (calls in one process, as tests are, never share one).
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let scratch = std::env::temp_dir().join(format!(
        "rooflab-torch-peer-{}-{call}",
        std::process::id()
    ));
    eprintln!(
        "peer: timing {} op(s) in PyTorch {version} ({})",
        unique.len(),
        path.display()
    );
    for (i, s) in unique.iter().enumerate() {
        let dump = scratch.join(i.to_string());
        let sent = writeln!(stdin, "{}", request(s, &dump)).and_then(|_| stdin.flush());
        let resp = match sent {
            Ok(()) => next_json(),
            Err(_) => None,
        };
        let every = |e: &str| -> Vec<(Mode, Outcome)> {
            modes(&s.op)
                .iter()
                .map(|&m| (m, Outcome::NoFigure(e.to_string())))
                .collect()
        };
        let got = match &resp {
            Some(v) if v.get("error").is_some() => every(v["error"].as_str().unwrap_or("?")),
            Some(v) => outcomes(s, v),
            None => every("the torch peer stopped answering"),
        };
        let _ = std::fs::remove_dir_all(&dump);
        for (m, o) in &got {
            if let Outcome::NoFigure(why) = o {
                eprintln!("peer: {} {}: {why}", key(s), m.field());
            }
        }
        for (r, rs) in rows.iter_mut().zip(specs) {
            if rs.as_ref() == Some(*s) {
                apply(r, &version, &got);
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
            lens: Vec::new(),
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
                compile_s: None,
                detail: None,
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
                    lens: Vec::new(),
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
            lens: Vec::new(),
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
            lens: Vec::new(),
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

    fn bf16s(v: &[f32]) -> Vec<f32> {
        v.iter().map(|&x| Dtype::Bf16.quantize(x)).collect()
    }

    fn attention_row(family: &str, median: f64) -> Row {
        let mut r = crate::report::tests::row(&format!("{family}/v02"), "l", median, 100);
        r.family = family.into();
        r
    }

    fn sdpa_spec(causal: bool) -> TorchSpec {
        TorchSpec {
            op: if causal { SDPA_CAUSAL } else { SDPA }.into(),
            shape: vec![1, 2, 300, 64],
            dtype: "bfloat16".into(),
            lens: Vec::new(),
        }
    }

    /// Prefill inputs and the right output of `spec` (and the output of the other mask).
    fn sdpa_case(spec: &TorchSpec) -> ([Vec<f32>; 3], Vec<f32>, Vec<f32>) {
        use crate::ops::attention::reference::attention_ref;
        let a = Attn::new(1, 2, 300, 64, spec.op == SDPA_CAUSAL);
        let [q, k, v] = crate::ops::attention::tests::inputs(&a, 3);
        let all: Vec<usize> = (0..a.seq).collect();
        let out = |a: &Attn| -> Vec<f32> {
            let o: Vec<f32> = attention_ref(a, &q, &k, &v, &all)
                .into_iter()
                .map(|x| x as f32)
                .collect();
            bf16s(&o)
        };
        let other = Attn {
            causal: !a.causal,
            ..a
        };
        let (good, wrong) = (out(&a), out(&other));
        ([q, k, v], good, wrong)
    }

    #[test]
    fn sdpa_columns_are_checked_against_the_attention_reference() {
        let dir = scratch("sdpa");
        for causal in [false, true] {
            let spec = sdpa_spec(causal);
            assert_eq!(modes(&spec.op), [Mode::SdpaFlash, Mode::SdpaCudnn]);
            let ([q, k, v], good, wrong) = sdpa_case(&spec);
            let mut files = Files::new();
            for (name, t) in [("q", &q), ("k", &k), ("v", &v), ("flash", &good), ("cudnn", &wrong)]
            {
                files.insert(name.into(), write(&dir, name, Dtype::Bf16, t).into());
            }
            let resp = serde_json::json!({
                "key": key(&spec),
                "flash": {"median_us": 10.0, "p10_us": 9.0, "p90_us": 11.0},
                "cudnn": {"median_us": 5.0, "p10_us": 4.0, "p90_us": 6.0, "detail": "9.10.2"},
                "files": files,
            });
            let got = outcomes(&spec, &resp);
            assert_eq!(
                got[0],
                (
                    Mode::SdpaFlash,
                    Outcome::Timed {
                        median_us: 10.0,
                        compile_s: None,
                        detail: None
                    }
                )
            );
            // The other mask's output (cuDNN's here) is refused.
            match &got[1].1 {
                Outcome::NoFigure(why) => assert!(why.contains("elements wrong"), "{why}"),
                o => panic!("the other mask's output counted: {o:?}"),
            }
            let mut r = attention_row("attention", 20.0);
            apply(&mut r, "9.9", &got);
            assert_eq!(r.peer.as_deref(), Some("torch 9.9 SDPA flash"));
            assert_eq!(r.pct_of_peer, Some(50.0));
            let c = r.compiled_peer.as_deref().unwrap();
            assert!(c.starts_with("SDPA cuDNN: output not checked or wrong"), "{c}");
            assert_eq!(r.pct_of_compiled_peer, None);

            // cuDNN right: its version in the name; cuDNN unavailable: the reason, no figure.
            files.insert("cudnn".into(), write(&dir, "cudnn", Dtype::Bf16, &good).into());
            let mut resp = resp.clone();
            resp["files"] = serde_json::Value::Object(files.clone());
            apply(&mut r, "9.9", &outcomes(&spec, &resp));
            assert_eq!(r.compiled_peer.as_deref(), Some("torch 9.9 SDPA cuDNN 9.10.2"));
            assert_eq!(r.pct_of_compiled_peer, Some(25.0));
            resp["cudnn"] = serde_json::json!({"error": "RuntimeError: No available kernel."});
            apply(&mut r, "9.9", &outcomes(&spec, &resp));
            assert_eq!(
                r.compiled_peer.as_deref(),
                Some("SDPA cuDNN: RuntimeError: No available kernel.")
            );
            assert_eq!(
                (r.compiled_peer_median_us, r.pct_of_compiled_peer),
                (None, None)
            );
            assert_eq!(r.pct_of_peer, Some(50.0), "flash's figure stays");

            // A corrupted element in a sampled row, or a NaN anywhere, is refused.
            let mut bad = good.clone();
            bad[64 * 150 + 7] += 0.05;
            files.insert("flash".into(), write(&dir, "flash", Dtype::Bf16, &bad).into());
            resp["files"] = serde_json::Value::Object(files.clone());
            assert!(matches!(
                outcome(&spec, &resp, Mode::SdpaFlash),
                Outcome::NoFigure(_)
            ));
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Decode inputs as the script makes and dumps them: queries `[B, Hq, D]`, and for each
    /// sequence its keys and values `[len, Hkv, D]`; the right output `[B, Hq, D]`.
    struct DecodeCase {
        spec: TorchSpec,
        q: Vec<f32>,
        kv: Vec<(Vec<f32>, Vec<f32>)>,
        out: Vec<f32>,
    }

    fn decode_case(lens: &[u32]) -> DecodeCase {
        use crate::ops::attention::reference::attend;
        let (hq, hkv, d) = (8usize, 2usize, 64usize);
        let mut r = rng(17);
        let q = bf16s(&random_f32(&mut r, lens.len() * hq * d, -1.0, 1.0));
        let kv: Vec<(Vec<f32>, Vec<f32>)> = lens
            .iter()
            .map(|&l| {
                let n = l as usize * hkv * d;
                (
                    bf16s(&random_f32(&mut r, n, -1.0, 1.0)),
                    bf16s(&random_f32(&mut r, n, -1.0, 1.0)),
                )
            })
            .collect();
        let mut out = Vec::new();
        for (b, &len) in lens.iter().enumerate() {
            let (k, v) = &kv[b];
            for h in 0..hq {
                let g = h / (hq / hkv);
                let row = |j: usize| (j * hkv + g) * d..(j * hkv + g + 1) * d;
                let qr = &q[(b * hq + h) * d..(b * hq + h + 1) * d];
                let o = attend(qr, len as usize, 0.125, |j| &k[row(j)], |j| &v[row(j)]);
                out.extend(o.into_iter().map(|x| Dtype::Bf16.quantize(x as f32)));
            }
        }
        DecodeCase {
            spec: TorchSpec {
                op: DECODE_SDPA.into(),
                shape: vec![lens.len() as u64, hq as u64, hkv as u64, d as u64],
                dtype: "bfloat16".into(),
                lens: lens.to_vec(),
            },
            q,
            kv,
            out,
        }
    }

    /// The files the script would dump for `c` (`out` as its output) into `dir`.
    fn decode_files(dir: &Path, c: &DecodeCase, out: &[f32]) -> Files {
        let seqs = decode_peer::checked(c.spec.lens.len());
        let cat = |which: usize| -> Vec<f32> {
            seqs.iter()
                .flat_map(|&b| if which == 0 { &c.kv[b].0 } else { &c.kv[b].1 }.clone())
                .collect()
        };
        let mut files = Files::new();
        for (name, t) in [("q", c.q.clone()), ("k", cat(0)), ("v", cat(1)), ("sdpa", out.to_vec())] {
            files.insert(name.into(), write(dir, name, Dtype::Bf16, &t).into());
        }
        files
    }

    #[test]
    fn decode_column_is_checked_against_the_decode_reference() {
        let dir = scratch("decode");
        let c = decode_case(&[300, 1, 57, 16, 120]);
        assert_eq!(modes(DECODE_SDPA), [Mode::SdpaContiguous]);
        // The request carries the lengths and the sequences to dump; other ops' do not.
        let req = request(&c.spec, Path::new("/d"));
        assert_eq!(req["lens"], serde_json::json!([300, 1, 57, 16, 120]));
        assert_eq!(req["check"], serde_json::json!([0, 1, 2, 4]));
        assert_eq!(key(&c.spec), "decode_sdpa:5x8x2x64:bfloat16:494 keys");
        let softmax = TorchSpec {
            op: "softmax".into(),
            shape: vec![2, 2],
            dtype: "float32".into(),
            lens: Vec::new(),
        };
        let req = request(&softmax, Path::new("/d"));
        assert!(req.get("lens").is_none() && req.get("check").is_none());

        let resp = |files: Files| {
            serde_json::json!({
                "key": key(&c.spec),
                "sdpa": {"median_us": 30.0, "p10_us": 29.0, "p90_us": 31.0,
                         "detail": "math, masked"},
                "files": files,
            })
        };
        let got = outcomes(&c.spec, &resp(decode_files(&dir, &c, &c.out)));
        let mut r = attention_row("decode", 15.0);
        apply(&mut r, "9.9", &got);
        assert_eq!(
            r.peer.as_deref(),
            Some("torch 9.9 SDPA (math, masked) on a contiguous KV copy (padded to the longest context)")
        );
        assert_eq!(r.pct_of_peer, Some(200.0));
        assert_eq!(r.compiled_peer, None, "decode has one peer column");

        let (hq, d) = (8, 64);
        // One element of a checked sequence off; a NaN in an unchecked one (sequence 3).
        let mut off = c.out.clone();
        off[(2 * hq + 5) * d + 9] += 0.05;
        let mut nan = c.out.clone();
        nan[3 * hq * d] = f32::NAN;
        // Sequence 1's output taken from sequence 0's (the lengths ignored, say).
        let mut swapped = c.out.clone();
        swapped.copy_within(0..hq * d, hq * d);
        for (what, bad) in [("off", off), ("nan", nan), ("swapped", swapped)] {
            match outcome(&c.spec, &resp(decode_files(&dir, &c, &bad)), Mode::SdpaContiguous) {
                Outcome::NoFigure(why) => assert!(why.contains("wrong"), "{what}: {why}"),
                o => panic!("{what} counted: {o:?}"),
            }
        }
        // Lengths that do not match the batch: no reference, no figure.
        let short = TorchSpec {
            lens: vec![300, 1],
            ..c.spec.clone()
        };
        assert!(matches!(
            outcome(&short, &resp(decode_files(&dir, &c, &c.out)), Mode::SdpaContiguous),
            Outcome::NoFigure(_)
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The whole exchange for the SDPA ops with a stand-in script that checks each request's
    /// fields (shape, lengths, sequences to dump) and answers with prepared dumps: one request
    /// per distinct spec, both prefill columns and decode's one filled, and a decode spec
    /// with other lengths sent as its own request.
    #[test]
    fn fill_sends_lengths_and_fills_sdpa_columns() {
        let dir = scratch("fill-sdpa");
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        let prefill = sdpa_spec(true);
        let ([q, k, v], good, _) = sdpa_case(&prefill);
        let mut pf = Files::new();
        for (name, t) in [("q", &q), ("k", &k), ("v", &v), ("flash", &good)] {
            pf.insert(name.into(), write(&src, name, Dtype::Bf16, t).into());
        }
        let dsub = src.join("decode");
        std::fs::create_dir_all(&dsub).unwrap();
        let c = decode_case(&[40, 7, 1]);
        let df = decode_files(&dsub, &c, &c.out);
        let plan = serde_json::json!({
            "sdpa_causal": {
                "expect": {"shape": prefill.shape, "dtype": "bfloat16"},
                "files": pf,
                "response": {
                    "flash": {"median_us": 10.0, "p10_us": 9.0, "p90_us": 11.0},
                    "cudnn": {"error": "RuntimeError: No available kernel. (cuDNN: not built)"},
                },
            },
            "decode_sdpa": {
                "expect": {"shape": c.spec.shape, "lens": c.spec.lens, "check": [0, 1, 2]},
                "files": df,
                "response": {"sdpa": {"median_us": 40.0, "p10_us": 39.0, "p90_us": 41.0,
                                      "detail": "flash, masked"}},
            },
        });
        let fake = dir.join("fake_peer.py");
        std::fs::write(
            &fake,
            format!(
                r#"import json, os, shutil, sys
PLAN = json.loads(r'''{plan}''')
print(json.dumps({{"torch": "9.9", "compile": None}}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    p = PLAN[req["op"]]
    bad = [k for k, v in p["expect"].items() if req.get(k) != v]
    if bad:
        print(json.dumps({{"key": req["key"], "error": "request differs in " + ",".join(bad)}}), flush=True)
        continue
    os.makedirs(req["dump"], exist_ok=True)
    files = {{}}
    for name, path in p["files"].items():
        files[name] = os.path.join(req["dump"], name + ".bin")
        shutil.copyfile(path, files[name])
    print(json.dumps(dict(p["response"], key=req["key"], files=files)), flush=True)
"#
            ),
        )
        .unwrap();
        let other_lens = TorchSpec {
            lens: vec![40, 8, 1],
            ..c.spec.clone()
        };
        let specs = vec![
            Some(prefill.clone()),
            Some(prefill),
            Some(c.spec.clone()),
            Some(other_lens),
        ];
        let mut rows = vec![
            attention_row("attention", 20.0),
            attention_row("attention", 40.0),
            attention_row("decode", 20.0),
            attention_row("decode", 20.0),
        ];
        fill_with(&fake, &mut rows, &specs);
        for (r, pct) in rows[..2].iter().zip([50.0, 25.0]) {
            assert_eq!(r.peer.as_deref(), Some("torch 9.9 SDPA flash"));
            assert_eq!(r.pct_of_peer, Some(pct));
            let c = r.compiled_peer.as_deref().unwrap();
            assert!(c.starts_with("SDPA cuDNN: RuntimeError: No available kernel"), "{c}");
        }
        assert!(rows[2].peer.as_deref().unwrap().contains("(flash, masked) on a contiguous KV"));
        assert_eq!(rows[2].pct_of_peer, Some(200.0));
        assert_eq!(rows[2].compiled_peer, None);
        let p = rows[3].peer.as_deref().unwrap();
        assert!(p.starts_with("SDPA on a contiguous KV copy: request differs in lens"), "{p}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Without the script, each row with a spec says why in the columns its op fills.
    #[test]
    fn a_missing_peer_marks_only_the_columns_an_op_fills() {
        let c = decode_case(&[3]);
        let specs = vec![Some(sdpa_spec(false)), Some(c.spec), None];
        let mut rows = vec![
            attention_row("attention", 1.0),
            attention_row("decode", 1.0),
            attention_row("decode", 1.0),
        ];
        mark(&mut rows, &specs, "torch not found");
        assert_eq!(rows[0].peer.as_deref(), Some("torch not found"));
        assert_eq!(rows[0].compiled_peer.as_deref(), Some("torch not found"));
        assert_eq!(rows[1].peer.as_deref(), Some("torch not found"));
        assert_eq!(rows[1].compiled_peer, None);
        assert_eq!(rows[2].peer, None);
    }

    /// Tables and the page name each family's peer columns for what they hold: SDPA flash
    /// and cuDNN for attention, SDPA on a contiguous KV copy for decode, torch.compile only
    /// where it is one.
    #[test]
    fn headers_name_what_the_peer_columns_hold() {
        let mut softmax = attention_row("softmax", 10.0);
        softmax.peer = Some("torch 9.9 eager".into());
        softmax.compiled_peer = Some("torch.compile 9.9".into());
        let mut prefill = attention_row("attention", 10.0);
        prefill.peer = Some("torch 9.9 SDPA flash".into());
        prefill.compiled_peer = Some("torch 9.9 SDPA cuDNN 9.10.2".into());
        let mut decode = attention_row("decode", 10.0);
        decode.peer = Some("torch 9.9 SDPA (math, masked) on a contiguous KV copy".into());
        let rows = vec![softmax, prefill, decode];

        let t = crate::report::table(&rows, true, None).to_string();
        assert!(t.contains("% torch.compile / SDPA cuDNN"), "{t}");
        let t = crate::report::table(&rows[1..], true, None).to_string();
        assert!(t.contains("% SDPA cuDNN") && !t.contains("compile"), "{t}");

        let md = crate::docs::family_table(&rows, "attention");
        assert!(md.contains("| % of SDPA flash | % of SDPA cuDNN |"), "{md}");
        assert!(!md.contains("torch.compile") && !md.contains("% of peer"));
        let md = crate::docs::family_table(&rows, "decode");
        assert!(md.contains("| % of SDPA, contiguous KV |\n"), "{md}");
        let md = crate::docs::family_table(&rows, "softmax");
        assert!(md.contains("| % of peer | % of torch.compile |"), "{md}");

        let report = crate::report::Report {
            rooflab_version: "0".into(),
            date_utc: "d".into(),
            device: None,
            measured: true,
            ceilings: None,
            roofs: None,
            rows,
            note: None,
        };
        let html = crate::html::page(&report, &[]).unwrap();
        for h in [
            "<th>SDPA flash</th><th>% of SDPA flash</th><th>SDPA cuDNN</th><th>% of SDPA cuDNN</th>",
            "<th>SDPA, contiguous KV</th><th>% of SDPA, contiguous KV</th>",
            "<th>peer</th><th>% of peer</th><th>torch.compile</th><th>% of torch.compile</th>",
            "the black tick is the PyTorch SDPA, flash backend on the same row",
        ] {
            assert!(html.contains(h), "{h}");
        }
    }
}
