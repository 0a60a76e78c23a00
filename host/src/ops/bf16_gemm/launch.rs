//! bf16_gemm: the variants, their launch geometry (from the variant files' constants), the
//! shape checks shared with the peer, and the safe launch wrapper [`linear`] (every shape,
//! length, K-multiple, row-count and 32-bit check made before any launch).

use rooflab_kernels::bf16_gemm::{
    v01_mma_sync, v02_smem_ldmatrix, v03_cp_async_pipeline, v04_swizzled, v05_weight_streaming,
    v06_fragment_double_buffer, v07_wgmma, v08_tma, v09_warp_specialized, v10_persistent,
    v11_cluster_multicast,
};
use rooflab_kernels::kernel::KernelId;
use rooflab_kernels::tensor_map::TensorMap;

use crate::bench::KernelUse;
use crate::cost::Precision;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, LaunchConfig, View, ViewMut};
use crate::tma::Bf16Tiles;

/// The BF16 GEMM ladder: tensor-core (mma.sync) steps for any M (v01-v04, v06), the
/// weight-streaming step for small M (v05), and Hopper's wgmma steps (v07-v10, sm_90a only:
/// unavailable elsewhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01MmaSync,
    V02SmemLdmatrix,
    V03CpAsyncPipeline,
    V04Swizzled,
    V05WeightStreaming,
    V06FragmentDoubleBuffer,
    V07Wgmma,
    V08Tma,
    V09WarpSpecialized,
    V10Persistent,
    V11ClusterMulticast,
}

pub const LADDER: [Variant; 11] = [
    Variant::V01MmaSync,
    Variant::V02SmemLdmatrix,
    Variant::V03CpAsyncPipeline,
    Variant::V04Swizzled,
    Variant::V05WeightStreaming,
    Variant::V06FragmentDoubleBuffer,
    Variant::V07Wgmma,
    Variant::V08Tma,
    Variant::V09WarpSpecialized,
    Variant::V10Persistent,
    Variant::V11ClusterMulticast,
];

/// The entries that read x and W through pointers: `(m, n, k, x, w, y)`, bf16 as `u16`.
pub type LinearKernel = Kernel<(u32, u32, u32, *const u16, *const u16, *mut u16)>;
/// The TMA entries: x and W through tensor maps, `(m, n, k, x_map, w_map, y)`.
pub type TmaLinearKernel =
    Kernel<(u32, u32, u32, *const TensorMap, *const TensorMap, *mut u16)>;

/// A step's entry, by how it takes x and W.
#[derive(Clone, Copy, Debug)]
pub enum Entry {
    Pointers(LinearKernel),
    TensorMaps(TmaLinearKernel),
}

impl Entry {
    pub fn id(self) -> KernelId {
        match self {
            Entry::Pointers(k) => k.id(),
            Entry::TensorMaps(k) => k.id(),
        }
    }
}

/// Largest M, N or K any step accepts: the sizes are u32 and stay below 2^31 after adding a
/// tile (element offsets are 64-bit in the kernels).
pub const MAX_DIM: u64 = (1 << 31) - 1;

/// Matrix sizes of `y = x·Wᵀ`: x is M×K, W is N×K, y is M×N (all row-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Dims {
    pub const fn new(m: usize, n: usize, k: usize) -> Dims {
        Dims { m, n, k }
    }
    /// Multiply-adds: M·N·K (saturating).
    pub fn macs(self) -> usize {
        self.m.saturating_mul(self.n).saturating_mul(self.k)
    }
    /// The bench's shape string: `4096^3` for a cube, else `M×N×K`.
    pub fn shape(self) -> String {
        if self.m == self.n && self.n == self.k {
            format!("{}^3", self.m)
        } else {
            format!("{}×{}×{}", self.m, self.n, self.k)
        }
    }
}

impl std::fmt::Display for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "M={} N={} K={}", self.m, self.n, self.k)
    }
}

/// A variant's launch shape, all from its file's constants: `block_threads` threads in x,
/// a `bm`×`bn` tile of y per block, `shared_bytes` of dynamic shared memory; K must be a
/// multiple of `k_multiple`; M at most `max_m` (v05 only); `persistent`: at most one block
/// per SM, each walking tiles (v10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub block_threads: u32,
    pub bm: u32,
    pub bn: u32,
    pub shared_bytes: u32,
    pub k_multiple: u32,
    pub max_m: Option<u32>,
    pub persistent: bool,
    /// Blocks per cluster (1: no clusters). Clustered steps put row blocks in grid x.
    pub cluster: u32,
}

