//! Family `memory` on the host: copy, saxpy and the particle update.
//!
//! Safe launch wrappers (lengths checked, nothing launched for empty inputs), the CPU
//! references, the cost model, the bench cases and the correctness checks for every variant
//! in `kernels-gpu/src/memory/`. Launch geometry comes from the variant files' constants.

use rooflab_kernels::memory::{
    self as k, PARTICLE_F32S, v01_strided, v02_coalesced, v03_vectorized, v04_grid_stride_ilp,
    v05_particles_aos, v06_particles_soa,
};

use crate::bench::{Case, Workload, rotation_sets};
use crate::check::{compare_f32, random_f32, rng};
use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, LaunchConfig, View, ViewMut};
use crate::kernel_args;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "memory";

/// The copy/saxpy ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Neighbouring threads `stride` floats apart (1 to 64).
    V01Strided {
        stride: u32,
    },
    V02Coalesced,
    V03Vectorized,
    V04GridStrideIlp,
}

/// The ladder in order, with v01 at the stride the figures use.
pub const LADDER: [Variant; 4] = [
    Variant::V01Strided { stride: 32 },
    Variant::V02Coalesced,
    Variant::V03Vectorized,
    Variant::V04GridStrideIlp,
];

/// Which of the two elementwise ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Copy,
    Saxpy,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Copy => "copy",
            Op::Saxpy => "saxpy",
        }
    }
}

impl Variant {
    pub fn stem(self) -> &'static str {
        match self {
            Variant::V01Strided { .. } => "v01_strided",
            Variant::V02Coalesced => "v02_coalesced",
            Variant::V03Vectorized => "v03_vectorized",
            Variant::V04GridStrideIlp => "v04_grid_stride_ilp",
        }
    }

    /// The kernel entry point, e.g. `memory_v03_vectorized_saxpy`.
    pub fn entry(self, op: Op) -> &'static str {
        use Variant::*;
        match (self, op) {
            (V01Strided { .. }, Op::Copy) => "memory_v01_strided_copy",
            (V01Strided { .. }, Op::Saxpy) => "memory_v01_strided_saxpy",
            (V02Coalesced, Op::Copy) => "memory_v02_coalesced_copy",
            (V02Coalesced, Op::Saxpy) => "memory_v02_coalesced_saxpy",
            (V03Vectorized, Op::Copy) => "memory_v03_vectorized_copy",
            (V03Vectorized, Op::Saxpy) => "memory_v03_vectorized_saxpy",
            (V04GridStrideIlp, Op::Copy) => "memory_v04_grid_stride_ilp_copy",
            (V04GridStrideIlp, Op::Saxpy) => "memory_v04_grid_stride_ilp_saxpy",
        }
    }

    /// The entry name minus the family prefix: the bench row's variant.
    pub fn row_variant(self, op: Op) -> &'static str {
        &self.entry(op)[FAMILY.len() + 1..]
    }

    /// Launch geometry for `n` elements, from the variant file's constants.
    fn launch_config(self, gpu: &Gpu, op: Op, n: u64) -> Result<LaunchConfig> {
        let name = self.entry(op);
        match self {
            Variant::V01Strided { stride } => {
                if !(1..=v01_strided::MAX_STRIDE).contains(&stride) {
                    return Err(Error::Shape {
                        op: name.into(),
                        what: format!("stride {stride} is outside 1..={}", v01_strided::MAX_STRIDE),
                    });
                }
                LaunchConfig::for_threads(
                    name,
                    v01_strided::threads(n, stride),
                    v01_strided::BLOCK_THREADS,
                )
            }
            Variant::V02Coalesced => {
                LaunchConfig::for_threads(name, n, v02_coalesced::BLOCK_THREADS)
            }
            Variant::V03Vectorized => LaunchConfig::for_threads(
                name,
                v03_vectorized::threads(n),
                v03_vectorized::BLOCK_THREADS,
            ),
            Variant::V04GridStrideIlp => {
                let b = v04_grid_stride_ilp::BLOCK_THREADS;
                let fit = gpu
                    .blocks_per_sm(name, b, 0)?
                    .clamp(1, v04_grid_stride_ilp::BLOCKS_PER_SM);
                // Never more blocks than there is work for: small arrays get a small grid.
                let needed = n.div_ceil(4 * b as u64).max(1);
                let blocks = (gpu.info.multiprocessors as u64 * fit as u64).min(needed);
                LaunchConfig::for_threads(name, blocks * b as u64, b)
            }
        }
    }

    /// The traffic this variant is modelled to cause beyond the op's minimum: the strided
    /// mapping uses 4 bytes of each 32-byte sector it fetches once `stride >= 8`.
    pub fn modelled_bytes(self, min: Bytes) -> Bytes {
        match self {
            Variant::V01Strided { stride } => min * stride.min(8) as u64,
            _ => min,
        }
    }
}

