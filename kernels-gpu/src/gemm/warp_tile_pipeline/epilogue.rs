//! Epilogue: a lane's accumulators of the warp-tiled kernels (v07-v11) out to C,
//! `alpha·acc + beta·C`, four columns at a time (one 16-byte store where C's rows allow).

use super::WarpTileOrigin;
use crate::gemm::dev::store_c4;

/// The warp-tiled kernels' epilogue: a thread's R×C results (MI×NI sub-tiles of 4×4,
/// the sub-tiles SUBM rows and SUBN columns apart) at `o`, four columns at a time
/// through [`store_c4`]. MI and NI are at most 4 (R = 4·MI, C = 4·NI).
///
/// # Safety
/// `c` is an M×N matrix; `c_vec` only if `rows_vectorizable(c, n)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub unsafe fn store_warp_tile<
    const SUBM: usize,
    const SUBN: usize,
    const MI: usize,
    const NI: usize,
    const R: usize,
    const C: usize,
>(
    c: *mut f32,
    m: u32,
    n: u32,
    o: WarpTileOrigin,
    acc: &[[f32; C]; R],
    alpha: f32,
    beta: f32,
    c_vec: bool,
) {
    const { assert!(MI <= 4 && NI <= 4 && R == 4 * MI && C == 4 * NI) };
    // unroll! needs a literal count: 4, with the steps past MI / NI folded away.
    unroll!(4, sm => {
        if sm < MI {
            unroll!(4, i => {
                let r = &acc[sm * 4 + i];
                let row = o.bm0 + (o.wm0 + sm * SUBM + o.lr + i) as u32;
                unroll!(4, sn => {
                    if sn < NI {
                        let col = o.bn0 + (o.wn0 + sn * SUBN + o.lc) as u32;
                        let v = [r[sn * 4], r[sn * 4 + 1], r[sn * 4 + 2], r[sn * 4 + 3]];
                        // SAFETY: store_c4 checks row and col against M and N.
                        unsafe { store_c4(c, m, n, row, col, v, alpha, beta, c_vec) };
                    }
                });
            });
        }
    });
}
