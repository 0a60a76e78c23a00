#!/usr/bin/env python3
"""PyTorch peer for rooflab: the same ops in PyTorch, timed on the GPU, outputs dumped for
rooflab's CPU reference.

- Fusion families: eager PyTorch and torch.compile (ops softmax, layer_norm, rms_norm,
  gelu_chain_tanh, gelu_chain_erf; columns "eager", "compiled").
- Prefill attention: torch.nn.functional.scaled_dot_product_attention on Q, K, V [B, H, S, D]
  bf16, scale D^-1/2, held to the flash backend and then to the cuDNN backend through
  torch.nn.attention.sdpa_kernel (ops sdpa, sdpa_causal; columns "flash", "cudnn"). A backend
  this torch lacks, or that refuses the shape, gives its reason (SDPA's own warnings) in the
  column, not a crash.
- Decode: what a user without a paged kernel runs, SDPA on the queries [B, Hq, 1, D] against
  a contiguous copy of the KV cache [B, Hkv, Lmax, D] (each sequence padded to the longest
  context, Lmax), a boolean mask over the padding (none when nothing is padded),
  enable_gqa=True, and whichever backend SDPA's dispatcher picks, reported in "detail"
  (op decode_sdpa; column "sdpa").

Protocol (one process for the whole bench, so torch is imported once):
- first stdout line: {"torch": VERSION, "compile": null | "why torch.compile cannot run"}
  or {"error": "..."} (torch missing or no CUDA: exit status 0, the bench then says so in the
  peer columns and nothing else fails);
- then, for each request line on stdin, {"key", "op", "shape", "dtype": "float32"|"bfloat16",
  "dump": DIR or null} (shape: [rows, cols] for the fusion ops, [B, H, S, D] for sdpa,
  [B, Hq, Hkv, D] for decode_sdpa, which adds "lens": every sequence's context length and
  "check": the sequences whose keys and values to dump), one result line:
  {"key", COLUMN: TIMES | {"error"}, ..., "files": {...}},
  TIMES = {"median_us", "p10_us", "p90_us"} (compiled adds "compile_s" and "kernels"; cudnn
  and sdpa add "detail": the cuDNN version, or the backend SDPA picked and whether it had a
  mask).

Checking: with "dump", the first input set and each column's output on it are written to DIR
as raw little-endian arrays of the dtype ("files" names them: x, x2 (the chain's residual),
w, b, eager, compiled; q, k, v, flash, cudnn; for decode q [B, Hq, D], sdpa [B, Hq, D], and k,
v: each checked sequence's keys and values before padding, [len, Hkv, D], one sequence after
the other); the bench checks them against rooflab's CPU reference before any time counts, and
deletes them.

Timing (every column alike): 10 warm-up calls, then REPS calls each between two CUDA events
(fewer, down to 10, for calls past 20 ms: about 1 s of timed calls, as rooflab's rows),
queued behind a GPU spin so that the host's per-call cost is hidden (GPU time per call, as
rooflab's rows), random non-zero inputs, several input sets rotated when one would fit in L2
(prefill: at most 4, as rooflab's rows; decode: one, as rooflab's decode rows). torch.compile:
`dynamic=False, fullgraph=True`, one compile per case after `torch._dynamo.reset()`, timed
separately (compile_s: the first call, wall clock) and never inside the figures; the compiled
function must have generated at least one kernel (else it is reported as an eager fallback),
and a recompile during timing is an error (`error_on_recompile`), not a figure.
`--self-test` runs one tiny case of each op, eager and compiled, and of each SDPA column,
against a float64 formula (a cuDNN backend this torch cannot run is reported, not failed).
"""
import json
import os
import sys
import time

