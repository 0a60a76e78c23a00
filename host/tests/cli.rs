//! The bench CLI as a user meets it: bad arguments get a clear message and the list of valid
//! choices; a machine without a usable GPU gets one clear line and a predicted report.
//! `CUDA_VISIBLE_DEVICES=""` hides every GPU, so these run the same on GPU machines.

use std::process::Command;

fn bench() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rooflab-bench"));
    c.env("CUDA_VISIBLE_DEVICES", "");
    c
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = bench().args(args).output().expect("rooflab-bench runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn unknown_family_lists_valid_ones() {
    let (code, text) = run(&["--family", "nope"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("unknown family `nope`") && text.contains("memory"),
        "{text}"
    );
}

#[test]
fn unknown_variant_lists_valid_ones() {
    let (code, text) = run(&["--variant", "v99_nothing"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("no variant matches") && text.contains("memory/v02_coalesced_copy"),
        "{text}"
    );
}

#[test]
fn bad_sizes_are_refused() {
    for (size, needle) in [
        ("0", "size 0"),
        ("12Q", "not a size"),
        ("2^99", "not a size"),
    ] {
        let (code, text) = run(&["--size", size]);
        assert_eq!(code, Some(2), "{size}: {text}");
        assert!(text.contains(needle), "{size}: {text}");
    }
}

#[test]
fn unknown_device_profile_lists_valid_ones() {
    let (code, text) = run(&["--device", "gtx480"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("h200") && text.contains("a100"), "{text}");
}

#[test]
fn no_gpu_gives_one_clear_line_and_a_predicted_report() {
    let dir = std::env::temp_dir().join(format!("rooflab-cli-{}", std::process::id()));
    let (code, text) = run(&[
        "--quick",
        "--family",
        "memory",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{text}");
    let lines: Vec<_> = text
        .lines()
        .filter(|l| l.contains("no GPU here, nothing measured"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(!text.contains("libcuda.so.1: cannot open"), "{text}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap();
    assert_eq!(report["measured"], false);
    let rows = report["rows"].as_array().unwrap();
    assert!(rows.len() >= 12);
    for r in rows {
        assert!(r["median_us"].is_null(), "nothing measured");
        assert_eq!(r["error"], "needs a GPU");
        assert!(
            r["accounting"]["floor_us"].as_f64().unwrap() > 0.0,
            "predicted floor"
        );
    }
    assert!(dir.join("roofline.svg").exists() && dir.join("bench.csv").exists());
    assert!(dir.join("bars-memory.svg").exists());
    assert!(
        !dir.join("bench-partial.json").exists(),
        "partial log removed after a whole run"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
