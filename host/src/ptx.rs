//! The PTX built by `host/build` (one per architecture in `host/build/ptx_arches.txt`),
//! embedded in the binary, and the choice of which one a device loads.

/// `(arch, deflated ptx text)`, oldest first, as listed in `ptx_arches.txt`.
const BUILT_DEFLATED: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/ptx_list.rs"));

/// `(arch, ptx text)`, oldest first, as listed in `ptx_arches.txt`: the embedded PTX,
/// inflated on first use (kept for the life of the process).
pub fn built() -> &'static [(&'static str, &'static str)] {
    static BUILT: std::sync::OnceLock<Vec<(&'static str, &'static str)>> =
        std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        BUILT_DEFLATED
            .iter()
            .map(|&(arch, z)| {
                let bytes = miniz_oxide::inflate::decompress_to_vec(z)
                    .unwrap_or_else(|e| panic!("the embedded {arch} PTX does not inflate: {e:?}"));
                let text = String::from_utf8(bytes)
                    .unwrap_or_else(|e| panic!("the embedded {arch} PTX is not UTF-8: {e}"));
                (arch, &*Box::leak(text.into_boxed_str()))
            })
            .collect()
    })
}

/// `sm_90` -> 90.
pub fn arch_number(arch: &str) -> u32 {
    arch.trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_alphabetic())
        .parse()
        .unwrap_or(0)
}

/// Whether `arch` is arch-specific (`sm_90a`): its PTX runs on exactly that compute
/// capability, not on later ones.
pub fn is_arch_specific(arch: &str) -> bool {
    arch.ends_with('a')
}

/// Whether a device of capability `major.minor` can run PTX built for `arch`: PTX for sm_XY
/// runs, through the driver's JIT, on any device of capability >= X.Y; PTX for sm_XYa only on
/// X.Y itself.
pub fn runs_on(arch: &str, major: i32, minor: i32) -> bool {
    let cc = (major * 10 + minor) as u32;
    let a = arch_number(arch);
    if is_arch_specific(arch) {
        a == cc
    } else {
        a <= cc
    }
}

/// The newest built PTX the device (compute capability `major.minor`) can run, the
/// arch-specific one first among equals (it has every entry the plain one has, and more).
pub fn choose(major: i32, minor: i32) -> Option<(&'static str, &'static str)> {
    built()
        .iter()
        .copied()
        .filter(|(a, _)| runs_on(a, major, minor))
        .max_by_key(|(a, _)| (arch_number(a), is_arch_specific(a)))
}

/// The oldest built arch whose PTX has the entry `name`, e.g. `Some("sm_90a")` for a wgmma
/// kernel; `None` if no built PTX has it.
pub fn first_arch_with(name: &str) -> Option<&'static str> {
    built()
        .iter()
        .find(|(_, p)| has_entry(p, name))
        .map(|(a, _)| *a)
}

/// Whether the PTX text `ptx` defines the kernel entry `name`.
pub fn has_entry(ptx: &str, name: &str) -> bool {
    ptx.contains(&format!(".entry {name}("))
}

/// The `.version` a PTX file declares, e.g. "7.8".
pub fn isa_version(ptx: &str) -> &str {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".version "))
        .map(str::trim)
        .unwrap_or("?")
}

/// The CUDA version (as the driver reports it, 1000*major + 10*minor) that introduced a PTX
/// ISA version: a driver older than that refuses the PTX.
pub fn cuda_version_for_isa(isa: &str) -> Option<i32> {
    let (maj, min) = isa.split_once('.')?;
    let (maj, min): (i32, i32) = (maj.parse().ok()?, min.parse().ok()?);
    // PTX ISA 7.x shipped with CUDA 11.x (7.0 = 11.0 ... 7.8 = 11.8); 8.x with 12.x.
    Some(match maj {
        7 => 11000 + min * 10,
        8 => 12000 + min * 10,
        9 => 13000 + min * 10,
        _ => return None,
    })
}

/// 12080 -> "12.8".
pub fn format_cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The PTX link step of `host/build`, compiled into the unit tests to test its PTX rewrite.
#[cfg(test)]
#[path = "../build/linker.rs"]
#[allow(dead_code)]
mod build_linker;

/// The CUDA C++ twins' PTX (`host/twins/*.cu`, compiled by `host/build/twins.rs` with NVRTC
/// for the same architectures), and why there is none when the build could not make it.
pub const TWINS: (&[(&str, &str)], Option<&str>) =
    include!(concat!(env!("OUT_DIR"), "/twins_list.rs"));

/// The twins' PTX for `arch` (the arch the Rust PTX was chosen for), or why there is none.
pub fn twins_for(arch: &str) -> Result<&'static str, String> {
    match TWINS {
        (_, Some(why)) => Err(format!("CUDA C++ twins {why}")),
        (list, None) => list
            .iter()
            .find(|(a, _)| *a == arch)
            .map(|(_, p)| *p)
            .ok_or_else(|| format!("no CUDA C++ twins built for {arch}")),
    }
}

