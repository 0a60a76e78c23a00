//! reduce: the variants, their launch geometry (from the variant files' constants), the
//! workspace a call needs, and the safe launch wrapper (output must be one element; an
//! empty input gives 0 with no launch).
//!
//! Accumulators: v01 and v07's atomic mode add into `out` with global atomics, so the op
//! itself zeroes `out` first (a `cuMemsetD32Async` on the stream, inside the timed call).
//! v02–v06 write per-block partials into a caller-provided workspace and the op launches the
//! same kernel on them until one block is left, which writes `out`; v07's deterministic mode
//! writes per-block partials and a second one-block launch sums them in a fixed order. Both
//! are bit-identical run to run. [`workspace_len`] says how much workspace a call needs.

use rooflab_kernels::reduce::{
    v01_atomic, v02_tree_divergent, v03_strided_index, v04_tree_sequential, v05_first_add_on_load,
    v06_warp_shuffle, v07_multi_element,
};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, KernelId, LaunchConfig, View, ViewMut};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Atomic,
    V02TreeDivergent,
    V03StridedIndex,
    V04TreeSequential,
    V05FirstAddOnLoad,
    V06WarpShuffle,
    /// `deterministic`: per-block partials and a fixed-order second pass instead of one
    /// atomic per block.
    V07MultiElement {
        deterministic: bool,
    },
}

pub const LADDER: [Variant; 8] = [
    Variant::V01Atomic,
    Variant::V02TreeDivergent,
    Variant::V03StridedIndex,
    Variant::V04TreeSequential,
    Variant::V05FirstAddOnLoad,
    Variant::V06WarpShuffle,
    Variant::V07MultiElement {
        deterministic: false,
    },
    Variant::V07MultiElement {
        deterministic: true,
    },
];

/// The v01–v06 entries: `(x, n, out)` for v01, `(x, n, partials)` for the tree passes.
type SimpleKernel = Kernel<(*const f32, u64, *mut f32)>;

impl Variant {
    /// The kernel of v01–v06 (v07 has two entries of its own shapes: `None`).
    fn simple_kernel(self) -> Option<SimpleKernel> {
        match self {
            Variant::V01Atomic => Some(v01_atomic::reduce_v01_atomic),
            Variant::V02TreeDivergent => Some(v02_tree_divergent::reduce_v02_tree_divergent),
            Variant::V03StridedIndex => Some(v03_strided_index::reduce_v03_strided_index),
            Variant::V04TreeSequential => Some(v04_tree_sequential::reduce_v04_tree_sequential),
            Variant::V05FirstAddOnLoad => Some(v05_first_add_on_load::reduce_v05_first_add_on_load),
            Variant::V06WarpShuffle => Some(v06_warp_shuffle::reduce_v06_warp_shuffle),
            Variant::V07MultiElement { .. } => None,
        }
    }

    /// The (first) kernel the variant launches, e.g. `reduce_v04_tree_sequential`: what its
    /// errors name.
    pub fn kernel(self) -> KernelId {
        match self.simple_kernel() {
            Some(k) => k.id(),
            None => v07_multi_element::reduce_v07_multi_element.id(),
        }
    }

    /// The kernel that writes the result: the deterministic v07's second launch, else
    /// [`kernel`](Self::kernel). The variant's test and bench row are named after it.
    pub fn result_kernel(self) -> KernelId {
        match self {
            Variant::V07MultiElement {
                deterministic: true,
            } => v07_multi_element::reduce_v07_multi_element_final.id(),
            v => v.kernel(),
        }
    }

    /// The bench row's variant: the result kernel's name minus the family prefix.
    pub fn row_variant(self) -> String {
        self.result_kernel().name()[super::FAMILY.name.len() + 1..].to_string()
    }

