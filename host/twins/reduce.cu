// Twin of reduce/v07_multi_element (kernels-gpu/src/reduce/v07_multi_element.rs): a grid-stride
// loop issuing UNROLL independent 16-byte loads (`ld.global.nc.v4.f32`) into UNROLL × 4
// accumulators, leftover vectors one at a time, a scalar head (input not 16-byte aligned) and
// tail, then a warp butterfly, one shared word per warp and a second butterfly in warp 0. The
// block sum goes into `*out` with one `red.global.add.f32` (`partials` null) or into
// `partials[blockIdx.x]`, which `cuda_reduce_v07_multi_element_final` (one block) sums in the
// same fixed order as the Rust final pass. Launch and dynamic shared memory (one word per
// warp): host/src/ops/reduce/launch.rs.
#include "twin.cuh"

static_assert(REDUCE_V07_BLOCK_THREADS % 32 == 0 && REDUCE_V07_BLOCK_THREADS <= 1024,
              "block_sum: whole warps, at most 32 of them");
static_assert(REDUCE_V07_FINAL_THREADS % 32 == 0 && REDUCE_V07_FINAL_THREADS <= 1024,
              "block_sum: whole warps, at most 32 of them");
static_assert(REDUCE_V07_UNROLL >= 3, "the head and tail go into accumulators 1 and 2");
static_assert(REDUCE_V07_SHARED_BYTES == REDUCE_V07_BLOCK_THREADS / 32 * 4, "one word per warp");
static_assert(REDUCE_V07_FINAL_SHARED_BYTES == REDUCE_V07_FINAL_THREADS / 32 * 4,
              "one word per warp");

namespace reduce {

// gpu::vector::misalignment_f32: leading f32 before `p` reaches a 16-byte boundary.
__device__ __forceinline__ u64 misalignment_f32(const float* p) {
    return ((16 - ((u64)p & 15)) & 15) / 4;
}

// gpu::atomic::add_f32: `red.global.add.f32`.
__device__ __forceinline__ void red_add_f32(float* p, float v) {
    asm volatile("red.global.add.f32 [%0], %1;" : : "l"(p), "f"(v) : "memory");
}

// The Rust `block_sum`: the sum of `v` over the block, valid in thread 0. Every thread of the
// block calls it; dynamic shared memory holds one word per warp.
__device__ __forceinline__ float block_sum(float v) {
    extern __shared__ float words[];
    u32 lane = lane_id();
    u32 w = threadIdx.x / 32;
    u32 nwarps = blockDim.x / 32;
    v = warp_sum_f32(v);
    if (lane == 0) words[w] = v;
    __syncthreads();
    float total = 0.0f;
    if (w == 0) {
        float mine = lane < nwarps ? words[lane] : 0.0f;
        total = warp_sum_f32(mine);
    }
    return total;
}

}  // namespace reduce

// Block sums of `x[0..n]`: into `*out` by atomics (`partials` null), or one per block into
// `partials[blockIdx.x]`.
extern "C" __global__ void cuda_reduce_v07_multi_element(const float* x, u64 n, float* out,
                                                         float* partials) {
    const u64 UNROLL = REDUCE_V07_UNROLL;
    u64 t = index_1d();
    u64 step = grid_stride_1d();
    u64 mis = reduce::misalignment_f32(x);
    u64 head = mis < n ? mis : n;
    u64 vectors = (n - head) / 4;
    u64 tail_start = head + 4 * vectors;
    // UNROLL x 4 separate accumulators: the loads of one trip do not wait on each other.
    float acc[UNROLL][4];
#pragma unroll
    for (u64 k = 0; k < UNROLL; k++)
#pragma unroll
        for (int l = 0; l < 4; l++) acc[k][l] = 0.0f;
    const float* xv = x + head;
    u64 v = t;
    while (v + (UNROLL - 1) * step < vectors) {
        float4 r[UNROLL];
#pragma unroll
        for (u64 k = 0; k < UNROLL; k++) r[k] = load_f32x4_nc(xv + 4 * (v + k * step));
#pragma unroll
        for (u64 k = 0; k < UNROLL; k++) {
            acc[k][0] += r[k].x;
            acc[k][1] += r[k].y;
            acc[k][2] += r[k].z;
            acc[k][3] += r[k].w;
        }
        v += UNROLL * step;
    }
    while (v < vectors) {
        float4 r = load_f32x4_nc(xv + 4 * v);
        acc[0][0] += r.x;
        acc[0][1] += r.y;
        acc[0][2] += r.z;
        acc[0][3] += r.w;
        v += step;
    }
    if (t < head) acc[1][0] += x[t];
    if (t < n - tail_start) acc[2][0] += x[tail_start + t];
    float s = 0.0f;
#pragma unroll
    for (u64 k = 0; k < UNROLL; k++) s += (acc[k][0] + acc[k][1]) + (acc[k][2] + acc[k][3]);
    float total = reduce::block_sum(s);
    if (threadIdx.x == 0) {
        if (partials == nullptr) {
            reduce::red_add_f32(out, total);
        } else {
            partials[blockIdx.x] = total;
        }
    }
}

// `*out = Σ partials[0..count]` in a fixed order (launched as one block).
extern "C" __global__ void cuda_reduce_v07_multi_element_final(const float* partials, u32 count,
                                                               float* out) {
    float s = 0.0f;
    for (u32 i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
    float total = reduce::block_sum(s);
    if (threadIdx.x == 0) *out = total;
}