fn same_len(op: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(Error::Shape {
            op: op.into(),
            what: format!("input has {a} elements, output {b}"),
        });
    }
    Ok(())
}

/// `dst = src` with the given variant. Empty arrays: nothing launched.
pub fn copy(gpu: &Gpu, v: Variant, src: View<'_, f32>, dst: ViewMut<'_, f32>) -> Result<()> {
    let op = v.entry(Op::Copy);
    same_len(op, src.len, dst.len)?;
    let n = src.len as u64;
    if n == 0 {
        return Ok(());
    }
    let cfg = v.launch_config(gpu, Op::Copy, n)?;
    let (s, d) = (src.addr, dst.addr);
    // SAFETY: both views are live, hold n f32, and the arguments match the entry's signature.
    unsafe {
        match v {
            Variant::V01Strided { stride } => gpu.launch(op, cfg, &kernel_args![s, d, n, stride]),
            _ => gpu.launch(op, cfg, &kernel_args![s, d, n]),
        }
    }
}

/// `y = a*x + y` with the given variant. Empty arrays: nothing launched.
pub fn saxpy(gpu: &Gpu, v: Variant, a: f32, x: View<'_, f32>, y: ViewMut<'_, f32>) -> Result<()> {
    let op = v.entry(Op::Saxpy);
    same_len(op, x.len, y.len)?;
    let n = x.len as u64;
    if n == 0 {
        return Ok(());
    }
    let cfg = v.launch_config(gpu, Op::Saxpy, n)?;
    let (xa, ya) = (x.addr, y.addr);
    // SAFETY: both views are live, hold n f32, and the arguments match the entry's signature.
    unsafe {
        match v {
            Variant::V01Strided { stride } => {
                gpu.launch(op, cfg, &kernel_args![a, xa, ya, n, stride])
            }
            _ => gpu.launch(op, cfg, &kernel_args![a, xa, ya, n]),
        }
    }
}

/// `pos += vel * dt` over `particles`, an array-of-structs buffer of `PARTICLE_F32S` f32 per
/// particle (see `rooflab_kernels::memory::Particle`).
pub fn particles_aos(gpu: &Gpu, particles: ViewMut<'_, f32>, dt: f32) -> Result<()> {
    let op = "memory_v05_particles_aos";
    if !particles.len.is_multiple_of(PARTICLE_F32S) {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "{} f32 is not a whole number of {PARTICLE_F32S}-f32 particles",
                particles.len
            ),
        });
    }
    let n = (particles.len / PARTICLE_F32S) as u64;
    if n == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig::for_threads(op, n, v05_particles_aos::BLOCK_THREADS)?;
    let p = particles.addr;
    // SAFETY: the view holds n particles; arguments match the entry.
    unsafe { gpu.launch(op, cfg, &kernel_args![p, n, dt]) }
}

