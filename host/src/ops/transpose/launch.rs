//! transpose: the variants, their launch geometry (from the variant files' constants) and
//! the safe launch wrapper (buffer lengths checked against the shape, nothing launched for
//! an empty matrix, dimensions past the kernels' 32-bit index range refused).

use rooflab_kernels::transpose::{
    MAX_DIM, MAX_GRID_Y, v01_naive, v02_smem_tiled, v03_padded, v04_multi_element_vectorized,
};

use crate::bench::KernelUse;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, LaunchConfig, View, ViewMut};

/// Every transpose entry: `(inp, out, m, n)`.
pub type TransposeKernel = Kernel<(*const f32, *mut f32, u32, u32)>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    V01Naive,
    V02SmemTiled,
    V03Padded,
    V04MultiElementVectorized,
}

pub const LADDER: [Variant; 4] = [
    Variant::V01Naive,
    Variant::V02SmemTiled,
    Variant::V03Padded,
    Variant::V04MultiElementVectorized,
];

impl Variant {
    /// The kernel entry, e.g. `transpose_v03_padded`.
    pub fn kernel(self) -> TransposeKernel {
        match self {
            Variant::V01Naive => v01_naive::transpose_v01_naive,
            Variant::V02SmemTiled => v02_smem_tiled::transpose_v02_smem_tiled,
            Variant::V03Padded => v03_padded::transpose_v03_padded,
            Variant::V04MultiElementVectorized => {
                v04_multi_element_vectorized::transpose_v04_multi_element_vectorized
            }
        }
    }

    /// The bench row's variant: the entry name minus the family prefix.
    pub fn row_variant(self) -> String {
        self.kernel().name()[super::FAMILY.name.len() + 1..].to_string()
    }

    /// The kernel and launch shape a bench row of this variant runs (the block shape and
    /// shared memory do not depend on the matrix).
    pub fn kernel_use(self) -> KernelUse {
        let (_, (bx, by), shared) = self.block_geometry();
        KernelUse::new(self.kernel(), bx * by, shared)
    }

    /// (columns, rows) of the input one block covers, its thread shape and shared bytes.
    fn block_geometry(self) -> ((u32, u32), (u32, u32), u32) {
        match self {
            Variant::V01Naive => (
                (v01_naive::BLOCK_X, v01_naive::BLOCK_Y),
                (v01_naive::BLOCK_X, v01_naive::BLOCK_Y),
                0,
            ),
            Variant::V02SmemTiled => (
                (v02_smem_tiled::TILE, v02_smem_tiled::TILE),
                (v02_smem_tiled::TILE, v02_smem_tiled::BLOCK_ROWS),
                v02_smem_tiled::SHARED_BYTES,
            ),
            Variant::V03Padded => (
                (v03_padded::TILE, v03_padded::TILE),
                (v03_padded::TILE, v03_padded::BLOCK_ROWS),
                v03_padded::SHARED_BYTES,
            ),
            Variant::V04MultiElementVectorized => {
                use v04_multi_element_vectorized as v4;
                (
                    (v4::BLOCK_COLS, v4::BLOCK_ROWS),
                    (v4::BLOCK_X, v4::BLOCK_Y),
                    0,
                )
            }
        }
    }

    /// Whether grid x runs over row blocks rather than column blocks, as the variant file
    /// says (v04: blocks walk down the input first, see its header).
    fn rows_on_x(self) -> bool {
        match self {
            Variant::V04MultiElementVectorized => v04_multi_element_vectorized::ROWS_ON_GRID_X,
            Variant::V01Naive | Variant::V02SmemTiled | Variant::V03Padded => false,
        }
    }

