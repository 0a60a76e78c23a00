// Twin of transpose/v04_multi_element_vectorized
// (kernels-gpu/src/transpose/v04_multi_element_vectorized.rs): each thread moves a 4×4 block,
// four 16-byte row loads (`ld.global.nc.L2::256B.v4.f32`), a register transpose, four 16-byte
// stores (`st.global.v4.f32`); scalar accesses on a side whose rows are not 16-byte aligned,
// element by element for blocks cut by the matrix edge. Grid x over row blocks, grid y over
// column blocks with a loop past gridDim.y (host/src/ops/transpose/launch.rs); no shared memory.
#include "twin.cuh"

static_assert(TRANSPOSE_V04_VEC == 4, "a thread's block is one float4 per row");

namespace transpose {

// gpu::vector::load_f32x4_nc_l2_256b: `ld.global.nc.L2::256B.v4.f32` (pure, reads memory).
__device__ __forceinline__ void load_f32x4_nc_l2_256b(const float* p, float out[4]) {
    asm("ld.global.nc.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(out[0]), "=f"(out[1]), "=f"(out[2]), "=f"(out[3])
        : "l"(p));
}

// gpu::vector::store_f32x4: `st.global.v4.f32` (side-effecting asm, as the Rust one).
__device__ __forceinline__ void store_f32x4(float* p, float a, float b, float c, float d) {
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "f"(a), "f"(b), "f"(c), "f"(d)
                 : "memory");
}

}  // namespace transpose

// `out[j][i] = inp[i][j]`; `inp` is `m × n`, `out` is `n × m`, both row-major.
extern "C" __global__ void cuda_transpose_v04_multi_element_vectorized(const float* inp, float* out,
                                                                       u32 m, u32 n) {
    const u32 VEC = TRANSPOSE_V04_VEC;
    // Rows on grid x: consecutive blocks walk down the input.
    u32 i0 = (blockIdx.x * TRANSPOSE_V04_BLOCK_Y + threadIdx.y) * VEC;
    if (i0 >= m) return;
    // Grid-uniform: every thread takes the same branches below.
    bool vec_load = n % VEC == 0 && (u64)inp % 16 == 0;
    bool vec_store = m % VEC == 0 && (u64)out % 16 == 0;
    u64 mu = m, nu = n;
    u32 j0 = (blockIdx.y * TRANSPOSE_V04_BLOCK_X + threadIdx.x) * VEC;
    u32 step = gridDim.y * TRANSPOSE_V04_BLOCK_X * VEC;
    while (j0 < n) {
        if (i0 + VEC <= m && j0 + VEC <= n) {
            float a[4][4];
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const float* p = inp + ((u64)i0 + r) * nu + (u64)j0;
                if (vec_load) {
                    transpose::load_f32x4_nc_l2_256b(p, a[r]);
                } else {
#pragma unroll
                    for (int c = 0; c < 4; c++) a[r][c] = p[c];
                }
            }
#pragma unroll
            for (int c = 0; c < 4; c++) {
                float* q = out + ((u64)j0 + c) * mu + (u64)i0;
                if (vec_store) {
                    transpose::store_f32x4(q, a[0][c], a[1][c], a[2][c], a[3][c]);
                } else {
#pragma unroll
                    for (int r = 0; r < 4; r++) q[r] = a[r][c];
                }
            }
        } else {
#pragma unroll
            for (u32 r = 0; r < VEC; r++) {
#pragma unroll
                for (u32 c = 0; c < VEC; c++) {
                    u32 i = i0 + r, j = j0 + c;
                    if (i < m && j < n) out[(u64)j * mu + (u64)i] = inp[(u64)i * nu + (u64)j];
                }
            }
        }
        j0 += step;
    }
}
