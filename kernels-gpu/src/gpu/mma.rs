//! Warp-level tensor-core matrix multiply (`mma.sync`) and its shared-memory fragment loads
//! (`ldmatrix`), sm_80 and newer.
//!
//! One `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` has the 32 lanes of a warp
//! multiply a 16×16 bf16 tile of A by a 16×8 bf16 tile of B into a 16×8 f32 tile of D = A·B + C.
//! Each lane holds a fixed piece (*fragment*) of every operand, as the PTX ISA lays it out
//! ("Matrix Fragments for mma.m16n8k16 with floating point type"), with `g = lane >> 2`
//! (groupID) and `t = lane % 4` (threadID_in_group); each 32-bit register holds two bf16,
//! the lower-indexed element in the low half:
//!
//! - A (row-major, 16 rows × 16 k): `a[0]` = row g, k 2t..2t+1; `a[1]` = row g+8, k 2t..;
//!   `a[2]` = row g, k 2t+8..; `a[3]` = row g+8, k 2t+8..
//! - B ("col": 16 k × 8 columns, k contiguous per column): `b[0]` = k 2t..2t+1 of column g;
//!   `b[1]` = k 2t+8.. of column g.
//! - C, D (16 × 8 f32): `c[0], c[1]` = row g, columns 2t, 2t+1; `c[2], c[3]` = row g+8.
//!
//! `ldmatrix.m8n8.xN` loads N 8×8 b16 matrices from shared memory in exactly that register
//! shape: lanes 8i..8i+7 give the addresses of the 8 rows (16 bytes each) of matrix i, and
//! every lane receives, in register i, the two elements at row g, columns 2t, 2t+1 of
//! matrix i. So a 16×16 A tile stored row-major (k contiguous) is one `.x4` with lane `l`
//! pointing at row `l % 16`, column `(l / 16)·8`; and a 16×16 piece of B stored as n rows of
//! k (which is W itself for `y = x·Wᵀ`) is one `.x4` for two 16×8 B tiles.

use core::arch::asm;

/// `d = a·b + c` for one m16n8k16 tile, bf16 inputs, f32 accumulators
/// (`mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`). See the module docs for which
/// elements each lane holds. All 32 lanes of the warp must execute it together.
#[inline(always)]
pub fn mma_m16n8k16_bf16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let [mut d0, mut d1, mut d2, mut d3] = c;
    // SAFETY: register operands only; the callers keep the whole warp converged here.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \
             {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}};",
            inout(reg32) d0, inout(reg32) d1, inout(reg32) d2, inout(reg32) d3,
            in(reg32) a[0], in(reg32) a[1], in(reg32) a[2], in(reg32) a[3],
            in(reg32) b[0], in(reg32) b[1],
            options(pure, nomem, nostack)
        )
    };
    [d0, d1, d2, d3]
}

/// Four 8×8 b16 matrices from shared memory (`ldmatrix.sync.aligned.m8n8.x4.shared.b16`):
/// lane `l` gives the `.shared` address of row `l % 8` of matrix `l / 8`; register `i` of
/// every lane gets row `lane >> 2`, columns `2·(lane % 4)`, `+1` of matrix `i`.
///
/// # Safety
/// Every lane's `addr` is a 16-byte-aligned `.shared` address of 16 readable bytes; all 32
/// lanes execute it together.
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    // SAFETY: forwarded from the caller. Not `nomem`: it reads shared memory, which a
    // barrier (a memory clobber) orders it after.
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{0}, {1}, {2}, {3}}}, [{4}];",
            out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3, in(reg32) addr,
            options(pure, readonly, nostack)
        )
    };
    [r0, r1, r2, r3]
}