/// `pos += vel * dt` with positions and velocities as six separate arrays.
pub fn particles_soa(
    gpu: &Gpu,
    pos: [ViewMut<'_, f32>; 3],
    vel: [View<'_, f32>; 3],
    dt: f32,
) -> Result<()> {
    let op = "memory_v06_particles_soa";
    let n = pos[0].len;
    for len in pos.iter().map(|p| p.len).chain(vel.iter().map(|v| v.len)) {
        same_len(op, n, len)?;
    }
    if n == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig::for_threads(op, n as u64, v06_particles_soa::BLOCK_THREADS)?;
    let [px, py, pz] = [pos[0].addr, pos[1].addr, pos[2].addr];
    let [vx, vy, vz] = [vel[0].addr, vel[1].addr, vel[2].addr];
    let n = n as u64;
    // SAFETY: six live arrays of n f32; arguments match the entry.
    unsafe { gpu.launch(op, cfg, &kernel_args![px, py, pz, vx, vy, vz, n, dt]) }
}

// ---------------------------------------------------------------- CPU references

/// `y = a*x + y`, in f64 then rounded: the GPU's fused multiply-add rounds once too.
pub fn saxpy_ref(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter()
        .zip(y)
        .map(|(&x, &y)| (a as f64 * x as f64 + y as f64) as f32)
        .collect()
}

/// The particle update on AoS data.
pub fn particles_ref(aos: &[f32], dt: f32) -> Vec<f32> {
    let mut out = aos.to_vec();
    for p in out.chunks_exact_mut(PARTICLE_F32S) {
        for k in 0..3 {
            p[k] = (p[3 + k] as f64 * dt as f64 + p[k] as f64) as f32;
        }
    }
    out
}

// ---------------------------------------------------------------- cost model

/// Copy: no FLOPs, `n` f32 read and `n` written.
pub fn copy_cost(n: u64) -> Cost {
    Cost::new(Flops(0), Bytes::of::<f32>(2 * n))
}

/// saxpy: one FMA (2 FLOPs) per element; x and y read, y written.
pub fn saxpy_cost(n: u64) -> Cost {
    Cost::new(Flops(2 * n), Bytes::of::<f32>(3 * n))
}

/// Particle update: three FMAs; 6 f32 read, 3 written per particle at best (SoA).
pub fn particles_cost(n: u64) -> Cost {
    Cost::new(Flops(6 * n), Bytes::of::<f32>(9 * n))
}

/// AoS moves the whole 32-byte struct in and the sector holding `pos` out.
pub fn particles_aos_modelled(n: u64) -> Bytes {
    Bytes::of::<f32>(2 * PARTICLE_F32S as u64 * n)
}

// ---------------------------------------------------------------- checks

const SAXPY_A: f32 = 1.75;
const DT: f32 = 0.01;

/// One correctness check of copy or saxpy: `n` elements, the input array starting
/// `src_off` elements into its allocation and the output `dst_off` (so alignments differ),
/// fresh random data from `seed`, output poisoned, every element compared.
pub fn check_elementwise(
    gpu: &Gpu,
    v: Variant,
    op: Op,
    n: usize,
    src_off: usize,
    dst_off: usize,
    seed: u64,
) -> Result<()> {
    check_elementwise_scaled(gpu, v, op, n, (src_off, dst_off), 1.0, seed)
}

/// `check_elementwise` with values drawn from `[-scale, scale)`.
pub fn check_elementwise_scaled(
    gpu: &Gpu,
    v: Variant,
    op: Op,
    n: usize,
    (src_off, dst_off): (usize, usize),
    scale: f32,
    seed: u64,
) -> Result<()> {
    let mut r = rng(seed);
    let x = random_f32(&mut r, n + src_off, -scale, scale);
    let y = random_f32(&mut r, n + dst_off, -scale, scale);
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.upload(&y)?;
    let what = format!(
        "{} n={n} offsets=({src_off},{dst_off}) scale={scale:e} seed={seed}",
        v.entry(op)
    );
    let want = match op {
        Op::Copy => {
            gpu.poison(dy.view_range_mut(dst_off..dst_off + n))?;
            copy(
                gpu,
                v,
                dx.view_range(src_off..src_off + n),
                dy.view_range_mut(dst_off..dst_off + n),
            )?;
            x[src_off..].to_vec()
        }
        Op::Saxpy => {
            saxpy(
                gpu,
                v,
                SAXPY_A,
                dx.view_range(src_off..src_off + n),
                dy.view_range_mut(dst_off..dst_off + n),
            )?;
            saxpy_ref(SAXPY_A, &x[src_off..], &y[dst_off..])
        }
    };
    gpu.sync()?;
    let got = dy.to_host()?;
    // Elements outside the window must be untouched.
    compare_f32(
        &format!("{what} (before window)"),
        &got[..dst_off],
        &y[..dst_off],
        0.0,
        0.0,
    )
    .map_err(Error::Mismatch)?;
    // Copy is exact. saxpy rounds once (fma): within half an ulp of |a*x| + |y| <= 2.75 scale,
    // which near cancellation is an absolute, not a relative, bound.
    let (rel, abs) = if op == Op::Copy {
        (0.0, 0.0)
    } else {
        (1e-6, 2.75 * scale * f32::EPSILON)
    };
    compare_f32(&what, &got[dst_off..], &want, rel, abs).map_err(Error::Mismatch)
}

/// One correctness check of the particle update, AoS (`soa == false`) or SoA.
pub fn check_particles(gpu: &Gpu, soa: bool, n: usize, seed: u64) -> Result<()> {
    let aos = random_f32(&mut rng(seed), n * PARTICLE_F32S, -10.0, 10.0);
    let want = particles_ref(&aos, DT);
    let what = format!(
        "memory_v0{}_particles_{} n={n} seed={seed}",
        if soa { 6 } else { 5 },
        if soa { "soa" } else { "aos" }
    );
    let got = if soa {
        let field = |f: usize| {
            aos.chunks_exact(PARTICLE_F32S)
                .map(|p| p[f])
                .collect::<Vec<_>>()
        };
        let mut pos = [
            gpu.upload(&field(0))?,
            gpu.upload(&field(1))?,
            gpu.upload(&field(2))?,
        ];
        let vel = [
            gpu.upload(&field(3))?,
            gpu.upload(&field(4))?,
            gpu.upload(&field(5))?,
        ];
        let [p0, p1, p2] = &mut pos;
        particles_soa(
            gpu,
            [p0.view_mut(), p1.view_mut(), p2.view_mut()],
            [vel[0].view(), vel[1].view(), vel[2].view()],
            DT,
        )?;
        gpu.sync()?;
        let pos = [pos[0].to_host()?, pos[1].to_host()?, pos[2].to_host()?];
        let mut out = aos.clone();
        for (i, p) in out.chunks_exact_mut(PARTICLE_F32S).enumerate() {
            for k in 0..3 {
                p[k] = pos[k][i];
            }
        }
        out
    } else {
        let mut d = gpu.upload(&aos)?;
        particles_aos(gpu, d.view_mut(), DT)?;
        gpu.sync()?;
        d.to_host()?
    };
    compare_f32(&what, &got, &want, 1e-6, 1e-6).map_err(Error::Mismatch)
}

// ---------------------------------------------------------------- bench

/// Default bench sizes: f32 elements for copy/saxpy, particles for the update.
pub fn default_sizes(quick: bool) -> (u64, u64) {
    if quick {
        (1 << 24, 1 << 21)
    } else {
        (1 << 28, 1 << 25)
    }
}

/// `2^k` when `n` is a power of two, else the number.
pub fn pretty_len(n: u64) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

struct ElementwiseWork {
    v: Variant,
    op: Op,
    n: usize,
    /// Rotating (x, y) sets; set 0 is also the one checked.
    sets: Vec<(DeviceArray<f32>, DeviceArray<f32>)>,
    seed: u64,
}

impl Workload for ElementwiseWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        // A fresh, full-size check on its own buffers (the timed sets keep their data).
        check_elementwise(gpu, self.v, self.op, self.n, 0, 0, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.sets.len();
        let (x, y) = &mut self.sets[k];
        match self.op {
            Op::Copy => copy(gpu, self.v, x.view(), y.view_mut()),
            // Repeated saxpy grows y by a*x each time: bounded, never overflows in a run.
            Op::Saxpy => saxpy(gpu, self.v, SAXPY_A, x.view(), y.view_mut()),
        }
    }
}

struct ParticleWork {
    soa: bool,
    n: usize,
    aos: Vec<DeviceArray<f32>>,
    soa_sets: Vec<[DeviceArray<f32>; 6]>,
    seed: u64,
}

impl Workload for ParticleWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check_particles(gpu, self.soa, self.n, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        if self.soa {
            let k = i % self.soa_sets.len();
            let [p0, p1, p2, v0, v1, v2] = &mut self.soa_sets[k];
            particles_soa(
                gpu,
                [p0.view_mut(), p1.view_mut(), p2.view_mut()],
                [v0.view(), v1.view(), v2.view()],
                DT,
            )
        } else {
            let k = i % self.aos.len();
            particles_aos(gpu, self.aos[k].view_mut(), DT)
        }
    }
}

