// Twin of gemm/v11_block_256x128 (kernels-gpu/src/gemm/v11_block_256x128.rs), the FP32
// SGEMM `C = alpha·A·B + beta·C` (row-major; A M×K, B K×N, C M×N): the shared two-stage
// warp-tiled pipeline (kernels-gpu/src/gemm/warp_tile_pipeline/{mod,pipeline,fragments,
// epilogue}.rs and the `dev` helpers of kernels-gpu/src/gemm/mod.rs) at v11's geometry.
// A 256×128 block tile of 8 warps (4×2) of 64×64 warp tiles, each 4×2 sub-tiles of 16×32
// with a 4×4 patch per lane (v07's lane map): 16×8 results per thread, BK = 16. Two
// shared-memory stages of [A transposed, BK×LDA (LDA = BM + 4)][B, BK×BN]: B by 16-byte
// `cp.async.cg` (source size zero-filling the edges; checked scalar loads through registers
// when B's rows are not 16-byte aligned), A by 16-byte `ld.global.nc` into registers before
// the math and transposed scalar `st.shared` after it (checked scalar loads off the fast
// path); one barrier per tile. The k slice is fully unrolled with register fragments
// double-buffered across k steps (4 + 2 `ld.shared.v4` per 128 FMAs). Epilogue: 16-byte
// `alpha·acc + beta·C` where C's rows allow, masked scalar stores otherwise; C is not read
// when beta == 0. Same launch (host/src/ops/gemm/launch.rs): grid (ceil(N/BN), ceil(M/BM)),
// THREADS threads, 4·SHARED_F32 bytes of dynamic shared memory; no launch bounds (the Rust
// entry has none).
#include "twin.cuh"

