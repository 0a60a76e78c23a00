//! Family `transpose` on the host: `out = inᵀ`, f32, row-major `m × n` in, `n × m` out.
//!
//! Safe launch wrappers (buffer lengths checked against the shape, nothing launched for an
//! empty matrix, dimensions past the kernels' 32-bit index range refused), the CPU reference,
//! the cost model, the bench cases and the correctness checks for every variant in
//! `kernels-gpu/src/transpose/`. Launch geometry comes from the variant files' constants.
//! A transpose only moves bits, so every check demands exact equality.

use rooflab_kernels::transpose::{
    MAX_DIM, MAX_GRID_Y, v01_naive, v02_smem_tiled, v03_padded, v04_multi_element_vectorized,
};

use crate::bench::{Case, Workload, rotation_sets};
use crate::check::{compare_f32, random_f32, rng};
use crate::cost::{Bytes, Cost, Flops};
use crate::error::{Error, Result};
use crate::gpu::{DeviceArray, Gpu, LaunchConfig, View, ViewMut};
use crate::kernel_args;
use crate::testing::{GpuTest, expect_error};

pub const FAMILY: &str = "transpose";

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
    pub fn stem(self) -> &'static str {
        match self {
            Variant::V01Naive => "v01_naive",
            Variant::V02SmemTiled => "v02_smem_tiled",
            Variant::V03Padded => "v03_padded",
            Variant::V04MultiElementVectorized => "v04_multi_element_vectorized",
        }
    }

    /// The kernel entry point, e.g. `transpose_v03_padded`.
    pub fn entry(self) -> &'static str {
        match self {
            Variant::V01Naive => "transpose_v01_naive",
            Variant::V02SmemTiled => "transpose_v02_smem_tiled",
            Variant::V03Padded => "transpose_v03_padded",
            Variant::V04MultiElementVectorized => "transpose_v04_multi_element_vectorized",
        }
    }

    /// The bench row's variant: the entry minus the family prefix.
    pub fn row_variant(self) -> &'static str {
        &self.entry()[FAMILY.len() + 1..]
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

    /// Whether grid x runs over row blocks (v04: blocks walk down the input first, see its
    /// header) rather than column blocks.
    fn rows_on_x(self) -> bool {
        self == Variant::V04MultiElementVectorized
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
fn validate(op: &str, m: usize, n: usize, inp: usize, out: usize) -> Result<Option<(u32, u32)>> {
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
    let op = v.entry();
    let Some((m, n)) = validate(op, m, n, inp.len, out.len)? else {
        return Ok(());
    };
    let cfg = v.launch_config(m, n);
    let (a, b) = (inp.addr, out.addr);
    // SAFETY: both views are live and hold m·n f32 (checked); arguments match the entry
    // `(inp: *const f32, out: *mut f32, m: u32, n: u32)`.
    unsafe { gpu.launch(op, cfg, &kernel_args![a, b, m, n]) }
}

// ---------------------------------------------------------------- CPU reference

/// `inᵀ` for a row-major `m × n` matrix.
pub fn transpose_ref(inp: &[f32], m: usize, n: usize) -> Vec<f32> {
    assert_eq!(inp.len(), m * n);
    let mut out = vec![0.0; m * n];
    // Blocked so the reference of a 8192² matrix takes a fraction of a second.
    const B: usize = 64;
    for i0 in (0..m).step_by(B) {
        for j0 in (0..n).step_by(B) {
            for i in i0..(i0 + B).min(m) {
                for j in j0..(j0 + B).min(n) {
                    out[j * m + i] = inp[i * n + j];
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------- cost model

/// No FLOPs; `m·n` f32 read and `m·n` written.
pub fn cost(m: u64, n: u64) -> Cost {
    Cost::new(Flops(0), Bytes::of::<f32>(2 * m * n))
}

/// v01's writes: one 32-byte sector per 4-byte element at worst (when the output's rows are
/// far apart and L2 cannot merge neighbouring warps' partial sectors), i.e. 8× the writes.
pub fn modelled_bytes(v: Variant, m: u64, n: u64) -> Bytes {
    match v {
        Variant::V01Naive => Bytes::of::<f32>(m * n) + Bytes::of::<f32>(m * n) * 8,
        _ => cost(m, n).min_bytes,
    }
}

// ---------------------------------------------------------------- checks

/// One check: an `m × n` transpose with the input starting `in_off` elements and the output
/// `out_off` elements into their allocations (so 16-byte alignment varies), fresh random
/// data, output poisoned, every element compared exactly; the elements around the output
/// window must be untouched.
pub fn check(
    gpu: &Gpu,
    v: Variant,
    m: usize,
    n: usize,
    in_off: usize,
    out_off: usize,
    seed: u64,
) -> Result<()> {
    let mut r = rng(seed);
    let x = random_f32(&mut r, m * n + in_off, -1.0, 1.0);
    let guard = random_f32(&mut r, out_off, -1.0, 1.0);
    let dx = gpu.upload(&x)?;
    let mut dy = gpu.alloc::<f32>(m * n + out_off)?;
    if out_off > 0 {
        let mut init = guard.clone();
        init.resize(m * n + out_off, 0.0);
        dy.copy_from_host(&init)?;
    }
    gpu.poison(dy.view_range_mut(out_off..out_off + m * n))?;
    transpose(
        gpu,
        v,
        m,
        n,
        dx.view_range(in_off..in_off + m * n),
        dy.view_range_mut(out_off..out_off + m * n),
    )?;
    gpu.sync()?;
    let got = dy.to_host()?;
    let what = format!(
        "{} {m}x{n} offsets=({in_off},{out_off}) seed={seed}",
        v.entry()
    );
    compare_f32(
        &format!("{what} (before window)"),
        &got[..out_off],
        &guard,
        0.0,
        0.0,
    )
    .map_err(Error::Mismatch)?;
    let want = transpose_ref(&x[in_off..], m, n);
    // Bit-exact: compare_f32 with zero tolerance also fails any NaN (the poison).
    compare_f32(&what, &got[out_off..], &want, 0.0, 0.0).map_err(Error::Mismatch)
}

/// Shapes every variant is checked at: 1×1, a row, a column, odd and prime shapes that are
/// no multiple of any tile, a tall one that needs the y loop only where grids are capped,
/// a wide one past 65535 column blocks (v04's y loop over columns), a large awkward one and
/// the bench shape.
pub const TEST_SHAPES: [(usize, usize); 13] = [
    (1, 1),
    (1, 1000),
    (1000, 1),
    (33, 65),
    (4, 4),
    (31, 37),
    (127, 257),
    (1021, 1031),
    (7, 100_003),
    (100_003, 5),
    (3, 2_100_007),
    (4097, 8191),
    (8192, 8192),
];

/// (input offset, output offset) in elements, run at the smaller shapes: both aligned, both
/// off by one element (no 16-byte access possible), only the output off.
pub const TEST_OFFSETS: [(usize, usize); 3] = [(0, 0), (1, 1), (0, 3)];

pub fn check_variant(gpu: &Gpu, v: Variant, seed: u64) -> Result<()> {
    for (k, &(m, n)) in crate::testing::matrices(&TEST_SHAPES).iter().enumerate() {
        let offsets: &[(usize, usize)] = if m * n <= 1 << 22 {
            &TEST_OFFSETS
        } else {
            &TEST_OFFSETS[..1]
        };
        for (l, &(a, b)) in offsets.iter().enumerate() {
            check(gpu, v, m, n, a, b, seed.wrapping_add((k * 7 + l) as u64))?;
        }
    }
    // Multiples of 4 with aligned buffers: v04's all-vector path at an edge-free and an
    // edge-cut shape (rows not a multiple of the block's 128).
    for (m, n) in [(128, 32), (260, 132), (4, 8)] {
        check(gpu, v, m, n, 0, 0, seed ^ 0x5eed)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- bench

/// Default bench shape (m, n): 8192² (256 MiB each way) or 2048² rotated in quick mode.
pub fn default_shape(quick: bool) -> (u64, u64) {
    if quick { (2048, 2048) } else { (8192, 8192) }
}

struct TransposeWork {
    v: Variant,
    m: usize,
    n: usize,
    /// Rotating (input, output) sets.
    sets: Vec<(DeviceArray<f32>, DeviceArray<f32>)>,
    seed: u64,
}

impl Workload for TransposeWork {
    fn check(&mut self, gpu: &Gpu) -> Result<()> {
        check(gpu, self.v, self.m, self.n, 0, 0, self.seed)
    }
    fn launch(&mut self, gpu: &Gpu, i: usize) -> Result<()> {
        let k = i % self.sets.len();
        let (x, y) = &mut self.sets[k];
        transpose(gpu, self.v, self.m, self.n, x.view(), y.view_mut())
    }
}

/// The family's bench cases. `size` overrides the square edge.
pub fn cases(quick: bool, size: Option<u64>, seed: u64) -> Vec<Case> {
    let (m, n) = match size {
        Some(s) => (s, s),
        None => default_shape(quick),
    };
    LADDER
        .iter()
        .map(|&v| {
            let cost = cost(m, n).with_modelled(modelled_bytes(v, m, n));
            Case {
                family: FAMILY,
                variant: v.row_variant(),
                ladder: "transpose",
                shape: format!("{m}x{n}"),
                note: String::new(),
                cost,
                torch: None,
                prepare: Box::new(move |gpu: &Gpu| {
                    let mut r = rng(seed);
                    let len = (m * n) as usize;
                    let sets = (0..rotation_sets(cost.min_bytes.0, gpu.info.l2_bytes))
                        .map(|_| {
                            let x = gpu.upload(&random_f32(&mut r, len, -1.0, 1.0))?;
                            let y = gpu.alloc::<f32>(len)?;
                            Ok((x, y))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Ok(Box::new(TransposeWork {
                        v,
                        m: m as usize,
                        n: n as usize,
                        sets,
                        seed,
                    }) as Box<dyn Workload>)
                }),
            }
        })
        .collect()
}

pub fn tests(seed: u64) -> Vec<GpuTest> {
    let mut t = Vec::new();
    for v in LADDER {
        t.push(GpuTest::new(
            format!("{}_matches_cpu", v.entry()),
            move |gpu| check_variant(gpu, v, seed),
        ));
    }
    t.push(GpuTest::new(
        "transpose_mismatched_lengths_are_refused_before_launch",
        |gpu| {
            let a = gpu.upload(&[1.0f32; 12])?;
            let mut b = gpu.alloc::<f32>(13)?;
            let mut c = gpu.alloc::<f32>(12)?;
            for v in LADDER {
                // Output too long, input too short for the shape, shape product wrong.
                expect_error(
                    transpose(gpu, v, 3, 4, a.view(), b.view_mut()),
                    &["bad input", "3 x 4", "12", "13"],
                )?;
                expect_error(
                    transpose(gpu, v, 4, 4, a.view(), c.view_mut()),
                    &["bad input", "4 x 4", "16"],
                )?;
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "transpose_zero_size_launches_nothing",
        |gpu| {
            let a = gpu.alloc::<f32>(0)?;
            let mut c = gpu.upload(&[7.0f32; 8])?;
            for v in LADDER {
                for (m, n) in [(0, 0), (0, 5), (5, 0)] {
                    transpose(gpu, v, m, n, a.view(), c.view_range_mut(4..4))?;
                }
            }
            gpu.sync()?;
            if c.to_host()? != vec![7.0f32; 8] {
                return Err(Error::Mismatch("an empty transpose wrote something".into()));
            }
            Ok(())
        },
    ));
    t.push(GpuTest::new(
        "transpose_dimension_past_32_bit_index_is_refused",
        |gpu| {
            // A 1 × 2^31 matrix cannot be allocated cheaply; the limit is checked from the shape
            // and the views' lengths alone, so fake-length views of an empty array suffice.
            let a = gpu.alloc::<f32>(0)?;
            let mut b = gpu.alloc::<f32>(0)?;
            let big = (MAX_DIM + 1) as usize;
            let r = validate("transpose_v04_multi_element_vectorized", 1, big, big, big);
            expect_error(r, &["columns (n)", "limit"])?;
            let r = validate("transpose_v01_naive", big, 1, big, big);
            expect_error(r, &["rows (m)", "limit"])?;
            // And through the public entry: the length check comes first for real views.
            expect_error(
                transpose(gpu, Variant::V01Naive, 1, big, a.view(), b.view_mut()),
                &["bad input"],
            )
        },
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_small() {
        // [[1 2 3] [4 5 6]] -> [[1 4] [2 5] [3 6]]
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(transpose_ref(&x, 2, 3), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        // Twice is the identity, across block edges of the blocked reference.
        let x: Vec<f32> = (0..130 * 67).map(|i| i as f32).collect();
        assert_eq!(transpose_ref(&transpose_ref(&x, 130, 67), 67, 130), x);
    }

    #[test]
    fn cost_model_hand_computed() {
        assert_eq!(
            cost(8192, 8192),
            Cost::new(Flops(0), Bytes(2 * 4 * 8192 * 8192))
        );
        assert_eq!(cost(3, 5).min_bytes, Bytes(120));
        assert_eq!(modelled_bytes(Variant::V01Naive, 3, 5), Bytes(60 + 480));
        assert_eq!(modelled_bytes(Variant::V03Padded, 3, 5), Bytes(120));
    }

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
    fn names_follow_the_stem() {
        for v in LADDER {
            assert_eq!(v.entry(), format!("transpose_{}", v.stem()));
            assert!(
                crate::ptx::BUILT[0]
                    .1
                    .contains(&format!(".entry {}(", v.entry()))
            );
        }
        let cases = cases(true, None, 1);
        for v in LADDER {
            assert!(cases.iter().any(|c| c.variant == v.row_variant()));
        }
    }
}