/// The family's bench cases. `size` overrides the element count of copy/saxpy (and sets
/// the particle count to size / 8).
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let (n, np) = match size {
        Some(s) => (s, (s / PARTICLE_F32S as u64).max(1)),
        None => default_sizes(quick),
    };
    let mut out = Vec::new();
    for op in [Op::Copy, Op::Saxpy] {
        // v01 at stride 32 first (the ladder's baseline); copy then shows a short stride
        // sweep so the table shows the bytes model at work; then the other steps.
        let mut variants: Vec<Variant> = vec![LADDER[0]];
        if op == Op::Copy {
            variants.extend([8, 2].map(|stride| Variant::V01Strided { stride }));
        }
        variants.extend(&LADDER[1..]);
        for v in variants {
            let base = match op {
                Op::Copy => copy_cost(n),
                Op::Saxpy => saxpy_cost(n),
            };
            let cost = base.with_modelled(v.modelled_bytes(base.min_bytes));
            let note = match v {
                Variant::V01Strided { stride } => format!("stride {stride}"),
                _ => String::new(),
            };
            out.push(Case {
                family: FAMILY,
                variant: v.row_variant(op),
                ladder: op.name(),
                shape: format!("n={}", pretty_len(n)),
                note,
                cost,
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let mut r = rng(seed);
                    let sets = (0..rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes))
                        .map(|_| {
                            let x = gpu.upload(&random_f32(&mut r, n as usize, -1.0, 1.0))?;
                            let y = gpu.upload(&random_f32(&mut r, n as usize, -1.0, 1.0))?;
                            Ok((x, y))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(ElementwiseWork {
                        v,
                        op,
                        n: n as usize,
                        sets,
                        seed,
                    }) as Box<dyn Workload>)
                }),
            });
        }
    }
    for soa in [false, true] {
        let base = particles_cost(np);
        let cost = if soa {
            base
        } else {
            base.with_modelled(particles_aos_modelled(np))
        };
        out.push(Case {
            family: FAMILY,
            variant: if soa {
                "v06_particles_soa"
            } else {
                "v05_particles_aos"
            },
            ladder: "particles",
            shape: format!("particles={}", pretty_len(np)),
            note: String::new(),
            cost,
            torch: None,
            prepare: Box::new(move |gpu: &Gpu| {
                let mut r = rng(seed);
                let sets = rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes);
                let mut w = ParticleWork {
                    soa,
                    n: np as usize,
                    aos: vec![],
                    soa_sets: vec![],
                    seed,
                };
                for _ in 0..sets {
                    if soa {
                        let mut f = || gpu.upload(&random_f32(&mut r, np as usize, -10.0, 10.0));
                        w.soa_sets.push([f()?, f()?, f()?, f()?, f()?, f()?]);
                    } else {
                        w.aos.push(gpu.upload(&random_f32(
                            &mut r,
                            np as usize * PARTICLE_F32S,
                            -10.0,
                            10.0,
                        ))?);
                    }
                }
                Ok(Box::new(w) as Box<dyn Workload>)
            }),
        });
    }
    out
}

