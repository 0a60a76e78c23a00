//! attention: the variants, their entries and launch geometry (from the variant files'
//! constants), the shape checks and the safe wrapper.

use rooflab_kernels::attention::{
    HEAD_DIMS, MAX_SEQ, v01_naive, v02_fused_simt, v03_flash_mma, v04_flash_wgmma,
};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, KernelId, LaunchConfig};
use crate::tensor::{Buf, Dtype};
use crate::tma::Bf16Tiles;

/// The attention ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Naive,
    V02FusedSimt,
    V03FlashMma,
    /// sm_90a only: unavailable (and refused, with the reason) elsewhere.
    V04FlashWgmma,
}

pub const LADDER: [Variant; 4] = [
    Variant::V01Naive,
    Variant::V02FusedSimt,
    Variant::V03FlashMma,
    Variant::V04FlashWgmma,
];

/// One attention problem: `heads = B·H` heads of `seq` queries and keys of `dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attn {
    pub batch: usize,
    pub heads: usize,
    pub seq: usize,
    pub dim: usize,
    pub causal: bool,
}

impl Attn {
    pub const fn new(batch: usize, heads: usize, seq: usize, dim: usize, causal: bool) -> Attn {
        Attn {
            batch,
            heads,
            seq,
            dim,
            causal,
        }
    }
    /// B·H: the kernels' head index.
    pub fn bh(&self) -> usize {
        self.batch * self.heads
    }
    /// Elements of Q (and of K, V, O).
    pub fn elements(&self) -> usize {
        self.bh() * self.seq * self.dim
    }
    /// `1/√D`, the scores' scale.
    pub fn scale(&self) -> f32 {
        1.0 / (self.dim as f32).sqrt()
    }
    /// The bench's shape label, e.g. `4x16x4096x128 causal`.
    pub fn label(&self) -> String {
        format!(
            "{}x{}x{}x{}{}",
            self.batch,
            self.heads,
            self.seq,
            self.dim,
            if self.causal { " causal" } else { "" }
        )
    }
}

impl std::fmt::Display for Attn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "B={} H={} S={} D={}{}",
            self.batch,
            self.heads,
            self.seq,
            self.dim,
            if self.causal { " causal" } else { "" }
        )
    }
}

impl Variant {
    /// The variant file's stem, e.g. `v02_fused_simt`.
    pub fn stem(self) -> &'static str {
        self.kernels(64)[0].stem()
    }

    /// The bench row's variant: the stem, plus the head dim for the per-dim entries.
    pub fn row_variant(self, dim: usize) -> String {
        match self {
            Variant::V01Naive => self.stem().to_string(),
            Variant::V02FusedSimt | Variant::V03FlashMma | Variant::V04FlashWgmma => {
                format!("{}_d{dim}", self.stem())
            }
        }
    }

    /// The kernels one launch runs, in order.
    pub fn kernels(self, dim: usize) -> Vec<KernelId> {
        match self {
            Variant::V01Naive => vec![
                v01_naive::attention_v01_naive_scores.id(),
                v01_naive::attention_v01_naive_softmax.id(),
                v01_naive::attention_v01_naive_pv.id(),
            ],
            Variant::V02FusedSimt => vec![if dim == 128 {
                v02_fused_simt::attention_v02_fused_simt_d128.id()
            } else {
                v02_fused_simt::attention_v02_fused_simt_d64.id()
            }],
            Variant::V03FlashMma => vec![if dim == 128 {
                v03_flash_mma::attention_v03_flash_mma_d128.id()
            } else {
                v03_flash_mma::attention_v03_flash_mma_d64.id()
            }],
            Variant::V04FlashWgmma => vec![if dim == 128 {
                v04_flash_wgmma::attention_v04_flash_wgmma_d128.id()
            } else {
                v04_flash_wgmma::attention_v04_flash_wgmma_d64.id()
            }],
        }
    }

    /// The kernels with their block size and dynamic shared memory, for the bench row.
    pub fn kernel_uses(self, dim: usize) -> Vec<KernelUse> {
        match self {
            Variant::V01Naive => {
                let k = self.kernels(dim);
                vec![
                    KernelUse::new(k[0], v01_naive::BLOCK_THREADS, 0),
                    KernelUse::new(k[1], v01_naive::SOFTMAX_ROWS * 32, 0),
                    KernelUse::new(k[2], v01_naive::BLOCK_THREADS, 0),
                ]
            }
            Variant::V02FusedSimt => vec![KernelUse::new(
                self.kernels(dim)[0],
                v02_fused_simt::THREADS,
                4 * v02_fused_simt::shared_f32(dim as u32),
            )],
            Variant::V03FlashMma => vec![KernelUse::new(
                self.kernels(dim)[0],
                v03_flash_mma::THREADS,
                v03_flash_mma::shared_bytes(dim as u32),
            )],
            Variant::V04FlashWgmma => vec![KernelUse::new(
                self.kernels(dim)[0],
                v04_flash_wgmma::BLOCK_THREADS,
                v04_flash_wgmma::shared_bytes(dim as u32),
            )],
        }
    }

    /// Bytes of scratch device memory a launch needs: v01's scores, 4·B·H·S².
    pub fn scratch_bytes(self, a: &Attn) -> u64 {
        match self {
            Variant::V01Naive => {
                (4 * a.bh() as u64).saturating_mul((a.seq as u64).saturating_mul(a.seq as u64))
            }
            Variant::V02FusedSimt | Variant::V03FlashMma | Variant::V04FlashWgmma => 0,
        }
    }
}

