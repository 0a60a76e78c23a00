//! gemm: the variants, their launch geometry (from the variant files' constants; v08-v11
//! from their `GEOMETRY`), the shape checks shared with the peer, and the safe launch
//! wrapper (shapes checked before any launch).

use rooflab_kernels::gemm::warp_tile_pipeline::TwoStageGeometry;
use rooflab_kernels::gemm::{
    MAX_DIM, v01_naive, v02_coalesced, v03_smem_tiled, v04_blocktile_1d, v05_blocktile_2d,
    v06_vectorized, v07_warptile, v08_double_buffered, v09_interleaved_lanes, v10_warptile_64x64,
    v11_block_256x128, v12_split_k,
};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, LaunchConfig, View, ViewMut};

/// The SGEMM ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Naive,
    V02Coalesced,
    V03SmemTiled,
    V04Blocktile1d,
    V05Blocktile2d,
    V06Vectorized,
    V07Warptile,
    V08DoubleBuffered,
    V09InterleavedLanes,
    V10Warptile64x64,
    V11Block256x128,
    V12SplitK,
}

pub const LADDER: [Variant; 12] = [
    Variant::V01Naive,
    Variant::V02Coalesced,
    Variant::V03SmemTiled,
    Variant::V04Blocktile1d,
    Variant::V05Blocktile2d,
    Variant::V06Vectorized,
    Variant::V07Warptile,
    Variant::V08DoubleBuffered,
    Variant::V09InterleavedLanes,
    Variant::V10Warptile64x64,
    Variant::V11Block256x128,
    Variant::V12SplitK,
];

/// Every gemm entry has the same parameters: `(m, n, k, alpha, a, b, beta, c)`.
pub type GemmKernel = Kernel<(u32, u32, u32, f32, *const f32, *const f32, f32, *mut f32)>;

/// Matrix sizes: A is M×K, B is K×N, C is M×N.
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
}

impl std::fmt::Display for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "M={} N={} K={}", self.m, self.n, self.k)
    }
}

/// A variant's launch shape: the block, the tile of C one block computes and its dynamic
/// shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Threads per block in x and in y.
    pub block: (u32, u32),
    /// Rows and columns of C one block computes.
    pub tile: (u32, u32),
    pub shared_bytes: u32,
}

impl Geometry {
    /// v04 on: THREADS threads in x, a BM×BN tile of C, SHARED_F32 of shared memory.
    const fn block_tiled(threads: u32, bm: u32, bn: u32, shared_f32: u32) -> Geometry {
        Geometry {
            block: (threads, 1),
            tile: (bm, bn),
            shared_bytes: 4 * shared_f32,
        }
    }

    /// v08-v11: everything from the step's `GEOMETRY`, the value its kernel is built with.
    const fn two_stage(g: TwoStageGeometry) -> Geometry {
        Geometry {
            block: (g.threads, 1),
            tile: (g.bm, g.bn),
            shared_bytes: g.shared_bytes(),
        }
    }

    pub const fn threads(self) -> u32 {
        self.block.0 * self.block.1
    }
}

impl Variant {
    /// The kernel entry, e.g. `gemm_v03_smem_tiled`.
    pub fn kernel(self) -> GemmKernel {
        match self {
            Variant::V01Naive => v01_naive::gemm_v01_naive,
            Variant::V02Coalesced => v02_coalesced::gemm_v02_coalesced,
            Variant::V03SmemTiled => v03_smem_tiled::gemm_v03_smem_tiled,
            Variant::V04Blocktile1d => v04_blocktile_1d::gemm_v04_blocktile_1d,
            Variant::V05Blocktile2d => v05_blocktile_2d::gemm_v05_blocktile_2d,
            Variant::V06Vectorized => v06_vectorized::gemm_v06_vectorized,
            Variant::V07Warptile => v07_warptile::gemm_v07_warptile,
            Variant::V08DoubleBuffered => v08_double_buffered::gemm_v08_double_buffered,
            Variant::V09InterleavedLanes => v09_interleaved_lanes::gemm_v09_interleaved_lanes,
            Variant::V10Warptile64x64 => v10_warptile_64x64::gemm_v10_warptile_64x64,
            Variant::V11Block256x128 => v11_block_256x128::gemm_v11_block_256x128,
            Variant::V12SplitK => v12_split_k::gemm_v12_split_k,
        }
    }

