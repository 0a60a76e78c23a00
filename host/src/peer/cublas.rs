//! cuBLAS as the GEMM families' peer (SGEMM for `gemm`, GemmEx in BF16 for `bf16_gemm`),
//! loaded at run time.
//!
//! libcublas is opened with `dlopen` (through `libloading`) so that rooflab neither links
//! against it nor needs a CUDA toolkit at build time; a machine without it reports the peer
//! as unavailable. The names tried are the sonames of CUDA 13, 12 and 11 and the unversioned
//! one (found through `LD_LIBRARY_PATH` and the loader cache), then the same in
//! `/usr/local/cuda/lib64`. cuBLAS uses the calling thread's current context, which is the
//! device's primary context that `Gpu` retains, so our `View` addresses are valid for it;
//! its stream is set to the `Gpu`'s stream so the calls are ordered with our launches.

use std::ffi::{c_int, c_void};

use libloading::Library;

use crate::error::{Error, Result};
use crate::gpu::{Gpu, View, ViewMut};

/// Library names tried, in order.
pub const CANDIDATES: &[&str] = &[
    "libcublas.so.13",
    "libcublas.so.12",
    "libcublas.so.11",
    "libcublas.so",
    "/usr/local/cuda/lib64/libcublas.so.13",
    "/usr/local/cuda/lib64/libcublas.so.12",
    "/usr/local/cuda/lib64/libcublas.so",
];

type Handle = *mut c_void;
type CreateFn = unsafe extern "C" fn(*mut Handle) -> c_int;
type DestroyFn = unsafe extern "C" fn(Handle) -> c_int;
type SetStreamFn = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type SetMathModeFn = unsafe extern "C" fn(Handle, c_int) -> c_int;
#[allow(clippy::upper_case_acronyms)]
type SgemmFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f32,
    u64,
    c_int,
    u64,
    c_int,
    *const f32,
    u64,
    c_int,
) -> c_int;

/// `cublasGemmEx`: types and compute type given as enums (cuBLAS v2 API).
#[allow(clippy::upper_case_acronyms)]
type GemmExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    u64,
    c_int,
    c_int,
    u64,
    c_int,
    c_int,
    *const c_void,
    u64,
    c_int,
    c_int,
    c_int,
    c_int,
) -> c_int;

/// `CUBLAS_OP_N`, `CUBLAS_OP_T`.
const OP_N: c_int = 0;
const OP_T: c_int = 1;
/// `CUDA_R_16BF` (library_types.h).
const CUDA_R_16BF: c_int = 14;
/// `CUBLAS_COMPUTE_32F`: f32 accumulation (BF16 inputs then run on the tensor cores).
const COMPUTE_32F: c_int = 68;
/// `CUBLAS_GEMM_DEFAULT`: cuBLAS picks the kernel (its heuristics, as PyTorch's linear).
const GEMM_DEFAULT: c_int = -1;
/// `CUBLAS_DEFAULT_MATH`: plain fp32 FMA for SGEMM, no TF32 tensor cores.
const DEFAULT_MATH: c_int = 0;

/// A cuBLAS handle and the entry points rooflab uses.
pub struct Cublas {
    handle: Handle,
    sgemm: SgemmFn,
    gemm_ex: GemmExFn,
    set_stream: SetStreamFn,
    destroy: DestroyFn,
    /// Which file was opened.
    pub path: String,
    // Last: the functions above point into it.
    _lib: Library,
}