/// Lengths every correctness test covers: 1, tiny, warp-sized and odd, a prime past a
/// million, and one past any tile or vector multiple.
pub const TEST_LENGTHS: [usize; 8] = [1, 2, 3, 31, 1000, 4099, 1_000_003, (1 << 22) + 3];
/// (input offset, output offset) in elements: aligned, equally misaligned, differently
/// misaligned (no common 16-byte split).
pub const TEST_OFFSETS: [(usize, usize); 4] = [(0, 0), (1, 1), (3, 3), (1, 2)];
/// Strides the v01 test runs.
pub const TEST_STRIDES: [u32; 6] = [1, 2, 7, 8, 32, 64];

/// Every (variant, op) the correctness suite covers, v01 at each test stride.
pub fn test_matrix() -> Vec<(Variant, Op)> {
    let mut out = Vec::new();
    for op in [Op::Copy, Op::Saxpy] {
        for v in LADDER {
            out.push((v, op));
        }
    }
    out
}

/// The whole correctness check of one ladder variant: all lengths and offsets (and, for
/// v01, all test strides).
pub fn check_variant(gpu: &Gpu, v: Variant, op: Op, seed: u64) -> Result<()> {
    let variants: Vec<Variant> = match v {
        Variant::V01Strided { .. } => TEST_STRIDES
            .iter()
            .map(|&stride| Variant::V01Strided { stride })
            .collect(),
        v => vec![v],
    };
    for v in variants {
        for (i, &n) in crate::testing::lengths(&TEST_LENGTHS).iter().enumerate() {
            for (j, &(so, d)) in TEST_OFFSETS.iter().enumerate() {
                check_elementwise(gpu, v, op, n, so, d, seed.wrapping_add((i * 31 + j) as u64))?;
            }
        }
    }
    Ok(())
}

