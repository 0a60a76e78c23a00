//! Fragments: the math of one BK = 16 slice of the block tile for the warp-tiled kernels
//! (v07-v11). Each lane reads its fragments of A (from the transposed tile) and of B from
//! shared memory, one float4 per 4×4 sub-tile patch, and accumulates their outer product.

use crate::gemm::dev::lds4;

/// The math of one BK = 16 slice for the warp-tiled kernels (v07-v11): a lane's R×C
/// results as MI×NI sub-tiles of 4×4, A read from the transposed tile at columns
/// `a_off + s·SUBM`, B at columns `b_off + s·SUBN`. The k loop is fully unrolled and the
/// register fragments are double-buffered: the MI + NI `ld.shared.v4` of step kk+1 are
/// issued before the R·C FMAs of step kk, so shared-memory latency overlaps the math.
///
/// # Safety
/// `as_` is a 16·LDA-f32 tile, `bs` a 16·BN-f32 tile, both 16-byte aligned; `a_off`,
/// `b_off`, SUBM, SUBN, LDA and BN are multiples of 4 with `a_off + (MI-1)·SUBM + 4 <=
/// LDA` and `b_off + (NI-1)·SUBN + 4 <= BN`.
#[inline(always)]
pub unsafe fn warp_tile_bk16<
    const LDA: usize,
    const BN: usize,
    const SUBM: usize,
    const SUBN: usize,
    const MI: usize,
    const NI: usize,
    const R: usize,
    const C: usize,
>(
    as_: *const f32,
    bs: *const f32,
    a_off: usize,
    b_off: usize,
    acc: &mut [[f32; C]; R],
) {
    const { assert!(R == 4 * MI && C == 4 * NI && R <= 16 && C <= 16) };
    // SAFETY: every read is a float4 inside the tiles by the caller's contract.
    let frag = |kk: usize| unsafe {
        let mut fa = [0.0f32; R];
        let mut fb = [0.0f32; C];
        unroll!(4, s => {
            if s < MI {
                let v = lds4(as_.add(kk * LDA + a_off + s * SUBM));
                unroll!(4, q => { fa[s * 4 + q] = v[q]; });
            }
        });
        unroll!(4, s => {
            if s < NI {
                let v = lds4(bs.add(kk * BN + b_off + s * SUBN));
                unroll!(4, q => { fb[s * 4 + q] = v[q]; });
            }
        });
        (fa, fb)
    };
    let mut fa = [[0.0f32; R]; 2];
    let mut fb = [[0.0f32; C]; 2];
    (fa[0], fb[0]) = frag(0);
    unroll!(16, kk => {
        if kk + 1 < 16 {
            (fa[(kk + 1) % 2], fb[(kk + 1) % 2]) = frag(kk + 1);
        }
        let (ra, rb) = (&fa[kk % 2], &fb[kk % 2]);
        // Spelled out (LLVM stops unrolling at 16×8, and a loop indexing `acc` would
        // put it in local memory).
        unroll!(16, i => {
            if i < R {
                unroll!(16, j => {
                    if j < C {
                        acc[i][j] = crate::gpu::math::fma(ra[i], rb[j], acc[i][j]);
                    }
                });
            }
        });
    });
}
