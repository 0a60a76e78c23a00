//! Tensor maps for TMA (`cuTensorMapEncodeTiled`) and where kernels find them.
//!
//! cust 0.3 speaks the CUDA 11.4 driver API, which has no tensor maps (CUDA 12.0): the encoding
//! call comes from [`crate::cuda12`], looked up at run time, so only the TMA steps report a
//! driver too old for them.
//!
//! A map is encoded on the host and copied to a small device allocation that [`Gpu`] keeps,
//! keyed by everything the encoding depends on: a kernel takes it as `*const TensorMap`.
//! The same (address, shape, box) always gives the same map, so a key can be reused safely
//! even after the buffer it described was freed and another took its place.

use rooflab_kernels::tensor_map::{TENSOR_MAP_BYTES, TensorMap};
use std::ffi::c_void;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, Param, View};

/// `CUtensorMapDataType`: CU_TENSOR_MAP_DATA_TYPE_BFLOAT16.
const DATA_TYPE_BFLOAT16: i32 = 9;
/// `CUtensorMapInterleave`: NONE.
const INTERLEAVE_NONE: i32 = 0;
/// `CUtensorMapSwizzle`: 128B, the layout `wgmma`'s descriptors read in swizzle mode 1.
const SWIZZLE_128B: i32 = 3;
/// `CUtensorMapL2promotion`: 256B (fetch whole 256-byte L2 sectors pairs; CUTLASS's choice).
const L2_PROMOTION_256B: i32 = 3;
/// `CUtensorMapFloatOOBfill`: NONE, i.e. zeros outside the tensor.
const OOB_FILL_ZEROS: i32 = 0;

/// A bf16 matrix the copy engine reads in boxes: `rows × cols` row-major (cols contiguous),
/// boxes of `box_rows × box_cols` written into shared memory in the 128-byte swizzle. With
/// `planes` set, that many such matrices one after another (a 3-D tensor, attention's
/// `[B·H, S, D]`), each box inside one plane: rows past a plane's last are zero-filled,
/// never read from the next plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bf16Tiles {
    pub addr: u64,
    pub rows: u64,
    pub cols: u64,
    pub box_rows: u32,
    pub box_cols: u32,
    /// `None`: a 2-D matrix. `Some(p)`: a 3-D tensor of `p` planes, rank 3 even when `p` is
    /// 1, since the kernel's copies (`cp.async.bulk.tensor.3d`) must match the map's rank
    /// (a 3-D copy through a 2-D map is an illegal instruction).
    pub planes: Option<u64>,
    /// Planes a box spans (1 but for decode v10's 16 page slots of one KV head).
    pub box_planes: u32,
}

impl Bf16Tiles {
    /// The map for `view` as `rows × cols`, checked against what TMA accepts (the messages
    /// name `op` and the fix).
    pub fn new(
        op: &str,
        name: &str,
        view: &View<'_, u16>,
        rows: usize,
        cols: usize,
        box_rows: u32,
        box_cols: u32,
    ) -> Result<Bf16Tiles> {
        let bad = |what: String| Error::Shape {
            op: op.into(),
            what,
        };
        if !view.device_addr().is_multiple_of(16) {
            return Err(bad(format!(
                "{name} starts at {:#x}, not 16-byte aligned, which the tensor copy engine \
                 (TMA) needs; pass a 16-byte-aligned {name}",
                view.device_addr()
            )));
        }
        if !(cols * 2).is_multiple_of(16) {
            return Err(bad(format!(
                "{name}'s rows are {cols} bf16 = {} bytes, not a multiple of 16, which the tensor \
                 copy engine (TMA) needs for its row stride: K must be a multiple of 8",
                cols * 2
            )));
        }
        if rows as u64 > u32::MAX as u64 || cols as u64 > u32::MAX as u64 {
            return Err(Error::TooLarge {
                op: op.into(),
                what: format!("{name}'s rows or columns"),
                value: rows.max(cols) as u64,
                limit: u32::MAX as u64,
            });
        }
        if box_rows == 0 || box_rows > 256 || box_cols == 0 || box_cols * 2 > 128 {
            return Err(Error::Other(format!(
                "{op}: a TMA box of {box_rows}×{box_cols} bf16 is outside what the copy engine \
                 takes with the 128-byte swizzle (≤ 256 rows, ≤ 128 bytes a row)"
            )));
        }
        Ok(Bf16Tiles {
            addr: view.device_addr(),
            rows: rows as u64,
            cols: cols as u64,
            box_rows,
            box_cols,
            planes: None,
            box_planes: 1,
        })
    }

