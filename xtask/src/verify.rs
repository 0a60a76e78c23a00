//! The bundle's `verify` script (written by `cargo xtask bundle`): the GPU work an issue's
//! "Done when" asks for, cut into parts that each fit one device call (10 minutes on the
//! lent machines), every part ending in one tarball. `./verify plan` prints the sequence;
//! the steps themselves are `run-all`'s and `rooflab-bench`'s, so nothing here duplicates
//! what they check.

pub const SCRIPT: &str = r##"#!/usr/bin/env bash
# rooflab verification parts, for a GPU machine whose calls are time-limited (made by
# `cargo xtask bundle`). Each part stops its steps at a deadline and always leaves its logs.
set -uo pipefail

usage() {
  cat <<'EOF'
Usage: ./verify PART [ARGS...]     (env: OUT, default ./results; DEADLINE seconds, default 540;
                                   TAG, a name for the part's folder and tarball)

Parts (each writes under $OUT/NAME/, then tars that into $OUT/NAME.tgz; NAME is TAG, or the
part and its first argument, plus a checksum of the rest when there are more):
  tests                      every GPU test (./gpu-tests), must pass
  sanitize FILTER            ./run-all with GPU_TEST_ARGS=FILTER: those tests, then the four
                             compute-sanitizer tools over them (each must report 0 errors),
                             and the ceilings; e.g. `sanitize decode_`
  bench FAMILY [BENCH ARGS]  rooflab-bench --family FAMILY --peer torch [ARGS] (ceilings
                             measured in the same run); e.g. `bench decode --shape "batch 1 L 32768"`
  timeline NAME...           rooflab-bench --timeline NAME for each NAME (per-block stamps)
  ncu NAME [SECTIONS...]     rooflab-bench --ncu NAME [--ncu-section S ...]
  plan                       print the parts an issue's "Done when" needs, in order
The part's summary is its last lines, and summary.txt in the tarball.
EOF
}

plan() {
  cat <<'EOF'
Issues 14 (attention, decode) and 15 (every shape) on the H200, one device call a line;
keep the machine warm by sending the next call as soon as one returns:
  ./verify tests
  ./verify sanitize decode_
  ./verify sanitize attention_
  ./verify sanitize softmax_
  ./verify sanitize norm_
  ./verify sanitize gemm_            (SGEMM and bf16 GEMM tests)
  ./verify sanitize memory_ ; ./verify sanitize fused_elementwise_ (one call)
  TAG=bench-decode-b1 ./verify bench decode --shape "batch 1 L 512" --shape "batch 1 L 4096" --shape "batch 1 L 32768"
  TAG=bench-decode-b16 ./verify bench decode --shape "batch 16 L 512" --shape "batch 16 L 4096" --shape "batch 16 L 32768"
  TAG=bench-decode-b64 ./verify bench decode --shape "batch 64 L 512" --shape "batch 64 L 4096" --shape "batch 64 L 32768"
  TAG=bench-decode-b256 ./verify bench decode --shape "batch 256 L 512" --shape "batch 256 L 4096" --shape "batch 256 L 32768"
  ./verify bench attention
  ./verify bench softmax
  ./verify bench norm
  ./verify bench gemm ; ./verify bench memory ; ./verify bench fused_elementwise
  ./verify timeline "decode/v10_tma_pages_d128@batch 1 L 32768" "decode/v11_one_round_combine_d128@batch 1 L 32768" "decode/v10_tma_pages_d128@batch 64 L 4096" "decode/v11_one_round_combine_d128@batch 64 L 4096"
Then, on the build machine: `cargo xtask report bench.json` for each bench part's JSON
(a family absent from a run keeps its earlier table; each table is stamped with its run).
A family measured in several parts, as decode above, is one JSON first:
`rooflab-bench --merge b1/bench.json --merge b16/bench.json .. --out decode-all` (the parts'
rows, each with its own run's figures). Keep the run files under docs/runs/.
EOF
}

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${OUT:-./results}"
DEADLINE="${DEADLINE:-540}"
START=$SECONDS
[[ $# -gt 0 ]] || { usage; exit 2; }
part="$1"; shift
case "$part" in
  -h|--help) usage; exit 0 ;;
  plan) plan; exit 0 ;;
  tests|sanitize|bench|timeline|ncu) ;;
  *) echo "verify: unknown part '$part'" >&2; usage >&2; exit 2 ;;