macro_rules! geometry_of {
    ($v:ident, $max_m:expr) => {
        geometry_of!($v, $max_m, false, 1)
    };
    ($v:ident, $max_m:expr, $persistent:expr, $cluster:expr) => {
        Geometry {
            block_threads: $v::BLOCK_THREADS,
            bm: $v::BM,
            bn: $v::BN,
            shared_bytes: $v::SHARED_BYTES,
            k_multiple: $v::K_MULTIPLE,
            max_m: $max_m,
            persistent: $persistent,
            cluster: $cluster,
        }
    };
}

impl Variant {
    /// The kernel entry and how it takes its inputs.
    pub fn entry(self) -> Entry {
        use Entry::{Pointers, TensorMaps};
        match self {
            Variant::V01MmaSync => Pointers(v01_mma_sync::bf16_gemm_v01_mma_sync),
            Variant::V02SmemLdmatrix => Pointers(v02_smem_ldmatrix::bf16_gemm_v02_smem_ldmatrix),
            Variant::V03CpAsyncPipeline => {
                Pointers(v03_cp_async_pipeline::bf16_gemm_v03_cp_async_pipeline)
            }
            Variant::V04Swizzled => Pointers(v04_swizzled::bf16_gemm_v04_swizzled),
            Variant::V05WeightStreaming => {
                Pointers(v05_weight_streaming::bf16_gemm_v05_weight_streaming)
            }
            Variant::V06FragmentDoubleBuffer => {
                Pointers(v06_fragment_double_buffer::bf16_gemm_v06_fragment_double_buffer)
            }
            Variant::V07Wgmma => Pointers(v07_wgmma::bf16_gemm_v07_wgmma),
            Variant::V08Tma => TensorMaps(v08_tma::bf16_gemm_v08_tma),
            Variant::V09WarpSpecialized => {
                TensorMaps(v09_warp_specialized::bf16_gemm_v09_warp_specialized)
            }
            Variant::V10Persistent => TensorMaps(v10_persistent::bf16_gemm_v10_persistent),
            Variant::V11ClusterMulticast => {
                TensorMaps(v11_cluster_multicast::bf16_gemm_v11_cluster_multicast)
            }
        }
    }

    /// The kernel entry's identity, e.g. `bf16_gemm_v01_mma_sync`.
    pub fn kernel(self) -> KernelId {
        self.entry().id()
    }