/// Particle lengths the correctness tests cover.
pub const TEST_PARTICLES: [usize; 5] = [1, 31, 257, 100_003, 1 << 20];

/// The family's GPU tests: every variant against the CPU reference, and bad input.
pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for (v, op) in test_matrix() {
        t.push(GpuTest::new(
            format!("{}_matches_cpu", v.entry(op)),
            move |gpu| check_variant(gpu, v, op, seed),
        ));
    }
    for soa in [false, true] {
        let name = if soa {
            "memory_v06_particles_soa_matches_cpu"
        } else {
            "memory_v05_particles_aos_matches_cpu"
        };
        t.push(GpuTest::new(name, move |gpu| {
            for (i, &n) in crate::testing::lengths(&TEST_PARTICLES).iter().enumerate() {
                check_particles(gpu, soa, n, seed + i as u64)?;
            }
            Ok(())
        }));
    }
    t.push(GpuTest::new(
        "memory_mismatched_lengths_are_refused_before_launch",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 10])?;
            let mut b = gpu.alloc::<f32>(11)?;
            for v in LADDER {
                expect_error(
                    copy(gpu, v, a.view(), b.view_mut()),
                    &["bad input", "10", "11"],
                )?;
                expect_error(
                    saxpy(gpu, v, 1.0, a.view(), b.view_mut()),
                    &["bad input", "10", "11"],
                )?;
            }
            let mut p = gpu.alloc::<f32>(12)?;
            expect_error(
                particles_aos(gpu, p.view_mut(), 0.1),
                &["whole number", "particles"],
            )?;
            let (mut x, mut y, mut z) = (
                gpu.alloc::<f32>(4)?,
                gpu.alloc::<f32>(4)?,
                gpu.alloc::<f32>(5)?,
            );
            let v3 = gpu.alloc::<f32>(4)?;
            let r = particles_soa(
                gpu,
                [x.view_mut(), y.view_mut(), z.view_mut()],
                [v3.view(), v3.view(), v3.view()],
                0.1,
            );
            expect_error(r, &["bad input", "5"])
        },
    ));
    t.push(GpuTest::new("memory_zero_length_launches_nothing", |gpu| {
        let a = gpu.alloc::<f32>(0)?;
        let mut b = gpu.alloc::<f32>(0)?;
        for v in LADDER {
            copy(gpu, v, a.view(), b.view_mut())?;
            saxpy(gpu, v, 2.0, a.view(), b.view_mut())?;
        }
        // A zero-length window of a real array: the elements around it stay untouched.
        let mut c = gpu.upload(&[7.0f32; 8])?;
        copy(
            gpu,
            Variant::V03Vectorized,
            a.view(),
            c.view_range_mut(4..4),
        )?;
        gpu.sync()?;
        if c.to_host()? != vec![7.0f32; 8] {
            return Err(Error::Mismatch("a zero-length copy wrote something".into()));
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "memory_property_random_shapes_match_cpu",
        move |gpu| property_test(gpu, seed),
    ));
    t.push(GpuTest::new("memory_copy_past_2_31_elements", move |gpu| {
        // 2^31 + 5 f32: past i32 indexing, so 64-bit index math is exercised for real.
        let n = (1usize << 31) + 5;
        let host = fast_random(n, seed);
        let src = gpu.upload(&host)?;
        let mut dst = gpu.alloc::<f32>(n)?;
        for v in [
            Variant::V01Strided { stride: 32 },
            Variant::V02Coalesced,
            Variant::V03Vectorized,
            Variant::V04GridStrideIlp,
        ] {
            gpu.poison(dst.view_mut())?;
            copy(gpu, v, src.view(), dst.view_mut())?;
            gpu.sync()?;
            let got = dst.to_host()?;
            if let Some(i) = (0..n).find(|&i| got[i].to_bits() != host[i].to_bits()) {
                return Err(Error::Mismatch(format!(
                    "{} n={n}: element {i} is {:e}, want {:e} (seed {seed})",
                    v.entry(Op::Copy),
                    got[i],
                    host[i]
                )));
            }
        }
        Ok(())
    }));
    t.push(GpuTest::new(
        "memory_v01_strided_refuses_stride_out_of_range",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 100])?;
            let mut b = gpu.alloc::<f32>(100)?;
            for stride in [0, 65, 1000] {
                expect_error(
                    copy(gpu, Variant::V01Strided { stride }, a.view(), b.view_mut()),
                    &["stride", "1..=64"],
                )?;
            }
            Ok(())
        },
    ));
    t
}

