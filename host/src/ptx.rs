//! The PTX built by `host/build` (one per architecture in `host/build/ptx_arches.txt`),
//! embedded in the binary, and the choice of which one a device loads.

/// `(arch, ptx text)`, oldest first, as listed in `ptx_arches.txt`.
pub const BUILT: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/ptx_list.rs"));

/// `sm_90` -> 90.
pub fn arch_number(arch: &str) -> u32 {
    arch.trim_start_matches("sm_")
        .trim_end_matches(|c: char| c.is_alphabetic())
        .parse()
        .unwrap_or(0)
}

/// The newest built PTX whose architecture the device (compute capability `major.minor`)
/// can run: PTX for sm_XY runs, through the driver's JIT, on any device of capability >= X.Y.
pub fn choose(major: i32, minor: i32) -> Option<(&'static str, &'static str)> {
    let cc = (major * 10 + minor) as u32;
    BUILT
        .iter()
        .copied()
        .filter(|(a, _)| arch_number(a) <= cc)
        .max_by_key(|(a, _)| arch_number(a))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chooses_newest_fitting_arch() {
        assert_eq!(choose(9, 0).map(|p| p.0), Some("sm_90"));
        assert_eq!(choose(8, 9).map(|p| p.0), Some("sm_80"));
        assert_eq!(choose(10, 0).map(|p| p.0), Some("sm_90"));
        assert_eq!(choose(7, 5), None);
    }

    #[test]
    fn every_built_ptx_has_kernels_and_a_version() {
        assert!(BUILT.len() >= 2);
        for (arch, ptx) in BUILT {
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
