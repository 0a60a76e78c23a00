//! memory: the variants, their launch geometry (from the variant files' constants) and the
//! safe launch wrappers (lengths checked, nothing launched for empty inputs).

use rooflab_kernels::memory::{
    PARTICLE_F32S, v01_strided, v02_coalesced, v03_vectorized, v04_grid_stride_ilp,
    v05_particles_aos, v06_particles_soa,
};

use crate::bench::KernelUse;
use crate::cost::Bytes;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, LaunchConfig, View, ViewMut};

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
    /// The variant file's stem, e.g. `v02_coalesced`: where its kernels are defined.
    pub fn stem(self) -> &'static str {
        self.kernel(Op::Copy).stem()
    }

    /// The kernel of this variant for `op` (copy or saxpy), identified by value.
    pub fn kernel(self, op: Op) -> rooflab_kernels::kernel::KernelId {
        match op {
            Op::Copy => match self.copy_kernel() {
                CopyKernel::Plain(k) => k.id(),
                CopyKernel::Strided(k, _) => k.id(),
            },
            Op::Saxpy => match self.saxpy_kernel() {
                SaxpyKernel::Plain(k) => k.id(),
                SaxpyKernel::Strided(k, _) => k.id(),
            },
        }
    }

    /// The copy entry (v01's takes its stride as a fourth parameter).
    fn copy_kernel(self) -> CopyKernel {
        match self {
            Variant::V01Strided { stride } => {
                CopyKernel::Strided(v01_strided::memory_v01_strided_copy, stride)
            }
            Variant::V02Coalesced => CopyKernel::Plain(v02_coalesced::memory_v02_coalesced_copy),
            Variant::V03Vectorized => CopyKernel::Plain(v03_vectorized::memory_v03_vectorized_copy),
            Variant::V04GridStrideIlp => {
                CopyKernel::Plain(v04_grid_stride_ilp::memory_v04_grid_stride_ilp_copy)
            }
        }
    }

    fn saxpy_kernel(self) -> SaxpyKernel {
        match self {
            Variant::V01Strided { stride } => {
                SaxpyKernel::Strided(v01_strided::memory_v01_strided_saxpy, stride)
            }
            Variant::V02Coalesced => SaxpyKernel::Plain(v02_coalesced::memory_v02_coalesced_saxpy),
            Variant::V03Vectorized => {
                SaxpyKernel::Plain(v03_vectorized::memory_v03_vectorized_saxpy)
            }
            Variant::V04GridStrideIlp => {
                SaxpyKernel::Plain(v04_grid_stride_ilp::memory_v04_grid_stride_ilp_saxpy)
            }
        }
    }

    /// The bench row's variant: the entry name minus the family prefix.
    pub fn row_variant(self, op: Op) -> String {
        self.kernel(op).name()["memory_".len()..].to_string()
    }

    /// The kernel and launch shape a bench row of this variant runs (the grid-stride v04's
    /// block count depends on the GPU, its block size does not).
    pub fn kernel_use(self, op: Op) -> KernelUse {
        KernelUse::new(self.kernel(op), self.block_threads(), 0)
    }

    fn block_threads(self) -> u32 {
        match self {
            Variant::V01Strided { .. } => v01_strided::BLOCK_THREADS,
            Variant::V02Coalesced => v02_coalesced::BLOCK_THREADS,
            Variant::V03Vectorized => v03_vectorized::BLOCK_THREADS,
            Variant::V04GridStrideIlp => v04_grid_stride_ilp::BLOCK_THREADS,
        }
    }

    /// Launch geometry for `n` elements, from the variant file's constants.
    fn launch_config(self, gpu: &Gpu, op: Op, n: u64) -> Result<LaunchConfig> {
        let kernel = self.kernel(op);
        let name = kernel.name();
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
                    .blocks_per_sm(kernel, b, 0)?
                    .clamp(1, v04_grid_stride_ilp::BLOCKS_PER_SM);
                // Never more blocks than there is work for: small arrays get a small grid.
                let needed = n.div_ceil(4 * b as u64).max(1);
                let blocks = (gpu.info.multiprocessors as u64 * fit as u64).min(needed);
                LaunchConfig::for_threads(name, blocks * b as u64, b)
            }
        }
    }

    /// The DRAM traffic this variant is modelled to cause for `op`, whose minimum is `min`
    /// (4 bytes per array per element). The strided mapping, per 4-byte element of a strided
    /// array (the rules ncu's DRAM counters on the H200 gave for the copy: 3.0x, 12.0x and
    /// 16.0x the minimum at strides 2, 8 and 32):
    /// - a read fetches its 32-byte sector, shared by `8 / min(stride, 8)` elements: `min(stride,
    ///   8)` × 4 bytes; once elements are 64 bytes apart (stride ≥ 16) DRAM delivers the
    ///   64-byte pair of sectors for each: 16 × 4 bytes;
    /// - a write of part of a sector makes L2 read the sector first (a fill) and write it
    ///   back: `min(stride, 8)` × 4 bytes each way (no fill at stride 1, whole sectors);
    /// - saxpy's y is read before it is written, so its write needs no fill of its own.
    pub fn modelled_bytes(self, op: Op, min: Bytes) -> Bytes {
        let Variant::V01Strided { stride } = self else {
            return min;
        };
        let per_sector = stride.clamp(1, 8) as u64;
        let read = if stride >= 16 { 16 } else { per_sector };
        let (write, fill) = (per_sector, if stride >= 2 { per_sector } else { 0 });
        // In units of 4 bytes per element: min is 2 of them (copy) or 3 (saxpy).
        match op {
            Op::Copy => Bytes(min.0 * (read + write + fill) / 2),
            Op::Saxpy => Bytes(min.0 * (2 * read + write) / 3),
        }
    }
}

