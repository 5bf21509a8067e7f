//! JSON text as gojq writes it (`tojson`, `tostring`, string interpolation, error previews): sorted keys, no spaces, Go's float format.

use num_bigint::BigInt;

use super::value::Val;

/// `tojson`.
pub fn to_json_text(v: &Val) -> String {
    let mut s = String::new();
    encode(v, &mut s);
    s
}

pub fn encode(v: &Val, out: &mut String) {
    match v {
        Val::Null => out.push_str("null"),
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Int(i) => out.push_str(&i.to_string()),
        Val::Float(f) => out.push_str(&format_float(*f)),
        Val::Big(b) => out.push_str(&BigInt::to_string(b)),
        Val::Str(s) => encode_string(s, out),
        Val::Arr(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode(x, out);
            }
            out.push(']');
        }
        Val::Obj(map) => {
            out.push('{');
            for (i, (k, x)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode_string(k, out);
                out.push(':');
                encode(x, out);
            }
            out.push('}');
        }
    }
}

/// A float the way gojq prints one: NaN as `null`, infinities as the largest finite floats,
/// the shortest text that reads back, with an exponent below 1e-6 and from 1e21 on.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "null".to_string();
    }
    let f = f.clamp(f64::MIN, f64::MAX);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        // Rust writes `1.5e300` and `1e-7`; Go writes `1.5e+300` and `1e-07`, which gojq
        // cleans up to `1e-7`.
        return match text.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                let exp = if exp.len() < 2 {
                    format!("0{exp}")
                } else {
                    exp.to_string()
                };
                format!("{mantissa}e+{exp}")
            }
            _ => text,
        };
    }
    if f == f.trunc() && abs < 1e21 {
        // `{}` prints integral floats without a fraction ("3"), as Go's 'f' format does.
        return format!("{f}");
    }
    format!("{f}")
}

pub fn encode_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `type (preview)` for error messages, the preview cut at about 30 bytes as gojq does.
pub fn describe(v: &Val) -> String {
    if matches!(v, Val::Null) {
        return "null".to_string();
    }
    let text = to_json_text(v);
    let preview = if text.len() > 30 {
        let trailing = match v {
            Val::Str(_) => " ...\"",
            Val::Arr(_) => " ...]",
            Val::Obj(_) => " ...}",
            _ => " ...",
        };
        let mut cut = 30 - trailing.len();
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}{trailing}", &text[..cut])
    } else {
        text
    };
    format!("{} ({preview})", v.type_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_gojq() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(1.5e300), "1.5e+300");
        assert_eq!(format_float(1e21), "1e+21");
        assert_eq!(format_float(1e-7), "1e-7");
        assert_eq!(format_float(123456789012.0), "123456789012");
        assert_eq!(format_float(f64::INFINITY), "1.7976931348623157e+308");
        assert_eq!(format_float(0.1 + 0.2), "0.30000000000000004");
    }

    #[test]
    fn strings_escape_control_characters_and_keep_unicode() {
        let mut s = String::new();
        encode_string("a\"\u{1}\u{7f}é<", &mut s);
        assert_eq!(s, "\"a\\\"\\u0001\\u007fé<\"");
    }
}
