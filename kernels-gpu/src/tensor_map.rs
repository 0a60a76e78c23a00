//! The tensor map (`CUtensorMap`) a TMA copy reads its tensor's shape from: 128 opaque bytes,
//! 64-byte aligned, encoded on the host by `cuTensorMapEncodeTiled` (`host/src/tma.rs`) and
//! kept in global memory, where kernels take it by pointer (`*const TensorMap`).

/// An encoded `CUtensorMap` (opaque to everything but the driver and the copy engine).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TensorMap(pub [u64; 16]);

/// Bytes of a tensor map.
pub const TENSOR_MAP_BYTES: usize = core::mem::size_of::<TensorMap>();
const _: () = assert!(TENSOR_MAP_BYTES == 128);