    /// Every kernel one call of [`sum`] runs, with its block size and dynamic shared memory
    /// (the same at every length; only the grids depend on it).
    pub fn kernel_uses(self) -> Vec<KernelUse> {
        use v07_multi_element as k;
        match self {
            Variant::V07MultiElement { deterministic } => {
                let mut uses = vec![KernelUse::new(
                    k::reduce_v07_multi_element,
                    k::BLOCK_THREADS,
                    k::SHARED_BYTES,
                )];
                if deterministic {
                    uses.push(KernelUse::new(
                        k::reduce_v07_multi_element_final,
                        k::FINAL_THREADS,
                        k::FINAL_SHARED_BYTES,
                    ));
                }
                uses
            }
            v => {
                let (threads, shared) = v.simple_shape();
                vec![KernelUse::new(v.kernel(), threads, shared)]
            }
        }
    }

    /// Block threads and dynamic shared bytes of the v01–v06 launches.
    fn simple_shape(self) -> (u32, u32) {
        match self {
            Variant::V01Atomic => (v01_atomic::BLOCK_THREADS, 0),
            Variant::V02TreeDivergent => (
                v02_tree_divergent::BLOCK_THREADS,
                v02_tree_divergent::SHARED_BYTES,
            ),
            Variant::V03StridedIndex => (
                v03_strided_index::BLOCK_THREADS,
                v03_strided_index::SHARED_BYTES,
            ),
            Variant::V04TreeSequential => (
                v04_tree_sequential::BLOCK_THREADS,
                v04_tree_sequential::SHARED_BYTES,
            ),
            Variant::V05FirstAddOnLoad => (
                v05_first_add_on_load::BLOCK_THREADS,
                v05_first_add_on_load::SHARED_BYTES,
            ),
            Variant::V06WarpShuffle => (
                v06_warp_shuffle::BLOCK_THREADS,
                v06_warp_shuffle::SHARED_BYTES,
            ),
            Variant::V07MultiElement { .. } => (
                v07_multi_element::BLOCK_THREADS,
                v07_multi_element::SHARED_BYTES,
            ),
        }
    }

    /// Whether the kernel adds into `out` atomically (so the op zeroes it first).
    pub fn accumulates(self) -> bool {
        matches!(
            self,
            Variant::V01Atomic
                | Variant::V07MultiElement {
                    deterministic: false
                }
        )
    }

    /// v02–v06: one block sum per block, reduced again pass after pass.
    pub fn multi_pass(self) -> bool {
        matches!(
            self,
            Variant::V02TreeDivergent
                | Variant::V03StridedIndex
                | Variant::V04TreeSequential
                | Variant::V05FirstAddOnLoad
                | Variant::V06WarpShuffle
        )
    }
}

/// Elements one block of a v01–v06 launch covers (one or two per thread): block `b` sums
/// elements `[b·E, (b+1)·E)` of its pass's input.
pub fn elems_per_block(v: Variant) -> u64 {
    match v {
        Variant::V01Atomic => v01_atomic::BLOCK_THREADS as u64,
        Variant::V02TreeDivergent => v02_tree_divergent::BLOCK_THREADS as u64,
        Variant::V03StridedIndex => v03_strided_index::BLOCK_THREADS as u64,
        Variant::V04TreeSequential => v04_tree_sequential::BLOCK_THREADS as u64,
        Variant::V05FirstAddOnLoad => v05_first_add_on_load::ELEMS_PER_BLOCK,
        Variant::V06WarpShuffle => v06_warp_shuffle::ELEMS_PER_BLOCK,
        Variant::V07MultiElement { .. } => unreachable!("v07 sizes its grid to the machine"),
    }
}

/// Blocks of the v01–v06 launches for `n` elements (1D, one or two elements per thread).
pub fn blocks_simple(v: Variant, n: u64) -> u64 {
    n.div_ceil(elems_per_block(v)).max(1)
}

