// Twin of softmax/v05_row_in_registers (kernels-gpu/src/softmax/v05_row_in_registers.rs):
// block r owns row r and holds it in registers, ROW_ITEMS (16) slots a thread, in the
// row-in-registers layout of kernels-gpu/src/gpu/row.rs (16-byte `ld.global.nc.v4.u32` /
// `st.global.v4.u32` vectors, consecutive threads on consecutive vectors, when x and y are
// 16-byte aligned and cols % P == 0; else slot k of thread t is element k * blockDim + t).
// One DRAM read and one write: max, exp (`ex2.approx.ftz.f32` of (x - max) * log2 e), sum and
// the scaled output all come from the registers; the block max and sum are gpu/block.rs's
// reductions (butterfly shuffles, one f32 a warp in dynamic shared memory, every warp reducing
// the warp totals itself). Same launch (host/src/ops/softmax/launch.rs): one block per row,
// row_threads(cols) threads, SHARED_BYTES of dynamic shared memory; no launch bounds.
#include "twin.cuh"

static_assert(SOFTMAX_V05_ROW_ITEMS % 8 == 0, "whole 16-byte vectors of f32 and bf16 a thread");
static_assert(SOFTMAX_V05_SHARED_BYTES >= (SOFTMAX_V05_ROW_MAX_THREADS / 32) * 4,
              "one f32 a warp for the block reductions");
static_assert(SOFTMAX_V05_ROW_MAX_THREADS <= 1024, "at most 32 warps: one warp reduces them");

namespace softmax {

// The launch's dynamic shared memory (gpu::shared::dynamic_shared_mem, 16-byte aligned).
extern __shared__ __align__(16) float smem[];

// gpu::math::exp2: 2^x (`ex2.approx.ftz.f32`).
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float neg_inf() { return __uint_as_float(0xff800000u); }

// gpu::block::reduce: barrier, lane 0 of each warp writes its total, barrier, every warp
// reduces the (at most 32) totals itself.
__device__ __forceinline__ float block_reduce(float warp_total, float* s, float identity,
                                              bool is_max) {
    u32 lane = lane_id();
    u32 w = threadIdx.x / 32;
    u32 nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) s[w] = warp_total;
    __syncthreads();
    float v = lane < nw ? s[lane] : identity;
    return is_max ? warp_max_f32(v) : warp_sum_f32(v);
}

__device__ __forceinline__ float block_max(float v, float* s) {
    return block_reduce(warp_max_f32(v), s, neg_inf(), true);
}

__device__ __forceinline__ float block_sum(float v, float* s) {
    return block_reduce(warp_sum_f32(v), s, 0.0f, false);
}

// softmax::device: e^(x - m), the max to subtract (-inf row: 0), 1 / sum (empty: 0).
__device__ __forceinline__ float exp_sub(float x, float m) {
    return exp2_approx((x - m) * F32_BITS(SOFTMAX_V05_LOG2_E_BITS));
}

__device__ __forceinline__ float safe_max(float m) { return m == neg_inf() ? 0.0f : m; }

__device__ __forceinline__ float safe_inv(float s) { return s > 0.0f ? 1.0f / s : 0.0f; }

// gpu::row::load: this thread's ROW_ITEMS slots; slots past the row get `fill`.
template <typename T>
__device__ __forceinline__ void row_load(const T* row, u32 cols, bool vec, float fill,
                                         float v[SOFTMAX_V05_ROW_ITEMS]) {
    typedef Storage<T> S;
    const u32 t = threadIdx.x, b = blockDim.x;
    if (vec) {
        const u32 p = S::PER16;
#pragma unroll
        for (u32 c = 0; c < SOFTMAX_V05_ROW_ITEMS / S::PER16; c++) {
            u32 e = (c * b + t) * p;
            float tmp[8];
#pragma unroll
            for (int k = 0; k < 8; k++) tmp[k] = fill;
            if (e < cols) S::load16(row + e, tmp);
#pragma unroll
            for (int k = 0; k < S::PER16; k++) v[c * S::PER16 + k] = tmp[k];
        }
    } else {
#pragma unroll
        for (u32 k = 0; k < SOFTMAX_V05_ROW_ITEMS; k++) {
            u32 e = k * b + t;
            v[k] = e < cols ? S::load(row + e) : fill;
        }
    }
}

// gpu::row::store: the slots `row_load` loaded; padding slots are not stored.
template <typename T>
__device__ __forceinline__ void row_store(T* row, u32 cols, bool vec,
                                          const float v[SOFTMAX_V05_ROW_ITEMS]) {
    typedef Storage<T> S;
    const u32 t = threadIdx.x, b = blockDim.x;
    if (vec) {
        const u32 p = S::PER16;
#pragma unroll
        for (u32 c = 0; c < SOFTMAX_V05_ROW_ITEMS / S::PER16; c++) {
            u32 e = (c * b + t) * p;
            if (e < cols) {
                float tmp[8] = {};
#pragma unroll
                for (int k = 0; k < S::PER16; k++) tmp[k] = v[c * S::PER16 + k];
                S::store16(row + e, tmp);
            }
        }
    } else {
#pragma unroll
        for (u32 k = 0; k < SOFTMAX_V05_ROW_ITEMS; k++) {
            u32 e = k * b + t;
            if (e < cols) S::store(row + e, v[k]);
        }
    }
}

template <typename T>
__device__ __forceinline__ void run(const T* x, T* y, u32 cols) {
    typedef Storage<T> S;
    u64 off = (u64)blockIdx.x * (u64)cols;
    bool vec = aligned16(x) && aligned16(y) && cols % S::PER16 == 0;
    float v[SOFTMAX_V05_ROW_ITEMS];
    row_load<T>(x + off, cols, vec, neg_inf(), v);
    float m = neg_inf();
#pragma unroll
    for (int k = 0; k < SOFTMAX_V05_ROW_ITEMS; k++) m = fmaxf(m, v[k]);
    m = safe_max(block_max(m, smem));
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < SOFTMAX_V05_ROW_ITEMS; k++) {
        // Padding slots are -inf: exp gives 0.
        v[k] = exp_sub(v[k], m);
        s += v[k];
    }
    float inv = safe_inv(block_sum(s, smem));
#pragma unroll
    for (int k = 0; k < SOFTMAX_V05_ROW_ITEMS; k++) v[k] *= inv;
    row_store<T>(y + off, cols, vec, v);
}

}  // namespace softmax

extern "C" __global__ void cuda_softmax_v05_row_in_registers_f32(const float* x, float* y,
                                                                 u32 cols) {
    softmax::run<float>(x, y, cols);
}

extern "C" __global__ void cuda_softmax_v05_row_in_registers_bf16(const u16* x, u16* y,
                                                                  u32 cols) {
    softmax::run<u16>(x, y, cols);
}