esac
# The part's folder name: TAG, or the part and its first argument (plus a checksum of all
# the arguments when there are more, so two parts of one family do not share a name), made
# safe for a file name.
slug="${TAG:-$part${1:+-$1}}"
[[ -z "${TAG:-}" && $# -gt 1 ]] && slug="$slug-$(printf '%s\n' "$@" | cksum | cut -c1-6)"
slug="$(printf '%s' "$slug" | tr -c 'A-Za-z0-9_.-' '-' | sed 's/-\+/-/g; s/-$//' | cut -c1-72)"
if ! mkdir -p "$OUT" || ! OUT="$(cd "$OUT" && pwd)"; then
  echo "verify: cannot create $OUT" >&2
  exit 2
fi
DIR="$OUT/$slug"
rm -rf "$DIR" && mkdir -p "$DIR"
cd "$HERE" || exit 2

SUMMARY=()
FAILED=0
left() { echo $((DEADLINE - (SECONDS - START))); }
# step NAME LOG CMD...: CMD under the time left (at least 10 s), its output in LOG and on the
# terminal; the summary line says ok, FAILED or out of time.
step() {
  local name=$1 log=$2 t rc; shift 2
  t="$(left)"
  if [[ $t -lt 10 ]]; then
    SUMMARY+=("SKIPPED $name (deadline reached)"); FAILED=1; return 1
  fi
  echo "==> $name ($t s left): $*"
  timeout "$t" "$@" >"$log" 2>&1
  rc=$?
  tail -n 40 "$log"
  if [[ $rc -eq 124 ]]; then
    SUMMARY+=("TIMEOUT $name after $t s (see $(basename "$log"))"); FAILED=1
  elif [[ $rc -ne 0 ]]; then
    SUMMARY+=("FAILED  $name: exit $rc (see $(basename "$log"))"); FAILED=1
  else
    SUMMARY+=("ok      $name")
  fi
  return "$rc"
}

command -v nvidia-smi >/dev/null && nvidia-smi >"$DIR/nvidia-smi.log" 2>&1
case "$part" in
  tests)
    if step gpu-tests "$DIR/gpu-tests.log" ./gpu-tests; then
      result="$(grep -E '^test result:' "$DIR/gpu-tests.log" | tail -n1)"
      # All skipped means no device: not a pass here.
      if grep -qE ' [1-9][0-9]* passed' <<<"$result"; then
        SUMMARY+=("        $result")
      else
        # In place of step's "ok": the binary exits 0 when it finds no device.
        SUMMARY[${#SUMMARY[@]}-1]="FAILED  gpu-tests ran no test: ${result:-no summary} (no CUDA device?)"
        FAILED=1
      fi
    fi
    ;;
  sanitize)
    filter="${1:?sanitize needs a test-name filter, e.g. decode_}"
    # run-all's own deadline per tool: what is left, less a margin for the ceilings.
    t=$(( $(left) - 60 ))
    GPU_TEST_ARGS="$filter" SANITIZE_TIMEOUT="$(( t > 30 ? t : 30 ))" \
      step "run-all (tests and sanitizers: $filter)" "$DIR/run-all.log" ./run-all --out "$DIR" -- --ceilings
    grep -E '^  (ok|FAILED|note) ' "$DIR/run-all.log" | sed 's/^  /        /' >"$DIR/run-all-summary.txt"
    while IFS= read -r l; do SUMMARY+=("$l"); done <"$DIR/run-all-summary.txt"
    ;;
  bench)
    family="${1:?bench needs a family, e.g. decode}"; shift
    PTXAS=(); [[ -f ptxas.json ]] && PTXAS=(--ptxas-report ptxas.json)
    step "bench $family $*" "$DIR/bench.log" ./rooflab-bench --family "$family" --peer torch \
      --out "$DIR" ${PTXAS[@]+"${PTXAS[@]}"} "$@"
    ;;
  timeline)
    [[ $# -gt 0 ]] || { echo "verify: timeline needs a NAME (family/variant@shape)" >&2; exit 2; }
    i=0
    for name in "$@"; do
      i=$((i + 1))
      step "timeline $name" "$DIR/timeline-$i.log" ./rooflab-bench --timeline "$name" --out "$DIR/t$i"
    done
    ;;
  ncu)
    name="${1:?ncu needs a NAME}"; shift
    SECTIONS=(); for s in "$@"; do SECTIONS+=(--ncu-section "$s"); done
    step "ncu $name" "$DIR/ncu.log" ./rooflab-bench --ncu "$name" ${SECTIONS[@]+"${SECTIONS[@]}"}
    ;;
esac

SUMMARY+=("        $(( SECONDS - START )) s of $DEADLINE")
printf '%s\n' "${SUMMARY[@]}" >"$DIR/summary.txt"
# The report folders hold many small files: the tarball carries them as one.
tar czf "$OUT/$slug.tgz" -C "$OUT" "$slug" && rm -rf "$DIR"
echo
echo "==> verify $part: $OUT/$slug.tgz"
printf '  %s\n' "${SUMMARY[@]}"
exit "$FAILED"
"##;

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    /// A bundle folder with the script and stand-ins for its binaries (scripts that log
    /// their arguments), in a fresh temporary folder.
    fn bundle(name: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("rooflab-verify-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let exe = |n: &str, body: &str| {
            let p = dir.join(n);
            std::fs::write(&p, format!("#!/usr/bin/env bash\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        exe("verify", super::SCRIPT);
        exe("gpu-tests", "echo \"args: $*\"; echo 'test result: ok. 3 passed; 0 failed; 0 ignored'");
        exe("rooflab-bench", "printf '%s|' \"$@\" > \"$(dirname \"$0\")/bench-args\"; echo bench ran");
        dir
    }

    fn verify(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
        let mut cmd = Command::new(dir.join("verify"));
        cmd.args(args).env("OUT", dir.join("out")).envs(env.iter().copied());
        let o = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        (o.status.code().unwrap_or(-1), text)
    }

    #[test]
    fn parts_run_their_steps_and_leave_one_tarball() {
        let dir = bundle("parts");
        let (rc, text) = verify(&dir, &["tests"], &[]);
        assert_eq!(rc, 0, "{text}");
        assert!(text.contains("ok      gpu-tests") && text.contains("3 passed"), "{text}");
        assert!(dir.join("out/tests.tgz").is_file() && !dir.join("out/tests").exists());
        let list = Command::new("tar").arg("tzf").arg(dir.join("out/tests.tgz")).output().unwrap();
        let list = String::from_utf8_lossy(&list.stdout);
        assert!(list.contains("tests/gpu-tests.log") && list.contains("tests/summary.txt"), "{list}");

        let (rc, text) = verify(&dir, &["bench", "decode", "--shape", "batch 1 L 32768"], &[]);
        assert_eq!(rc, 0, "{text}");
        let args = std::fs::read_to_string(dir.join("bench-args")).unwrap();
        assert!(args.starts_with("--family|decode|--peer|torch|--out|"), "{args}");
        assert!(args.ends_with("|--shape|batch 1 L 32768|"), "{args}");
        let names: Vec<String> = std::fs::read_dir(dir.join("out"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert!(names.iter().any(|n| n.starts_with("bench-decode-") && n.ends_with(".tgz")), "{names:?}");
        // TAG names the part.
        let (rc, _) = verify(&dir, &["bench", "decode", "--shape", "batch 64 L 4096"], &[("TAG", "b64")]);
        assert!(rc == 0 && dir.join("out/b64.tgz").is_file());

        let (rc, text) = verify(&dir, &["timeline", "decode/v10_tma_pages_d128@batch 1 L 32768"], &[]);
        assert_eq!(rc, 0, "{text}");
        let args = std::fs::read_to_string(dir.join("bench-args")).unwrap();
        assert!(args.starts_with("--timeline|decode/v10_tma_pages_d128@batch 1 L 32768|--out|"), "{args}");
        // The slug keeps letters, digits and `_.-`.
        assert!(dir.join("out/timeline-decode-v10_tma_pages_d128-batch-1-L-32768.tgz").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_parts_and_deadlines_say_so() {
        let dir = bundle("bad");
        let (rc, text) = verify(&dir, &["nope"], &[]);
        assert!(rc == 2 && text.contains("unknown part 'nope'"), "{rc} {text}");
        let (rc, text) = verify(&dir, &["timeline"], &[]);
        assert!(rc == 2 && text.contains("needs a NAME"), "{rc} {text}");
        let (rc, text) = verify(&dir, &["plan"], &[]);
        assert!(rc == 0 && text.contains("./verify sanitize decode_"), "{text}");
        // Past the deadline a step is skipped, and the part fails.
        let (rc, text) = verify(&dir, &["tests"], &[("DEADLINE", "5")]);
        assert!(rc == 1 && text.contains("SKIPPED gpu-tests (deadline reached)"), "{rc} {text}");
        // A test binary that finds no device (everything skipped) is a failure here.
        std::fs::write(dir.join("gpu-tests"), "#!/usr/bin/env bash\necho 'test result: ok. 0 passed; 0 failed; 197 ignored'\n").unwrap();
        let (rc, text) = verify(&dir, &["tests"], &[]);
        assert!(rc == 1 && text.contains("ran no test"), "{rc} {text}");
        assert!(!text.contains("ok      gpu-tests"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