/// The two shapes of copy entry: v01 takes its stride as a fourth parameter.
#[derive(Clone, Copy)]
enum CopyKernel {
    Plain(Kernel<(*const f32, *mut f32, u64)>),
    /// With the stride to pass.
    Strided(Kernel<(*const f32, *mut f32, u64, u32)>, u32),
}

/// The two shapes of saxpy entry.
#[derive(Clone, Copy)]
enum SaxpyKernel {
    Plain(Kernel<(f32, *const f32, *mut f32, u64)>),
    /// With the stride to pass.
    Strided(Kernel<(f32, *const f32, *mut f32, u64, u32)>, u32),
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
    same_len(v.kernel(Op::Copy).name(), src.len(), dst.len())?;
    let n = src.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let cfg = v.launch_config(gpu, Op::Copy, n)?;
    // SAFETY: both views hold n f32 and the geometry covers exactly 0..n.
    unsafe {
        match v.copy_kernel() {
            CopyKernel::Strided(k, stride) => gpu.launch(k, cfg, (src, dst, n, stride)),
            CopyKernel::Plain(k) => gpu.launch(k, cfg, (src, dst, n)),
        }
    }
}

/// `y = a*x + y` with the given variant. Empty arrays: nothing launched.
pub fn saxpy(gpu: &Gpu, v: Variant, a: f32, x: View<'_, f32>, y: ViewMut<'_, f32>) -> Result<()> {
    same_len(v.kernel(Op::Saxpy).name(), x.len(), y.len())?;
    let n = x.len() as u64;
    if n == 0 {
        return Ok(());
    }
    let cfg = v.launch_config(gpu, Op::Saxpy, n)?;
    // SAFETY: both views hold n f32 and the geometry covers exactly 0..n.
    unsafe {
        match v.saxpy_kernel() {
            SaxpyKernel::Strided(k, stride) => gpu.launch(k, cfg, (a, x, y, n, stride)),
            SaxpyKernel::Plain(k) => gpu.launch(k, cfg, (a, x, y, n)),
        }
    }
}

/// `pos += vel * dt` over `particles`, an array-of-structs buffer of `PARTICLE_F32S` f32 per
/// particle (see `rooflab_kernels::memory::Particle`).
pub fn particles_aos(gpu: &Gpu, particles: ViewMut<'_, f32>, dt: f32) -> Result<()> {
    let kernel = v05_particles_aos::memory_v05_particles_aos;
    if !particles.len().is_multiple_of(PARTICLE_F32S) {
        return Err(Error::Shape {
            op: kernel.name().into(),
            what: format!(
                "{} f32 is not a whole number of {PARTICLE_F32S}-f32 particles",
                particles.len()
            ),
        });
    }
    let n = (particles.len() / PARTICLE_F32S) as u64;
    if n == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig::for_threads(kernel.name(), n, v05_particles_aos::BLOCK_THREADS)?;
    // SAFETY: the view holds n particles; one thread per particle.
    unsafe { gpu.launch(kernel, cfg, (particles, n, dt)) }
}

/// `pos += vel * dt` with positions and velocities as six separate arrays.
pub fn particles_soa(
    gpu: &Gpu,
    pos: [ViewMut<'_, f32>; 3],
    vel: [View<'_, f32>; 3],
    dt: f32,
) -> Result<()> {
    let kernel = v06_particles_soa::memory_v06_particles_soa;
    let n = pos[0].len();
    for len in pos.iter().map(|p| p.len()).chain(vel.iter().map(|v| v.len())) {
        same_len(kernel.name(), n, len)?;
    }
    if n == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig::for_threads(kernel.name(), n as u64, v06_particles_soa::BLOCK_THREADS)?;
    let [px, py, pz] = pos;
    let [vx, vy, vz] = vel;
    // SAFETY: six arrays of n f32; one thread per particle.
    unsafe { gpu.launch(kernel, cfg, (px, py, pz, vx, vy, vz, n as u64, dt)) }
}

/// The particle kernels' launch shapes (one thread per particle).
pub fn particles_kernel_use(soa: bool) -> KernelUse {
    if soa {
        KernelUse::new(
            v06_particles_soa::memory_v06_particles_soa,
            v06_particles_soa::BLOCK_THREADS,
            0,
        )
    } else {
        KernelUse::new(
            v05_particles_aos::memory_v05_particles_aos,
            v05_particles_aos::BLOCK_THREADS,
            0,
        )
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use rooflab_kernels::memory::VectorSplit;

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
    fn names_follow_the_stem() {
        for op in [Op::Copy, Op::Saxpy] {
            for v in LADDER {
                let family = super::super::FAMILY.name;
                assert_eq!(
                    v.kernel(op).name(),
                    format!("{family}_{}_{}", v.stem(), op.name())
                );
                assert!(
                    crate::ptx::built()[0]
                        .1
                        .contains(&format!(".entry {}(", v.kernel(op)))
                );
            }
        }
    }
}
