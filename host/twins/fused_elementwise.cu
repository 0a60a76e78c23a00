// Twin of fused_elementwise/v03_fused_vectorized
// (kernels-gpu/src/fused_elementwise/v03_fused_vectorized.rs): y = gelu(x * scale[col] +
// bias[col]) + residual, GELU erf or tanh form picked at run time by `mode`, f32 arithmetic.
// Thread t < n / P moves one 16-byte vector (P = 4 f32 or 8 bf16) of x, residual and y
// (`ld.global.nc.v4.u32` / `st.global.v4.u32`); scale and bias are vector-loaded too when
// cols % P == 0 and they are aligned, else element by element with a wrapping column.
// Thread n / P takes the tail, and every thread goes element by element when x, residual and
// y are not all 16-byte aligned. The GELU math (kernels-gpu/src/fused_elementwise/mod.rs)
// uses `ex2.approx.ftz.f32` and `rcp.approx.ftz.f32`, as the Rust `math::exp2`/`math::rcp`;
// f32 runs `gelu` (erf by A&S 7.1.26), bf16 `gelu_bf16` (the erf form with mod.rs's
// `erf_fast` folded in, `fmaf` where the Rust writes `math::fma`), as the Rust `Gelu` trait.
// Same launch (BLOCK_THREADS a block, threads(n, P) threads; host/src/ops/fused_elementwise/
// launch.rs), no launch bounds, no shared memory.
#include "twin.cuh"