REPS = 50
WARMUP = 10
L2_BYTES = 60 * 1024 * 1024  # H200; rotation only needs the order of magnitude
OPS = ("softmax", "layer_norm", "rms_norm", "gelu_chain_tanh", "gelu_chain_erf")
SDPA_OPS = ("sdpa", "sdpa_causal")
DECODE_OP = "decode_sdpa"
# Prefill's columns: (response field, SDPBackend member).
SDPA_COLUMNS = (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"))
# Rooflab's prefill rows rotate at most this many input sets.
SDPA_MAX_SETS = 4
# A padded key's value in decode's contiguous cache: finite (the mask hides it), and far from
# every real value, so that a mask off by one moves the output far past the tolerance.
PAD_VALUE = 8.0
# Calls longer than this are timed fewer times (about TIME_BUDGET_S of timed calls, >= 10).
LONG_CALL_S = 20e-3
TIME_BUDGET_S = 1.0


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def load_torch():
    try:
        import torch  # noqa: F401
    except Exception:  # ImportError, or a broken install
        return None, "torch not found"
    import torch
    if not torch.cuda.is_available():
        return None, "torch found but CUDA is not available"
    return torch, None


def compile_problem(torch):
    """None when torch.compile can run here, else why not (no triton, too old a torch)."""
    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    try:
        import triton  # noqa: F401
    except Exception:
        return "torch.compile needs triton, which is not installed"
    try:
        import torch._dynamo  # noqa: F401
        import torch._inductor.metrics  # noqa: F401
    except Exception as ex:
        return f"torch.compile unavailable: {ex!r}"
    return None


def make_call(torch, op, rows, cols, dtype):
    """(list of argument sets, weights (w, b), function of one set) for one op at one shape."""
    dt = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    F = torch.nn.functional
    elem = torch.finfo(dt).bits // 8
    per_set = rows * cols * elem * (3 if op.startswith("gelu_chain") else 2)
    sets = max(1, min(64, -(-3 * L2_BYTES // per_set)))

    def rand(*shape):
        # Uniform in [0.5, 1.5) with random signs: never zero.
        t = torch.rand(*shape, device="cuda", dtype=torch.float32) + 0.5
        sign = torch.randint(0, 2, shape, device="cuda", dtype=torch.float32) * 2 - 1
        return (t * sign).to(dt)

    w, b = rand(cols), rand(cols)
    if op == "softmax":
        args = [(rand(rows, cols),) for _ in range(sets)]

        def fn(a):
            return torch.softmax(a[0], dim=-1)
    elif op == "layer_norm":
        args = [(rand(rows, cols),) for _ in range(sets)]

        def fn(a):
            return F.layer_norm(a[0], (cols,), w, b, 1e-5)
    elif op == "rms_norm":
        args = [(rand(rows, cols),) for _ in range(sets)]

        def fn(a):
            return F.rms_norm(a[0], (cols,), w, 1e-5)
    elif op in ("gelu_chain_tanh", "gelu_chain_erf"):
        approx = "tanh" if op.endswith("tanh") else "none"
        args = [(rand(rows, cols), rand(rows, cols)) for _ in range(sets)]

        def fn(a):
            return F.gelu(a[0] * w + b, approximate=approx) + a[1]
    else:
        known = OPS + SDPA_OPS + (DECODE_OP,)
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(known)}")
    return args, (w, b), fn


def timed_calls(per_call_s):
    """REPS, or fewer for calls past LONG_CALL_S: about TIME_BUDGET_S of them, never < 10."""
    if per_call_s <= LONG_CALL_S:
        return REPS
    return max(10, min(REPS, int(TIME_BUDGET_S / per_call_s)))


def time_fn(torch, fn, args):
    """Median and spread of REPS calls, each between two CUDA events, after WARMUP calls.

    The figures are GPU time per call, as rooflab's own rows are: before the timed calls the
    GPU is given a spin (`torch.cuda._sleep`) longer than the host needs to queue all of
    them, so Python's per-call cost (dynamo's guards, the compiled wrapper: tens of µs)
    overlaps the GPU work instead of leaving the GPU idle between events."""
    with torch.no_grad():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(WARMUP):
            fn(args[i % len(args)])
        host_per_call = (time.perf_counter() - t0) / WARMUP
        torch.cuda.synchronize()
        reps = timed_calls((time.perf_counter() - t0) / WARMUP)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
        # 2 GHz is above every clock here: the spin lasts at least this long.
        torch.cuda._sleep(int(2e9 * (2.0 * reps * host_per_call + 1e-3)))
        events[0].record()
        for i in range(reps):
            fn(args[i % len(args)])
            events[i + 1].record()
        torch.cuda.synchronize()
    us = sorted(events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(reps))
    q = lambda p: us[round((len(us) - 1) * p)]  # noqa: E731  (same quantiles as the bench)
    return {"median_us": q(0.5), "p10_us": q(0.1), "p90_us": q(0.9)}


def dump(torch, t, path):
    """Write tensor t as its raw little-endian bytes (bf16 as its 16-bit patterns)."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    with open(path, "wb") as f:
        f.write(t.numpy().tobytes())


def compiled_version(torch, fn, args):
    """(compiled function, compile seconds, kernels generated) or raises with the reason."""
    import torch._dynamo
    import torch._inductor.metrics as metrics
    torch._dynamo.reset()
    metrics.reset()
    cfn = torch.compile(fn, dynamic=False, fullgraph=True)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        cfn(args[0])
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    kernels = int(getattr(metrics, "generated_kernel_count", 0))
    if kernels == 0:
        raise RuntimeError("torch.compile generated no kernel (an eager fallback): no figure")
    return cfn, compile_s, kernels


def recompile_errors(torch, on):
    """A recompile while timing raises instead of silently timing a second graph (or, past
    the cache limit, eager code). Versions without the switch rely on the kernel count."""
    try:
        torch._dynamo.config.error_on_recompile = on
    except Exception:
        pass


class Refused(Exception):
    """A column that cannot run here, its message already the row's reason."""


def short_error(ex, why=""):
    """The first line of an exception (and SDPA's reasons), at most 300 characters."""
    msg = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
    text = f"{type(ex).__name__}: {msg}"
    if why:
        text += f" ({why})"
    return text[:300]


def uniform(torch, *shape):
    """bf16 uniform in [-1, 1), as rooflab's attention and decode inputs."""
    return torch.empty(*shape, device="cuda", dtype=torch.bfloat16).uniform_(-1.0, 1.0)


def sdpa_kernel_for(torch, member):
    """A context manager that holds SDPA to one backend (SDPBackend.member), or Refused."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception:
        raise Refused(f"torch {torch.__version__} has no torch.nn.attention.sdpa_kernel")
    backend = getattr(SDPBackend, member, None)
    if backend is None:
        raise Refused(f"torch {torch.__version__} has no SDPBackend.{member}")
    return sdpa_kernel([backend])


def first_call(torch, fn, a):
    """fn(a) once, synchronized. A failure is Refused with SDPA's warnings appended: they say
    why each backend it tried would not take the inputs."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.no_grad():
                out = fn(a)
            torch.cuda.synchronize()
            return out
        except Exception as ex:
            why = "; ".join(" ".join(str(w.message).split()) for w in caught)
            raise Refused(short_error(ex, why)) from None


def cudnn_version(torch):
    """cuDNN's version as text (9.10.2), or None."""
    try:
        v = int(torch.backends.cudnn.version() or 0)
    except Exception:
        return None
    if v <= 0:
        return None
    if v >= 90000:
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return f"{v // 1000}.{v // 100 % 10}.{v % 100}"


def sdpa_request(req):
    """(B, H, S, D, causal) of a prefill request, checked."""
    shape = [int(x) for x in req["shape"]]
    if len(shape) != 4 or min(shape) <= 0:
        raise ValueError(f"shape {req['shape']} is not four positive sizes [B, H, S, D]")
    if req["dtype"] != "bfloat16":
        raise ValueError(f"SDPA runs on bfloat16 here, not {req['dtype']}")
    return shape + [req["op"] == "sdpa_causal"]


def make_sdpa(torch, req):
    """(input sets (q, k, v), function of one set) for a prefill request."""
    b, h, s, d, causal = sdpa_request(req)
    per_set = 4 * b * h * s * d * 2  # Q, K, V read, O written
    sets = max(1, min(SDPA_MAX_SETS, -(-3 * L2_BYTES // per_set)))
    args = [tuple(uniform(torch, b, h, s, d) for _ in range(3)) for _ in range(sets)]
    F = torch.nn.functional
    scale = d ** -0.5

    def fn(a):
        return F.scaled_dot_product_attention(a[0], a[1], a[2], is_causal=causal, scale=scale)
    return args, fn


def run_sdpa(torch, req):
    """Prefill: the flash column, then the cuDNN column, each held to its backend."""
    args, fn = make_sdpa(torch, req)
    out = {"key": req["key"]}
    files = {}
    where = req.get("dump")
    if where:
        os.makedirs(where, exist_ok=True)
        for name, t in zip(("q", "k", "v"), args[0]):
            files[name] = os.path.join(where, f"{name}.bin")
            dump(torch, t, files[name])
    for field, member in SDPA_COLUMNS:
        try:
            with sdpa_kernel_for(torch, member):
                first = first_call(torch, fn, args[0])
                if where:
                    files[field] = os.path.join(where, f"{field}.bin")
                    dump(torch, first, files[field])
                del first
                t = time_fn(torch, fn, args)
            version = cudnn_version(torch) if field == "cudnn" else None
            if version:
                t["detail"] = version
            out[field] = t
        except Refused as ex:
            out[field] = {"error": str(ex)}
        except Exception as ex:
            out[field] = {"error": short_error(ex)}
    out["files"] = files
    return out


def decode_request(req):
    """(B, Hq, Hkv, D, lens, check) of a decode request, checked."""
    shape = [int(x) for x in req["shape"]]
    if len(shape) != 4 or min(shape) <= 0:
        raise ValueError(f"shape {req['shape']} is not four positive sizes [B, Hq, Hkv, D]")
    b, hq, hkv, d = shape
    if hq % hkv:
        raise ValueError(f"Hq {hq} is not a multiple of Hkv {hkv}")
    if req["dtype"] != "bfloat16":
        raise ValueError(f"SDPA runs on bfloat16 here, not {req['dtype']}")
    lens = [int(x) for x in req.get("lens", [])]
    if len(lens) != b:
        raise ValueError(f"{len(lens)} context lengths for a batch of {b}")
    if min(lens) < 1:
        raise ValueError("a context length of 0 (nothing to attend to)")
    check = [int(x) for x in req.get("check", [])]
    if any(not 0 <= s < b for s in check):
        raise ValueError(f"sequences to check {check} outside the batch of {b}")
    return b, hq, hkv, d, lens, check


# SDPBackend's values (torch's sdp::SDPBackend enum), as the decode column names them.
BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cuDNN", 4: "overrideable"}


def make_decode(torch, req):
    """((q, k, v, mask), function of them, lens, check) for a decode request: the queries
    [B, Hq, 1, D]; a contiguous cache [B, Hkv, Lmax, D] whose padded values are PAD_VALUE;
    mask [B, 1, 1, Lmax], True where a key is in its sequence's context, None when no sequence
    is padded (then SDPA needs none, and a user would pass none)."""
    b, hq, hkv, d, lens, check = decode_request(req)
    lmax = max(lens)
    q = uniform(torch, b, hq, 1, d)
    k = uniform(torch, b, hkv, lmax, d)
    v = uniform(torch, b, hkv, lmax, d)
    pad = torch.arange(lmax, device="cuda")[None, :] >= torch.tensor(lens, device="cuda")[:, None]
    mask = None
    if bool(pad.any()):
        v.masked_fill_(pad[:, None, :, None], PAD_VALUE)
        mask = (~pad)[:, None, None, :]
    del pad
    F = torch.nn.functional
    scale = d ** -0.5

    def fn(a):
        return F.scaled_dot_product_attention(
            a[0], a[1], a[2], attn_mask=a[3], scale=scale, enable_gqa=True)
    return (q, k, v, mask), fn, lens, check


def chosen_backend(torch, a):
    """The backend SDPA's dispatcher picks for decode's inputs, or None if it won't say."""
    q, k, v, mask = a
    try:
        i = int(torch._fused_sdp_choice(q, k, v, mask, 0.0, False,
                                        scale=q.shape[-1] ** -0.5, enable_gqa=True))
    except Exception:
        return None
    return BACKENDS.get(i, f"backend {i}")


def run_decode(torch, req):
    """Decode: SDPA on a contiguous copy of the cache, the backend SDPA picks, one input set
    (rooflab's decode rows reuse one too)."""
    a, fn, lens, check = make_decode(torch, req)
    q, k, v, mask = a
    b, hq, _, d = q.shape
    out = {"key": req["key"]}
    files = {}
    where = req.get("dump")
    if where:
        os.makedirs(where, exist_ok=True)
        files["q"] = os.path.join(where, "q.bin")
        dump(torch, q.view(b, hq, d), files["q"])
        for name, t in (("k", k), ("v", v)):
            # Each checked sequence's keys before padding, [len, Hkv, D].
            parts = [t[s, :, :lens[s], :].transpose(0, 1) for s in check]
            files[name] = os.path.join(where, f"{name}.bin")
            dump(torch, torch.cat(parts, 0) if parts else t.new_empty(0), files[name])
            del parts
    backend = chosen_backend(torch, a)
    detail = f"{backend or 'backend ?'}, {'masked' if mask is not None else 'no mask'}"
    try:
        first = first_call(torch, fn, a)
        if where:
            files["sdpa"] = os.path.join(where, "sdpa.bin")
            dump(torch, first.view(b, hq, d), files["sdpa"])
        del first
        t = time_fn(torch, fn, [a])
        t["detail"] = detail
        out["sdpa"] = t
    except Refused as ex:
        out["sdpa"] = {"error": f"{detail}: {ex}"[:300]}
    except Exception as ex:
        out["sdpa"] = {"error": f"{detail}: {short_error(ex)}"[:300]}
    out["files"] = files
    return out


def run_case(torch, req, compile_why):
    if req["op"] in SDPA_OPS:
        return run_sdpa(torch, req)
    if req["op"] == DECODE_OP:
        return run_decode(torch, req)
    op, dtype = req["op"], req["dtype"]
    rows, cols = int(req["shape"][0]), int(req["shape"][1])
    if rows <= 0 or cols <= 0:
        raise ValueError(f"shape {req['shape']} must be two positive sizes")
    args, (w, b), fn = make_call(torch, op, rows, cols, dtype)
    out = {"key": req["key"]}
    files = {}
    where = req.get("dump")
    if where:
        os.makedirs(where, exist_ok=True)
        for name, t in (("x", args[0][0]), ("w", w), ("b", b)) + (
            (("x2", args[0][1]),) if len(args[0]) > 1 else ()
        ):
            files[name] = os.path.join(where, f"{name}.bin")
            dump(torch, t, files[name])
    try:
        out["eager"] = time_fn(torch, fn, args)
        if where:
            with torch.no_grad():
                files["eager"] = os.path.join(where, "eager.bin")
                dump(torch, fn(args[0]), files["eager"])
    except Exception as ex:
        out["eager"] = {"error": f"{type(ex).__name__}: {ex}"}
    if compile_why:
        out["compiled"] = {"error": compile_why}
    else:
        import torch._dynamo
        try:
            cfn, compile_s, kernels = compiled_version(torch, fn, args)
            recompile_errors(torch, True)
            try:
                t = time_fn(torch, cfn, args)
                if where:
                    with torch.no_grad():
                        files["compiled"] = os.path.join(where, "compiled.bin")
                        dump(torch, cfn(args[0]), files["compiled"])
            finally:
                recompile_errors(torch, False)
            t.update(compile_s=compile_s, kernels=kernels)
            out["compiled"] = t
        except Exception as ex:
            msg = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
            out["compiled"] = {"error": f"{type(ex).__name__}: {msg}"[:300]}
    out["files"] = files
    return out


def self_test(torch):
    """One tiny case of each op against a float64 formula; raises on a mismatch."""
    F = torch.nn.functional
    x = torch.randn(3, 5, dtype=torch.float64, device="cuda")
    w = torch.randn(5, dtype=torch.float64, device="cuda")
    b = torch.randn(5, dtype=torch.float64, device="cuda")
    e = torch.exp(x - x.max(-1, keepdim=True).values)
    assert torch.allclose(torch.softmax(x, -1), e / e.sum(-1, keepdim=True))
    mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    assert torch.allclose(F.layer_norm(x, (5,), w, b, 1e-5), (x - mu) / torch.sqrt(var + 1e-5) * w + b)
    ms = (x * x).mean(-1, keepdim=True)
    assert torch.allclose(F.rms_norm(x, (5,), w, 1e-5), x / torch.sqrt(ms + 1e-5) * w)
    u = x * w + b
    erf = 0.5 * u * (1 + torch.erf(u / 2 ** 0.5))
    assert torch.allclose(F.gelu(u, approximate="none"), erf)
    why = compile_problem(torch)
    for op in OPS:
        for dtype in ("float32", "bfloat16"):
            r = run_case(torch, {"key": "t", "op": op, "shape": [64, 256], "dtype": dtype}, why)
            for col in ("eager",) + (() if why else ("compiled",)):
                t = r[col]
                assert "error" not in t, (op, dtype, col, t)
                assert 0 < t["p10_us"] <= t["median_us"] <= t["p90_us"], (op, dtype, col, t)
    report = {"torch": torch.__version__, "compile": why}
    report.update(self_test_sdpa(torch))
    report["self_test"] = "ok"
    return report


def attention_f64(torch, q, k, v, causal=False, mask=None):
    """softmax(q·kᵀ/√D [+ causal mask] [+ boolean mask])·v in float64, K and V heads repeated
    for GQA (query head h reads KV head h // group, as enable_gqa does)."""
    q, k, v = (t.double() for t in (q, k, v))
    if k.shape[1] != q.shape[1]:
        g = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v


def self_test_sdpa(torch):
    """Prefill (flash must run; cuDNN may be unavailable, and says why) and decode (masked and
    not) against attention_f64, then their timed columns; returns what it found."""
    found = {}
    for op in SDPA_OPS:
        req = {"key": "t", "op": op, "shape": [2, 3, 200, 64], "dtype": "bfloat16"}
        args, fn = make_sdpa(torch, req)
        want = attention_f64(torch, *args[0], causal=op == "sdpa_causal")
        for field, member in SDPA_COLUMNS:
            try:
                with sdpa_kernel_for(torch, member):
                    got = first_call(torch, fn, args[0])
            except Refused as ex:
                assert field != "flash", (op, str(ex))
                found[f"sdpa_{field}"] = f"unavailable: {ex}"
                continue
            err = (got.double() - want).abs().max().item()
            assert err < 1e-2, (op, field, err)
            found.setdefault(f"sdpa_{field}", "ok")
        r = run_case(torch, req, None)
        for field, _ in SDPA_COLUMNS:
            t = r[field]
            if field == "flash" or found[f"sdpa_{field}"] == "ok":
                assert "error" not in t, (op, field, t)
                assert 0 < t["p10_us"] <= t["median_us"] <= t["p90_us"], (op, field, t)
    for lens in ([40, 7, 1], [33, 33, 33]):
        req = {"key": "t", "op": DECODE_OP, "shape": [3, 8, 2, 64], "dtype": "bfloat16",
               "lens": lens, "check": [0, 2]}
        a, fn, _, _ = make_decode(torch, req)
        q, k, v, mask = a
        with torch.no_grad():
            got = fn(a)
        for s, n in enumerate(lens):
            want = attention_f64(torch, q[s:s + 1], k[s:s + 1, :, :n], v[s:s + 1, :, :n])
            err = (got[s:s + 1].double() - want).abs().max().item()
            assert err < 1e-2, (lens, s, err)
        r = run_case(torch, req, None)
        t = r["sdpa"]
        assert "error" not in t, (lens, t)
        assert 0 < t["p10_us"] <= t["median_us"] <= t["p90_us"], (lens, t)
        found[f"decode_{'masked' if mask is not None else 'unmasked'}"] = t["detail"]
    return found


def main():
    torch, why = load_torch()
    if torch is None:
        emit({"error": why})
        return 0
    if "--self-test" in sys.argv[1:]:
        try:
            emit(self_test(torch))
            return 0
        except Exception as ex:  # report, do not crash with a traceback on stdout
            emit({"error": f"self-test failed: {ex!r}"})
            return 1
    compile_why = compile_problem(torch)
    emit({"torch": torch.__version__, "compile": compile_why})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            key = str(req.get("key", "?"))
        except Exception as ex:
            emit({"key": "?", "error": f"bad request line: {ex}"})
            continue
        try:
            emit(run_case(torch, req, compile_why))
        except Exception as ex:
            emit({"key": key, "error": f"{type(ex).__name__}: {ex}"})
        finally:
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
