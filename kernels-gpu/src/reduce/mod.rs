//! Family `reduce`: the sum of an f32 array into one f32.
//!
//! One FLOP per element and one read of each: a read-only, DRAM-bound op once the kernel is
//! right. The ladder is the classic one: a global atomic per element; a shared-memory tree
//! with divergent interleaved addressing; the same tree indexed by a stride (no divergence,
//! bank conflicts); sequential addressing; an add during the load; warp shuffles for the last
//! steps; and a grid-stride loop with 16-byte loads whose block results meet either in one
//! atomic per block or, deterministically, in a second launch.
//!
//! Lengths are 64-bit. v01 and v07's atomic mode add into `*out`, which the host zeroes
//! first. v02–v06 write one partial sum per block and the host launches them again on the
//! partials until a single block writes `*out`; v07's deterministic mode writes `*out` once
//! from its second launch.

pub mod v01_atomic;
pub mod v02_tree_divergent;
pub mod v03_strided_index;
pub mod v04_tree_sequential;
pub mod v05_first_add_on_load;
pub mod v06_warp_shuffle;
pub mod v07_multi_element;
