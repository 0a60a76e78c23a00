//! Family `transpose`: `out = inᵀ` for a row-major f32 matrix, M×N in, N×M out.
//!
//! Zero FLOPs: every element is read once and written once, so the only question is how
//! well both sides coalesce. The ladder goes from a version that writes with a stride of M
//! floats, through a shared-memory tile (and its bank conflicts), to one where each thread
//! moves a 4×4 block with 16-byte loads and stores.
//!
//! Shapes: `m` rows and `n` columns, each below [`MAX_DIM`] so that row and column indices
//! (and the tile counts) fit in 32 bits; element offsets are computed in 64 bits, so
//! matrices past 2^32 elements work. Grids are 2D; the y dimension is capped at
//! [`MAX_GRID_Y`] and kernels loop over the remaining tile rows (grid-stride in y; v04, whose
//! grid y runs over column blocks, loops over the remaining tile columns).

pub mod v01_naive;
pub mod v02_smem_tiled;
pub mod v03_padded;
pub mod v04_multi_element_vectorized;

/// Largest row or column count a transpose kernel accepts (indices stay 32-bit).
pub const MAX_DIM: u64 = 1 << 30;
/// CUDA's limit on `gridDim.y`; taller matrices are covered by the kernels' y loop.
pub const MAX_GRID_Y: u32 = 65_535;