namespace gemm {

// ---- the geometry (v11_block_256x128::GEOMETRY, passed by the build) ----
// Enumerators, not constexpr variables: NVRTC would emit those as .global data.
enum : int {
    BM = GEMM_V11_BM,
    BN = GEMM_V11_BN,
    BK = GEMM_V11_BK,
    LDA = GEMM_V11_LDA,
    THREADS = GEMM_V11_THREADS,
    WM = GEMM_V11_WM,
    WN = GEMM_V11_WN,
    MI = GEMM_V11_WMITER,
    NI = GEMM_V11_WNITER,
    NA = GEMM_V11_NA,
    NB = GEMM_V11_NB,
    R = GEMM_V11_R,
    C = GEMM_V11_C,
    SUB_M = GEMM_V11_SUB_M,
    SUB_N = GEMM_V11_SUB_N,
};
enum : u32 { STAGES = GEMM_V11_STAGES };
// gpu::warp::WARP_SIZE (a device-only module, so not among the build's constants).
enum : u32 { WARP_SIZE = 32 };

// The pipeline's fixed slice depth (pipeline.rs's BKU: the geometry's bk, checked to be 16).
enum : int { BKU = BK };
static_assert(BKU == 16, "the fully unrolled k slice is 16 deep");
static_assert(GEMM_V11_SHARED_F32 == (int)STAGES * BKU * (LDA + BN), "two stages of A^T and B");
static_assert(WM == MI * SUB_M && WN == NI * SUB_N, "sub-tiles must be SUB_M×SUB_N");
static_assert(THREADS == (BM / WM) * (BN / WN) * (int)WARP_SIZE, "one warp per warp tile");

// crate::gemm::rows_vectorizable: every row start 16-byte aligned.
__device__ __forceinline__ bool rows_vectorizable(u64 base, u32 ld) {
    return (base % 16) == 0 && (ld % 4) == 0;
}

// crate::gemm::dev::at: element offset of (row, col), 64-bit.
__device__ __forceinline__ u64 at(u32 row, u32 ld, u32 col) {
    return (u64)row * (u64)ld + (u64)col;
}

// ---- gpu::async_copy, the same inline asm ----

// shared_addr: `cvta.to.shared.u64` (pure, nomem), truncated to 32 bits.
__device__ __forceinline__ u32 shared_addr(const void* p) {
    u64 a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (u32)a;
}

// copy_16_zfill: `cp.async.cg` of 16 bytes, reading `src_bytes` of them, zero-filling the rest.
__device__ __forceinline__ void copy_16_zfill(u32 dst, const float* src, u32 src_bytes) {
    asm volatile(
        "{\n\t"
        ".reg .u64 g;\n\t"
        "cvta.to.global.u64 g, %1;\n\t"
        "cp.async.cg.shared.global [%0], [g], 16, %2;\n\t"
        "}" ::"r"(dst),
        "l"(src), "r"(src_bytes)
        : "memory");
}

__device__ __forceinline__ void commit_group() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int N> __device__ __forceinline__ void wait_group() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// ---- crate::gemm::dev ----

// store_c: C[row][col] = alpha·v + beta·C[row][col]; C is not read when beta == 0.
__device__ __forceinline__ void store_c(float* c, u32 n, u32 row, u32 col, float v, float alpha,
                                        float beta) {
    float* p = c + at(row, n, col);
    *p = beta == 0.0f ? alpha * v : fmaf(alpha, v, beta * *p);
}

// store_c4: four neighbouring results, one 16-byte access when C's rows allow it and all four
// are inside, else masked scalar stores.
__device__ __forceinline__ void store_c4(float* c, u32 m, u32 n, u32 row, u32 col,
                                         const float v[4], float alpha, float beta, bool c_vec) {
    if (row >= m) return;
    if (c_vec && col + 4 <= n) {
        float* p = c + at(row, n, col);
        float4 out;
        if (beta == 0.0f) {
            out.x = alpha * v[0];
            out.y = alpha * v[1];
            out.z = alpha * v[2];
            out.w = alpha * v[3];
        } else {
            float4 old = load_f32x4(p);
            out.x = fmaf(alpha, v[0], beta * old.x);
            out.y = fmaf(alpha, v[1], beta * old.y);
            out.z = fmaf(alpha, v[2], beta * old.z);
            out.w = fmaf(alpha, v[3], beta * old.w);
        }
        store_f32x4(p, out);
    } else {
#pragma unroll
        for (u32 j = 0; j < 4; j++) {
            if (col + j < n) store_c(c, n, row, col + j, v[j], alpha, beta);
        }
    }
}

// lds4: one `ld.shared.v4` from a 16-byte-aligned shared address.
__device__ __forceinline__ float4 lds4(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

// load4: four f32 of row `row`, columns col..col+4, zero outside rows×cols; `fast` takes one
// 16-byte `ld.global.nc`.
__device__ __forceinline__ void load4(const float* p, u32 rows, u32 cols, u32 ld, u32 row,
                                      u32 col, bool fast, float v[4]) {
    if (fast) {
        float4 q = load_f32x4_nc(p + at(row, ld, col));
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    } else {
        v[0] = 0.0f;
        v[1] = 0.0f;
        v[2] = 0.0f;
        v[3] = 0.0f;
        if (row < rows) {
#pragma unroll
            for (u32 j = 0; j < 4; j++) {
                if (col + j < cols) v[j] = p[at(row, ld, col + j)];
            }
        }
    }
}

// fetch_tile: a ROWS×COLS tile at (r0, c0) into registers, float4 `t + i·THREADS` of the tile
// (row-major float4 order) for i < N.
template <int ROWS, int COLS, int T, int N>
__device__ __forceinline__ void fetch_tile(const float* p, u32 rows, u32 cols, u32 ld, u32 r0,
                                           u32 c0, u32 t, bool vec, float out[N][4]) {
    static_assert(ROWS * COLS / 4 == N * T && COLS % 4 == 0, "whole float4s per thread");
    bool fast = vec && r0 + (u32)ROWS <= rows && c0 + (u32)COLS <= cols;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 idx = (u64)t + (u64)i * T;
        u32 r = (u32)(idx / (COLS / 4));
        u32 c = (u32)(idx % (COLS / 4)) * 4;
        load4(p, rows, cols, ld, r0 + r, c0 + c, fast, out[i]);
    }
}

// store_a_transposed: a fetched BM×BK tile of A into as_[kk*LDA + mm].
template <int BK_, int LDA_, int T, int N>
__device__ __forceinline__ void store_a_transposed(const float v[N][4], u32 t, float* as_) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 idx = (u64)t + (u64)i * T;
        u64 r = idx / (BK_ / 4), c = (idx % (BK_ / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; j++) as_[(c + j) * LDA_ + r] = v[i][j];
    }
}

