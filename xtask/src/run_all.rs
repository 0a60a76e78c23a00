//! The bundle's `run-all` script (written by `cargo xtask bundle`), run on the GPU machine.
//! To add a step: one more `run_step` block with a `pass`/`fail` line for the summary.

pub const SCRIPT: &str = r##"#!/usr/bin/env bash
# rooflab bundle runner, for the GPU machine (made by `cargo xtask bundle`).
set -uo pipefail   # not -e: every step runs, and the summary says which failed

usage() {
  cat <<'EOF'
Usage: ./run-all [--no-sanitize] [--out DIR] [--] [BENCH ARGS...]

Runs from any directory; logs every step into OUT (default ./results, or env OUT):
  1. nvidia-smi                           -> nvidia-smi.log (informational)
  2. ./gpu-tests                          -> gpu-tests.log  (must pass, and must have run tests)
  3. unless --no-sanitize: compute-sanitizer --tool T --error-exitcode 1 ./gpu-tests
     for T in $SANITIZE_TOOLS             -> sanitize-T.log (each must report 0 errors)
     (the tools side by side, each with ROOFLAB_SANITIZE=T: smaller shapes, smallest under
     racecheck; the `fault_` tests, whose deliberate API errors and device trap the
     sanitizer would count, and the multi-GB tests are skipped)
  4. ./rooflab-bench --out OUT [--ptxas-report ptxas.json] BENCH ARGS -> bench.log (results in OUT)
Exits non-zero if a required step failed.

Env: GPU_TEST_ARGS       extra arguments for gpu-tests (for example a name filter)
     SANITIZE_TEST_ARGS  arguments for gpu-tests under the sanitizer
                         (default: GPU_TEST_ARGS plus --skip fault_ --skip past_2_31)
     SANITIZE_TOOLS      default "memcheck racecheck synccheck initcheck"
     INITCHECK_TEST_ARGS added under initcheck (default --skip cublas_peer: cuBLAS's own
                         split-K reduce reads workspace it left unwritten)
     SANITIZE_TIMEOUT    seconds each sanitizer process may run (default: no limit): the
                         whole tool, or one test under SANITIZE_PER_TEST; out of time fails
     SANITIZE_PER_TEST   tools that run each test in a process of its own (default
                         "racecheck", which stalls on a multi-threaded test binary)
     SANITIZE_JOBS       how many of those processes at a time (default 8)
     COMPUTE_SANITIZER   the compute-sanitizer to use (default: PATH, then /usr/local/cuda/bin)
EOF
}

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${OUT:-./results}"
SANITIZE=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize) SANITIZE=1; shift ;;
    --no-sanitize) SANITIZE=0; shift ;;
    --out) OUT="${2:?--out needs a directory}"; shift 2 ;;
    --out=*) OUT="${1#--out=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) break ;;   # the rest goes to rooflab-bench
  esac
done
if ! mkdir -p "$OUT" || ! OUT="$(cd "$OUT" && pwd)"; then
  echo "run-all: cannot create $OUT" >&2
  exit 2
fi
cd "$HERE" || exit 2

SUMMARY=()
FAILED=0
pass() { SUMMARY+=("ok      $1"); }
fail() { SUMMARY+=("FAILED  $1"); FAILED=1; }
info() { SUMMARY+=("note    $1"); }

# run_step NAME LOG CMD...: runs CMD with its output on the terminal and in LOG; CMD's status.
run_step() {
  local name=$1 log=$2; shift 2
  echo
  echo "==> $name: $* (log: $log)"
  "$@" 2>&1 | tee "$log"
  return "${PIPESTATUS[0]}"
}