    /// The variant file's stem, e.g. `v01_mma_sync` (from the kernel constant).
    pub fn stem(self) -> &'static str {
        self.kernel().stem()
    }

    /// The bench row's variant: the entry name minus the family prefix (here the stem).
    pub fn row_variant(self) -> String {
        self.stem().to_string()
    }

    /// The launch shape, from the variant file's constants.
    pub fn geometry(self) -> Geometry {
        match self {
            Variant::V01MmaSync => geometry_of!(v01_mma_sync, None),
            Variant::V02SmemLdmatrix => geometry_of!(v02_smem_ldmatrix, None),
            Variant::V03CpAsyncPipeline => geometry_of!(v03_cp_async_pipeline, None),
            Variant::V04Swizzled => geometry_of!(v04_swizzled, None),
            Variant::V05WeightStreaming => {
                geometry_of!(v05_weight_streaming, Some(v05_weight_streaming::MAX_M))
            }
            Variant::V06FragmentDoubleBuffer => geometry_of!(v06_fragment_double_buffer, None),
            Variant::V07Wgmma => geometry_of!(v07_wgmma, None),
            Variant::V08Tma => geometry_of!(v08_tma, None),
            Variant::V09WarpSpecialized => geometry_of!(v09_warp_specialized, None),
            Variant::V10Persistent => geometry_of!(v10_persistent, None, true, 1),
            Variant::V11ClusterMulticast => geometry_of!(
                v11_cluster_multicast,
                None,
                true,
                v11_cluster_multicast::CLUSTER
            ),
        }
    }

    /// Whether the step reads x and W through TMA tensor maps.
    pub fn uses_tma(self) -> bool {
        matches!(self.entry(), Entry::TensorMaps(_))
    }

    /// The precision the FLOPs are done in: every step multiplies on the tensor cores
    /// (v05 too, with x padded to 16 rows), so BF16 tensor for all; v05 is memory-bound
    /// on the weight bytes either way.
    pub fn precision(self) -> Precision {
        Precision::Bf16Tensor
    }

    /// Whether this step takes the shape (K multiple, M limit), without the lengths.
    pub fn applies(self, d: Dims) -> bool {
        self.check_shape(d).is_ok()
    }

    /// The kernel and launch shape a bench row of this variant runs (the same at every
    /// shape: only the grid grows with the matrices).
    pub fn kernel_use(self) -> KernelUse {
        let g = self.geometry();
        KernelUse::new(self.kernel(), g.block_threads, g.shared_bytes)
    }

    /// The step's own limits: K a multiple of its K_MULTIPLE, M at most its MAX_M.
    pub fn check_shape(self, d: Dims) -> Result<()> {
        let g = self.geometry();
        let op = self.kernel().name();
        if g.k_multiple > 1 && !d.k.is_multiple_of(g.k_multiple as usize) {
            let any_k = LADDER
                .iter()
                .filter(|v| v.geometry().k_multiple == 1)
                .map(|v| v.stem())
                .collect::<Vec<_>>()
                .join(" or ");
            return Err(Error::Shape {
                op: op.into(),
                what: format!(
                    "K = {} is not a multiple of {}, which {} needs (16-byte loads along K); \
                     {any_k} takes any K",
                    d.k,
                    g.k_multiple,
                    self.stem()
                ),
            });
        }
        if let Some(max_m) = g.max_m
            && d.m > max_m as usize
        {
            let any_m: Vec<&str> = LADDER
                .iter()
                .filter(|v| v.geometry().max_m.is_none())
                .map(|v| v.stem())
                .collect();
            return Err(Error::Shape {
                op: op.into(),
                what: format!(
                    "M = {} is past {}'s {max_m} rows (it streams W once per {max_m} rows): use {}",
                    d.m,
                    self.stem(),
                    any_m.join(", ")
                ),
            });
        }
        Ok(())
    }

    /// Grid, block and shared memory for an M×N output: grid x = ceil(N/BN), y = ceil(M/BM).
    /// Refused when the grid would pass CUDA's limits (2^31-1 blocks in x, 65535 in y).
    pub fn launch_config(self, d: Dims) -> Result<LaunchConfig> {
        let g = self.geometry();
        let (row_blocks, col_blocks) = (d.m.div_ceil(g.bm as usize), d.n.div_ceil(g.bn as usize));
        // Clusters are consecutive blocks in x: clustered steps put the row blocks there,
        // rounded up to whole clusters.
        let (gx, gy) = if g.cluster > 1 {
            (row_blocks.max(1).next_multiple_of(g.cluster as usize), col_blocks)
        } else {
            (col_blocks, row_blocks)
        };
        let too_large = |what: &str, value: usize, limit: u64| Error::TooLarge {
            op: self.kernel().name().into(),
            what: what.into(),
            value: value as u64,
            limit,
        };
        if gx as u64 > i32::MAX as u64 {
            return Err(too_large("blocks in x", gx, i32::MAX as u64));
        }
        if gy > 65535 {
            return Err(too_large("blocks in y", gy, 65535));
        }
        Ok(LaunchConfig::grid_2d(
            (gx.max(1) as u32, gy.max(1) as u32),
            (g.block_threads, 1),
            g.shared_bytes,
        ))
    }
}

/// Shape checks shared by every variant and the peer: sizes fit the kernels' 32-bit
/// indexing, lengths match the sizes (x M·K, W N·K, y M·N).
pub fn validate(op: &str, d: Dims, x_len: usize, w_len: usize, y_len: usize) -> Result<()> {
    for (what, v) in [("M", d.m), ("N", d.n), ("K", d.k)] {
        if v as u64 > MAX_DIM {
            return Err(Error::TooLarge {
                op: op.into(),
                what: what.into(),
                value: v as u64,
                limit: MAX_DIM,
            });
        }
    }
    for (name, rows, cols, len) in [
        ("x", d.m, d.k, x_len),
        ("W", d.n, d.k, w_len),
        ("y", d.m, d.n, y_len),
    ] {
        if rows.checked_mul(cols) != Some(len) {
            return Err(Error::Shape {
                op: op.into(),
                what: format!("{name} should be {rows}x{cols} for {d}, but has {len} elements"),
            });
        }
    }
    Ok(())
}

