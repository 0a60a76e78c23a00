//! The CUDA 12 driver calls rooflab needs and cust 0.3 (the CUDA 11.4 driver API) lacks:
//! `cuTensorMapEncodeTiled` (TMA descriptors, for the tma module),
//! `cuOccupancyMaxActiveClusters` (how many clusters of a kernel fit at once) and
//! `cuLaunchKernelEx` with a cluster dimension (kernels whose cluster size is chosen at launch:
//! the cluster-row steps of softmax and the norms).
//!
//! Three calls did not justify a second driver binding beside cust (cudarc's would bring its
//! own context and stream types), so they are declared here from CUDA 12's `cuda.h` and looked
//! up in the driver library the process has already loaded (`libcuda.so.1`, through
//! `libloading`) at first use, instead of being linked: a binary built here still starts on
//! an older driver, and only the steps that need these calls report that it is too old.

use std::ffi::c_void;
use std::sync::OnceLock;

use libloading::Library;

use crate::error::{Error, Result};

/// The driver library, opened once per process.
fn libcuda() -> std::result::Result<&'static Library, String> {
    static LIB: OnceLock<std::result::Result<Library, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: loading the driver library the process already uses; its initializers
        // have run.
        unsafe { Library::new("libcuda.so.1") }
            .map_err(|e| format!("could not open libcuda.so.1: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The symbol `name` (NUL-terminated) of libcuda as a function pointer of type `F`, looked
/// up once per process in `slot`; missing, the error says the driver is older than `need`.
///
/// # Safety
/// `F` must be the symbol's signature in CUDA 12's `cuda.h`.
unsafe fn symbol<F: Copy + Send + Sync>(
    slot: &'static OnceLock<std::result::Result<F, String>>,
    name: &str,
    need: &str,
    isa: &str,
) -> Result<F> {
    let found = slot.get_or_init(|| {
        let lib = libcuda()?;
        let c_name = format!("{name}\0");
        // SAFETY: the caller's contract (F is the symbol's type).
        unsafe { lib.get::<F>(c_name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| e.to_string())
    });
    found.clone().map_err(|why| Error::DriverTooOld {
        have: format!("one whose libcuda has no {name} ({why})"),
        need: need.into(),
        isa: isa.into(),
    })
}

/// CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType, cuuint32_t rank,
/// void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
/// const cuuint32_t* boxDim, const cuuint32_t* elementStrides, interleave, swizzle,
/// l2Promotion, oobFill) — CUDA 12.0.
pub(crate) type EncodeTiled = unsafe extern "C" fn(
    *mut rooflab_kernels::tensor_map::TensorMap,
    i32,
    u32,
    *mut c_void,
    *const u64,
    *const u64,
    *const u32,
    *const u32,
    i32,
    i32,
    i32,
    i32,
) -> i32;

/// The driver's `cuTensorMapEncodeTiled`, looked up once per process.
pub(crate) fn encode_tiled() -> Result<EncodeTiled> {
    static F: OnceLock<std::result::Result<EncodeTiled, String>> = OnceLock::new();
    // SAFETY: EncodeTiled is the signature in cuda.h.
    unsafe { symbol(&F, "cuTensorMapEncodeTiled", "12.0", "8.0 (TMA)") }
}

/// `CUlaunchConfig` of CUDA 12's `cuda.h`. Kernels that carry their cluster size in the PTX
/// (`.reqnctapercluster`) take no attributes; [`launch_with_cluster`] passes one.
#[repr(C)]
struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: *mut c_void,
    attrs: *mut c_void,
    num_attrs: u32,
}

/// CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
/// const CUlaunchConfig* config) — CUDA 11.8.
type MaxActiveClusters = unsafe extern "C" fn(*mut i32, *mut c_void, *const LaunchConfig) -> i32;

/// How many clusters of `cluster` blocks of `func` (`block_threads` threads and
/// `shared_bytes` of dynamic shared memory each; the function's cluster size in its PTX)
/// the GPU runs at once: a persistent clustered grid is at most that many clusters, or the
/// ones past it would wait for a whole wave. Errors carry the driver's code.
///
/// # Safety
/// `func` is a live `CUfunction` whose dynamic shared memory limit admits `shared_bytes`.
pub(crate) unsafe fn max_active_clusters(
    func: *mut c_void,
    cluster: u32,
    block_threads: u32,
    shared_bytes: u32,
) -> Result<u32> {
    static F: OnceLock<std::result::Result<MaxActiveClusters, String>> = OnceLock::new();
    // SAFETY: MaxActiveClusters is the signature in cuda.h.
    let f = unsafe { symbol(&F, "cuOccupancyMaxActiveClusters", "11.8", "7.8 (clusters)") }?;
    let cfg = LaunchConfig {
        grid: [cluster, 1, 1],
        block: [block_threads, 1, 1],
        shared_bytes,
        stream: std::ptr::null_mut(),
        attrs: std::ptr::null_mut(),
        num_attrs: 0,
    };
    let mut n = 0i32;
    // SAFETY: `n` and `cfg` are live locals of the types cuda.h names; `func` is the
    // caller's.
    let code = unsafe { f(&mut n, func, &cfg) };
    if code != 0 || n <= 0 {
        return Err(Error::Other(format!(
            "cuOccupancyMaxActiveClusters found no room for a cluster of {cluster} blocks of \
             {block_threads} threads and {shared_bytes} bytes of shared memory (CUDA error {code}, {n} clusters)"
        )));
    }
    Ok(n as u32)
}

/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` of `CUlaunchAttributeID` in cuda.h.
const ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;

/// `CUlaunchAttribute` of cuda.h: the id, padding to 8 bytes, then the 64-byte value union,
/// of which a cluster dimension uses its first three `unsigned int` (x, y, z).
#[repr(C, align(8))]
struct LaunchAttribute {
    id: u32,
    pad: u32,
    value: [u32; 16],
}

/// CUresult cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void** kernelParams,
/// void** extra) — CUDA 12.0.
type LaunchKernelEx = unsafe extern "C" fn(
    *const LaunchConfig,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> i32;

/// Launches `func` on `stream` as clusters of `cluster` consecutive blocks in x
/// (`cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`): for kernels that read
/// their cluster size (`%cluster_nctarank`) instead of carrying one in the PTX. Returns the
/// driver's code (0: launched); a driver without the call is `Error::DriverTooOld`.
///
/// # Safety
/// `func` is a live `CUfunction` of the current context, `stream` a live stream of it,
/// `params` one pointer per kernel parameter to a value of its size; `grid.0` a multiple
/// of `cluster`; the rest is the kernel's contract.
pub(crate) unsafe fn launch_with_cluster(
    func: *mut c_void,
    stream: *mut c_void,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
    cluster: u32,
    params: &[*mut c_void],
) -> Result<i32> {
    static F: OnceLock<std::result::Result<LaunchKernelEx, String>> = OnceLock::new();
    // SAFETY: LaunchKernelEx is the signature in cuda.h.
    let f = unsafe { symbol(&F, "cuLaunchKernelEx", "12.0", "9.0 (clusters)") }?;
    let mut value = [0u32; 16];
    value[..3].copy_from_slice(&[cluster, 1, 1]);
    let mut attr = LaunchAttribute {
        id: ATTRIBUTE_CLUSTER_DIMENSION,
        pad: 0,
        value,
    };
    let cfg = LaunchConfig {
        grid: [grid.0, grid.1, grid.2],
        block: [block.0, block.1, block.2],
        shared_bytes,
        stream,
        attrs: (&raw mut attr).cast(),
        num_attrs: 1,
    };
    // SAFETY: `cfg` and `attr` are live locals laid out as cuda.h's types; the driver reads
    // `params.len()` pointers (the kernel's parameter count, the caller's contract) and does
    // not write through them; the rest is the caller's.
    Ok(unsafe {
        f(
            &cfg,
            func,
            params.as_ptr() as *mut *mut c_void,
            std::ptr::null_mut(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `CUlaunchConfig`'s layout in cuda.h (x86-64): seven `unsigned int`, then the stream
    /// handle on an 8-byte boundary, the attribute pointer, their count: 56 bytes.
    #[test]
    fn launch_config_matches_cuda_h() {
        assert_eq!(std::mem::size_of::<LaunchConfig>(), 56);
        assert_eq!(std::mem::offset_of!(LaunchConfig, shared_bytes), 24);
        assert_eq!(std::mem::offset_of!(LaunchConfig, stream), 32);
        assert_eq!(std::mem::offset_of!(LaunchConfig, attrs), 40);
        assert_eq!(std::mem::offset_of!(LaunchConfig, num_attrs), 48);
    }

    /// `CUlaunchAttribute`'s layout in cuda.h: the id, 4 bytes of padding, a 64-byte union
    /// on an 8-byte boundary: 72 bytes.
    #[test]
    fn launch_attribute_matches_cuda_h() {
        assert_eq!(std::mem::size_of::<LaunchAttribute>(), 72);
        assert_eq!(std::mem::align_of::<LaunchAttribute>(), 8);
        assert_eq!(std::mem::offset_of!(LaunchAttribute, value), 8);
    }

    /// Without a driver library (this CI machine has only the link stub, or none at run
    /// time) the lookups fail with the driver-too-old message, never a panic.
    #[test]
    fn a_missing_symbol_is_a_clear_error() {
        static F: OnceLock<std::result::Result<EncodeTiled, String>> = OnceLock::new();
        // SAFETY: never called; only looked up.
        match unsafe { symbol(&F, "cuNoSuchFunctionInAnyDriver", "99.0", "9.9") } {
            Ok(_) => panic!("found a symbol that does not exist"),
            Err(e) => {
                let m = e.to_string();
                assert!(
                    m.contains("cuNoSuchFunctionInAnyDriver") && m.contains("99.0"),
                    "{m}"
                );
            }
        }
    }
}
