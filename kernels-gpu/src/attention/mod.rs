//! Family `attention`: prefill attention, `O = softmax(Q·Kᵀ·D^-½ [+ causal mask])·V`.
//!
//! Q, K, V and O are `[B, H, S, D]` bf16 (the layout of PyTorch's
//! `scaled_dot_product_attention`), row-major, D contiguous: head `bh = b·H + h` starts at
//! element `bh·S·D`. Arithmetic and the softmax statistics are f32. With `causal != 0` query
//! `i` attends to keys `j <= i` only (the masked scores are -inf before the softmax).
//! Head dims: `HEAD_DIMS`; the host refuses any other.
//!
//! The ladder: v01 writes the B·H·S² scores to DRAM and reads them back (three kernels);
//! v02 keeps them on chip with an online softmax (one kernel, no tensor cores).

pub mod v01_naive;
pub mod v02_fused_simt;

/// The head dims the kernels are built for.
pub const HEAD_DIMS: [u32; 2] = [64, 128];

/// Largest S·D (elements of one head), B·H (heads) the kernels index: u32 on the host side
/// of the checks, 64-bit offsets inside.
pub const MAX_SEQ: u64 = (1 << 31) - 1;