// store_b: a fetched BK×BN tile of B as it is, 16-byte shared stores.
template <int BN_, int T, int N>
__device__ __forceinline__ void store_b(const float v[N][4], u32 t, float* bs) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        u64 idx = (u64)t + (u64)i * T;
        u64 r = idx / (BN_ / 4), c = (idx % (BN_ / 4)) * 4;
        *reinterpret_cast<float4*>(bs + r * BN_ + c) = make_float4(v[i][0], v[i][1], v[i][2], v[i][3]);
    }
}

// ---- warp_tile_pipeline (mod.rs) ----

// v07_warptile::lane_origin: lanes LANES_N wide along N, in row-major lane order.
struct LaneOriginV07 {
    __device__ __forceinline__ void operator()(u32 lane, u32& r, u32& c) const {
        const u32 lanes_n = GEMM_V11_LANES_N;
        r = (lane / lanes_n) * GEMM_V11_LANE_TM;
        c = (lane % lanes_n) * GEMM_V11_LANE_TN;
    }
};

struct WarpTileOrigin {
    u32 bm0, bn0;
    u64 wm0, wn0, lr, lc;
};

template <typename LaneOrigin>
__device__ __forceinline__ WarpTileOrigin warp_tile_origin(u32 bm, u32 bn, u32 wm, u32 wn,
                                                           LaneOrigin lane_origin) {
    u32 t = threadIdx.x;
    WarpTileOrigin o;
    o.bm0 = blockIdx.y * bm;
    o.bn0 = blockIdx.x * bn;
    u32 w = t / WARP_SIZE;
    o.wm0 = (u64)((w / (bn / wn)) * wm);
    o.wn0 = (u64)((w % (bn / wn)) * wn);
    u32 lr, lc;
    lane_origin(t % WARP_SIZE, lr, lc);
    o.lr = (u64)lr;
    o.lc = (u64)lc;
    return o;
}

// ---- fragments.rs: one BK = 16 slice ----

// A lane's fragments at step kk: MI float4 of A (transposed tile, columns a_off + s·SUBM_),
// NI float4 of B (columns b_off + s·SUBN_).
template <int LDA_, int BN_, int SUBM_, int SUBN_, int MI_, int NI_, int R_, int C_>
__device__ __forceinline__ void frag(const float* as_, const float* bs, u64 a_off, u64 b_off,
                                     int kk, float fa[R_], float fb[C_]) {
#pragma unroll
    for (int s = 0; s < MI_; s++) {
        float4 v = lds4(as_ + ((u64)kk * LDA_ + a_off + (u64)s * SUBM_));
        fa[s * 4 + 0] = v.x;
        fa[s * 4 + 1] = v.y;
        fa[s * 4 + 2] = v.z;
        fa[s * 4 + 3] = v.w;
    }
#pragma unroll
    for (int s = 0; s < NI_; s++) {
        float4 v = lds4(bs + ((u64)kk * BN_ + b_off + (u64)s * SUBN_));
        fb[s * 4 + 0] = v.x;
        fb[s * 4 + 1] = v.y;
        fb[s * 4 + 2] = v.z;
        fb[s * 4 + 3] = v.w;
    }
}

