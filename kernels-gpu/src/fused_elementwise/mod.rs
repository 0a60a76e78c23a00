//! Family `fused_elementwise` (being written).