# libtest's summary line, e.g. "test result: ok. 23 passed; 0 failed; 0 ignored; ..."
test_result() { grep -E '^test result:' "$1" | tail -n1; }
# How many tests that summary line says passed (empty when there is none).
passed_in() { sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$1"; }

# 1. The machine, for the record.
if command -v nvidia-smi >/dev/null; then
  if run_step nvidia-smi "$OUT/nvidia-smi.log" nvidia-smi; then info "nvidia-smi logged"; else info "nvidia-smi failed (see nvidia-smi.log)"; fi
else
  info "no nvidia-smi on PATH"
fi

# 2. Correctness. All-ignored means no device was found: that is a failure here.
# shellcheck disable=SC2086  # GPU_TEST_ARGS is a word list on purpose
if run_step gpu-tests "$OUT/gpu-tests.log" ./gpu-tests ${GPU_TEST_ARGS:-}; then
  result="$(test_result "$OUT/gpu-tests.log")"
  passed="$(passed_in "$result")"
  if [[ "${passed:-0}" -gt 0 ]]; then
    pass "gpu-tests: ${result#test result: }"
  else
    fail "gpu-tests ran no test: ${result:-no summary line} (no CUDA device?)"
  fi
else
  fail "gpu-tests (see $OUT/gpu-tests.log)"
fi

# 3. The tests again under each compute-sanitizer tool (skip with --no-sanitize). The
#    deliberate device fault would count as an error, and the multi-GB tests take minutes
#    when every access is checked: both are skipped there.
# one_process_per_test TOOL: every selected test in a compute-sanitizer process of its own,
# SANITIZE_JOBS at a time (each log under sanitize-TOOL/), then one summary in the format of
# a whole-binary run. racecheck needs this: with the tests on several threads of one
# process it stalled (on the H200: 10 of 79 tests done after 420 s), while one process per
# test ran all of them in a minute with 12 at a time.
one_process_per_test() {
  local tool=$1 dir="$OUT/sanitize-$1"
  mkdir -p "$dir" && rm -f "$dir"/*.log
  ./gpu-tests --list "${TEST_ARGS[@]}" 2>/dev/null | sed -n 's/: test$//p' >"$dir/tests.txt"
  echo "$(wc -l <"$dir/tests.txt") tests, one process each, ${SANITIZE_JOBS:-8} at a time"
  # shellcheck disable=SC2016  # expanded by the inner bash
  TOOL="$tool" DIR="$dir" SAN="$SAN" xargs -P "${SANITIZE_JOBS:-8}" -I{} \
    bash -c 'ROOFLAB_SANITIZE="$TOOL" '"${LIMIT[*]:-}"' "$SAN" --tool "$TOOL" --error-exitcode 1 \
      ./gpu-tests --exact "$1" >"$DIR/$1.log" 2>&1; echo "$1 exit $?"' _ {} <"$dir/tests.txt"
  local passed=0 failed=0 errors=0 name n
  while read -r name; do
    if grep -qE '^test result: ok\. 1 passed' "$dir/$name.log"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "FAILED $name (see $dir/$name.log)"
    fi
    n="$(grep -oE 'ERROR SUMMARY: [0-9]+ error|\(([0-9]+) error' "$dir/$name.log" | grep -oE '[0-9]+' | sort -n | tail -n1)"
    errors=$((errors + ${n:-0}))
  done <"$dir/tests.txt"
  echo "test result: $([[ $failed -eq 0 ]] && echo ok || echo FAILED). $passed passed; $failed failed (one process per test)"
  echo "========= ERROR SUMMARY: $errors errors"
  [[ $failed -eq 0 && $errors -eq 0 ]]
}

if [[ "$SANITIZE" == 1 ]]; then
  SAN="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}"
  if [[ ! -x "$SAN" ]]; then
    fail "sanitize: no compute-sanitizer (set COMPUTE_SANITIZER)"
  else
    # The four tools run side by side (each is a process of its own on the one GPU; they
    # check correctness, not speed), each with ROOFLAB_SANITIZE=<tool> for its shapes.
    TOOLS=(${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck})
    declare -A PIDS=()
    LIMIT=()
    [[ "${SANITIZE_TIMEOUT:-0}" -gt 0 ]] && LIMIT=(timeout "$SANITIZE_TIMEOUT")
    # shellcheck disable=SC2206  # a word list on purpose
    TEST_ARGS=(${SANITIZE_TEST_ARGS:-${GPU_TEST_ARGS:-} --skip fault_ --skip past_2_31})
    for tool in "${TOOLS[@]}"; do
      log="$OUT/sanitize-$tool.log"
      echo "==> compute-sanitizer $tool (log: $log)"
      # initcheck: the cuBLAS peer tests are left out. cuBLAS 13's split-K reduce kernel
      # reads workspace its GEMM kernel left unwritten (the K-tail defect the bf16 peer
      # test reports): vendor code; they run under the other three tools.
      EXTRA=()
      [[ "$tool" == initcheck ]] && EXTRA=(${INITCHECK_TEST_ARGS:---skip cublas_peer})
      if [[ " ${SANITIZE_PER_TEST:-racecheck} " == *" $tool "* ]]; then
        one_process_per_test "$tool" >"$log" 2>&1 &
      else
        ROOFLAB_SANITIZE="$tool" ${LIMIT[@]+"${LIMIT[@]}"} "$SAN" --tool "$tool" --error-exitcode 1 \
          ./gpu-tests "${TEST_ARGS[@]}" ${EXTRA[@]+"${EXTRA[@]}"} >"$log" 2>&1 &
      fi
      PIDS[$tool]=$!
    done
    for tool in "${TOOLS[@]}"; do
      wait "${PIDS[$tool]}"
      rc=$?
      log="$OUT/sanitize-$tool.log"
      grep -E '^test result:|SUMMARY' "$log" | sed "s/^/  $tool: /"
      # "========= ERROR SUMMARY: 0 errors" (racecheck may say "... (N errors, M warnings)").
      errors="$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | grep -oE '[0-9]+' | tail -n1)"
      [[ -n "$errors" ]] || errors="$(grep -oE 'SUMMARY: .*\(([0-9]+) error' "$log" | grep -oE '\([0-9]+' | tr -d '(' | tail -n1)"
      result="$(test_result "$log")"
      passed="$(passed_in "$result")"
      if [[ $rc -eq 124 ]]; then
        done_tests="$(grep -cE '^test .* ok$' "$log")"
        fail "sanitize $tool: out of time after ${SANITIZE_TIMEOUT}s with $done_tests tests passed, ${errors:-no} errors so far (see $log)"
      elif [[ "${passed:-0}" -eq 0 ]]; then
        fail "sanitize $tool ran no test: ${result:-no summary line} (see $log)"
      elif [[ $rc -eq 0 && "${errors:-0}" -eq 0 ]]; then
        pass "sanitize $tool: ${errors:-no} errors reported (${result#test result: })"
      else
        fail "sanitize $tool: ${errors:-?} errors, exit $rc (see $log)"
      fi
    done
  fi
fi

# 4. The benchmarks.
# The registers/spills columns come from the ptxas report built with the bundle.
PTXAS_ARGS=()
[[ -f ptxas.json ]] && PTXAS_ARGS=(--ptxas-report ptxas.json)
if run_step bench "$OUT/bench.log" ./rooflab-bench --out "$OUT" ${PTXAS_ARGS[@]+"${PTXAS_ARGS[@]}"} "$@"; then
  pass "bench (results in $OUT)"
else
  fail "bench (see $OUT/bench.log)"
fi

echo
echo "==> summary (logs and results in $OUT)"
printf '  %s\n' "${SUMMARY[@]}"
exit "$FAILED"
"##;
