#!/usr/bin/env python3
"""PyTorch peer for rooflab's fusion families: eager PyTorch and torch.compile on the same ops.

Protocol (one process for the whole bench, so torch is imported once):
- first stdout line: {"torch": VERSION, "compile": null | "why torch.compile cannot run"}
  or {"error": "..."} (torch missing or no CUDA: exit status 0, the bench then says so in the
  peer columns and nothing else fails);
- then, for each request line on stdin, {"key", "op", "shape": [rows, cols],
  "dtype": "float32"|"bfloat16", "dump": DIR or null}, one result line:
  {"key", "eager": TIMES | {"error"}, "compiled": TIMES | {"error"}, "files": {...}},
  TIMES = {"median_us", "p10_us", "p90_us"} (compiled adds "compile_s" and "kernels").
op: softmax, layer_norm, rms_norm, gelu_chain_tanh, gelu_chain_erf.

Checking: with "dump", the first input set, the weights and both outputs on it are written to
DIR as raw little-endian arrays of the dtype ("files" names them: x, x2 (the chain's residual),
w, b, eager, compiled); the bench checks them against rooflab's CPU reference before either
time counts, and deletes them.

Timing (both columns alike): 10 warm-up calls, then REPS calls each between two CUDA events,
queued behind a GPU spin so that the host's per-call cost is hidden (GPU time per call, as
rooflab's rows), random non-zero inputs, several input sets rotated when one would fit in L2. torch.compile:
`dynamic=False, fullgraph=True`, one compile per case after `torch._dynamo.reset()`, timed
separately (compile_s: the first call, wall clock) and never inside the figures; the compiled
function must have generated at least one kernel (else it is reported as an eager fallback),
and a recompile during timing is an error (`error_on_recompile`), not a figure.
`--self-test` runs one tiny case of each op, eager and compiled, against a float64 formula.
"""
import json
import os
import sys
import time

REPS = 50
WARMUP = 10
L2_BYTES = 60 * 1024 * 1024  # H200; rotation only needs the order of magnitude
OPS = ("softmax", "layer_norm", "rms_norm", "gelu_chain_tanh", "gelu_chain_erf")


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
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    return args, (w, b), fn


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
        events = [torch.cuda.Event(enable_timing=True) for _ in range(REPS + 1)]
        # 2 GHz is above every clock here: the spin lasts at least this long.
        torch.cuda._sleep(int(2e9 * (2.0 * REPS * host_per_call + 1e-3)))
        events[0].record()
        for i in range(REPS):
            fn(args[i % len(args)])
            events[i + 1].record()
        torch.cuda.synchronize()
    us = sorted(events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(REPS))
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


def run_case(torch, req, compile_why):
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
    return {"torch": torch.__version__, "compile": why, "self_test": "ok"}


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
