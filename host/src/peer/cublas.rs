//! cuBLAS as the GEMM families' peer (SGEMM for `gemm`, GemmEx in BF16 for `bf16_gemm`),
//! through cudarc's cuBLAS bindings (`cudarc::cublas::result`/`sys`, built with
//! `dynamic-loading`): libcublas is opened at run time on first use, so rooflab neither links
//! against it nor needs a CUDA toolkit at build time, and a machine without it reports the
//! peer as unavailable (cudarc would panic on the first call; [`Cublas::load`] asks
//! `is_culib_present` first). cudarc tries `libcublas.so`, then the sonames of CUDA 13, 12,
//! 11 (through `LD_LIBRARY_PATH` and the loader cache). cuBLAS uses the calling thread's
//! current context, which is the device's primary context that `Gpu` retains, so our `View`
//! addresses are valid for it; its stream is set to the `Gpu`'s stream so the calls are
//! ordered with our launches.

use std::ffi::{c_int, c_void};

use cudarc::cublas::{result as cublas, sys};

use crate::error::{Error, Result};
use crate::gpu::{Gpu, View, ViewMut};

/// Why cuBLAS cannot be loaded here (no libcublas found), or `None` when it can.
pub fn missing() -> Option<String> {
    // SAFETY: probing for the library with dlopen; its initializers have no preconditions.
    (!unsafe { sys::is_culib_present() }).then(|| {
        format!(
            "cuBLAS not found (tried {}). Put its folder on LD_LIBRARY_PATH",
            cudarc::get_lib_name_candidates("cublas").join(", ")
        )
    })
}

/// A cuBLAS handle in the current context.
pub struct Cublas {
    handle: sys::cublasHandle_t,
    /// What was loaded, for logs: "cuBLAS 13.1.0 (cudarc)".
    pub path: String,
}

impl Cublas {
    /// Open libcublas and create a handle in the current context (create the `Gpu` first).
    /// `Err` carries why, for the report's peer column.
    pub fn load() -> std::result::Result<Cublas, String> {
        if let Some(why) = missing() {
            return Err(why);
        }
        let handle = cublas::create_handle().map_err(|e| format!("cublasCreate failed: {e}"))?;
        // From here on, Drop destroys the handle on every way out.
        let mut cb = Cublas {
            handle,
            path: String::new(),
        };
        // SAFETY: a live handle; CUBLAS_DEFAULT_MATH keeps SGEMM on fp32 FMA (no TF32).
        unsafe { sys::cublasSetMathMode(handle, sys::cublasMath_t::CUBLAS_DEFAULT_MATH) }
            .result()
            .map_err(|e| format!("cublasSetMathMode failed: {e}"))?;
        let mut version: c_int = 0;
        // SAFETY: a live handle and a local out-parameter.
        unsafe { sys::cublasGetVersion_v2(handle, &mut version) }
            .result()
            .map_err(|e| format!("cublasGetVersion failed: {e}"))?;
        cb.path = format!(
            "cuBLAS {}.{}.{} (cudarc)",
            version / 10000,
            version / 100 % 100,
            version % 100
        );
        Ok(cb)
    }

    /// The checks both calls make: sizes against the views, dimensions within `int`.
    fn dims(
        op: &str,
        m: usize,
        n: usize,
        k: usize,
        lens: [usize; 3],
        names: [&str; 3],
    ) -> Result<[c_int; 3]> {
        if lens != [m * k, k * n, m * n] {
            return Err(Error::Shape {
                op: op.into(),
                what: format!(
                    "{} has {}, {} {}, {} {} elements for M={m} N={n} K={k}",
                    names[0], lens[0], names[1], lens[1], names[2], lens[2]
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
        Ok([dim(m)?, dim(n)?, dim(k)?])
    }

    /// Put the handle on `gpu`'s stream.
    fn on_stream(&self, gpu: &Gpu, op: &str) -> Result<()> {
        // SAFETY: the handle is live; the stream is the Gpu's, alive as long as `gpu`.
        unsafe { cublas::set_stream(self.handle, gpu.raw_stream().cast()) }
            .map_err(|e| Error::Other(format!("{op}: cublasSetStream failed: {e}")))
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
        let [mi, ni, ki] = Self::dims(op, m, n, k, [a.len(), b.len(), c.len()], ["A", "B", "C"])?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        self.on_stream(gpu, op)?;
        // SAFETY: the handle is live and on the Gpu's stream; the views are live device
        // arrays of the checked sizes in the current (primary) context.
        unsafe {
            cublas::sgemm(
                self.handle,
                sys::cublasOperation_t::CUBLAS_OP_N,
                sys::cublasOperation_t::CUBLAS_OP_N,
                ni,
                mi,
                ki,
                &alpha,
                b.device_addr() as *const f32,
                ni.max(1),
                a.device_addr() as *const f32,
                ki.max(1),
                &beta,
                c.device_addr() as *mut f32,
                ni.max(1),
            )
        }
        .map_err(|e| Error::Other(format!("cublasSgemm failed: {e}")))
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
        // x is M×K, W N×K (the "B" of the shared check is K×N elements either way).
        let [mi, ni, ki] = Self::dims(op, m, n, k, [x.len(), w.len(), y.len()], ["x", "W", "y"])?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        self.on_stream(gpu, op)?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let bf16 = sys::cudaDataType::CUDA_R_16BF;
        // SAFETY: the handle is live and on the Gpu's stream; the views are live device
        // arrays of the checked sizes in the current (primary) context; alpha and beta are
        // f32 as CUBLAS_COMPUTE_32F requires.
        unsafe {
            cublas::gemm_ex(
                self.handle,
                sys::cublasOperation_t::CUBLAS_OP_T,
                sys::cublasOperation_t::CUBLAS_OP_N,
                ni,
                mi,
                ki,
                (&alpha as *const f32).cast::<c_void>(),
                w.device_addr() as *const c_void,
                bf16,
                ki.max(1),
                x.device_addr() as *const c_void,
                bf16,
                ki.max(1),
                (&beta as *const f32).cast::<c_void>(),
                y.device_addr() as *mut c_void,
                bf16,
                ni.max(1),
                // f32 accumulation: BF16 inputs then run on the tensor cores.
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                // cuBLAS picks the kernel (its heuristics, as PyTorch's linear).
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT,
            )
        }
        .map_err(|e| Error::Other(format!("cublasGemmEx failed: {e}")))
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle came from cublasCreate and is destroyed once.
        let _ = unsafe { cublas::destroy_handle(self.handle) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without libcublas (as on the CI machine) the peer is unavailable with a reason, never
    /// a panic from the bindings' loader.
    #[test]
    fn load_without_the_library_is_an_error_not_a_panic() {
        // SAFETY: probing with dlopen.
        if unsafe { sys::is_culib_present() } {
            return; // a machine with cuBLAS: the GPU tests cover it
        }
        let e = Cublas::load().err().expect("no libcublas here");
        assert!(
            e.contains("cuBLAS not found") && e.contains("libcublas.so.13"),
            "{e}"
        );
    }
}