/// `n` random f32 in [-1, 1) from a fast generator (for the multi-gigabyte tests).
fn fast_random(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut r = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n).map(|_| r.random_range(-1.0f32..1.0)).collect()
}

/// Property test: random variant, op, length (weighted to small and odd), offsets, stride
/// and value scale, each case checked against the CPU reference. The proptest RNG is seeded
/// from the suite's seed, so a failure names the seed that replays it.
fn property_test(gpu: &Gpu, seed: u64) -> Result<()> {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

    let cases = if crate::testing::sanitizing() { 16 } else { 96 };
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = (
        0usize..4,
        any::<bool>(),
        prop_oneof![0usize..70, 0usize..5000, 0usize..300_000],
        0usize..4,
        0usize..4,
        1u32..=64,
        prop::sample::select(vec![1e-30f32, 1e-3, 1.0, 1e3, 1e30]),
        any::<u64>(),
    );
    runner
        .run(
            &strategy,
            |(vi, saxpy_op, n, so, d, stride, scale, case_seed)| {
                let v = match LADDER[vi] {
                    Variant::V01Strided { .. } => Variant::V01Strided { stride },
                    v => v,
                };
                let op = if saxpy_op { Op::Saxpy } else { Op::Copy };
                check_elementwise_scaled(gpu, v, op, n, (so, d), scale, case_seed)
                    .map_err(|e| TestCaseError::fail(e.to_string()))
            },
        )
        .map_err(|e| {
            Error::Mismatch(format!(
                "property test failed (replay with ROOFLAB_SEED={seed}): {e}"
            ))
        })
}

// Keep the kernel crate's particle layout and this file's assumptions in one place.
const _: () = assert!(size_of::<k::Particle>() == 32);

#[cfg(test)]
mod tests {
    use super::*;
    use rooflab_kernels::memory::VectorSplit;

