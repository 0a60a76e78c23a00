//! bf16 storage: conversions to and from f32, and one `Storage` trait so that a kernel is
//! written once and instantiated for f32 and bf16 (bf16 travels as its raw `u16` bits).
//!
//! Arithmetic is always f32: bf16 -> f32 is exact (the bits shifted up), f32 -> bf16 rounds
//! to nearest even with `cvt.rn.bf16.f32` / `cvt.rn.bf16x2.f32` (sm_80 and newer).

use core::arch::asm;

/// bf16 bits -> f32 (exact).
#[inline(always)]
pub fn to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// f32 -> bf16 bits, round to nearest even (NaN stays NaN).
#[inline(always)]
pub fn from_f32(x: f32) -> u16 {
    let out: u16;
    // SAFETY: pure arithmetic.
    unsafe {
        asm!("cvt.rn.bf16.f32 {0}, {1};", out(reg16) out, in(reg32) x, options(pure, nomem, nostack))
    };
    out
}

/// Two f32 -> one 32-bit word of two bf16: `lo` in the low half (the lower address).
#[inline(always)]
pub fn pack2(lo: f32, hi: f32) -> u32 {
    let out: u32;
    // SAFETY: pure arithmetic. `cvt.rn.bf16x2.f32 d, a, b` puts a in the upper half.
    unsafe {
        asm!("cvt.rn.bf16x2.f32 {0}, {1}, {2};", out(reg32) out, in(reg32) hi, in(reg32) lo,
             options(pure, nomem, nostack))
    };
    out
}

/// 16 bytes through the read-only path (`ld.global.nc.v4.u32`).
#[inline(always)]
pub unsafe fn load16_nc(p: *const u8) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees 16 readable, 16-byte-aligned global bytes that no thread
    // of this grid writes.
    unsafe {
        asm!(
            "ld.global.nc.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
            options(readonly, nostack, pure)
        )
    };
    [a, b, c, d]
}

/// 16 bytes stored with `st.global.v4.u32`.
#[inline(always)]
pub unsafe fn store16(p: *mut u8, v: [u32; 4]) {
    // SAFETY: the caller guarantees 16 writable, 16-byte-aligned global bytes.
    unsafe {
        asm!(
            "st.global.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg64) p, in(reg32) v[0], in(reg32) v[1], in(reg32) v[2], in(reg32) v[3],
            options(nostack)
        )
    };
}

/// An L2 eviction priority for `.L2::cache_hint` accesses, made by `createpolicy.fractional`
/// (sm_80 and newer). A kernel that reads the same bytes twice, moments apart, marks the first
/// read `evict_last` so that L2 keeps them against the stream of other traffic, and the last
/// read and its output `evict_first` so that they leave first.
#[derive(Clone, Copy)]
pub struct L2Policy(u64);

impl L2Policy {
    /// Lines touched under this policy are evicted after all others.
    #[inline(always)]
    pub fn evict_last() -> Self {
        let p: u64;
        // SAFETY: pure: builds a 64-bit policy value, touches no memory.
        unsafe {
            asm!("createpolicy.fractional.L2::evict_last.b64 {0}, 1.0;", out(reg64) p,
                 options(pure, nomem, nostack))
        };
        Self(p)
    }
    /// Lines touched under this policy are evicted before all others.
    #[inline(always)]
    pub fn evict_first() -> Self {
        let p: u64;
        // SAFETY: as in `evict_last`.
        unsafe {
            asm!("createpolicy.fractional.L2::evict_first.b64 {0}, 1.0;", out(reg64) p,
                 options(pure, nomem, nostack))
        };
        Self(p)
    }
}

/// `load16_nc` with an L2 eviction policy (`ld.global.nc.L2::cache_hint.v4.u32`).
#[inline(always)]
pub unsafe fn load16_nc_hint(p: *const u8, policy: L2Policy) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: as in `load16_nc`; the policy is a hint and changes no value.
    unsafe {
        asm!(
            "ld.global.nc.L2::cache_hint.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}], {5};",
            out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) p,
            in(reg64) policy.0, options(readonly, nostack, pure)
        )
    };
    [a, b, c, d]
}

