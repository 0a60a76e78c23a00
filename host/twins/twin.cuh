// The CUDA C++ twins' shared helpers: the counterparts of what the Rust kernels take from
// `kernels-gpu/src/gpu` (thread indices, vector loads and stores, bf16 bits), written so that
// they produce the same PTX instructions. NVRTC compiles the twins with no system headers
// (host/build/twins.rs), so nothing here includes one.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;

// An f32 constant passed in as its bits (TWIN_DEFINES carries integers): folds to the value.
#define F32_BITS(bits) __uint_as_float((u32)(bits))

// gpu::thread::index_1d: 64-bit, as the Rust helper computes it.
__device__ __forceinline__ u64 index_1d() {
    return (u64)blockIdx.x * (u64)blockDim.x + (u64)threadIdx.x;
}

// gpu::thread::grid_stride_1d.
__device__ __forceinline__ u64 grid_stride_1d() {
    return (u64)gridDim.x * (u64)blockDim.x;
}

// ---- warp (gpu::warp): every lane of the warp takes part (the full mask). ----

// gpu::warp::lane_id: `%laneid`.
__device__ __forceinline__ u32 lane_id() {
    u32 lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// gpu::warp::shfl_xor_f32: `shfl.sync.bfly.b32 d, v, mask, 0x1f, 0xffffffff` (volatile, as
// the Rust asm is not `pure`).
__device__ __forceinline__ float shfl_xor_f32(float v, u32 mask) {
    float out;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, %3;"
                 : "=f"(out)
                 : "f"(v), "r"(mask), "r"(0xffffffffu));
    return out;
}

// gpu::warp::sum_f32 / max_f32: butterflies with masks 16, 8, 4, 2, 1.
__device__ __forceinline__ float warp_sum_f32(float v) {
#pragma unroll
    for (u32 m = 16; m > 0; m >>= 1) v += shfl_xor_f32(v, m);
    return v;
}

__device__ __forceinline__ float warp_max_f32(float v) {
#pragma unroll
    for (u32 m = 16; m > 0; m >>= 1) v = fmaxf(v, shfl_xor_f32(v, m));
    return v;
}

// gpu::vector::load_f32x4_nc: `ld.global.nc.v4.f32` (the read-only path).
__device__ __forceinline__ float4 load_f32x4_nc(const float* p) {
    return __ldg(reinterpret_cast<const float4*>(p));
}

// gpu::vector::load_f32x4: `ld.global.v4.f32`.
__device__ __forceinline__ float4 load_f32x4(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

// gpu::vector::store_f32x4: `st.global.v4.f32`.
__device__ __forceinline__ void store_f32x4(float* p, float4 v) {
    *reinterpret_cast<float4*>(p) = v;
}

// ---- bf16 storage (gpu::bf16): bf16 travels as its raw u16 bits, arithmetic is f32. ----

// bf16 bits -> f32 (exact).
__device__ __forceinline__ float bf16_to_f32(u16 bits) { return __uint_as_float((u32)bits << 16); }

// f32 -> bf16 bits, round to nearest even (`cvt.rn.bf16.f32`, as the Rust helper).
__device__ __forceinline__ u16 bf16_from_f32(float x) {
    u16 out;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(out) : "f"(x));
    return out;
}

// Two f32 -> one word of two bf16, `lo` in the low half (`cvt.rn.bf16x2.f32 d, hi, lo`).
__device__ __forceinline__ u32 bf16_pack2(float lo, float hi) {
    u32 out;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
    return out;
}

// 16 bytes through the read-only path (`ld.global.nc.v4.u32`).
__device__ __forceinline__ uint4 load16_nc(const void* p) {
    return __ldg(reinterpret_cast<const uint4*>(p));
}

// 16 bytes with `st.global.v4.u32`.
__device__ __forceinline__ void store16(void* p, uint4 v) { *reinterpret_cast<uint4*>(p) = v; }

// Whether `p` is 16-byte aligned.
__device__ __forceinline__ bool aligned16(const void* p) { return ((u64)p & 15) == 0; }

// gpu::bf16::Storage: one kernel body for f32 and bf16 (u16 bits); arithmetic in f32.
template <typename T> struct Storage;

template <> struct Storage<float> {
    enum { PER16 = 4 };
    static __device__ __forceinline__ float load(const float* p) { return *p; }
    static __device__ __forceinline__ void store(float* p, float v) { *p = v; }
    static __device__ __forceinline__ void unpack16(uint4 w, float out[8]) {
        out[0] = __uint_as_float(w.x);
        out[1] = __uint_as_float(w.y);
        out[2] = __uint_as_float(w.z);
        out[3] = __uint_as_float(w.w);
    }
    static __device__ __forceinline__ void load16(const float* p, float out[8]) {
        unpack16(load16_nc(p), out);
    }
    static __device__ __forceinline__ void store16(float* p, const float v[8]) {
        ::store16(p, make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]),
                                __float_as_uint(v[2]), __float_as_uint(v[3])));
    }
};

template <> struct Storage<u16> {
    enum { PER16 = 8 };
    static __device__ __forceinline__ float load(const u16* p) { return bf16_to_f32(*p); }
    static __device__ __forceinline__ void store(u16* p, float v) { *p = bf16_from_f32(v); }
    static __device__ __forceinline__ void unpack16(uint4 w, float out[8]) {
        // Little-endian: the element at the lower address is the low half.
        u32 k[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            out[2 * i] = __uint_as_float(k[i] << 16);
            out[2 * i + 1] = __uint_as_float(k[i] & 0xffff0000u);
        }
    }
    static __device__ __forceinline__ void load16(const u16* p, float out[8]) {
        unpack16(load16_nc(p), out);
    }
    static __device__ __forceinline__ void store16(u16* p, const float v[8]) {
        ::store16(p, make_uint4(bf16_pack2(v[0], v[1]), bf16_pack2(v[2], v[3]),
                                bf16_pack2(v[4], v[5]), bf16_pack2(v[6], v[7])));
    }
};
