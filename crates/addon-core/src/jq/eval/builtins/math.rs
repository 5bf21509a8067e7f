//! Math natives: the C library's functions of one, two and three numbers (`floor`, `pow`, `fma`, ...) and the number helpers they share.

use super::super::{Flow, err, ops};
use super::{Kind, type_error};
use crate::jq::encode::describe;
use crate::jq::value::Val;

macro_rules! math0 {
    ($($name:literal => $f:expr),* $(,)?) => {
        &[$(($name, 0, Kind::V0(|v| math1($name, v, $f))),)*]
    };
}

pub(super) static MATH0: &[(&str, usize, Kind)] = math0! {
    "floor" => f64::floor, "ceil" => f64::ceil, "round" => f64::round, "trunc" => f64::trunc,
    "rint" => f64::round_ties_even, "nearbyint" => f64::round_ties_even,
    "fabs" => f64::abs, "sqrt" => f64::sqrt, "cbrt" => f64::cbrt,
    "exp" => f64::exp, "exp2" => f64::exp2, "exp10" => |x: f64| 10f64.powf(x), "expm1" => f64::exp_m1,
    "log" => f64::ln, "log10" => f64::log10, "log1p" => f64::ln_1p, "log2" => f64::log2,
    "logb" => |x: f64| if x == 0.0 { f64::NEG_INFINITY } else if x.is_infinite() { f64::INFINITY } else { x.abs().log2().floor() },
    "sin" => f64::sin, "cos" => f64::cos, "tan" => f64::tan,
    "asin" => f64::asin, "acos" => f64::acos, "atan" => f64::atan,
    "sinh" => f64::sinh, "cosh" => f64::cosh, "tanh" => f64::tanh,
    "asinh" => f64::asinh, "acosh" => f64::acosh, "atanh" => f64::atanh,
    "significand" => significand,
    "gamma" => libm::tgamma, "lgamma" => libm::lgamma, "tgamma" => libm::tgamma,
    "lgamma_r" => libm::lgamma, "erf" => libm::erf, "erfc" => libm::erfc,
    "j0" => libm::j0, "j1" => libm::j1, "y0" => libm::y0, "y1" => libm::y1,
};

pub(super) static MATH2: &[(&str, usize, Kind)] = &[
    ("pow", 2, Kind::V2(|_, a, b| math2("pow", a, b, f64::powf))),
    (
        "atan2",
        2,
        Kind::V2(|_, a, b| math2("atan2", a, b, f64::atan2)),
    ),
    ("fmin", 2, Kind::V2(|_, a, b| math2("fmin", a, b, f64::min))),
    ("fmax", 2, Kind::V2(|_, a, b| math2("fmax", a, b, f64::max))),
    (
        "fmod",
        2,
        Kind::V2(|_, a, b| math2("fmod", a, b, |x, y| x % y)),
    ),
    (
        "hypot",
        2,
        Kind::V2(|_, a, b| math2("hypot", a, b, f64::hypot)),
    ),
    (
        "copysign",
        2,
        Kind::V2(|_, a, b| math2("copysign", a, b, f64::copysign)),
    ),
    (
        "fdim",
        2,
        Kind::V2(|_, a, b| math2("fdim", a, b, libm::fdim)),
    ),
    (
        "nextafter",
        2,
        Kind::V2(|_, a, b| math2("nextafter", a, b, libm::nextafter)),
    ),
    (
        "nexttoward",
        2,
        Kind::V2(|_, a, b| math2("nexttoward", a, b, libm::nextafter)),
    ),
    (
        "remainder",
        2,
        Kind::V2(|_, a, b| math2("remainder", a, b, libm::remainder)),
    ),
    (
        "drem",
        2,
        Kind::V2(|_, a, b| math2("drem", a, b, libm::remainder)),
    ),
    ("ldexp", 2, Kind::V2(|_, a, b| math2("ldexp", a, b, ldexp))),
    ("scalb", 2, Kind::V2(|_, a, b| math2("scalb", a, b, ldexp))),
    (
        "scalbln",
        2,
        Kind::V2(|_, a, b| math2("scalbln", a, b, ldexp)),
    ),
    (
        "jn",
        2,
        Kind::V2(|_, a, b| math2("jn", a, b, |n, x| libm::jn(n as i32, x))),
    ),
    (
        "yn",
        2,
        Kind::V2(|_, a, b| math2("yn", a, b, |n, x| libm::yn(n as i32, x))),
    ),
    ("fma", 3, Kind::V3(fma)),
];

pub(super) fn math1(name: &str, v: &Val, f: impl Fn(f64) -> f64) -> Result<Val, Flow> {
    match v.as_f64() {
        Some(x) => Ok(Val::Float(f(x))),
        None => Err(err(format!("{name} cannot be applied to: {}", describe(v)))),
    }
}

pub(super) fn math2(
    name: &str,
    a: &Val,
    b: &Val,
    f: impl Fn(f64, f64) -> f64,
) -> Result<Val, Flow> {
    let x = a
        .as_f64()
        .ok_or_else(|| err(format!("{name} cannot be applied to: {}", describe(a))))?;
    let y = b
        .as_f64()
        .ok_or_else(|| err(format!("{name} cannot be applied to: {}", describe(b))))?;
    Ok(Val::Float(f(x, y)))
}

pub(super) fn fma(_: &Val, a: &Val, b: &Val, c: &Val) -> Result<Val, Flow> {
    let get = |v: &Val| {
        v.as_f64()
            .ok_or_else(|| err(format!("fma cannot be applied to: {}", describe(v))))
    };
    Ok(Val::Float(get(a)?.mul_add(get(b)?, get(c)?)))
}

pub(super) fn significand(x: f64) -> f64 {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        return x;
    }
    f64::from_bits((x.to_bits() & 0x800f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000)
}

pub(super) fn ldexp(x: f64, e: f64) -> f64 {
    libm::ldexp(x, e.clamp(i32::MIN as f64, i32::MAX as f64) as i32)
}

pub(super) fn float_pred(name: &str, v: &Val, f: fn(f64) -> bool) -> Result<Val, Flow> {
    match v.as_f64() {
        Some(x) => Ok(Val::Bool(f(x))),
        None => Err(err(format!("{name} cannot be applied to: {}", describe(v)))),
    }
}

pub(super) fn frexp(v: &Val) -> Result<Val, Flow> {
    let x = v
        .as_f64()
        .ok_or_else(|| err(format!("frexp cannot be applied to: {}", describe(v))))?;
    let (m, e) = libm::frexp(x);
    Ok(Val::arr(vec![Val::Float(m), Val::Int(e as i64)]))
}

pub(super) fn modf(v: &Val) -> Result<Val, Flow> {
    let x = v
        .as_f64()
        .ok_or_else(|| err(format!("modf cannot be applied to: {}", describe(v))))?;
    let (f, i) = libm::modf(x);
    Ok(Val::arr(vec![Val::Float(f), Val::Float(i)]))
}

pub(super) fn abs(v: &Val) -> Result<Val, Flow> {
    if !v.is_number() {
        return Err(type_error("abs", v));
    }
    if ops::is_negative(v) {
        ops::negate(v)
    } else {
        Ok(v.clone())
    }
}

pub(super) fn plus(v: &Val) -> Result<Val, Flow> {
    if v.is_number() {
        Ok(v.clone())
    } else {
        Err(err(format!("cannot plus: {}", describe(v))))
    }
}