/// The name of the twin of the Rust entry `name` (`cuda_` + name).
pub fn twin_name(name: &str) -> String {
    format!("{}{name}", rooflab_kernels::twins::ENTRY_PREFIX)
}

/// Whether the twins' PTX has a twin of the Rust entry `name`.
pub fn has_twin(twin_ptx: &str, name: &str) -> bool {
    has_entry(twin_ptx, &twin_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_newest_fitting_arch() {
        assert_eq!(choose(9, 0).map(|p| p.0), Some("sm_90a"));
        assert_eq!(choose(8, 9).map(|p| p.0), Some("sm_80"));
        // sm_90a PTX does not run on later GPUs: they get the plain sm_90.
        assert_eq!(choose(10, 0).map(|p| p.0), Some("sm_90"));
        assert_eq!(choose(12, 0).map(|p| p.0), Some("sm_90"));
        assert_eq!(choose(7, 5), None);
        assert!(runs_on("sm_90a", 9, 0) && !runs_on("sm_90a", 10, 0) && !runs_on("sm_90a", 8, 9));
    }

    #[test]
    fn the_sm_90a_build_has_every_entry_and_declares_ptx_8() {
        let (_, plain) = built().iter().find(|(a, _)| *a == "sm_90").unwrap();
        let (_, a) = built().iter().find(|(a, _)| *a == "sm_90a").unwrap();
        let entries = |p: &str| -> Vec<String> {
            p.lines()
                .filter(|l| l.starts_with(".visible .entry "))
                .filter_map(|l| l.split(".entry ").nth(1))
                .map(|l| l.split('(').next().unwrap_or("").to_string())
                .collect()
        };
        let (pe, ae) = (entries(plain), entries(a));
        let missing: Vec<_> = pe.iter().filter(|e| !ae.contains(e)).collect();
        assert!(missing.is_empty(), "{missing:?}");
        assert!(ae.len() > pe.len(), "sm_90a adds the wgmma steps");
        assert!(isa_version(a) >= "8.0");
        // Hopper-only instructions stay out of the portable PTX.
        for op in ["wgmma.", "setmaxnreg", "cp.async.bulk.tensor"] {
            assert!(!plain.contains(op), "{op} in the sm_90 PTX");
        }
    }

    use super::build_linker;

    #[test]
    fn launch_bounds_markers_become_directives() {
        let ptx = ".visible .entry k(\n\t.param .u32 k_param_0\n)\n{\n\t// begin inline asm\n\t// rooflab:launch_bounds 384 1\n\t// end inline asm\n\tret;\n}\n.visible .entry j(\n)\n{\n\tret;\n}\n";
        let out = build_linker::apply_launch_bounds(ptx).unwrap();
        let k = out.split(".visible .entry j").next().unwrap();
        assert!(
            k.contains(")\n.maxntid 384, 1, 1\n.minnctapersm 1\n{"),
            "{out}"
        );
        assert_eq!(out.matches(".maxntid").count(), 1, "{out}");
        let both = ptx.replace(
            "// rooflab:launch_bounds 384 1",
            "// rooflab:launch_bounds 384 1\n\t// rooflab:cluster_dims 2",
        );
        let out = build_linker::apply_launch_bounds(&both).unwrap();
        assert!(
            out.contains(".maxntid 384, 1, 1\n.minnctapersm 1\n.reqnctapercluster 2, 1, 1\n{")
                || out.contains(".reqnctapercluster 2, 1, 1\n.maxntid"),
            "{out}"
        );
        assert_eq!(out.matches(".reqnctapercluster").count(), 1, "{out}");
        assert!(build_linker::apply_launch_bounds("// rooflab:launch_bounds 1 1\n").is_err());
        assert!(
            build_linker::apply_launch_bounds(".entry k(\n)\n{\n// rooflab:launch_bounds x\n}")
                .is_err()
        );
    }

    #[test]
    fn every_built_ptx_has_kernels_and_a_version() {
        assert!(built().len() >= 2);
        for (arch, ptx) in built() {
            assert!(ptx.contains(&format!(".target {arch}")), "{arch}");
            let k = rooflab_kernels::memory::v02_coalesced::memory_v02_coalesced_copy;
            assert!(ptx.contains(&format!(".entry {k}(")));
            assert!(cuda_version_for_isa(isa_version(ptx)).is_some());
        }
    }

    #[test]
    fn isa_to_cuda_version() {
        assert_eq!(cuda_version_for_isa("7.8"), Some(11080));
        assert_eq!(cuda_version_for_isa("8.0"), Some(12000));
        assert_eq!(format_cuda_version(12080), "12.8");
    }
}