/// v07's grid: `BLOCKS_PER_SM` per SM (or what fits), never more than there is work for.
pub fn v07_blocks(gpu: &Gpu, n: u64) -> Result<u32> {
    use v07_multi_element as k;
    let fit = gpu
        .blocks_per_sm(
            k::reduce_v07_multi_element,
            k::BLOCK_THREADS,
            k::SHARED_BYTES as usize,
        )?
        .clamp(1, k::BLOCKS_PER_SM);
    Ok(v07_grid(gpu.info.multiprocessors, fit, n))
}

/// The v07 grid from the machine's size and the work: a pure function for unit tests.
pub fn v07_grid(multiprocessors: u32, fit: u32, n: u64) -> u32 {
    use v07_multi_element as k;
    let needed = n.div_ceil(4 * k::UNROLL * k::BLOCK_THREADS as u64).max(1);
    (multiprocessors as u64 * fit as u64).min(needed) as u32
}

/// v07's scalar head for an input at device address `addr` with `n` elements: the elements
/// before the first 16-byte boundary, as the kernel computes it (`vector::misalignment_f32`).
pub fn v07_head(addr: u64, n: u64) -> u64 {
    (((16 - (addr & 15)) & 15) / 4).min(n)
}

/// Elements the deterministic v07 needs for its partials on this GPU (any `n`).
pub fn partials_len(gpu: &Gpu) -> usize {
    gpu.info.multiprocessors as usize * v07_multi_element::BLOCKS_PER_SM as usize
}

/// The multi-pass variants' pass lengths: `[n, blocks(n), blocks(blocks(n)), ..]` down to
/// the input of the one-block pass that writes `out`.
pub fn pass_lengths(v: Variant, n: u64) -> Vec<u64> {
    let mut out = vec![n];
    let mut len = n;
    while blocks_simple(v, len) > 1 {
        len = blocks_simple(v, len);
        out.push(len);
    }
    out
}

/// Workspace (f32 elements) a call of `sum` with variant `v` needs for `n` elements: the
/// partials of every pass but the last (v02–v06), the per-block partials (deterministic
/// v07), or nothing.
pub fn workspace_len(gpu: &Gpu, v: Variant, n: u64) -> usize {
    match v {
        Variant::V07MultiElement {
            deterministic: true,
        } => partials_len(gpu),
        v if v.multi_pass() => pass_lengths(v, n)[1..].iter().sum::<u64>() as usize,
        _ => 0,
    }
}

