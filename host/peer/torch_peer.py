#!/usr/bin/env python3
"""PyTorch peer for rooflab's fusion families: times eager PyTorch on the same ops.

stdin: a JSON list of {"key", "op", "shape": [rows, cols], "dtype": "float32"|"bfloat16"},
op one of softmax, layer_norm, rms_norm, gelu_chain_tanh, gelu_chain_erf.
stdout: one JSON object, {"torch": VERSION, "results": {key: {"median_us", "p10_us",
"p90_us"}}} or {"error": "..."} (torch missing or no CUDA: exit status 0, the bench then
skips the peer column). A per-key failure becomes {"error": "..."} under that key.

Timing: CUDA events around each call, 10 warm-up calls, REPS timed calls, random non-zero
inputs, several input sets rotated when one set would fit in L2 (so each call reads DRAM).
`--self-test` runs one tiny case of each op and checks it against a float64 formula.
"""
import json
import sys

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


def make_call(torch, op, rows, cols, dtype):
    """(list of argument sets, function of one set) for one op at one shape."""
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
        fn = lambda a: torch.softmax(a[0], dim=-1)  # noqa: E731
    elif op == "layer_norm":
        args = [(rand(rows, cols),) for _ in range(sets)]
        fn = lambda a: F.layer_norm(a[0], (cols,), w, b, 1e-5)  # noqa: E731
    elif op == "rms_norm":
        args = [(rand(rows, cols),) for _ in range(sets)]
        fn = lambda a: F.rms_norm(a[0], (cols,), w, 1e-5)  # noqa: E731
    elif op in ("gelu_chain_tanh", "gelu_chain_erf"):
        approx = "tanh" if op.endswith("tanh") else "none"
        args = [(rand(rows, cols), rand(rows, cols)) for _ in range(sets)]
        fn = lambda a: F.gelu(a[0] * w + b, approximate=approx) + a[1]  # noqa: E731
    else:
        raise ValueError(f"unknown op {op!r}; expected one of {', '.join(OPS)}")
    return args, fn


def time_case(torch, op, shape, dtype):
    rows, cols = int(shape[0]), int(shape[1])
    if rows <= 0 or cols <= 0:
        raise ValueError(f"shape {shape} must be two positive sizes")
    args, fn = make_call(torch, op, rows, cols, dtype)
    with torch.no_grad():
        for i in range(WARMUP):
            fn(args[i % len(args)])
        torch.cuda.synchronize()
        events = [torch.cuda.Event(enable_timing=True) for _ in range(REPS + 1)]
        events[0].record()
        for i in range(REPS):
            fn(args[i % len(args)])
            events[i + 1].record()
        torch.cuda.synchronize()
    us = sorted(events[i].elapsed_time(events[i + 1]) * 1e3 for i in range(REPS))
    q = lambda p: us[round((len(us) - 1) * p)]  # noqa: E731  (same quantiles as the bench)
    return {"median_us": q(0.5), "p10_us": q(0.1), "p90_us": q(0.9)}


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
    for op in OPS:
        for dtype in ("float32", "bfloat16"):
            r = time_case(torch, op, [64, 256], dtype)
            assert 0 < r["p10_us"] <= r["median_us"] <= r["p90_us"], (op, dtype, r)
    return {"torch": torch.__version__, "self_test": "ok"}


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
    try:
        specs = json.load(sys.stdin)
        if not isinstance(specs, list):
            raise ValueError("expected a JSON list of cases")
    except Exception as ex:
        emit({"error": f"bad input on stdin: {ex}"})
        return 1
    results = {}
    for s in specs:
        key = str(s.get("key", "?"))
        try:
            results[key] = time_case(torch, s["op"], s["shape"], s["dtype"])
        except Exception as ex:
            results[key] = {"error": f"{type(ex).__name__}: {ex}"}
        finally:
            torch.cuda.empty_cache()
    emit({"torch": torch.__version__, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