/// Steps with 16-byte loads of x and W (K_MULTIPLE > 1) need both to start 16-byte aligned
/// (then, K being a multiple of 8, every row does); a view into the middle of an
/// allocation may not.
fn check_alignment(v: Variant, x: &View<'_, u16>, w: &View<'_, u16>) -> Result<()> {
    if v.geometry().k_multiple == 1 {
        return Ok(());
    }
    for (name, addr, len) in [
        ("x", x.device_addr(), x.len()),
        ("W", w.device_addr(), w.len()),
    ] {
        if len > 0 && !addr.is_multiple_of(16) {
            return Err(Error::Shape {
                op: v.kernel().name().into(),
                what: format!(
                    "{name} starts at {addr:#x}, not 16-byte aligned, which {} needs (16-byte \
                     loads); {} takes any alignment",
                    v.stem(),
                    Variant::V01MmaSync.stem()
                ),
            });
        }
    }
    Ok(())
}

/// `y = x·Wᵀ` (torch.nn.functional.linear without bias): x M×K, W N×K, y M×N, bf16 bits,
/// f32 accumulation, y rounded to nearest even.
///
/// - M or N zero: nothing to do, nothing launched.
/// - K zero (M, N > 0): y = 0 (the empty sum), written by v05's kernel with K = 0 whatever
///   the variant (it then loads nothing and stores zeros; its grid covers any M in groups
///   of `MAX_M` rows), so the result is defined and stream-ordered.
/// - Otherwise the step's limits first (K a multiple of its K_MULTIPLE, M ≤ MAX_M for v05,
///   x and W 16-byte aligned for the 16-byte-load steps), then one launch.
#[allow(clippy::too_many_arguments)]
pub fn linear(
    gpu: &Gpu,
    v: Variant,
    m: usize,
    n: usize,
    k: usize,
    x: View<'_, u16>,
    w: View<'_, u16>,
    y: ViewMut<'_, u16>,
) -> Result<()> {
    let d = Dims::new(m, n, k);
    let kernel = v.kernel();
    validate(kernel.name(), d, x.len(), w.len(), y.len())?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        let zero = Variant::V05WeightStreaming;
        let cfg = zero.launch_config(d)?;
        let Entry::Pointers(zk) = zero.entry() else {
            unreachable!("v05 takes pointers")
        };
        // SAFETY: K = 0: the kernel reads neither x nor W and writes y[i][j] for i < M,
        // j < N only (y holds M·N, validated); the grid covers y in BM×BN blocks.
        return unsafe { gpu.launch(zk, cfg, (m as u32, n as u32, 0u32, x, w, y)) };
    }
    v.check_shape(d)?;
    gpu.available(kernel)?;
    check_alignment(v, &x, &w)?;
    let mut cfg = v.launch_config(d)?;
    let g = v.geometry();
    if g.persistent {
        // Units that run at once: blocks (one per SM), or whole clusters as the driver
        // places them.
        let units = if g.cluster > 1 {
            gpu.max_active_clusters(kernel, g.cluster, g.block_threads, g.shared_bytes)?
        } else {
            gpu.info.multiprocessors
        };
        cfg.grid = persistent_grid(d, g, units);
    }
    let dims = (m as u32, n as u32, k as u32);
    match v.entry() {
        // SAFETY: the views are live and hold M·K, N·K and M·N bf16 (validated); K is a
        // multiple of the step's K_MULTIPLE, M within its MAX_M, x and W aligned as its loads
        // need; the grid covers y with the block and shared memory the kernel is built for.
        Entry::Pointers(kernel) => unsafe {
            gpu.launch(kernel, cfg, (dims.0, dims.1, dims.2, x, w, y))
        },
        Entry::TensorMaps(kernel) => {
            let op = kernel.name();
            // Boxes: BM (BN) rows of BK = 64 bf16, the 128-byte swizzle the kernel reads.
            let xm = gpu.tensor_map(Bf16Tiles::new(op, "x", &x, m, k, g.bm, 64)?)?;
            // With clusters each block loads its share of the W tile's rows.
            let wm = gpu.tensor_map(Bf16Tiles::new(op, "W", &w, n, k, g.bn / g.cluster, 64)?)?;
            // SAFETY: as above; the maps describe exactly x (M×K) and W (N×K) of the live
            // views, with the boxes and swizzle the kernel's stages are laid out for (TMA
            // zero-fills past M, N and K).
            unsafe { gpu.launch(kernel, cfg, (dims.0, dims.1, dims.2, xm, wm, y)) }
        }
    }
}

