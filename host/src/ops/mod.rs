//! The family registry. One module (a folder) per kernel family, each split the same way:
//! `launch` (variants, launch geometry, safe wrappers), `reference` (CPU references), `cost`
//! (FLOPs and bytes), `bench` (bench cases), `tests` (GPU tests). Each exports a
//! `FAMILY: Family`; [`FAMILIES`] lists them, one line each, and everything that walks the
//! families (bench, `--list`, GPU tests, explain, profile, report, the guide's tables)
//! reads this list.

use crate::bench::Case;
use crate::testing::{GpuTest, device_tests};

/// A family: its name, its bench cases (quick?, size override, seed) and its GPU tests.
pub struct Family {
    /// The directory name in `kernels-gpu/src/` and `host/src/ops/`, and the kernel prefix.
    pub name: &'static str,
    /// The heading of its results table (README and guide).
    pub title: &'static str,
    pub cases: fn(bool, Option<u64>, u64) -> Vec<Case>,
    pub tests: fn(u64) -> Vec<GpuTest>,
}

/// Declares each family's module and lists its `FAMILY` in [`FAMILIES`].
macro_rules! registry {
    ($($family:ident),* $(,)?) => {
        $(pub mod $family;)*
        /// Every family, in the order the bench runs and reports them.
        pub const FAMILIES: &[Family] = &[$($family::FAMILY),*];
    };
}

// The registry: adding a family is adding its module's name here (README, "Adding a family").
registry![
    memory,
    transpose,
    reduce,
    gemm,
    bf16_gemm,
    fused_elementwise,
    softmax,
    norm,
    attention,
    decode
];

/// The cluster-size choice and block shape shared by the cluster-row steps (softmax v07,
/// norm v06).
pub mod cluster_row;

/// The registered family called `name`.
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}

pub fn family_names() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.name).collect()
}

/// All bench cases. `quick` picks smaller sizes; `size` overrides each family's default.
pub fn all_cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    FAMILIES
        .iter()
        .flat_map(|f| (f.cases)(quick, size, seed))
        .collect()
}

/// All GPU correctness tests: the device layer's, then every family's.
pub fn all_tests(seed: u64) -> Vec<GpuTest> {
    let mut out = device_tests();
    for f in FAMILIES {
        out.extend((f.tests)(seed));
    }
    out.extend(twin_tests(seed));
    out
}

/// The CUDA C++ twins' tests: every `*_matches_cpu` test of a twinned step
/// (`rooflab_kernels::twins::TWINNED`) again, same shapes, inputs and check, with every launch
/// sent to the twin (`Gpu::as_twin`), named `<kernel>_cuda_twin_matches_cpu`. Reported
/// skipped, with the reason, where the twins were not built.
pub fn twin_tests(seed: u64) -> Vec<GpuTest> {
    // `family_stem` is the entry itself or the start of its name (`..._f32`).
    let steps: Vec<String> = rooflab_kernels::twins::TWINNED
        .iter()
        .map(|(path, _)| path.replace('/', "_"))
        .collect();
    let mut out = Vec::new();
    for f in FAMILIES {
        for t in (f.tests)(seed) {
            let Some(base) = t.name.strip_suffix("_matches_cpu") else {
                continue;
            };
            if !steps
                .iter()
                .any(|p| base == p || base.starts_with(&format!("{p}_")))
            {
                continue;
            }
            let body = t.run;
            let mut twin = GpuTest::new(format!("{base}_cuda_twin_matches_cpu"), move |gpu| {
                gpu.as_twin(|| body(gpu))
            });
            twin.requires = t.requires;
            twin.requires_cublas = t.requires_cublas;
            twin.requires_twins = true;
            out.push(twin);
        }
    }
    out
}