    /// The 2D launch for an `m × n` input: x over column blocks and y over row blocks (x
    /// over row blocks and y over column blocks for v04), y capped at CUDA's limit (the
    /// kernels loop over the rest).
    pub fn launch_config(self, m: u32, n: u32) -> LaunchConfig {
        let ((cols, rows), block, shared) = self.block_geometry();
        let (col_blocks, row_blocks) = (n.div_ceil(cols), m.div_ceil(rows));
        let (gx, gy) = if self.rows_on_x() {
            (row_blocks, col_blocks)
        } else {
            (col_blocks, row_blocks)
        };
        LaunchConfig::grid_2d((gx, gy.min(MAX_GRID_Y)), block, shared)
    }
}

/// Check the shape against the buffers and the kernels' index range. `Ok(None)` for an
/// empty matrix (nothing to launch).
pub(super) fn validate(
    op: &str,
    m: usize,
    n: usize,
    inp: usize,
    out: usize,
) -> Result<Option<(u32, u32)>> {
    let elems = m.checked_mul(n).ok_or_else(|| Error::Shape {
        op: op.into(),
        what: format!("{m} x {n} overflows"),
    })?;
    if inp != elems || out != elems {
        return Err(Error::Shape {
            op: op.into(),
            what: format!(
                "a {m} x {n} transpose needs {elems} input and {elems} output elements, \
                 got {inp} and {out}"
            ),
        });
    }
    if elems == 0 {
        return Ok(None);
    }
    for (what, d) in [("rows (m)", m), ("columns (n)", n)] {
        if d as u64 > MAX_DIM {
            return Err(Error::TooLarge {
                op: op.into(),
                what: what.into(),
                value: d as u64,
                limit: MAX_DIM,
            });
        }
    }
    Ok(Some((m as u32, n as u32)))
}

/// `out = inpᵀ`: `inp` is `m × n` row-major, `out` is `n × m` row-major.
/// Empty matrices (m or n zero): nothing launched.
pub fn transpose(
    gpu: &Gpu,
    v: Variant,
    m: usize,
    n: usize,
    inp: View<'_, f32>,
    out: ViewMut<'_, f32>,
) -> Result<()> {
    let kernel = v.kernel();
    let Some((m, n)) = validate(kernel.name(), m, n, inp.len(), out.len())? else {
        return Ok(());
    };
    let cfg = v.launch_config(m, n);
    // SAFETY: both views hold m·n f32 (checked); the geometry is the one the kernel's index
    // math assumes (its own constants), and every access is guarded by `< m` / `< n`.
    unsafe { gpu.launch(kernel, cfg, (inp, out, m, n)) }
}

#[cfg(test)]
mod unit_tests {
    use super::*;
    use crate::ops::transpose::reference::transpose_ref;

    #[test]
    fn validation() {
        assert_eq!(validate("t", 3, 4, 12, 12).unwrap(), Some((3, 4)));
        assert_eq!(validate("t", 0, 4, 0, 0).unwrap(), None);
        assert!(validate("t", 3, 4, 12, 13).is_err());
        assert!(validate("t", 3, 4, 11, 12).is_err());
        assert!(validate("t", usize::MAX, 2, 0, 0).is_err());
        let big = MAX_DIM as usize + 1;
        assert!(matches!(
            validate("t", 1, big, big, big),
            Err(Error::TooLarge { .. })
        ));
    }