    /// The entry name minus the family prefix, e.g. `v03_smem_tiled` (the bench row's
    /// variant).
    pub fn stem(self) -> &'static str {
        &self.kernel().name()[super::FAMILY.name.len() + 1..]
    }

    /// The launch shape, from the variant file's constants. v01 maps x to rows of C,
    /// everything else maps x to columns.
    pub fn geometry(self) -> Geometry {
        use Variant::*;
        match self {
            V01Naive => Geometry {
                block: (v01_naive::BLOCK_X, v01_naive::BLOCK_Y),
                tile: (v01_naive::BLOCK_X, v01_naive::BLOCK_Y),
                shared_bytes: 0,
            },
            V02Coalesced => Geometry {
                block: (v02_coalesced::BLOCK_X, v02_coalesced::BLOCK_Y),
                tile: (v02_coalesced::BLOCK_Y, v02_coalesced::BLOCK_X),
                shared_bytes: 0,
            },
            V03SmemTiled => Geometry {
                block: (v03_smem_tiled::TILE, v03_smem_tiled::TILE),
                tile: (v03_smem_tiled::TILE, v03_smem_tiled::TILE),
                shared_bytes: 4 * v03_smem_tiled::SHARED_F32,
            },
            V04Blocktile1d => {
                use v04_blocktile_1d as v;
                Geometry::block_tiled(v::THREADS, v::BM, v::BN, v::SHARED_F32)
            }
            V05Blocktile2d => {
                use v05_blocktile_2d as v;
                Geometry::block_tiled(v::THREADS, v::BM, v::BN, v::SHARED_F32)
            }
            V06Vectorized => {
                use v06_vectorized as v;
                Geometry::block_tiled(v::THREADS, v::BM, v::BN, v::SHARED_F32)
            }
            V07Warptile => {
                use v07_warptile as v;
                Geometry::block_tiled(v::THREADS, v::BM, v::BN, v::SHARED_F32)
            }
            V08DoubleBuffered => Geometry::two_stage(v08_double_buffered::GEOMETRY),
            V09InterleavedLanes => Geometry::two_stage(v09_interleaved_lanes::GEOMETRY),
            V10Warptile64x64 => Geometry::two_stage(v10_warptile_64x64::GEOMETRY),
            V11Block256x128 => Geometry::two_stage(v11_block_256x128::GEOMETRY),
            V12SplitK => Geometry::two_stage(v12_split_k::GEOMETRY),
        }
    }

    /// The kernel and launch shape a bench row of this variant runs (the same at every
    /// shape: only the grid grows with the matrices).
    pub fn kernel_use(self) -> KernelUse {
        let g = self.geometry();
        KernelUse::new(self.kernel(), g.threads(), g.shared_bytes)
    }

    /// Every kernel a launch of this variant may run: the main one, and for v12 the reduce
    /// of its K slices (launched only when it splits) and v11's kernel (launched when it
    /// does not).
    pub fn kernel_uses(self) -> Vec<KernelUse> {
        let mut uses = vec![self.kernel_use()];
        if self == Variant::V12SplitK {
            uses.push(Variant::V11Block256x128.kernel_use());
            uses.push(KernelUse::new(
                v12_split_k::gemm_v12_split_k_reduce,
                v12_split_k::REDUCE_THREADS,
                0,
            ));
        }
        uses
    }

    /// K slices of a launch at `d` on `gpu` (v12's choice, `v12_split_k::slices`; 1 for the
    /// others).
    pub fn slices(self, d: Dims, sms: u32) -> u32 {
        match self {
            Variant::V12SplitK => v12_split_k::slices(d.m as u32, d.n as u32, d.k as u32, sms),
            _ => 1,
        }
    }

    /// Grid, block and shared memory for an M×N output. Refused when the grid would pass
    /// CUDA's limits (2^31-1 blocks in x, 65535 in y).
    pub fn launch_config(self, d: Dims) -> Result<LaunchConfig> {
        let g = self.geometry();
        let (rows, cols) = g.tile;
        let (m_blocks, n_blocks) = (d.m.div_ceil(rows as usize), d.n.div_ceil(cols as usize));
        // v01 puts rows of C on x; the others put columns on x and rows on y.
        let (gx, gy) = if self == Variant::V01Naive {
            (m_blocks, n_blocks)
        } else {
            (n_blocks, m_blocks)
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
            g.block,
            g.shared_bytes,
        ))
    }
}