// warp_tile_bk16: the k loop fully unrolled, fragments of step kk+1 loaded before the R·C
// FMAs of step kk (acc[i][j] = fma(a[i], b[j], acc[i][j]), i outer, j inner).
template <int LDA_, int BN_, int SUBM_, int SUBN_, int MI_, int NI_, int R_, int C_>
__device__ __forceinline__ void warp_tile_bk16(const float* as_, const float* bs, u64 a_off,
                                               u64 b_off, float (&acc)[R_][C_]) {
    static_assert(R_ == 4 * MI_ && C_ == 4 * NI_ && R_ <= 16 && C_ <= 16, "4×4 patches");
    float fa[2][R_];
    float fb[2][C_];
    frag<LDA_, BN_, SUBM_, SUBN_, MI_, NI_, R_, C_>(as_, bs, a_off, b_off, 0, fa[0], fb[0]);
#pragma unroll
    for (int kk = 0; kk < 16; kk++) {
        if (kk + 1 < 16)
            frag<LDA_, BN_, SUBM_, SUBN_, MI_, NI_, R_, C_>(as_, bs, a_off, b_off, kk + 1,
                                                            fa[(kk + 1) % 2], fb[(kk + 1) % 2]);
        const float* ra = fa[kk % 2];
        const float* rb = fb[kk % 2];
#pragma unroll
        for (int i = 0; i < R_; i++) {
#pragma unroll
            for (int j = 0; j < C_; j++) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
    }
}

// ---- epilogue.rs ----

template <int SUBM_, int SUBN_, int MI_, int NI_, int R_, int C_>
__device__ __forceinline__ void store_warp_tile(float* c, u32 m, u32 n, WarpTileOrigin o,
                                                const float (&acc)[R_][C_], float alpha,
                                                float beta, bool c_vec) {
    static_assert(MI_ <= 4 && NI_ <= 4 && R_ == 4 * MI_ && C_ == 4 * NI_, "4×4 patches");
#pragma unroll
    for (int sm = 0; sm < MI_; sm++) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float* r = acc[sm * 4 + i];
            u32 row = o.bm0 + (u32)(o.wm0 + (u64)sm * SUBM_ + o.lr + (u64)i);
#pragma unroll
            for (int sn = 0; sn < NI_; sn++) {
                u32 col = o.bn0 + (u32)(o.wn0 + (u64)sn * SUBN_ + o.lc);
                float v[4] = {r[sn * 4], r[sn * 4 + 1], r[sn * 4 + 2], r[sn * 4 + 3]};
                store_c4(c, m, n, row, col, v, alpha, beta, c_vec);
            }
        }
    }
}

// ---- pipeline.rs ----

// load_stage_b: the 16×BN tile of B at k0 into the stage at `stage_ptr` (after its BK·LDA f32
// of A), NB_ float4s per thread, committed as one group.
template <int BN_, int LDA_, int T, int NB_>
__device__ __forceinline__ void load_stage_b(const float* b, u32 n, u32 k, u32 bn0, u32 k0, u32 t,
                                             float* stage_ptr, bool b_vec) {
    u32 stage = shared_addr(stage_ptr);
    u32 bs = stage + 4 * (u32)(BKU * LDA_);
    if (b_vec) {
#pragma unroll
        for (int i = 0; i < NB_; i++) {
            u64 idx = (u64)t + (u64)i * T;
            u32 r = (u32)(idx / (BN_ / 4));
            u32 cc = (u32)(idx % (BN_ / 4)) * 4;
            u32 row = k0 + r, col = bn0 + cc;
            u32 left = n - col;
            u32 bytes = (row < k && col < n) ? 4 * (left < 4u ? left : 4u) : 0u;
            const float* src = bytes > 0 ? b + at(row, n, col) : b;
            copy_16_zfill(bs + 4 * (r * (u32)BN_ + cc), src, bytes);
        }
    } else {
        float rb[NB_][4];
        fetch_tile<BKU, BN_, T, NB_>(b, k, n, n, k0, bn0, t, false, rb);
        store_b<BN_, T, NB_>(rb, t, stage_ptr + BKU * LDA_);
    }
    commit_group();
}