    /// The same boxes over `planes` matrices of `rows × cols` laid one after another (a box
    /// per plane, coordinate 2 the plane), refused past what the copy engine indexes.
    pub fn in_planes(self, op: &str, planes: usize) -> Result<Bf16Tiles> {
        if planes as u64 > u32::MAX as u64 {
            return Err(Error::TooLarge {
                op: op.into(),
                what: "planes of the tensor map".into(),
                value: planes as u64,
                limit: u32::MAX as u64,
            });
        }
        // cuTensorMapEncodeTiled takes strides below 2^40 bytes.
        let plane_bytes = self.rows * self.cols * 2;
        if plane_bytes >= 1 << 40 {
            return Err(Error::TooLarge {
                op: op.into(),
                what: "bytes of one plane of the tensor map".into(),
                value: plane_bytes,
                limit: (1 << 40) - 1,
            });
        }
        Ok(Bf16Tiles {
            planes: Some(planes.max(1) as u64),
            ..self
        })
    }

    /// The same map with boxes `n` planes deep (the planes land in consecutive 128-byte
    /// swizzled rows of shared memory), refused past what the copy engine takes.
    pub fn with_box_planes(self, op: &str, n: u32) -> Result<Bf16Tiles> {
        if self.planes.is_none() || n == 0 || n > 256 {
            return Err(Error::Other(format!(
                "{op}: a TMA box {n} planes deep over {self:?} is outside what the copy engine \
                 takes (a 3-D map, 1 to 256 planes)"
            )));
        }
        Ok(Bf16Tiles { box_planes: n, ..self })
    }
}

/// The device address of an encoded tensor map, as a kernel's `*const TensorMap`.
#[derive(Clone, Copy, Debug)]
pub struct TensorMapRef(u64);

impl Param<*const TensorMap> for TensorMapRef {
    fn bits(&self) -> u64 {
        self.0
    }
}

/// No map (a null pointer): for an entry that takes maps only some of its steps read.
impl Param<*const TensorMap> for Option<TensorMapRef> {
    fn bits(&self) -> u64 {
        self.map_or(0, |m| m.0)
    }
}

/// Maps kept before the cache is emptied (after a synchronization: kernels in flight may
/// still read them).
const MAX_MAPS: usize = 4096;

impl Bf16Tiles {
    /// Encode the map on the host (no device memory involved).
    pub fn encode(self) -> Result<TensorMap> {
        let f = crate::cuda12::encode_tiled()?;
        let t = self;
        let mut map = TensorMap([0; 16]);
        // Rank 3 (the plane last) when there are planes; the arrays are read up to the rank.
        let rank = if t.planes.is_some() { 3 } else { 2 };
        let dims = [t.cols, t.rows, t.planes.unwrap_or(1)];
        let strides = [t.cols * 2, t.rows * t.cols * 2];
        let boxes = [t.box_cols, t.box_rows, t.box_planes];
        let elem_strides = [1u32, 1, 1];
        // SAFETY: every pointer is to a live local array at least as long as rank or rank - 1
        // asks for; `map` is 64-byte aligned and 128 bytes.
        let code = unsafe {
            f(
                &mut map,
                DATA_TYPE_BFLOAT16,
                rank,
                t.addr as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                elem_strides.as_ptr(),
                INTERLEAVE_NONE,
                SWIZZLE_128B,
                L2_PROMOTION_256B,
                OOB_FILL_ZEROS,
            )
        };
        if code != 0 {
            return Err(Error::Other(format!(
                "cuTensorMapEncodeTiled refused {t:?}: CUDA error {code}"
            )));
        }
        Ok(map)
    }

    fn key(self) -> [u64; 7] {
        [
            self.addr,
            self.rows,
            self.cols,
            self.box_rows as u64,
            self.box_cols as u64,
            // 0 for a 2-D map: a 3-D map of one plane is a different map.
            self.planes.unwrap_or(0),
            self.box_planes as u64,
        ]
    }
}

impl Gpu {
    /// The device address of the tensor map for `t`, encoded and uploaded on first use.
    pub fn tensor_map(&self, t: Bf16Tiles) -> Result<TensorMapRef> {
        let mut cache = self.tensor_maps.borrow_mut();
        if let Some(a) = cache.get(&t.key()) {
            return Ok(TensorMapRef(a.view().device_addr()));
        }
        if cache.len() >= MAX_MAPS {
            self.sync()?;
            cache.clear();
        }
        let map = t.encode()?;
        // cuMemAlloc gives 256-byte-aligned memory: the 64 bytes TMA needs.
        let dev = self.upload(&map.0)?;
        debug_assert_eq!(dev.len() * 8, TENSOR_MAP_BYTES);
        let addr = dev.view().device_addr();
        cache.insert(t.key(), dev);
        Ok(TensorMapRef(addr))
    }
}
