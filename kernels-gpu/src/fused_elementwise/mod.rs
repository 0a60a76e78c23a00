//! Family `fused_elementwise`: `y = gelu(x * scale + bias) + residual` over a rows x cols
//! tensor, `scale` and `bias` per column (length `cols`), in f32 and bf16 (raw u16 bits).
//!
//! The point of the ladder: the chain does a few FLOPs per element, so its time is the bytes
//! it moves. Materializing every intermediate (v01) moves 9 elements per element; one fused
//! kernel (v02, v03) moves 3. Arithmetic is f32 for both storage types.
//!
//! The GELU helpers here are plain Rust, generic over the `exp2`, `rcp` (and `fma`) they use,
//! so the host's unit tests check the same formulas (with exact ones, and a reciprocal 1 ulp
//! off) that the kernels run (with `ex2.approx`, `rcp.approx`, `fma.rn`).
//!
//! Two erfs: `erf_as` (A&S 7.1.26, abs error ~6.5e-7; every f32 entry, and v01/v02 in both
//! dtypes) and `erf_fast` (the logistic of an odd polynomial, abs error <= 3.73e-5; v03's bf16
//! entry, through `gelu_bf16`). On sm_90a the bf16 v03 entry's erf path is 206 SASS
//! instructions a thread (8 elements) with `erf_fast`, 319 with `erf_as` (tanh: 214).

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

/// `erf_fast`'s coefficients: erf(x) ~ tanh(k(x)) with k odd, k(x) = c1 x + c3 x^3 + c5 x^5
/// fitted minimax (iteratively reweighted least squares, weight 1 - erf^2, over [0, 3.2];
/// c = 1.128_143_4, 0.104_081_19, -0.001_786_475), stored as `2 k log2(e)`: `K(x) = x (K[0] +
/// K[1] x^2 + K[2] x^4)` and `erf(x) ~ 1 - 2 / (1 + 2^K(x))`.
pub const ERF_FAST_K: [f32; 3] = [3.255_133_6, 0.300_314_8, -0.005_154_676_3];
/// `erf_fast` clamps x^2 to this (|x| = 4, erfc(4) = 1.5e-8): K[2] < 0 would turn K(x) back
/// down past |x| = 6.2; with the clamp K grows linearly beyond |x| = 4 (K(4) = 27, 2^-27).
pub const ERF_FAST_X2_MAX: f32 = 16.0;
/// `gelu_bf16`'s erf form is the same function of `u = sqrt(2) x`, negated:
/// `0.5 (1 + erf_fast(u / sqrt 2)) = 1 / (1 + 2^(-K(u / sqrt 2)))`, and `-K(u / sqrt 2) =
/// u (Q[0] + Q[1] u^2 + Q[2] u^4)` with `Q[j] = -K[j] / sqrt(2)^(2j+1)` (one f32 rounding
/// each: the powers of 2 are exact).
pub const GELU_ERF_FAST_Q: [f32; 3] = [
    -(ERF_FAST_K[0] * FRAC_1_SQRT_2),
    -(ERF_FAST_K[1] * FRAC_1_SQRT_2) * 0.5,
    -(ERF_FAST_K[2] * FRAC_1_SQRT_2) * 0.25,
];
/// `ERF_FAST_X2_MAX` in u: u^2 = 2 x^2.
pub const GELU_ERF_FAST_U2_MAX: f32 = 2.0 * ERF_FAST_X2_MAX;

/// `1 / (1 + 2^(v (c[0] + c[1] t + c[2] t^2)))`, `t = min(v^2, t_max)`: the logistic of an odd
/// polynomial, branch-free (the clamp is one `min`; `min` ignores a NaN t, v · p keeps it).
/// 2^(+inf) = inf and rcp(inf) = 0, so the limits are exact.
#[inline(always)]
fn logistic_odd<E, R, F>(v: f32, c: [f32; 3], t_max: f32, exp2: E, rcp: R, fma: F) -> f32
where
    E: Fn(f32) -> f32,
    R: Fn(f32) -> f32,
    F: Fn(f32, f32, f32) -> f32,
{
    let t = (v * v).min(t_max);
    let p = fma(fma(c[2], t, c[1]), t, c[0]);
    rcp(1.0 + exp2(v * p))
}

/// The cheap erf: `1 - 2 / (1 + 2^K(x))` (`ERF_FAST_K`, x^2 clamped to `ERF_FAST_X2_MAX`),
/// odd in exact arithmetic, +-1 at +-inf, NaN in NaN out. One `ex2`, one `rcp`, two FMAs
/// where `erf_as` has a degree-5 polynomial and the sign handling. Absolute error at most
/// 3.73e-5 (the fit's 3.696e-5 in exact arithmetic, equioscillating at |x| = 0.247, 0.755,
/// 1.320, 2.061; the host's unit test measures 3.731e-5, at x = -0.249, in f32 with fma,
/// `exp2` exact or 2^-22 off, the reciprocal exact or 1 ulp off, over every 1e-4 in [-8, 8]
/// and every 4096th f32): far inside bf16's rounding (2^-9 to 2^-8 relative, 1e-3 at 0.5).
/// Relative to erf near 0 it is 2.1e-4 (k's slope 1.128_143 against 2/sqrt(pi) =
/// 1.128_379), which the 1 + erf of the GELU hides. The kernels do not call this:
/// `gelu_bf16` runs the same function folded into the GELU (`GELU_ERF_FAST_Q`), checked by
/// the same sweep.
#[inline(always)]
pub fn erf_fast<E, R, F>(x: f32, exp2: E, rcp: R, fma: F) -> f32
where
    E: Fn(f32) -> f32,
    R: Fn(f32) -> f32,
    F: Fn(f32, f32, f32) -> f32,
{
    1.0 - 2.0 * logistic_odd(x, ERF_FAST_K, ERF_FAST_X2_MAX, exp2, rcp, fma)
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

/// The bf16 entries' GELU (v03): the tanh form as `gelu`'s; the erf form with `erf_fast`,
/// folded: `0.5 u (1 + erf_fast(u / sqrt 2)) = u / (1 + 2^(u (Q[0] + Q[1] u^2 + Q[2] u^4)))`
/// (`GELU_ERF_FAST_Q`, u^2 clamped to `GELU_ERF_FAST_U2_MAX`): u^2, the clamp, two FMAs,
/// u · p, `ex2`, + 1, `rcp`, u · r: 9 PTX instructions (10 in SASS, a MOV for the constant
/// the inner FMA cannot take as an immediate), where `gelu`'s erf form has 24 and its tanh
/// form 10. GELU's error: 0.5 |u| times erf_fast's, measured 5.5e-5 at most (u = 2.99) by the
/// host's unit test, which also rounds `gelu_bf16(u) + r` to bf16 as the kernel does: at
/// worst 0.53 of the bf16 tolerance (abs 1e-3 or rel 8e-3; the accurate erf: 0.49). f32
/// keeps `gelu`: its 4 elements per 16 bytes are not issue-bound.
#[inline(always)]
pub fn gelu_bf16<E, R, F>(u: f32, mode: u32, exp2: E, rcp: R, fma: F) -> f32
where
    E: Fn(f32) -> f32,
    R: Fn(f32) -> f32,
    F: Fn(f32, f32, f32) -> f32,
{
    if mode == GELU_TANH {
        gelu(u, mode, exp2, rcp)
    } else {
        u * logistic_odd(u, GELU_ERF_FAST_Q, GELU_ERF_FAST_U2_MAX, exp2, rcp, fma)
    }
}