/// Shape checks shared by every variant and the peer: lengths match the sizes, sizes fit
/// the kernels' 32-bit indexing.
pub fn validate(op: &str, d: Dims, a_len: usize, b_len: usize, c_len: usize) -> Result<()> {
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
    let want = |r: usize, c: usize| r.checked_mul(c);
    for (name, rows, cols, len) in [
        ("A", d.m, d.k, a_len),
        ("B", d.k, d.n, b_len),
        ("C", d.m, d.n, c_len),
    ] {
        if want(rows, cols) != Some(len) {
            return Err(Error::Shape {
                op: op.into(),
                what: format!("{name} should be {rows}x{cols} for {d}, but has {len} elements"),
            });
        }
    }
    Ok(())
}

/// `C = alpha·A·B + beta·C` with the given variant. `beta == 0` means C is only written.
/// M or N zero: nothing to do, nothing launched. K zero: C = beta·C, which the kernel's
/// epilogue computes (one launch, no loads of A or B).
#[allow(clippy::too_many_arguments)]
pub fn sgemm(
    gpu: &Gpu,
    v: Variant,
    d: Dims,
    alpha: f32,
    a: View<'_, f32>,
    b: View<'_, f32>,
    beta: f32,
    c: ViewMut<'_, f32>,
) -> Result<()> {
    let kernel = v.kernel();
    validate(kernel.name(), d, a.len(), b.len(), c.len())?;
    if d.m == 0 || d.n == 0 {
        return Ok(());
    }
    let mut cfg = v.launch_config(d)?;
    let (m, n, k) = (d.m as u32, d.n as u32, d.k as u32);
    let slices = v.slices(d, gpu.info.multiprocessors);
    // v12 without a split runs v11's kernel (same geometry and parameters): its own kernel
    // over one slice measured 7-8% slower than v11 at 2048³-8192³ on the H200 (2026-12-03).
    let kernel = if v == Variant::V12SplitK && slices == 1 {
        Variant::V11Block256x128.kernel()
    } else {
        kernel
    };
    if slices > 1 {
        // v12 with K split: the slices' partial products into the workspace (alpha 1, beta
        // 0: C untouched), then the reduce adds them in slice order into C.
        cfg.grid.2 = slices;
        let mn = d.m * d.n;
        // Splitting needs fewer tiles than SMs, so M·N < SMs·BM·BN: no overflow here.
        let len = mn * slices as usize;
        let reduce = v12_split_k::gemm_v12_split_k_reduce;
        let rcfg =
            LaunchConfig::for_threads(reduce.name(), mn as u64, v12_split_k::REDUCE_THREADS)?;
        return gpu.with_workspace(len, |ws| {
            // SAFETY: as below, and the workspace holds `slices` M×N matrices, which the
            // main kernel writes (slice z at z·M·N) and the reduce reads, one thread per
            // element of C.
            unsafe {
                gpu.launch(
                    kernel,
                    cfg,
                    (m, n, k, 1.0f32, a, b, 0.0f32, ws.view_range_mut(0..len)),
                )?;
                gpu.launch(
                    reduce,
                    rcfg,
                    (mn as u64, slices, alpha, ws.view_range(0..len), beta, c),
                )
            }
        });
    }
    // SAFETY: the views are live and hold M·K, K·N and M·N f32 (validated); the grid covers
    // C with the block and shared memory the variant's kernel is built for.
    unsafe { gpu.launch(kernel, cfg, (m, n, k, alpha, a, b, beta, c)) }
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::ops::gemm::tests::TEST_SHAPES;

    #[test]
    fn validation_messages() {
        let d = Dims::new(3, 5, 4);
        validate("op", d, 12, 20, 15).unwrap();
        let e = validate("op", d, 12, 21, 15).unwrap_err().to_string();
        assert!(e.contains("B should be 4x5") && e.contains("21"), "{e}");
        let e = validate("op", Dims::new(1 << 31, 1, 1), 1 << 31, 1, 1 << 31)
            .unwrap_err()
            .to_string();
        assert!(e.contains("M") && e.contains("limit"), "{e}");
        validate("op", Dims::new(0, 5, 4), 0, 20, 0).unwrap();
    }

    #[test]
    fn launch_geometry_covers_c() {
        for v in LADDER {
            for d in TEST_SHAPES {
                let cfg = v.launch_config(d).unwrap();
                let g = v.geometry();
                let (rows, cols) = g.tile;
                let (gm, gn) = if v == Variant::V01Naive {
                    (cfg.grid.0, cfg.grid.1)
                } else {
                    (cfg.grid.1, cfg.grid.0)
                };
                assert!(gm as usize * rows as usize >= d.m, "{v:?} {d}");
                assert!(gn as usize * cols as usize >= d.n, "{v:?} {d}");
                assert_eq!(cfg.shared_bytes, g.shared_bytes);
                // Past 48 KiB the launch opts in (gpu.rs); 99 KiB still fits every sm_80+ GPU.
                assert!(cfg.shared_bytes <= 99 * 1024, "{v:?} shared memory");
                let threads = cfg.block.0 * cfg.block.1;
                assert!(threads <= 1024 && threads.is_multiple_of(32));
                // The bench row names the same launch shape.
                let u = v.kernel_use();
                assert_eq!(
                    (u.block_threads, u.shared_bytes),
                    (threads, cfg.shared_bytes)
                );
            }
        }
        let e = Variant::V05Blocktile2d
            .launch_config(Dims::new(65535 * 128 + 1, 1, 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("blocks in y"), "{e}");
    }

    /// The warp-tile mappings of v07, v08, v09, v10 and v11 give each (row, col) of the
    /// block tile to exactly one thread; v09's lane pairs share addresses as its header says.
    #[test]
    fn warptile_mapping_is_a_bijection() {
        // (BM, BN, WM, WN, WMITER, WNITER, THREADS, lane map); TM = TN = 4 everywhere.
        type LaneMap = fn(u32) -> (u32, u32);
        let two_stage = |g: TwoStageGeometry, lane: LaneMap| {
            assert_eq!((g.tm, g.tn), (4, 4));
            (g.bm, g.bn, g.wm, g.wn, g.wmiter, g.wniter, g.threads, lane)
        };
        let geometries = {
            use v07_warptile as v;
            [
                (
                    v::BM,
                    v::BN,
                    v::WM,
                    v::WN,
                    v::WMITER,
                    v::WNITER,
                    v::THREADS,
                    v::lane_origin as LaneMap,
                ),
                two_stage(v08_double_buffered::GEOMETRY, v::lane_origin),
                two_stage(
                    v09_interleaved_lanes::GEOMETRY,
                    v09_interleaved_lanes::lane_origin,
                ),
                two_stage(v10_warptile_64x64::GEOMETRY, v::lane_origin),
                two_stage(v11_block_256x128::GEOMETRY, v::lane_origin),
            ]
        };
        for (bm, bn, wm, wn, wmiter, wniter, threads, lane_origin) in geometries {
            let (bm, bn, wm, wn) = (bm as usize, bn as usize, wm as usize, wn as usize);
            let (subm, subn) = (wm / wmiter as usize, wn / wniter as usize);
            let mut seen = vec![0u8; bm * bn];
            for t in 0..threads as usize {
                let (w, lane) = (t / 32, t % 32);
                let wm0 = (w / (bn / wn)) * wm;
                let wn0 = (w % (bn / wn)) * wn;
                let (lr, lc) = lane_origin(lane as u32);
                let (lr, lc) = (lr as usize, lc as usize);
                for sm in 0..wmiter as usize {
                    for i in 0..4 {
                        for sn in 0..wniter as usize {
                            for j in 0..4 {
                                let row = wm0 + sm * subm + lr + i;
                                let col = wn0 + sn * subn + lc + j;
                                seen[row * bn + col] += 1;
                            }
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1));
        }
        // v07: lanes 8 wide, row-major. v09: (l, l^1) share the row (A's address),
        // (l, l^2) share the column (B's address).
        assert_eq!(v07_warptile::lane_origin(9), (4, 4));
        for l in 0..32 {
            let o = v09_interleaved_lanes::lane_origin;
            assert_eq!(o(l).0, o(l ^ 1).0, "lane {l}");
            assert_eq!(o(l).1, o(l ^ 2).1, "lane {l}");
        }
    }

    /// The two-stage loads of one stage (v08-v11; A as in v07: float4 `tid + i·THREADS` of
    /// the BM×BK tile in row-major float4 order, stored transposed; B copied as it is): every
    /// A (row, k) lands transposed exactly once, B's float4s cover the tile; all inside the
    /// geometry's stage.
    #[test]
    fn double_buffer_stage_layout() {
        let geometries = [
            v08_double_buffered::GEOMETRY,
            v09_interleaved_lanes::GEOMETRY,
            v10_warptile_64x64::GEOMETRY,
            v11_block_256x128::GEOMETRY,
        ];
        for g in geometries {
            let [bk, bm, bn, lda, t, stage_f32] =
                [g.bk, g.bm, g.bn, g.lda, g.threads, g.stage_f32()].map(|x| x as usize);
            assert_eq!(g.a_float4s_per_thread() as usize, bm * bk / 4 / t);
            assert_eq!(g.b_float4s_per_thread() as usize, bk * bn / 4 / t);
            let mut hit = vec![0u8; stage_f32];
            for tid in 0..t {
                // Mirrors dev::fetch_tile::<BM, BK, ..> + dev::store_a_transposed.
                for i in 0..bm * bk / 4 / t {
                    let idx = tid + i * t;
                    let (r, c) = (idx / (bk / 4), idx % (bk / 4) * 4);
                    assert!(r < bm);
                    for j in 0..4 {
                        hit[(c + j) * lda + r] += 1;
                    }
                }
                for i in 0..bk * bn / 4 / t {
                    let idx = tid + i * t;
                    let (r, cc) = (idx / (bn / 4), idx % (bn / 4) * 4);
                    for j in 0..4 {
                        hit[bk * lda + r * bn + cc + j] += 1;
                    }
                }
            }
            for kk in 0..bk {
                for mm in 0..lda {
                    assert_eq!(hit[kk * lda + mm], (mm < bm) as u8, "A[{kk}][{mm}]");
                }
            }
            assert!(hit[bk * lda..].iter().all(|&h| h == 1));
        }
    }

    /// v12's slice choice at the bench's shapes on an H200 (132 SMs), and the slices of
    /// `split_k_chunk` cover K exactly, in order, whatever the count.
    #[test]
    fn split_k_slices_cover_k() {
        let sms = 132;
        let v = Variant::V12SplitK;
        assert_eq!(v.slices(Dims::new(8192, 128, 8192), sms), 4);
        assert_eq!(v.slices(Dims::new(1024, 1024, 1024), sms), 4);
        assert_eq!(v.slices(Dims::new(2048, 2048, 2048), sms), 1);
        assert_eq!(v.slices(Dims::new(4096, 4096, 4096), sms), 1);
        assert_eq!(v.slices(Dims::new(17, 33, 65), sms), 1, "too shallow to split");
        assert_eq!(v.slices(Dims::new(0, 5, 4096), sms), 1);
        assert_eq!(v.slices(Dims::new(5, 7, 0), sms), 1, "K = 0");
        assert_eq!(Variant::V11Block256x128.slices(Dims::new(8192, 128, 8192), sms), 1);
        for d in TEST_SHAPES.into_iter().chain([Dims::new(100, 70, 700), Dims::new(3, 5, 2000)]) {
            let s = v.slices(d, sms);
            assert!((1..=v12_split_k::MAX_SLICES).contains(&s), "{d}: {s}");
            let chunk = rooflab_kernels::gemm::split_k_chunk(d.k as u32, s) as usize;
            assert_eq!(chunk % v12_split_k::BK as usize, 0);
            // Mirrors run_split_k: slice z covers [min(z·chunk, K), min(z·chunk + chunk, K)).
            let mut covered = 0;
            for z in 0..s as usize {
                let k0 = (z * chunk).min(d.k);
                let len = (d.k - k0).min(chunk);
                assert_eq!(k0, covered.min(d.k), "{d}: slice {z}");
                covered = k0 + len;
                if s > 1 {
                    assert!(len > 0, "{d}: slice {z} of {s} is empty");
                }
            }
            assert_eq!(covered, d.k, "{d}");
        }
    }

    #[test]
    fn names_follow_the_stem() {
        for v in LADDER {
            let name = v.kernel().name();
            let family = crate::ops::gemm::FAMILY.name;
            assert_eq!(name, [family, v.stem()].join("_"));
            assert!(
                crate::ptx::built()[0].1.contains(&format!(".entry {name}(")),
                "{name} not in the PTX"
            );
        }
    }
}