#[cfg(test)]
mod unit_tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::*;

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// Every twinned step has twin tests, each named after a Rust test it repeats, and every
    /// entry of such a step has its twin in the twins' PTX (when they were built).
    #[test]
    fn every_twinned_step_has_twin_tests_and_twins() {
        let rust: BTreeSet<String> = all_tests(1)
            .into_iter()
            .filter(|t| !t.requires_twins)
            .map(|t| t.name)
            .collect();
        let twins: Vec<String> = twin_tests(1).into_iter().map(|t| t.name).collect();
        for (path, _) in rooflab_kernels::twins::TWINNED {
            let step = path.replace('/', "_");
            assert!(
                twins.iter().any(|t| t.starts_with(&step)),
                "no twin test for {path}"
            );
        }
        for t in &twins {
            let base = t.strip_suffix("_cuda_twin_matches_cpu").unwrap();
            assert!(rust.contains(&format!("{base}_matches_cpu")), "{t}");
        }
        let (entries, _) = entry_names();
        if let (list, None) = crate::ptx::TWINS {
            for (arch, ptx) in list {
                for (path, _) in rooflab_kernels::twins::TWINNED {
                    let step = path.replace('/', "_");
                    let of_step = |e: &&String| *e == &step || e.starts_with(&format!("{step}_"));
                    for e in entries.iter().filter(of_step) {
                        assert!(
                            crate::ptx::has_twin(ptx, e)
                                || !crate::ptx::built()
                                    .iter()
                                    .any(|(a, p)| a == arch && crate::ptx::has_entry(p, e)),
                            "{arch}: no CUDA C++ twin of `{e}`"
                        );
                    }
                }
            }
        }
    }

    /// Every `.entry` name of every PTX built, and their `FAMILY_vNN` step prefixes.
    fn entry_names() -> (BTreeSet<String>, BTreeSet<String>) {
        let mut entries = BTreeSet::new();
        for (_, ptx) in crate::ptx::built() {
            for l in ptx.lines() {
                if let Some(rest) = l.trim().strip_prefix(".visible .entry ") {
                    entries.insert(rest.split('(').next().unwrap().trim().to_string());
                }
            }
        }
        let steps = entries
            .iter()
            .filter_map(|e| {
                let i = e.find("_v")?;
                let digits = e.get(i + 2..i + 4)?;
                digits
                    .bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| e[..i + 4].to_string())
            })
            .collect();
        (entries, steps)
    }

    /// String literals of one line (no raw strings or escapes needed here).
    fn literals(line: &str) -> Vec<&str> {
        let code = line.split("//").next().unwrap_or("");
        code.split('"').skip(1).step_by(2).collect()
    }

    #[test]
    fn host_never_spells_a_kernel_name() {
        let (entries, steps) = entry_names();
        assert!(entries.len() > 50, "the PTX lists its entries");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        rust_files(&root.join("src"), &mut files);
        rust_files(&root.join("../tests"), &mut files);
        let mut found = Vec::new();
        for f in files {
            for (i, line) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
                for lit in literals(line) {
                    // A whole entry name, or a step prefix in a format string (a name put
                    // together at run time). Test names such as `reduce_v07_past_2_31_elements`
                    // name a test, not a kernel.
                    if entries.iter().any(|e| lit.contains(e.as_str()))
                        || (lit.contains('{') && steps.iter().any(|s| lit.contains(s.as_str())))
                    {
                        found.push(format!("{}:{}: \"{lit}\"", f.display(), i + 1));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "kernel names must come from the `kernel!` constants, not string literals:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn every_case_knows_kernels_that_are_built() {
        let (entries, _) = entry_names();
        for quick in [true, false] {
            for f in FAMILIES {
                let cases = (f.cases)(quick, None, 1);
                assert!(!cases.is_empty(), "{} has no cases", f.name);
                for c in cases {
                    assert_eq!(c.family, f.name);
                    for k in &c.kernels {
                        assert!(
                            entries.contains(k.kernel.name()),
                            "{}: `{}` is in no PTX",
                            c.name(),
                            k.kernel
                        );
                        // One stem names a variant everywhere: the entry is
                        // FAMILY_STEM[_op][_dtype], defined in FAMILY/STEM.rs.
                        assert_eq!(k.kernel.family(), f.name, "{}", k.kernel);
                        let prefix = [f.name, k.kernel.stem()].join("_");
                        assert!(
                            k.kernel.name().starts_with(&prefix),
                            "{} is defined in {}.rs",
                            k.kernel,
                            k.kernel.stem()
                        );
                        assert!(
                            k.block_threads > 0 && k.block_threads <= 1024,
                            "{}: {} threads",
                            c.name(),
                            k.block_threads
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn family_names_are_unique_and_titled() {
        let names = family_names();
        let unique: BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        assert!(FAMILIES.iter().all(|f| !f.title.is_empty()));
        assert_eq!(family("gemm").map(|f| f.name), Some("gemm"));
        assert!(family("nope").is_none());
    }

    /// The host library's top-level modules import each other without a cycle (a module
    /// here is a file or folder directly under `src/`; `crate::X` paths are its imports).
    #[test]
    fn module_imports_have_no_cycle() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in files {
            let rel = f.strip_prefix(&src).unwrap();
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            if first == "bin" || first == "lib.rs" {
                continue;
            }
            let from = first.trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&f).unwrap();
            let deps = graph.entry(from.clone()).or_default();
            for (i, _) in text.match_indices("crate::") {
                let to: String = text[i + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let is_module = src.join(format!("{to}.rs")).exists() || src.join(&to).is_dir();
                if !to.is_empty() && is_module && to != from {
                    deps.insert(to);
                }
            }
        }
        // Depth-first search for a back edge.
        fn visit(
            n: &str,
            g: &BTreeMap<String, BTreeSet<String>>,
            state: &mut BTreeMap<String, u8>,
            path: &mut Vec<String>,
        ) -> Option<Vec<String>> {
            match state.get(n) {
                Some(2) => return None,
                Some(1) => {
                    let start = path.iter().position(|p| p == n).unwrap();
                    let mut cycle = path[start..].to_vec();
                    cycle.push(n.to_string());
                    return Some(cycle);
                }
                _ => {}
            }
            state.insert(n.to_string(), 1);
            path.push(n.to_string());
            for d in g.get(n).into_iter().flatten() {
                if let Some(c) = visit(d, g, state, path) {
                    return Some(c);
                }
            }
            path.pop();
            state.insert(n.to_string(), 2);
            None
        }
        let mut state = BTreeMap::new();
        for n in graph.keys() {
            if let Some(cycle) = visit(n, &graph, &mut state, &mut Vec::new()) {
                panic!("import cycle: {}", cycle.join(" -> "));
            }
        }
        // The graph, for the record (`cargo test -- --nocapture` prints it).
        for (n, d) in &graph {
            println!(
                "{n} -> {}",
                d.iter().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
}