/// `store16` with an L2 eviction policy (`st.global.L2::cache_hint.v4.u32`).
#[inline(always)]
pub unsafe fn store16_hint(p: *mut u8, v: [u32; 4], policy: L2Policy) {
    // SAFETY: as in `store16`.
    unsafe {
        asm!(
            "st.global.L2::cache_hint.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}}, {5};",
            in(reg64) p, in(reg32) v[0], in(reg32) v[1], in(reg32) v[2], in(reg32) v[3],
            in(reg64) policy.0, options(nostack)
        )
    };
}

/// An element type as stored in global memory; all arithmetic happens in f32.
pub trait Storage: Copy {
    /// Elements in one 16-byte vector (4 for f32, 8 for bf16).
    const PER16: usize;
    /// One element, widened to f32.
    unsafe fn load(p: *const Self) -> f32;
    /// One element, rounded from f32.
    unsafe fn store(p: *mut Self, v: f32);
    /// `PER16` elements from a 16-byte-aligned address into `out[..PER16]`.
    #[inline(always)]
    unsafe fn load16(p: *const Self, out: &mut [f32; 8]) {
        // SAFETY: forwarded from the caller.
        Self::unpack16(unsafe { load16_nc(p.cast()) }, out)
    }
    /// The `PER16` elements of 16 raw bytes (as loaded, lowest address first) into
    /// `out[..PER16]`: how `load16` and loads from shared memory widen them.
    fn unpack16(w: [u32; 4], out: &mut [f32; 8]);
    /// `v[..PER16]` as the 16 raw bytes `store16` writes (the inverse of `unpack16`).
    fn pack16(v: &[f32; 8]) -> [u32; 4];
    /// `v[..PER16]` to a 16-byte-aligned address.
    #[inline(always)]
    unsafe fn store16(p: *mut Self, v: &[f32; 8]) {
        // SAFETY: forwarded from the caller.
        unsafe { store16(p.cast(), Self::pack16(v)) }
    }
}

impl Storage for f32 {
    const PER16: usize = 4;
    #[inline(always)]
    unsafe fn load(p: *const f32) -> f32 {
        // SAFETY: forwarded from the caller.
        unsafe { *p }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: f32) {
        // SAFETY: forwarded from the caller.
        unsafe { *p = v }
    }
    #[inline(always)]
    fn unpack16(w: [u32; 4], out: &mut [f32; 8]) {
        for k in 0..4 {
            out[k] = f32::from_bits(w[k]);
        }
    }
    #[inline(always)]
    fn pack16(v: &[f32; 8]) -> [u32; 4] {
        [v[0].to_bits(), v[1].to_bits(), v[2].to_bits(), v[3].to_bits()]
    }
}

/// bf16 as raw bits.
impl Storage for u16 {
    const PER16: usize = 8;
    #[inline(always)]
    unsafe fn load(p: *const u16) -> f32 {
        // SAFETY: forwarded from the caller.
        to_f32(unsafe { *p })
    }
    #[inline(always)]
    unsafe fn store(p: *mut u16, v: f32) {
        // SAFETY: forwarded from the caller.
        unsafe { *p = from_f32(v) }
    }
    #[inline(always)]
    fn unpack16(w: [u32; 4], out: &mut [f32; 8]) {
        for k in 0..4 {
            // Little-endian: the element at the lower address is the low half.
            out[2 * k] = f32::from_bits(w[k] << 16);
            out[2 * k + 1] = f32::from_bits(w[k] & 0xffff_0000);
        }
    }
    #[inline(always)]
    fn pack16(v: &[f32; 8]) -> [u32; 4] {
        [
            pack2(v[0], v[1]),
            pack2(v[2], v[3]),
            pack2(v[4], v[5]),
            pack2(v[6], v[7]),
        ]
    }
}

/// Whether `p` is 16-byte aligned.
#[inline(always)]
pub fn aligned16<T>(p: *const T) -> bool {
    (p as u64) & 15 == 0
}

/// `f(0), f(1), .., f(n - 1)` for `n <= 8`, written out so that the calls are always
/// unrolled (LLVM's unroller gives up on large bodies, and a loop over a register array
/// then puts the array in local memory). With a constant `n` the guards fold away.
#[inline(always)]
pub fn each8(n: usize, mut f: impl FnMut(usize)) {
    f(0);
    if n > 1 {
        f(1);
    }
    if n > 2 {
        f(2);
    }
    if n > 3 {
        f(3);
    }
    if n > 4 {
        f(4);
    }
    if n > 5 {
        f(5);
    }
    if n > 6 {
        f(6);
    }
    if n > 7 {
        f(7);
    }
}