/// Two 8×8 b16 matrices from shared memory (`ldmatrix.sync.aligned.m8n8.x2.shared.b16`):
/// lanes 0-15 give the row addresses (lane `l`: row `l % 8` of matrix `l / 8`); the
/// addresses of lanes 16-31 are not used.
///
/// # Safety
/// As [`ldmatrix_x4`], for the addresses of lanes 0-15.
#[inline(always)]
pub unsafe fn ldmatrix_x2(addr: u32) -> [u32; 2] {
    let (r0, r1): (u32, u32);
    // SAFETY: as `ldmatrix_x4`.
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{0}, {1}}}, [{2}];",
            out(reg32) r0, out(reg32) r1, in(reg32) addr,
            options(pure, readonly, nostack)
        )
    };
    [r0, r1]
}

/// Four 8×8 b16 matrices from shared memory, transposed on the way
/// (`ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`): lane `l` gives the `.shared` address
/// of row `l % 8` of matrix `l / 8`, as for [`ldmatrix_x4`]; register `i` of every lane gets
/// the elements at rows `2·(lane % 4)` (low half) and `2·(lane % 4) + 1` (high half), column
/// `lane >> 2`, of matrix `i`. So a B operand stored k-major — rows of k with n contiguous,
/// as V (keys × head dims) is for `P·V` — loads straight into the "col" fragment: with
/// matrices 0, 1 the rows k 0..8 and 8..16 of columns n0..n0+8, registers 0, 1 are that n8
/// tile's `b[0]` (k 2t, 2t+1 of column g) and `b[1]` (k 2t+8, 2t+9).
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans(addr: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    // SAFETY: as `ldmatrix_x4`.
    unsafe {
        asm!(
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{0}, {1}, {2}, {3}}}, [{4}];",
            out(reg32) r0, out(reg32) r1, out(reg32) r2, out(reg32) r3, in(reg32) addr,
            options(pure, readonly, nostack)
        )
    };
    [r0, r1, r2, r3]
}

/// The transpose of an 8×8 b16 matrix held in fragment layout
/// (`movmatrix.sync.aligned.m8n8.trans.b16`): lane `l` holds row `l >> 2`, columns
/// `2·(l % 4)`, `+1` before, and the same places of the transpose after. Turns a C fragment
/// (rows of M) packed to bf16 into the B fragment of the product by its transpose without
/// shared memory (decode v06's weights). All 32 lanes execute it together.
#[inline(always)]
pub fn movmatrix_trans(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register operands only; the callers keep the whole warp converged here.
    unsafe {
        asm!(
            "movmatrix.sync.aligned.m8n8.trans.b16 {0}, {1};",
            out(reg32) r, in(reg32) x,
            options(pure, nomem, nostack)
        )
    };
    r
}

/// Two f32 -> one 32-bit word of two bf16, round to nearest even (`cvt.rn.bf16x2.f32`):
/// `lo` in the low half (the lower address). The epilogue's packing of `c[0], c[1]`.
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    super::bf16::pack2(lo, hi)
}

/// Two f32 weights as a bf16 pair (`hi`) and the bf16 pair of what that rounding left
/// (`lo`): `p ≈ hi + lo` within ~2^-17 relative, so `mma(hi) + mma(lo)` multiplies by f32
/// weights to that precision (attention v03's and decode v05's `P` split).
#[inline(always)]
pub fn split_bf16x2(p0: f32, p1: f32) -> (u32, u32) {
    let hi = pack_bf16x2(p0, p1);
    let (h0, h1) = (f32::from_bits(hi << 16), f32::from_bits(hi & 0xffff_0000));
    (hi, pack_bf16x2(p0 - h0, p1 - h1))
}

/// Two bf16 bits -> one 32-bit fragment register, `lo` in the low half.
#[inline(always)]
pub fn pair_bf16(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// `st.shared.v4.u32`: 16 bytes (eight bf16) into shared memory.
///
/// # Safety
/// `addr` is a 16-byte-aligned `.shared` address of 16 writable bytes.
#[inline(always)]
pub unsafe fn store_shared_u32x4(addr: u32, v: [u32; 4]) {
    // SAFETY: forwarded from the caller.
    unsafe {
        asm!(
            "st.shared.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg32) addr, in(reg32) v[0], in(reg32) v[1], in(reg32) v[2], in(reg32) v[3],
            options(nostack)
        )
    };
}
