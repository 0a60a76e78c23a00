//! Family `fused_elementwise`: `y = gelu(x * scale + bias) + residual` over a rows x cols
//! tensor, `scale` and `bias` per column (length `cols`), in f32 and bf16 (raw u16 bits).
//!
//! The point of the ladder: the chain does a few FLOPs per element, so its time is the bytes
//! it moves. Materializing every intermediate (v01) moves 9 elements per element; one fused
//! kernel (v02, v03) moves 3. Arithmetic is f32 for both storage types.
//!
//! The GELU helpers here are plain Rust, generic over the `exp2` they use, so the host's unit
//! tests check the same formulas (with an exact exp2) that the kernels run (with
//! `ex2.approx`).

pub mod v01_unfused;
pub mod v02_fused;
pub mod v03_fused_vectorized;

/// `mode` argument of the kernels: GELU with the exact erf.
pub const GELU_ERF: u32 = 0;
/// `mode` argument of the kernels: GELU's tanh approximation.
pub const GELU_TANH: u32 = 1;

/// log2(e): `e^x` is computed as `2^(x log2 e)`.
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;
/// sqrt(2 / pi).
pub const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The cubic term of GELU's tanh approximation.
pub const GELU_CUBIC: f32 = 0.044_715;
/// 1 / sqrt(2): erf's argument.
pub const FRAC_1_SQRT_2: f32 = core::f32::consts::FRAC_1_SQRT_2;
/// Abramowitz & Stegun 7.1.26's p and a1..a5 (see `erf_as`).
pub const ERF_P: f32 = 0.327_591_1;
pub const ERF_A: [f32; 5] = [
    0.254_829_6,
    -0.284_496_74,
    1.421_413_7,
    -1.453_152_1,
    1.061_405_4,
];

/// erf(x) by Abramowitz & Stegun 7.1.26: `1 - (a1 t + .. + a5 t^5) e^(-x^2)`,
/// `t = 1 / (1 + p|x|)`, odd in x. Absolute error at most 1.5e-7 in exact arithmetic; in f32
/// the polynomial's rounding brings it to ~6.5e-7 (near 0, where `1 - poly e^(-x^2)`
/// cancels; checked by the host's unit tests), `ex2.approx` adds ~2^-22 relative. The
/// reciprocal is `rcp` (on the device `rcp.approx`, 1 ulp): an IEEE division there cost
/// about ten instructions per element, which bf16's 8 elements per 16 bytes could not
/// afford (ncu: issue-bound, docs/05).
#[inline(always)]
pub fn erf_as<E: Fn(f32) -> f32, R: Fn(f32) -> f32>(x: f32, exp2: E, rcp: R) -> f32 {
    const P: f32 = ERF_P;
    const A: [f32; 5] = ERF_A;
    let a = if x < 0.0 { -x } else { x };
    let t = rcp(1.0 + P * a);
    let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    let r = 1.0 - poly * exp2(-(a * a) * LOG2_E);
    if x < 0.0 { -r } else { r }
}

/// GELU of `u`: `mode == GELU_TANH` is `0.5 u (1 + tanh(k))` with
/// `k = sqrt(2/pi)(u + 0.044715 u^3)`, computed as `u / (1 + e^(-2k))` (the same function:
/// 0.5(1 + tanh k) is the logistic of 2k), which needs one exp and is accurate to a few ulp
/// where `tanh.approx` would give ~5e-4; otherwise `0.5 u (1 + erf(u / sqrt 2))`. `exp2`
/// and `rcp` are the device's approximate instructions (host tests pass exact ones, and a
/// reciprocal 1 ulp off).
#[inline(always)]
pub fn gelu<E: Fn(f32) -> f32, R: Fn(f32) -> f32>(u: f32, mode: u32, exp2: E, rcp: R) -> f32 {
    if mode == GELU_TANH {
        let k = SQRT_2_OVER_PI * (u + GELU_CUBIC * (u * u * u));
        // e^(-2k) overflows to inf for very negative u: u · (1/inf) = -0, the right limit.
        u * rcp(1.0 + exp2(-2.0 * LOG2_E * k))
    } else {
        0.5 * u * (1.0 + erf_as(u * FRAC_1_SQRT_2, exp2, rcp))
    }
}