namespace fused_elementwise {

// gpu::math::exp2: 2^x (`ex2.approx.ftz.f32`).
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// gpu::math::rcp: 1/x (`rcp.approx.ftz.f32`).
__device__ __forceinline__ float rcp_approx(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// The formula's constants are mod.rs's, passed in as their f32 bits (TWIN_DEFINES).
#define FUSED_ELEMENTWISE_LOG2_E F32_BITS(FUSED_ELEMENTWISE_V03_LOG2_E_BITS)

// mod.rs erf_as: Abramowitz & Stegun 7.1.26, odd in x.
__device__ __forceinline__ float erf_as(float x) {
    const float P = F32_BITS(FUSED_ELEMENTWISE_V03_ERF_P_BITS);
    const float A0 = F32_BITS(FUSED_ELEMENTWISE_V03_ERF_A0_BITS),
                A1 = F32_BITS(FUSED_ELEMENTWISE_V03_ERF_A1_BITS),
                A2 = F32_BITS(FUSED_ELEMENTWISE_V03_ERF_A2_BITS),
                A3 = F32_BITS(FUSED_ELEMENTWISE_V03_ERF_A3_BITS),
                A4 = F32_BITS(FUSED_ELEMENTWISE_V03_ERF_A4_BITS);
    float a = x < 0.0f ? -x : x;
    float t = rcp_approx(1.0f + P * a);
    float poly = t * (A0 + t * (A1 + t * (A2 + t * (A3 + t * A4))));
    float r = 1.0f - poly * exp2_approx(-(a * a) * FUSED_ELEMENTWISE_LOG2_E);
    return x < 0.0f ? -r : r;
}

// mod.rs gelu: tanh form as u / (1 + e^(-2k)), erf form as 0.5 u (1 + erf(u / sqrt 2)).
__device__ __forceinline__ float gelu(float u, u32 mode) {
    const float SQRT_2_OVER_PI = F32_BITS(FUSED_ELEMENTWISE_V03_SQRT_2_OVER_PI_BITS);
    const float GELU_CUBIC = F32_BITS(FUSED_ELEMENTWISE_V03_GELU_CUBIC_BITS);
    const float FRAC_1_SQRT_2 = F32_BITS(FUSED_ELEMENTWISE_V03_FRAC_1_SQRT_2_BITS);
    if (mode == FUSED_ELEMENTWISE_V03_GELU_TANH) {
        float k = SQRT_2_OVER_PI * (u + GELU_CUBIC * (u * u * u));
        return u * rcp_approx(1.0f + exp2_approx(-2.0f * FUSED_ELEMENTWISE_LOG2_E * k));
    } else {
        return 0.5f * u * (1.0f + erf_as(u * FRAC_1_SQRT_2));
    }
}

// mod.rs gelu_bf16: the tanh form as gelu's; the erf form as
// u / (1 + 2^(u (Q0 + Q1 t + Q2 t^2))), t = min(u^2, U2_MAX) (mod.rs logistic_odd).
__device__ __forceinline__ float gelu_bf16(float u, u32 mode) {
    const float Q0 = F32_BITS(FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_Q0_BITS),
                Q1 = F32_BITS(FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_Q1_BITS),
                Q2 = F32_BITS(FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_Q2_BITS);
    const float U2_MAX = F32_BITS(FUSED_ELEMENTWISE_V03_GELU_ERF_FAST_U2_MAX_BITS);
    if (mode == FUSED_ELEMENTWISE_V03_GELU_TANH) {
        return gelu(u, mode);
    } else {
        float t = fminf(u * u, U2_MAX);
        float p = fmaf(fmaf(Q2, t, Q1), t, Q0);
        return u * rcp_approx(1.0f + exp2_approx(u * p));
    }
}

// The v03 Rust `Gelu` trait: the GELU each storage type runs.
template <typename T> struct GeluOf;
template <> struct GeluOf<float> {
    static __device__ __forceinline__ float gelu(float u, u32 mode) {
        return fused_elementwise::gelu(u, mode);
    }
};
template <> struct GeluOf<u16> {
    static __device__ __forceinline__ float gelu(float u, u32 mode) { return gelu_bf16(u, mode); }
};

template <typename T>
__device__ __forceinline__ void run(const T* x, const T* scale, const T* bias, const T* res,
                                    T* y, u32 n, u32 cols, u32 mode) {
    typedef Storage<T> S;
    const u32 p = S::PER16;
    // 32-bit, as the Rust kernel computes it.
    u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    u32 nvec = n / p;
    if (t > nvec) return;
    u32 start = t * p;
    u32 count = t < nvec ? p : n - start;
    // Rust's `start % cols` panics (trap) on cols == 0.
    if (cols == 0) __trap();
    u32 c = start % cols;
    bool vec = t < nvec && aligned16(x) && aligned16(res) && aligned16(y);
    if (vec) {
        float xv[8] = {}, rv[8] = {}, sv[8] = {}, bv[8] = {};
        S::load16(x + start, xv);
        S::load16(res + start, rv);
        if (cols % p == 0 && aligned16(scale) && aligned16(bias)) {
            S::load16(scale + c, sv);
            S::load16(bias + c, bv);
        } else {
#pragma unroll
            for (int k = 0; k < S::PER16; k++) {
                sv[k] = S::load(scale + c);
                bv[k] = S::load(bias + c);
                c += 1;
                if (c == cols) c = 0;
            }
        }
        float out[8] = {};
#pragma unroll
        for (int k = 0; k < S::PER16; k++) {
            out[k] = GeluOf<T>::gelu(fmaf(xv[k], sv[k], bv[k]), mode) + rv[k];
        }
        S::store16(y + start, out);
    } else {
        // Left rolled, as rustc leaves it.
#pragma unroll 1
        for (u32 k = 0; k < count; k++) {
            u32 i = start + k;
            float u = fmaf(S::load(x + i), S::load(scale + c), S::load(bias + c));
            S::store(y + i, GeluOf<T>::gelu(u, mode) + S::load(res + i));
            c += 1;
            if (c == cols) c = 0;
        }
    }
}

}  // namespace fused_elementwise

extern "C" __global__ void cuda_fused_elementwise_v03_fused_vectorized_f32(
    const float* x, const float* scale, const float* bias, const float* res, float* y, u32 n,
    u32 cols, u32 mode) {
    fused_elementwise::run<float>(x, scale, bias, res, y, n, cols, mode);
}

extern "C" __global__ void cuda_fused_elementwise_v03_fused_vectorized_bf16(
    const u16* x, const u16* scale, const u16* bias, const u16* res, u16* y, u32 n, u32 cols,
    u32 mode) {
    fused_elementwise::run<u16>(x, scale, bias, res, y, n, cols, mode);
}