/// The checks every variant shares: a supported head dim, sizes within the kernels'
/// indexing, and Q, K, V, O of B·H·S·D bf16 each.
pub fn validate(op: &str, a: &Attn, q: &Buf, k: &Buf, v: &Buf, o: &Buf) -> Result<()> {
    if !HEAD_DIMS.contains(&(a.dim as u32)) {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "head dim {} is not supported: the kernels are built for D in {HEAD_DIMS:?}",
                a.dim
            ),
        });
    }
    let too_large = |what: &str, value: u64, limit: u64| Error::TooLarge {
        op: op.into(),
        what: what.into(),
        value,
        limit,
    };
    // The kernels take S and D as u32 and index in 64 bits; the grid puts heads on y.
    if a.seq as u64 > MAX_SEQ {
        return Err(too_large("S", a.seq as u64, MAX_SEQ));
    }
    if a.bh() > 65535 {
        return Err(too_large("B·H (blocks in y)", a.bh() as u64, 65535));
    }
    let n = a
        .bh()
        .checked_mul(a.seq)
        .and_then(|x| x.checked_mul(a.dim))
        .ok_or_else(|| too_large("B·H·S·D", u64::MAX, usize::MAX as u64))?;
    for (name, b) in [("Q", q), ("K", k), ("V", v), ("O", o)] {
        crate::tensor::expect_buf(op, name, b, Dtype::Bf16, n)?;
    }
    Ok(())
}