// run: the whole two-stage kernel body at the given geometry and lane map.
template <int BM_, int BN_, int LDA_, int T, int WM_, int WN_, int MI_, int NI_, int NA_,
          int NB_, int R_, int C_, typename LaneOrigin>
__device__ __forceinline__ void run(u32 m, u32 n, u32 k, float alpha, const float* a,
                                    const float* b, float beta, float* c, float* smem,
                                    LaneOrigin lane_origin) {
    static_assert(WM_ == MI_ * SUB_M && WN_ == NI_ * SUB_N, "sub-tiles must be SUB_M×SUB_N");
    const u64 stage_f32 = (u64)BKU * (LDA_ + BN_);
    const u32 BK32 = (u32)BKU;
    u32 t = threadIdx.x;
    WarpTileOrigin o = warp_tile_origin((u32)BM_, (u32)BN_, (u32)WM_, (u32)WN_, lane_origin);
    u32 bm0 = o.bm0, bn0 = o.bn0;
    bool b_vec = rows_vectorizable((u64)b, n);
    bool c_vec = rows_vectorizable((u64)c, n);
    bool a_vec = rows_vectorizable((u64)a, k);
    u32 tiles = k / BK32 + (k % BK32 != 0 ? 1u : 0u);  // k.div_ceil(BK32)
    float acc[R_][C_];
#pragma unroll
    for (int i = 0; i < R_; i++) {
#pragma unroll
        for (int j = 0; j < C_; j++) acc[i][j] = 0.0f;
    }
    if (tiles > 0) {
        load_stage_b<BN_, LDA_, T, NB_>(b, n, k, bn0, 0, t, smem, b_vec);
        float ra[NA_][4];
        fetch_tile<BM_, BKU, T, NA_>(a, m, k, k, bm0, 0, t, a_vec, ra);
        store_a_transposed<BKU, LDA_, T, NA_>(ra, t, smem);
        wait_group<0>();
        __syncthreads();
    }
    for (u32 tile = 0; tile < tiles; tile++) {
        float* cur = smem + (u64)(tile % STAGES) * stage_f32;
        float* next = smem + (u64)((tile + 1) % STAGES) * stage_f32;
        // Next tile: B by cp.async into the other stage, A into registers; past the last
        // tile both take their checked paths, read nothing and fill the idle stage with 0.
        u32 k0 = (tile + 1) * BK32;
        load_stage_b<BN_, LDA_, T, NB_>(b, n, k, bn0, k0, t, next, b_vec);
        float ra[NA_][4];
        fetch_tile<BM_, BKU, T, NA_>(a, m, k, k, bm0, k0, t, a_vec, ra);
        const float* bs = cur + BKU * LDA_;
        warp_tile_bk16<LDA_, BN_, SUB_M, SUB_N, MI_, NI_, R_, C_>(cur, bs, o.wm0 + o.lr,
                                                                  o.wn0 + o.lc, acc);
        store_a_transposed<BKU, LDA_, T, NA_>(ra, t, next);
        wait_group<0>();
        __syncthreads();
    }
    store_warp_tile<SUB_M, SUB_N, MI_, NI_, R_, C_>(c, m, n, o, acc, alpha, beta, c_vec);
}

}  // namespace gemm

extern "C" __global__ void cuda_gemm_v11_block_256x128(u32 m, u32 n, u32 k, float alpha,
                                                       const float* a, const float* b,
                                                       float beta, float* c) {
    // Declared as float4 so the dynamic shared block is 16-byte aligned (as the Rust F32x4).
    extern __shared__ float4 gemm_v11_smem[];
    gemm::run<gemm::BM, gemm::BN, gemm::LDA, gemm::THREADS, gemm::WM, gemm::WN, gemm::MI,
              gemm::NI, gemm::NA, gemm::NB, gemm::R, gemm::C>(
        m, n, k, alpha, a, b, beta, c, reinterpret_cast<float*>(gemm_v11_smem),
        gemm::LaneOriginV07());
}
