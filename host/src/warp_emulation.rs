//! One warp's tensor-core and shuffle instructions on the CPU, register by register, as the
//! PTX ISA lays out their fragments: the host tests run a kernel's own index functions
//! through these to catch a fragment, swizzle or mask bug before any GPU (attention v03,
//! decode v06). Values are bf16 bit patterns packed two to a 32-bit register, the low half
//! first, as `cvt.rn.bf16x2.f32` packs them.

use half::bf16;

/// One value per lane.
pub type Lanes<T> = [T; 32];

pub fn to_bits(x: f32) -> u16 {
    bf16::from_f32(x).to_bits()
}

pub fn from_bits(b: u16) -> f32 {
    bf16::from_bits(b).to_f32()
}

/// Two bf16 in one register, `lo` in the low half (`cvt.rn.bf16x2.f32`'s packing).
pub fn pack(lo: f32, hi: f32) -> u32 {
    to_bits(lo) as u32 | (to_bits(hi) as u32) << 16
}

/// The two bf16 of a register, low half first.
pub fn halves(w: u32) -> [f32; 2] {
    [from_bits(w as u16), from_bits((w >> 16) as u16)]
}

/// `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16` on `smem` (bytes as u16 words):
/// lane `l` addresses row `l % 8` of matrix `l / 8`; register `i` of lane `l` holds row
/// `l / 4`, columns `2·(l % 4)`, `+1` of matrix `i`, or with `.trans` rows `2·(l % 4)`,
/// `+1` of column `l / 4`. Each phase of 8 addresses must be 16-byte aligned, inside `limit`
/// (the tile read) and on 8 distinct bank groups (panics otherwise).
pub fn ldmatrix_x4(smem: &[u16], addr: &Lanes<u32>, limit: (u32, u32), trans: bool) -> Lanes<[u32; 4]> {
    for i in 0..4 {
        let mut groups = 0u32;
        for r in 0..8 {
            let a = addr[8 * i + r];
            assert!(a.is_multiple_of(16) && a >= limit.0 && a + 16 <= limit.1, "ldmatrix address {a}");
            groups |= 1 << ((a / 16) % 8);
        }
        assert_eq!(groups, 0xff, "bank conflict in ldmatrix matrix {i}: {:?}", &addr[8 * i..8 * i + 8]);
    }
    let el = |i: usize, r: usize, c: usize| smem[(addr[8 * i + r] / 2) as usize + c];
    std::array::from_fn(|l| {
        let (g, t) = (l / 4, l % 4);
        std::array::from_fn(|i| {
            let (a, b) = if trans {
                (el(i, 2 * t, g), el(i, 2 * t + 1, g))
            } else {
                (el(i, g, 2 * t), el(i, g, 2 * t + 1))
            };
            a as u32 | (b as u32) << 16
        })
    })
}

/// `movmatrix.sync.aligned.m8n8.trans.b16`: lane `l` holds row `l / 4`, columns
/// `2·(l % 4)`, `+1` of an 8×8 matrix of b16; afterwards the same places of its transpose.
pub fn movmatrix_trans(x: &Lanes<u32>) -> Lanes<u32> {
    let el = |r: usize, c: usize| (x[4 * r + c / 2] >> (16 * (c % 2))) & 0xffff;
    std::array::from_fn(|l| {
        let (g, t) = (l / 4, l % 4);
        el(2 * t, g) | el(2 * t + 1, g) << 16
    })
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`, the fragments as the PTX ISA
/// places them (g = lane / 4, t = lane % 4): A a0 (g, 2t..), a1 (g + 8, 2t..), a2 (g,
/// 2t + 8..), a3 (g + 8, 2t + 8..); B b0 (k 2t.., n g), b1 (k 2t + 8.., n g); C/D c0, c1
/// (g, 2t, 2t + 1), c2, c3 (g + 8, ..). The products are summed in f64 and rounded once.
pub fn mma(a: &Lanes<[u32; 4]>, b: &Lanes<[u32; 2]>, c: &Lanes<[f32; 4]>) -> Lanes<[f32; 4]> {
    let mut am = [[f32::NAN; 16]; 16];
    let mut bm = [[f32::NAN; 8]; 16];
    for l in 0..32 {
        let (g, t) = (l / 4, l % 4);
        for (reg, (r, k)) in [(g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8)]
            .into_iter()
            .enumerate()
        {
            [am[r][k], am[r][k + 1]] = halves(a[l][reg]);
        }
        [bm[2 * t][g], bm[2 * t + 1][g]] = halves(b[l][0]);
        [bm[2 * t + 8][g], bm[2 * t + 9][g]] = halves(b[l][1]);
    }
    std::array::from_fn(|l| {
        let (g, t) = (l / 4, l % 4);
        std::array::from_fn(|e| {
            let (r, n) = (g + 8 * (e / 2), 2 * t + e % 2);
            let dot: f64 = (0..16).map(|k| am[r][k] as f64 * bm[k][n] as f64).sum();
            (c[l][e] as f64 + dot) as f32
        })
    })
}

/// `shfl.sync.bfly`: every lane reads lane `l ^ mask`'s value.
pub fn shfl_xor(x: &Lanes<f32>, mask: usize) -> Lanes<f32> {
    std::array::from_fn(|l| x[l ^ mask])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// movmatrix twice is the identity, and once moves element (r, c) to (c, r).
    #[test]
    fn movmatrix_transposes() {
        let x: Lanes<u32> = std::array::from_fn(|l| {
            let (r, c) = (l / 4, 2 * (l % 4));
            (8 * r + c) as u32 | ((8 * r + c + 1) as u32) << 16
        });
        let t = movmatrix_trans(&x);
        for (l, w) in t.iter().enumerate() {
            let (r, c) = (l / 4, 2 * (l % 4));
            assert_eq!(w & 0xffff, (8 * c + r) as u32);
            assert_eq!(w >> 16, (8 * (c + 1) + r) as u32);
        }
        assert_eq!(movmatrix_trans(&t), x);
    }
}