/// `O = softmax(Q·Kᵀ/√D [causal])·V` with the given variant. Every check happens before
/// any launch; v01 is refused, with the numbers, when its scores do not fit in free memory.
pub fn attention(
    gpu: &Gpu,
    var: Variant,
    a: &Attn,
    q: &Buf,
    k: &Buf,
    v: &Buf,
    o: &mut Buf,
) -> Result<()> {
    let kernels = var.kernels(a.dim);
    let op = kernels[0].name();
    validate(op, a, q, k, v, o)?;
    if a.elements() == 0 {
        return Ok(());
    }
    let (heads, seq, dim) = (a.bh() as u32, a.seq as u32, a.dim as u32);
    let causal = a.causal as u32;
    let (qv, kv, vv) = (q.view::<u16>(op)?, k.view::<u16>(op)?, v.view::<u16>(op)?);
    let ov = o.view_mut::<u16>(op)?;
    match var {
        Variant::V01Naive => {
            let need = var.scratch_bytes(a);
            let (free, _) = gpu.memory_info()?;
            if need > free {
                return Err(Error::Shape {
                    op: op.into(),
                    what: format!(
                        "{a}: v01 keeps the B·H·S² scores in DRAM, {:.1} GiB, and the GPU has \
                         {:.1} GiB free; use a smaller shape or a fused step (v02)",
                        need as f64 / (1u64 << 30) as f64,
                        free as f64 / (1u64 << 30) as f64
                    ),
                });
            }
            let scores = a.bh() * a.seq * a.seq;
            let c1 = LaunchConfig::for_threads(
                op,
                scores as u64,
                v01_naive::BLOCK_THREADS,
            )?;
            let rows = (a.bh() * a.seq) as u64;
            let c2 = LaunchConfig::for_threads(
                op,
                rows.div_ceil(v01_naive::SOFTMAX_ROWS as u64) * 32 * v01_naive::SOFTMAX_ROWS as u64,
                v01_naive::SOFTMAX_ROWS * 32,
            )?;
            let c3 = LaunchConfig::for_threads(
                op,
                a.elements() as u64,
                v01_naive::BLOCK_THREADS,
            )?;
            gpu.with_workspace(scores, |ws| {
                // SAFETY: the buffers hold B·H·S·D bf16 (validated), the workspace B·H·S²
                // f32; each grid covers its kernel's index range, which the kernel bounds.
                unsafe {
                    gpu.launch(
                        v01_naive::attention_v01_naive_scores,
                        c1,
                        (qv, kv, ws.view_range_mut(0..scores), heads, seq, dim, a.scale(), causal),
                    )?;
                    gpu.launch(
                        v01_naive::attention_v01_naive_softmax,
                        c2,
                        (ws.view_range_mut(0..scores), rows, seq),
                    )?;
                    gpu.launch(
                        v01_naive::attention_v01_naive_pv,
                        c3,
                        (ws.view_range(0..scores), vv, ov, heads, seq, dim),
                    )
                }
            })
        }
        Variant::V02FusedSimt => {
            let cfg = LaunchConfig {
                grid: (seq.div_ceil(v02_fused_simt::ROWS), heads, 1),
                block: (v02_fused_simt::THREADS, 1, 1),
                shared_bytes: 4 * v02_fused_simt::shared_f32(dim),
            };
            let kernel = if dim == 128 {
                v02_fused_simt::attention_v02_fused_simt_d128
            } else {
                v02_fused_simt::attention_v02_fused_simt_d64
            };
            // SAFETY: Q, K, V, O hold `heads` heads of S·D bf16 (validated); the grid is
            // ceil(S / ROWS) × heads blocks of THREADS with the shared memory `run` needs.
            unsafe { gpu.launch(kernel, cfg, (qv, kv, vv, ov, seq, a.scale(), causal)) }
        }
        Variant::V03FlashMma => {
            let cfg = LaunchConfig {
                grid: (seq.div_ceil(v03_flash_mma::BR), heads, 1),
                block: (v03_flash_mma::THREADS, 1, 1),
                shared_bytes: v03_flash_mma::shared_bytes(dim),
            };
            let kernel = if dim == 128 {
                v03_flash_mma::attention_v03_flash_mma_d128
            } else {
                v03_flash_mma::attention_v03_flash_mma_d64
            };
            // SAFETY: Q, K, V, O hold `heads` heads of S·D bf16 (validated), each a whole
            // buffer (cuMemAlloc: 256-byte aligned, so every row of D bf16 is 16-byte
            // aligned for the kernel's 16-byte copies and stores); the grid is
            // ceil(S / BR) × heads blocks of THREADS with the shared memory `body` needs
            // (past 48 KiB the launch opts in).
            unsafe { gpu.launch(kernel, cfg, (qv, kv, vv, ov, seq, a.scale(), causal)) }
        }
        Variant::V04FlashWgmma => {
            gpu.available(kernels[0])?;
            let cfg = LaunchConfig {
                grid: (seq.div_ceil(v04_flash_wgmma::BR), heads, 1),
                block: (v04_flash_wgmma::BLOCK_THREADS, 1, 1),
                shared_bytes: v04_flash_wgmma::shared_bytes(dim),
            };
            let kernel = if dim == 128 {
                v04_flash_wgmma::attention_v04_flash_wgmma_d128
            } else {
                v04_flash_wgmma::attention_v04_flash_wgmma_d64
            };
            // One map per tensor over [B·H, S, D]: boxes of one 128-byte swizzled panel
            // (64 dims) × BR (= BC) rows of one head.
            const _: () = assert!(v04_flash_wgmma::BR == v04_flash_wgmma::BC);
            let map = |name: &str, view: &crate::gpu::View<'_, u16>| {
                let t = Bf16Tiles::new(
                    op,
                    name,
                    view,
                    a.seq,
                    a.dim,
                    v04_flash_wgmma::BR,
                    v04_flash_wgmma::PANEL,
                )?;
                gpu.tensor_map(t.in_planes(op, a.bh())?)
            };
            let (qm, km, vm) = (map("Q", &qv)?, map("K", &kv)?, map("V", &vv)?);
            // SAFETY: the maps describe exactly the live Q, K, V (validated: B·H·S·D bf16
            // each) as [B·H, S, D] with the boxes and swizzle the kernel's tiles are laid out
            // for (TMA zero-fills past S); O holds B·H·S·D bf16, written at rows < S; the
            // grid is ceil(S / BR) × heads blocks of BLOCK_THREADS with its shared memory.
            unsafe { gpu.launch(kernel, cfg, (qm, km, vm, ov, seq, a.scale(), causal)) }
        }
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn names_and_geometry() {
        assert_eq!(Variant::V01Naive.stem(), "v01_naive");
        assert_eq!(Variant::V02FusedSimt.stem(), "v02_fused_simt");
        assert_eq!(Variant::V02FusedSimt.row_variant(128), "v02_fused_simt_d128");
        assert_eq!(Variant::V03FlashMma.stem(), "v03_flash_mma");
        assert_eq!(Variant::V03FlashMma.row_variant(64), "v03_flash_mma_d64");
        for d in HEAD_DIMS {
            let u = Variant::V02FusedSimt.kernel_uses(d as usize);
            // Under the 48 KiB a launch gets without opting in.
            assert!(u[0].shared_bytes <= 48 * 1024, "D={d}: {}", u[0].shared_bytes);
            assert!(u[0].kernel.name().ends_with(&format!("_d{d}")));
            // v03: 40 KiB at D 64, 80 KiB at D 128 (the launch opts in past 48 KiB; two
            // blocks of 80 KiB still fit sm_80's and sm_90's 227 KiB).
            let u = Variant::V03FlashMma.kernel_uses(d as usize);
            assert_eq!(u[0].shared_bytes, [40 * 1024, 80 * 1024][(d == 128) as usize], "D={d}");
            assert!(2 * u[0].shared_bytes <= 227 * 1024);
            assert_eq!(u[0].block_threads, 128);
            assert!(u[0].kernel.name().ends_with(&format!("_d{d}")));
        }
        // v04: 3 warpgroups, 162 KiB at D 128 and 82 KiB at D 64 (one block an SM).
        for (d, kib) in [(64, 82), (128, 162)] {
            let u = Variant::V04FlashWgmma.kernel_uses(d);
            assert_eq!(u[0].block_threads, 384);
            assert_eq!(u[0].shared_bytes.div_ceil(1024), kib, "D={d}");
            assert!(u[0].shared_bytes <= 227 * 1024);
            assert_eq!(Variant::V04FlashWgmma.row_variant(d), format!("v04_flash_wgmma_d{d}"));
        }
        let a = Attn::new(4, 16, 4096, 128, false);
        assert_eq!(Variant::V01Naive.scratch_bytes(&a), 4 * 64 * 4096 * 4096);
        assert_eq!(a.label(), "4x16x4096x128");
    }
}