/// The grid of a persistent step: `units` (blocks, or clusters of `g.cluster` blocks, that
/// run at once) or fewer when there are fewer tiles (clustered: fewer pairs of row blocks ×
/// column blocks), in x; each walks tiles b, b + units, ...
pub fn persistent_grid(d: Dims, g: Geometry, units: u32) -> (u32, u32, u32) {
    let c = g.cluster.max(1) as usize;
    let work = d.m.div_ceil(g.bm as usize).div_ceil(c) * d.n.div_ceil(g.bn as usize);
    ((work.clamp(1, units.max(1) as usize) * c) as u32, 1, 1)
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn validation_messages() {
        let d = Dims::new(3, 5, 4);
        validate("op", d, 12, 20, 15).unwrap();
        let e = validate("op", d, 12, 21, 15).unwrap_err().to_string();
        assert!(e.contains("W should be 5x4") && e.contains("21"), "{e}");
        let e = validate("op", d, 11, 20, 15).unwrap_err().to_string();
        assert!(e.contains("x should be 3x4") && e.contains("11"), "{e}");
        let e = validate("op", d, 12, 20, 16).unwrap_err().to_string();
        assert!(e.contains("y should be 3x5") && e.contains("16"), "{e}");
        let e = validate("op", Dims::new(1, 1 << 31, 1), 1, 1 << 31, 1 << 31)
            .unwrap_err()
            .to_string();
        assert!(e.contains("N") && e.contains("limit"), "{e}");
        validate("op", Dims::new(0, 5, 4), 0, 20, 0).unwrap();
        validate("op", Dims::new(5, 7, 0), 0, 0, 35).unwrap();
    }

    #[test]
    fn step_limits_are_refused_without_a_gpu() {
        for v in LADDER {
            let g = v.geometry();
            assert!(g.k_multiple >= 1 && g.k_multiple <= 64, "{v:?}");
            if g.k_multiple > 1 {
                let e = v
                    .check_shape(Dims::new(16, 16, g.k_multiple as usize + 1))
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.contains(&format!("multiple of {}", g.k_multiple))
                        && e.contains(Variant::V01MmaSync.stem())
                        && e.contains("takes any K"),
                    "{e}"
                );
            } else {
                v.check_shape(Dims::new(3, 3, 1001)).unwrap();
            }
        }
        // v01 takes any K (the message above sends users there).
        assert_eq!(Variant::V01MmaSync.geometry().k_multiple, 1);
        let v05 = Variant::V05WeightStreaming;
        let max_m = v05.geometry().max_m.unwrap();
        assert_eq!(max_m, v05.geometry().bm);
        v05.check_shape(Dims::new(max_m as usize, 4096, 4096))
            .unwrap();
        let e = v05
            .check_shape(Dims::new(64, 4096, 4096))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("M = 64 is past")
                && e.contains(&format!("{max_m} rows"))
                && e.contains(Variant::V01MmaSync.stem())
                && e.contains(Variant::V04Swizzled.stem()),
            "{e}"
        );
        assert!(!v05.applies(Dims::new(9, 1, 8)));
        assert!(Variant::V04Swizzled.applies(Dims::new(9, 1, 8)));
    }

    #[test]
    fn launch_geometry_covers_y() {
        let shapes = [
            Dims::new(1, 1, 8),
            Dims::new(17, 4097, 1000),
            Dims::new(4097, 17, 24),
            Dims::new(8, 28672, 8192),
            Dims::new(8192, 8192, 8192),
        ];
        for v in LADDER {
            for d in shapes {
                let cfg = v.launch_config(d).unwrap();
                let g = v.geometry();
                // (row blocks, column blocks); clustered steps have the rows in x.
                let (rows, cols) = if g.cluster > 1 {
                    assert!(cfg.grid.0.is_multiple_of(g.cluster), "{v:?} {d}");
                    (cfg.grid.0 as usize, cfg.grid.1 as usize)
                } else {
                    (cfg.grid.1 as usize, cfg.grid.0 as usize)
                };
                assert!(rows * g.bm as usize >= d.m, "{v:?} {d}");
                assert!(cols * g.bn as usize >= d.n, "{v:?} {d}");
                // Not one block too many (beyond rounding up to whole clusters).
                let spare = g.cluster as usize;
                assert!((rows - spare) * (g.bm as usize) < d.m.max(1), "{v:?} {d}");
                assert!((cols - 1) * (g.bn as usize) < d.n.max(1));
                assert_eq!(cfg.shared_bytes, g.shared_bytes);
                // Past 48 KiB the launch opts in (gpu.rs); 227 KiB is sm_90's most.
                assert!(cfg.shared_bytes <= 227 * 1024, "{v:?} shared memory");
                assert!(cfg.block.0 <= 1024 && cfg.block.0.is_multiple_of(32));
                let u = v.kernel_use();
                assert_eq!(
                    (u.block_threads, u.shared_bytes),
                    (cfg.block.0, cfg.shared_bytes)
                );
            }
        }
        let v = Variant::V01MmaSync;
        let bm = v.geometry().bm as usize;
        let e = v
            .launch_config(Dims::new(65535 * bm + 1, 1, 8))
            .unwrap_err()
            .to_string();
        assert!(e.contains("blocks in y") && e.contains("65535"), "{e}");
    }

    #[test]
    fn names_follow_the_stem() {
        for v in LADDER {
            let name = v.kernel().name();
            let family = crate::ops::bf16_gemm::FAMILY.name;
            assert_eq!(v.kernel().family(), family);
            assert_eq!(name, [family, v.stem()].join("_"));
            assert_eq!(v.row_variant(), v.stem());
            // In the sm_80 PTX, or (the wgmma steps) first in the sm_90a one.
            let first = crate::ptx::first_arch_with(name);
            let want = if matches!(
                v,
                Variant::V07Wgmma
                    | Variant::V08Tma
                    | Variant::V09WarpSpecialized
                    | Variant::V10Persistent
                    | Variant::V11ClusterMulticast
            ) {
                "sm_90a"
            } else {
                "sm_80"
            };
            assert_eq!(first, Some(want), "{name}");
        }
    }

    #[test]
    fn persistent_grid_is_at_most_one_block_per_sm() {
        let v = Variant::V10Persistent;
        let g = v.geometry();
        assert!(g.persistent);
        assert_eq!(persistent_grid(Dims::new(8192, 8192, 64), g, 132), (132, 1, 1));
        assert_eq!(persistent_grid(Dims::new(1, 1, 8), g, 132), (1, 1, 1));
        assert_eq!(persistent_grid(Dims::new(129, 257, 8), g, 132), (4, 1, 1));
        // Clustered: whole clusters, as many as fit (66 on 132 SMs if the GPCs allow), each
        // on a pair of row blocks.
        let g = Variant::V11ClusterMulticast.geometry();
        assert!(g.persistent && g.cluster == 2);
        assert_eq!(persistent_grid(Dims::new(8192, 8192, 64), g, 66), (132, 1, 1));
        assert_eq!(persistent_grid(Dims::new(8192, 8192, 64), g, 60), (120, 1, 1));
        // 3 row blocks → 2 pairs, × 2 column blocks: 4 clusters.
        assert_eq!(persistent_grid(Dims::new(257, 257, 8), g, 66), (8, 1, 1));
        assert_eq!(persistent_grid(Dims::new(1, 1, 8), g, 66), (2, 1, 1));
        // The grouped order the kernel walks visits each tile once.
        use rooflab_kernels::bf16_gemm::tma_ring::grouped_tile;
        for (tm, tn) in [(1, 1), (3, 5), (8, 16), (17, 3), (32, 32), (9, 1)] {
            let mut seen = vec![false; (tm * tn) as usize];
            for l in 0..tm * tn {
                let (a, b) = grouped_tile(l, tm, tn);
                assert!(a < tm && b < tn && !seen[(a * tn + b) as usize]);
                seen[(a * tn + b) as usize] = true;
            }
        }
    }

    #[test]
    fn shape_strings() {
        assert_eq!(Dims::new(4096, 4096, 4096).shape(), "4096^3");
        assert_eq!(Dims::new(8, 28672, 8192).shape(), "8×28672×8192");
        assert_eq!(Dims::new(2, 3, 4).macs(), 24);
    }
}
