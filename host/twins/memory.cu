// Twin of memory/v03_vectorized (kernels-gpu/src/memory/v03_vectorized.rs): 16-byte loads
// and stores, a scalar head up to the arrays' common 16-byte boundary and a scalar tail, or
// four coalesced scalar passes when the two arrays' alignments differ. Same launch (one
// thread per vector, at least four; host/src/ops/memory/launch.rs).
#include "twin.cuh"

// memory::VectorSplit: the head (scalars up to a 16-byte boundary), the vectors, the tail.
struct VectorSplit {
    u64 head, vectors, tail;
    __device__ __forceinline__ u64 tail_start() const { return head + 4 * vectors; }
};

// `false` when no common split exists (the alignments differ, or not 4-byte aligned).
__device__ __forceinline__ bool vector_split(u64 a_addr, u64 b_addr, u64 n, VectorSplit* s) {
    if ((a_addr & 15) != (b_addr & 15) || (a_addr & 3) != 0) return false;
    u64 head = ((16 - (a_addr & 15)) & 15) / 4;
    s->head = head < n ? head : n;
    s->vectors = (n - s->head) / 4;
    s->tail = n - s->head - 4 * s->vectors;
    return true;
}

extern "C" __global__ void cuda_memory_v03_vectorized_copy(const float* src, float* dst, u64 n) {
    u64 t = index_1d();
    VectorSplit s;
    if (vector_split((u64)src, (u64)dst, n, &s)) {
        if (t < s.vectors) {
            u64 j = s.head + 4 * t;
            store_f32x4(dst + j, load_f32x4_nc(src + j));
        }
        if (t < s.head) dst[t] = src[t];
        if (t < s.tail) {
            u64 j = s.tail_start() + t;
            dst[j] = src[j];
        }
    } else {
        u64 step = grid_stride_1d();
        for (u64 k = 0; k < 4; k++) {
            u64 j = t + k * step;
            if (j < n) dst[j] = src[j];
        }
    }
}

extern "C" __global__ void cuda_memory_v03_vectorized_saxpy(float a, const float* x, float* y, u64 n) {
    u64 t = index_1d();
    VectorSplit s;
    if (vector_split((u64)x, (u64)y, n, &s)) {
        if (t < s.vectors) {
            u64 j = s.head + 4 * t;
            float4 xv = load_f32x4_nc(x + j);
            float4 yv = load_f32x4(y + j);
            yv.x = fmaf(a, xv.x, yv.x);
            yv.y = fmaf(a, xv.y, yv.y);
            yv.z = fmaf(a, xv.z, yv.z);
            yv.w = fmaf(a, xv.w, yv.w);
            store_f32x4(y + j, yv);
        }
        if (t < s.head) y[t] = fmaf(a, x[t], y[t]);
        if (t < s.tail) {
            u64 j = s.tail_start() + t;
            y[j] = fmaf(a, x[j], y[j]);
        }
    } else {
        u64 step = grid_stride_1d();
        for (u64 k = 0; k < 4; k++) {
            u64 j = t + k * step;
            if (j < n) y[j] = fmaf(a, x[j], y[j]);
        }
    }
}