    /// Simulate each kernel's index math on the CPU: every output element written exactly
    /// once with the right input, for awkward shapes and a capped grid.
    fn simulate(v: Variant, m: u32, n: u32, grid_y_cap: u32) -> Vec<u32> {
        let cfg = v.launch_config(m, n);
        let (gx, gy) = (cfg.grid.0, cfg.grid.1.min(grid_y_cap));
        let (bx_n, by_n) = (cfg.block.0, cfg.block.1);
        let mut out = vec![u32::MAX; (m * n) as usize];
        let mut put = |i: u32, j: u32| {
            let o = (j * m + i) as usize;
            assert_eq!(out[o], u32::MAX, "{v:?} {m}x{n}: ({i},{j}) written twice");
            out[o] = i * n + j;
        };
        for bx in 0..gx {
            for by in 0..gy {
                for ty in 0..by_n {
                    for tx in 0..bx_n {
                        match v {
                            Variant::V01Naive => {
                                let j = bx * bx_n + tx;
                                let mut i = by * by_n + ty;
                                while j < n && i < m {
                                    put(i, j);
                                    i += gy * by_n;
                                }
                            }
                            Variant::V02SmemTiled | Variant::V03Padded => {
                                let tile = v03_padded::TILE;
                                let mut t = by;
                                while t < m.div_ceil(tile) {
                                    // Write phase: output row col0 + r, column row0 + tx.
                                    let mut r = ty;
                                    while r < tile {
                                        let (i, j) = (t * tile + tx, bx * tile + r);
                                        if j < n && i < m {
                                            put(i, j);
                                        }
                                        r += by_n;
                                    }
                                    t += gy;
                                }
                            }
                            Variant::V04MultiElementVectorized => {
                                // Rows on x, columns on y (with the y loop).
                                let vec = v04_multi_element_vectorized::VEC;
                                let i0 = (bx * by_n + ty) * vec;
                                let mut j0 = (by * bx_n + tx) * vec;
                                while i0 < m && j0 < n {
                                    for r in 0..vec {
                                        for c in 0..vec {
                                            if i0 + r < m && j0 + c < n {
                                                put(i0 + r, j0 + c);
                                            }
                                        }
                                    }
                                    j0 += gy * bx_n * vec;
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn kernels_index_math_covers_every_element_once() {
        for v in LADDER {
            for (m, n) in [
                (1, 1),
                (1, 70),
                (70, 1),
                (33, 65),
                (4, 8),
                (131, 37),
                (260, 132),
                (300, 8),
                (513, 4),
                (2100, 70),
            ] {
                for cap in [u32::MAX, 1, 2] {
                    let out = simulate(v, m, n, cap);
                    let want: Vec<u32> = transpose_ref(
                        &(0..m * n).map(|x| x as f32).collect::<Vec<_>>(),
                        m as usize,
                        n as usize,
                    )
                    .iter()
                    .map(|&x| x as u32)
                    .collect();
                    assert_eq!(out, want, "{v:?} {m}x{n} cap {cap}");
                }
            }
        }
    }

    #[test]
    fn launch_config_caps_grid_y() {
        let cfg = Variant::V01Naive.launch_config(1 << 30, 1);
        assert_eq!(cfg.grid.1, MAX_GRID_Y);
        let cfg = Variant::V04MultiElementVectorized.launch_config(8192, 8192);
        assert_eq!(cfg.grid, (8192 / 128, 8192 / 32, 1));
        // v04's y runs over column blocks: capped there.
        let cfg = Variant::V04MultiElementVectorized.launch_config(4, 1 << 30);
        assert_eq!(cfg.grid, (1, MAX_GRID_Y, 1));
        assert_eq!(cfg.block, (8, 32, 1));
        assert_eq!(
            Variant::V03Padded.launch_config(33, 65).shared_bytes,
            32 * 33 * 4
        );
    }

    #[test]
    fn kernel_uses_match_the_launch() {
        for v in LADDER {
            let cfg = v.launch_config(1000, 1000);
            let u = v.kernel_use();
            assert_eq!(u.kernel, v.kernel().id());
            assert_eq!(u.block_threads, cfg.block.0 * cfg.block.1 * cfg.block.2);
            assert_eq!(u.shared_bytes, cfg.shared_bytes);
        }
    }

    #[test]
    fn kernels_are_in_the_ptx_and_named_after_the_family() {
        for v in LADDER {
            let name = v.kernel().name();
            assert!(
                name.starts_with(&format!("{}_v", super::super::FAMILY.name)),
                "{name}"
            );
            assert!(crate::ptx::built()[0].1.contains(&format!(".entry {name}(")));
        }
    }
}