impl Cublas {
    /// Open libcublas and create a handle in the current context (create the `Gpu` first).
    /// `Err` carries why, for the report's peer column.
    pub fn load() -> std::result::Result<Cublas, String> {
        let mut last = String::new();
        for &name in CANDIDATES {
            // SAFETY: loading libcublas runs its initializers, which have no preconditions.
            match unsafe { Library::new(name) } {
                Ok(lib) => return Self::from_library(lib, name),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!(
            "cuBLAS not found (tried {}; last error: {last}). Put its folder on LD_LIBRARY_PATH",
            CANDIDATES.join(", ")
        ))
    }

    fn from_library(lib: Library, name: &str) -> std::result::Result<Cublas, String> {
        // SAFETY: the symbol types match cuBLAS's C declarations (cublas_api.h, v2 API).
        unsafe {
            let sym = |s: &str| format!("{name} lacks {s}");
            let create: CreateFn = *lib
                .get(b"cublasCreate_v2\0")
                .map_err(|_| sym("cublasCreate_v2"))?;
            let destroy: DestroyFn = *lib
                .get(b"cublasDestroy_v2\0")
                .map_err(|_| sym("cublasDestroy_v2"))?;
            let set_stream: SetStreamFn = *lib
                .get(b"cublasSetStream_v2\0")
                .map_err(|_| sym("cublasSetStream_v2"))?;
            let set_math: SetMathModeFn = *lib
                .get(b"cublasSetMathMode\0")
                .map_err(|_| sym("cublasSetMathMode"))?;
            let sgemm: SgemmFn = *lib
                .get(b"cublasSgemm_v2\0")
                .map_err(|_| sym("cublasSgemm_v2"))?;
            let gemm_ex: GemmExFn = *lib
                .get(b"cublasGemmEx\0")
                .map_err(|_| sym("cublasGemmEx"))?;
            let mut handle = std::ptr::null_mut();
            let s = create(&mut handle);
            if s != 0 {
                return Err(format!("cublasCreate failed with status {s}"));
            }
            let s = set_math(handle, DEFAULT_MATH);
            if s != 0 {
                destroy(handle);
                return Err(format!("cublasSetMathMode failed with status {s}"));
            }
            Ok(Cublas {
                handle,
                sgemm,
                gemm_ex,
                set_stream,
                destroy,
                path: name.into(),
                _lib: lib,
            })
        }
    }

    /// Row-major `C = alpha·A·B + beta·C` (A M×K, B K×N, C M×N) on `gpu`'s stream.
    /// cuBLAS is column-major: a row-major C is a column-major Cᵀ = Bᵀ·Aᵀ, so this calls
    /// `sgemm(N, N, n, m, k, B (ld n), A (ld k), C (ld n))`.
    #[allow(clippy::too_many_arguments)]
    pub fn sgemm_row_major(
        &self,
        gpu: &Gpu,
        m: usize,
        n: usize,
        k: usize,
        alpha: f32,
        a: View<'_, f32>,
        b: View<'_, f32>,
        beta: f32,
        c: ViewMut<'_, f32>,
    ) -> Result<()> {
        let op = "cublasSgemm";
        if a.len() != m * k || b.len() != k * n || c.len() != m * n {
            return Err(Error::Shape {
                op: op.into(),
                what: format!(
                    "A has {}, B {}, C {} elements for M={m} N={n} K={k}",
                    a.len(),
                    b.len(),
                    c.len()
                ),
            });
        }
        let dim = |v: usize| -> Result<c_int> {
            c_int::try_from(v).map_err(|_| Error::TooLarge {
                op: op.into(),
                what: "a matrix dimension".into(),
                value: v as u64,
                limit: c_int::MAX as u64,
            })
        };
        let (mi, ni, ki) = (dim(m)?, dim(n)?, dim(k)?);
        if m == 0 || n == 0 {
            return Ok(());
        }
        // SAFETY: the handle is live; the stream is the Gpu's, alive as long as `gpu`; the
        // views are live device arrays of the checked sizes in the current (primary) context.
        let s = unsafe {
            let s = (self.set_stream)(self.handle, gpu.raw_stream());
            if s != 0 {
                s
            } else {
                (self.sgemm)(
                    self.handle,
                    OP_N,
                    OP_N,
                    ni,
                    mi,
                    ki,
                    &alpha,
                    b.device_addr(),
                    ni.max(1),
                    a.device_addr(),
                    ki.max(1),
                    &beta,
                    c.device_addr(),
                    ni.max(1),
                )
            }
        };
        if s != 0 {
            return Err(Error::Other(format!("cublasSgemm failed with status {s}")));
        }
        Ok(())
    }
}

impl Cublas {
    /// `y = x·Wᵀ` as `torch.nn.functional.linear` does it (x M×K, W N×K, y M×N, all
    /// row-major bf16, f32 accumulation) on `gpu`'s stream. Column-major, row-major y is
    /// yᵀ (N×M, ld N) = W·xᵀ: W row-major is a K×N column-major matrix used transposed, x
    /// row-major a K×M one used as is: `GemmEx(T, N, n, m, k, W (ld k), x (ld k), y (ld n))`,
    /// cuBLAS's "TN" GEMM.
    #[allow(clippy::too_many_arguments)]
    pub fn linear_bf16(
        &self,
        gpu: &Gpu,
        m: usize,
        n: usize,
        k: usize,
        x: View<'_, u16>,
        w: View<'_, u16>,
        y: ViewMut<'_, u16>,
    ) -> Result<()> {
        let op = "cublasGemmEx (bf16)";
        if x.len() != m * k || w.len() != n * k || y.len() != m * n {
            return Err(Error::Shape {
                op: op.into(),
                what: format!(
                    "x has {}, W {}, y {} elements for M={m} N={n} K={k}",
                    x.len(),
                    w.len(),
                    y.len()
                ),
            });
        }
        let dim = |v: usize| -> Result<c_int> {
            c_int::try_from(v).map_err(|_| Error::TooLarge {
                op: op.into(),
                what: "a matrix dimension".into(),
                value: v as u64,
                limit: c_int::MAX as u64,
            })
        };
        let (mi, ni, ki) = (dim(m)?, dim(n)?, dim(k)?);
        if m == 0 || n == 0 {
            return Ok(());
        }
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the handle is live; the stream is the Gpu's; the views are live device
        // arrays of the checked sizes in the current (primary) context; alpha and beta are
        // f32 as COMPUTE_32F requires.
        let s = unsafe {
            let s = (self.set_stream)(self.handle, gpu.raw_stream());
            if s != 0 {
                s
            } else {
                (self.gemm_ex)(
                    self.handle,
                    OP_T,
                    OP_N,
                    ni,
                    mi,
                    ki,
                    (&alpha as *const f32).cast(),
                    w.device_addr(),
                    CUDA_R_16BF,
                    ki.max(1),
                    x.device_addr(),
                    CUDA_R_16BF,
                    ki.max(1),
                    (&beta as *const f32).cast(),
                    y.device_addr(),
                    CUDA_R_16BF,
                    ni.max(1),
                    COMPUTE_32F,
                    GEMM_DEFAULT,
                )
            }
        };
        if s != 0 {
            return Err(Error::Other(format!("cublasGemmEx failed with status {s}")));
        }
        Ok(())
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle came from cublasCreate and is destroyed once.
        unsafe { (self.destroy)(self.handle) };
    }
}
