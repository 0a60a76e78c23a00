//! Family `gemm` (being written).