/// `out[0] = Σ x`. `out` must hold exactly one element. `workspace` must hold at least
/// [`workspace_len`] elements (none needed: v01 and the atomic v07).
/// An empty `x` gives `out[0] = 0` without a kernel launch.
pub fn sum(
    gpu: &Gpu,
    v: Variant,
    x: View<'_, f32>,
    mut out: ViewMut<'_, f32>,
    workspace: Option<ViewMut<'_, f32>>,
) -> Result<()> {
    let op = v.kernel().name();
    if out.len() != 1 {
        return Err(Error::Shape {
            op: op.into(),
            what: format!("the output must be one element, got {}", out.len()),
        });
    }
    let n = x.len() as u64;
    let need = workspace_len(gpu, v, n);
    // The part of the workspace this call uses (`None` when it needs none).
    let ws = match (workspace, need) {
        (_, 0) => None,
        (None, need) => {
            return Err(Error::Shape {
                op: op.into(),
                what: format!("{n} elements need a workspace of {need} elements, got none"),
            });
        }
        (Some(w), need) => {
            if w.len() < need {
                return Err(Error::Shape {
                    op: op.into(),
                    what: format!(
                        "{n} elements need a workspace of {need} elements, it has {}",
                        w.len()
                    ),
                });
            }
            Some(w.range(0..need))
        }
    };
    if n == 0 || v.accumulates() {
        // The empty sum is 0; atomic variants start from 0.
        gpu.zero(out.reborrow())?;
    }
    if n == 0 {
        return Ok(());
    }
    let Some(kernel) = v.simple_kernel() else {
        // v07: the workspace is there exactly in the deterministic mode (workspace_len).
        use v07_multi_element as k;
        let blocks = v07_blocks(gpu, n)?;
        let cfg = LaunchConfig {
            grid: (blocks, 1, 1),
            block: (k::BLOCK_THREADS, 1, 1),
            shared_bytes: k::SHARED_BYTES,
        };
        let Some(mut partials) = ws else {
            // SAFETY: x holds n f32, out one (zeroed above); null partials (`None`): one
            // atomic add per block into out.
            let none: Option<ViewMut<'_, f32>> = None;
            return unsafe { gpu.launch(k::reduce_v07_multi_element, cfg, (x, n, out, none)) };
        };
        // SAFETY: x holds n f32, out one; partials holds partials_len >= blocks f32, one per
        // block.
        unsafe {
            gpu.launch(
                k::reduce_v07_multi_element,
                cfg,
                (x, n, out.reborrow(), Some(partials.reborrow())),
            )?
        };
        let cfg = LaunchConfig {
            grid: (1, 1, 1),
            block: (k::FINAL_THREADS, 1, 1),
            shared_bytes: k::FINAL_SHARED_BYTES,
        };
        // SAFETY: the first launch wrote `blocks` partials (the view holds at least that
        // many); one block reads them and writes out's one element.
        return unsafe {
            gpu.launch(
                k::reduce_v07_multi_element_final,
                cfg,
                (partials.as_view(), blocks, out),
            )
        };
    };
    if v == Variant::V01Atomic {
        let cfg = LaunchConfig::for_threads(op, n, v01_atomic::BLOCK_THREADS)?;
        // SAFETY: x holds n f32, out one (zeroed above); one thread per element.
        return unsafe { gpu.launch(kernel, cfg, (x, n, out)) };
    }
    // v02–v06. Pass k reads pass k-1's partials (the input for k = 0) and writes its own
    // block sums after them in the workspace; the one-block pass writes `out`.
    let (threads, shared) = v.simple_shape();
    let mut rest = ws;
    let (mut src, mut len) = (x, n);
    loop {
        let blocks = blocks_simple(v, len);
        let mut cfg = LaunchConfig::for_threads(op, blocks * threads as u64, threads)?;
        cfg.shared_bytes = shared;
        if blocks == 1 {
            // SAFETY: `src` holds `len` f32 (the input or the previous pass's partials), the
            // one block writes out's one element.
            return unsafe { gpu.launch(kernel, cfg, (src, len, out)) };
        }
        let (mut dst, tail) = rest
            .expect("workspace_len counts the partials of every pass but the last")
            .split_at(blocks as usize);
        // SAFETY: `src` holds `len` f32 (the input, or the previous pass's partials, a
        // window of the workspace before `dst`); `dst` holds `blocks` f32, one per block.
        unsafe { gpu.launch(kernel, cfg, (src, len, dst.reborrow()))? };
        (src, len, rest) = (dst.into_view(), blocks, Some(tail));
    }
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn passes() {
        let v4 = Variant::V04TreeSequential;
        assert_eq!(pass_lengths(v4, 1), vec![1]);
        assert_eq!(pass_lengths(v4, 256), vec![256]);
        assert_eq!(pass_lengths(v4, 257), vec![257, 2]);
        assert_eq!(
            pass_lengths(v4, 1 << 28),
            vec![1 << 28, 1 << 20, 1 << 12, 1 << 4]
        );
        // v03 passes as v02 does: 256 elements per block.
        assert_eq!(
            pass_lengths(Variant::V03StridedIndex, 1 << 28),
            pass_lengths(Variant::V02TreeDivergent, 1 << 28)
        );
        assert_eq!(
            pass_lengths(Variant::V06WarpShuffle, 1 << 28),
            vec![1 << 28, 1 << 19, 1 << 10, 2]
        );
    }

    /// Simulate v07's per-thread mapping on the CPU: every element read exactly once for
    /// any alignment, length and grid.
    #[test]
    fn v07_mapping_covers_every_element_once() {
        use v07_multi_element as k;
        for n in [1u64, 2, 3, 4, 5, 17, 1023, 1025, 65_537] {
            for mis in 0..4u64 {
                for blocks in [1u32, 3, v07_grid(132, 8, n)] {
                    let step = blocks as u64 * k::BLOCK_THREADS as u64;
                    let head = mis.min(n);
                    let vectors = (n - head) / 4;
                    let tail_start = head + 4 * vectors;
                    let mut seen = vec![0u8; n as usize];
                    for t in 0..step {
                        let mut v = t;
                        while v + (k::UNROLL - 1) * step < vectors {
                            for u in 0..k::UNROLL {
                                for l in 0..4 {
                                    seen[(head + 4 * (v + u * step) + l) as usize] += 1;
                                }
                            }
                            v += k::UNROLL * step;
                        }
                        while v < vectors {
                            for l in 0..4 {
                                seen[(head + 4 * v + l) as usize] += 1;
                            }
                            v += step;
                        }
                        if t < head {
                            seen[t as usize] += 1;
                        }
                        if t < n - tail_start {
                            seen[(tail_start + t) as usize] += 1;
                        }
                    }
                    assert!(
                        seen.iter().all(|&c| c == 1),
                        "n={n} mis={mis} blocks={blocks}"
                    );
                }
            }
        }
    }

    #[test]
    fn grids() {
        assert_eq!(blocks_simple(Variant::V01Atomic, 1), 1);
        assert_eq!(blocks_simple(Variant::V03StridedIndex, 256), 1);
        assert_eq!(blocks_simple(Variant::V04TreeSequential, 257), 2);
        assert_eq!(blocks_simple(Variant::V06WarpShuffle, 512), 1);
        assert_eq!(blocks_simple(Variant::V06WarpShuffle, 513), 2);
        // Machine-sized for big n, small for small n.
        assert_eq!(v07_grid(132, 8, 1 << 28), 1056);
        assert_eq!(v07_grid(132, 8, 1), 1);
        assert_eq!(v07_grid(132, 8, 4097), 2);
        // The scalar head: elements before the first 16-byte boundary, at most n.
        assert_eq!(v07_head(0x1000, 10), 0);
        assert_eq!(v07_head(0x1004, 10), 3);
        assert_eq!(v07_head(0x100c, 10), 1);
        assert_eq!(v07_head(0x1004, 2), 2);
    }

    #[test]
    fn kernel_uses() {
        for v in LADDER {
            let uses = v.kernel_uses();
            assert_eq!(uses[0].kernel, v.kernel());
            assert_eq!(uses.last().unwrap().kernel, v.result_kernel());
            for u in &uses {
                assert!(u.block_threads > 0 && u.block_threads.is_multiple_of(32));
            }
        }
        let det = Variant::V07MultiElement {
            deterministic: true,
        };
        assert_eq!(det.kernel_uses().len(), 2);
        assert_eq!(
            Variant::V04TreeSequential.kernel_uses(),
            vec![KernelUse::new(
                v04_tree_sequential::reduce_v04_tree_sequential,
                256,
                1024
            )]
        );
        assert_eq!(
            Variant::V03StridedIndex.kernel_uses(),
            vec![KernelUse::new(
                v03_strided_index::reduce_v03_strided_index,
                256,
                1024
            )]
        );
        assert_eq!(Variant::V01Atomic.kernel_uses()[0].shared_bytes, 0);
    }

    #[test]
    fn kernels_are_in_the_ptx_and_named_after_the_family() {
        let prefix = format!("{}_v", super::super::FAMILY.name);
        for v in LADDER {
            for u in v.kernel_uses() {
                let name = u.kernel.name();
                assert!(name.starts_with(&prefix), "{name}");
                assert!(crate::ptx::built()[0].1.contains(&format!(".entry {name}(")));
            }
        }
    }
}
