// Twin of norm/v03_fused_vectorized (kernels-gpu/src/norm/v03_fused_vectorized.rs): LayerNorm
// and RMSNorm with one block per row and the row held in registers (ROW_ITEMS slots a
// thread, the row_layout::row_slot layout): one read of the row, 16-byte loads and stores
// when every pointer is 16-byte aligned and cols % PER16 == 0, element-strided scalar
// accesses otherwise; the mean and the variance around it come from two block sums (warp
// butterflies, then one f32 per warp in shared memory). Same launch (block =
// row_threads(cols), SHARED_BYTES of dynamic shared memory, grid = rows;
// host/src/ops/norm/launch.rs).
#include "twin.cuh"

static_assert(NORM_V03_ROW_ITEMS == 16, "gpu::row holds 16 slots a thread");
static_assert(NORM_V03_ROW_ITEMS % 8 == 0, "whole 16-byte vectors of bf16 per thread");
static_assert(NORM_V03_SHARED_BYTES >= 32 * 4, "one f32 per warp of a 32-warp block");
static_assert(NORM_V03_ROW_MAX_THREADS / 32 <= NORM_V03_SHARED_BYTES / 4,
              "the block reduction's per-warp totals fit");

// Not `namespace norm`: NVRTC's built-in math library already declares a function `norm`.
namespace norm_twin {

enum : int { ITEMS = NORM_V03_ROW_ITEMS };

// gpu::warp::sum_f32: butterfly shuffles with masks 16, 8, 4, 2, 1
// (`shfl.sync.bfly.b32 .., 0x1f, 0xffffffff`).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}

// gpu::block::sum_f32: each warp's total to smem[warp], then every warp reduces those totals
// itself (lanes past the warp count read 0). The first barrier keeps a previous reduction's
// readers ahead of these writes.
__device__ __forceinline__ float block_sum(float v, float* smem) {
    float warp_total = warp_sum(v);
    u32 lane = lane_id();
    u32 w = threadIdx.x / 32;
    u32 nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) smem[w] = warp_total;
    __syncthreads();
    float t = lane < nw ? smem[lane] : 0.0f;
    return warp_sum(t);
}

// norm::rsqrt (`rsqrt.approx.f32`).
__device__ __forceinline__ float rsqrt_approx(float x) {
    float y;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// row_layout::row_slot: whether slot k of thread t (block of b) falls inside the row.
__device__ __forceinline__ bool row_slot_in(u32 k, u32 t, u32 b, u32 per16, u32 cols) {
    u32 e = ((k / per16) * b + t) * per16 + k % per16;
    return e < cols;
}

// gpu::row::load: this thread's slots of a row; slots past the row get `fill`.
template <typename T>
__device__ __forceinline__ void row_load(const T* row, u32 cols, bool vec, float fill,
                                         float v[ITEMS]) {
    u32 t = threadIdx.x, b = blockDim.x;
    if (vec) {
        constexpr int P = Storage<T>::PER16;
#pragma unroll
        for (int c = 0; c < ITEMS / P; c++) {
            u32 e = ((u32)c * b + t) * (u32)P;
            float tmp[8];
#pragma unroll
            for (int k = 0; k < 8; k++) tmp[k] = fill;
            if (e < cols) Storage<T>::load16(row + e, tmp);
#pragma unroll
            for (int k = 0; k < P; k++) v[c * P + k] = tmp[k];
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            u32 e = (u32)k * b + t;
            v[k] = e < cols ? Storage<T>::load(row + e) : fill;
        }
    }
}

// gpu::row::store: the slots `row_load` loaded; padding slots are not stored.
template <typename T>
__device__ __forceinline__ void row_store(T* row, u32 cols, bool vec, const float v[ITEMS]) {
    u32 t = threadIdx.x, b = blockDim.x;
    if (vec) {
        constexpr int P = Storage<T>::PER16;
#pragma unroll
        for (int c = 0; c < ITEMS / P; c++) {
            u32 e = ((u32)c * b + t) * (u32)P;
            if (e < cols) {
                float tmp[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
                for (int k = 0; k < P; k++) tmp[k] = v[c * P + k];
                Storage<T>::store16(row + e, tmp);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            u32 e = (u32)k * b + t;
            if (e < cols) Storage<T>::store(row + e, v[k]);
        }
    }
}

// The dynamic shared memory (SHARED_BYTES: one f32 per warp), 16-byte aligned as Rust's.
extern __shared__ __align__(16) float smem[];

// v03_fused_vectorized::run.
template <typename T, bool LAYER>
__device__ __forceinline__ void run(const T* x, const T* w, const T* bias, T* y, u32 cols,
                                    float eps) {
    u64 off = (u64)blockIdx.x * (u64)cols;
    bool vec = aligned16(x) && aligned16(y) && aligned16(w) && (!LAYER || aligned16(bias)) &&
               cols % (u32)Storage<T>::PER16 == 0;
    float n = (float)cols;
    float v[ITEMS];
    // Padding slots load as 0: they add nothing to the sums below once masked.
    row_load(x + off, cols, vec, 0.0f, v);
    float mean = 0.0f;
    if (LAYER) {
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < ITEMS; k++) s += v[k];
        mean = block_sum(s, smem) / n;
    }
    // Padding slots (past the row) must not add (0 - mean)^2 to the variance.
    u32 t = threadIdx.x, b = blockDim.x;
    u32 p = vec ? (u32)Storage<T>::PER16 : 1u;
    float q = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        float d = v[k] - mean;
        if (row_slot_in((u32)k, t, b, p, cols)) q += d * d;
    }
    float wv[ITEMS];
    row_load(w, cols, vec, 0.0f, wv);
    float rs = rsqrt_approx(block_sum(q, smem) / n + eps);
    float bv[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; k++) bv[k] = 0.0f;
    if (LAYER) row_load(bias, cols, vec, 0.0f, bv);
#pragma unroll
    for (int k = 0; k < ITEMS; k++) v[k] = (v[k] - mean) * rs * wv[k] + bv[k];
    row_store(y + off, cols, vec, v);
}

}  // namespace norm_twin

extern "C" __global__ void cuda_norm_v03_fused_vectorized_layernorm_f32(
    const float* x, const float* w, const float* bias, float* y, u32 cols, float eps) {
    norm_twin::run<float, true>(x, w, bias, y, cols, eps);
}

extern "C" __global__ void cuda_norm_v03_fused_vectorized_layernorm_bf16(
    const u16* x, const u16* w, const u16* bias, u16* y, u32 cols, float eps) {
    norm_twin::run<u16, true>(x, w, bias, y, cols, eps);
}

extern "C" __global__ void cuda_norm_v03_fused_vectorized_rmsnorm_f32(
    const float* x, const float* w, const float* bias, float* y, u32 cols, float eps) {
    norm_twin::run<float, false>(x, w, bias, y, cols, eps);
}

extern "C" __global__ void cuda_norm_v03_fused_vectorized_rmsnorm_bf16(
    const u16* x, const u16* w, const u16* bias, u16* y, u32 cols, float eps) {
    norm_twin::run<u16, false>(x, w, bias, y, cols, eps);
}