    #[test]
    fn cost_model_hand_computed() {
        // 1000 f32 copied: 4000 bytes read + 4000 written, no FLOPs.
        assert_eq!(copy_cost(1000), Cost::new(Flops(0), Bytes(8000)));
        // saxpy: 2 FLOPs/element, 12 bytes/element.
        assert_eq!(saxpy_cost(1000), Cost::new(Flops(2000), Bytes(12000)));
        // particles: 6 FLOPs, 36 bytes; AoS modelled 64 bytes.
        assert_eq!(particles_cost(10), Cost::new(Flops(60), Bytes(360)));
        assert_eq!(particles_aos_modelled(10), Bytes(640));
        // Strided: 8x the bytes from stride 8 on, stride x below.
        let min = copy_cost(1000).min_bytes;
        assert_eq!(
            Variant::V01Strided { stride: 32 }.modelled_bytes(min),
            Bytes(64000)
        );
        assert_eq!(
            Variant::V01Strided { stride: 2 }.modelled_bytes(min),
            Bytes(16000)
        );
        assert_eq!(Variant::V02Coalesced.modelled_bytes(min), min);
    }

    #[test]
    fn strided_mapping_is_a_bijection() {
        for n in [1u64, 2, 31, 32, 33, 1000, 4099] {
            for stride in [1u32, 2, 7, 32, 64] {
                let mut seen = vec![false; n as usize];
                for i in 0..v01_strided::threads(n, stride) {
                    if let Some(j) = v01_strided::element(i, n, stride) {
                        assert!(!seen[j as usize], "n={n} stride={stride}: {j} twice");
                        seen[j as usize] = true;
                    }
                }
                assert!(
                    seen.iter().all(|&s| s),
                    "n={n} stride={stride}: element missed"
                );
                // Neighbouring threads really are `stride` apart.
                if n >= 2 * stride as u64 {
                    assert_eq!(
                        v01_strided::element(1, n, stride).unwrap()
                            - v01_strided::element(0, n, stride).unwrap(),
                        stride as u64
                    );
                }
            }
        }
    }

    #[test]
    fn vector_split_covers_everything() {
        for n in [0u64, 1, 3, 4, 5, 17, 1000] {
            for off in 0..4u64 {
                let a = 0x1000 + 4 * off;
                let s = VectorSplit::new(a, a, n).unwrap();
                assert_eq!(s.head + 4 * s.vectors + s.tail, n);
                assert!(s.head < 4 && s.tail < 4);
                if s.vectors > 0 {
                    assert_eq!((a + 4 * s.head) % 16, 0, "vectors start 16-byte aligned");
                }
            }
        }
        assert_eq!(
            VectorSplit::new(0x1004, 0x1008, 100),
            None,
            "different alignments"
        );
    }

    #[test]
    fn references() {
        assert_eq!(saxpy_ref(2.0, &[1.0, -1.0], &[0.5, 0.5]), vec![2.5, -1.5]);
        let p = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0, 5.0, 6.0];
        assert_eq!(
            particles_ref(&p, 0.5),
            vec![6.0, 12.0, 18.0, 10.0, 20.0, 30.0, 5.0, 6.0]
        );
    }

    #[test]
    fn names_follow_the_stem() {
        for op in [Op::Copy, Op::Saxpy] {
            for v in LADDER {
                assert_eq!(v.entry(op), format!("memory_{}_{}", v.stem(), op.name()));
                assert!(
                    crate::ptx::BUILT[0]
                        .1
                        .contains(&format!(".entry {}(", v.entry(op)))
                );
            }
        }
    }

    #[test]
    fn cases_cover_every_variant() {
        let cases = cases(true, None, 1);
        for op in [Op::Copy, Op::Saxpy] {
            for v in LADDER {
                assert!(cases.iter().any(|c| c.variant == v.row_variant(op)));
            }
        }
        assert!(cases.iter().any(|c| c.variant == "v05_particles_aos"));
        assert!(cases.iter().any(|c| c.variant == "v06_particles_soa"));
    }
}
