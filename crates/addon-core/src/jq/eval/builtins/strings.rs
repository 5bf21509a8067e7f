//! String functions, `@format`s and regular expressions (Go's RE2 dialect, ASCII `\d\w\s\b`, offsets in code points) as gojq has them.

use std::rc::Rc;

use base64::Engine as _;
use regex::Regex;

use super::super::ops;
use super::super::{Flow, err};
use super::{Kind, describe, tostring};
use crate::jq::encode;
use crate::jq::value::{Map, Val};

pub(super) static TABLE: &[(&str, usize, Kind)] = &[
    (
        "startswith",
        1,
        Kind::V1(|v, x| str2("startswith", v, x, |a, b| Val::Bool(a.starts_with(b)))),
    ),
    (
        "endswith",
        1,
        Kind::V1(|v, x| str2("endswith", v, x, |a, b| Val::Bool(a.ends_with(b)))),
    ),
    (
        "ltrimstr",
        1,
        Kind::V1(|v, x| {
            str2("ltrimstr", v, x, |a, b| {
                Val::str(a.strip_prefix(b).unwrap_or(a))
            })
        }),
    ),
    (
        "rtrimstr",
        1,
        Kind::V1(|v, x| {
            str2("rtrimstr", v, x, |a, b| {
                Val::str(a.strip_suffix(b).unwrap_or(a))
            })
        }),
    ),
    (
        "ltrim",
        0,
        Kind::V0(|v| str1("ltrim", v, |s| Val::str(s.trim_start()))),
    ),
    (
        "rtrim",
        0,
        Kind::V0(|v| str1("rtrim", v, |s| Val::str(s.trim_end()))),
    ),
    (
        "trim",
        0,
        Kind::V0(|v| str1("trim", v, |s| Val::str(s.trim()))),
    ),
    ("explode", 0, Kind::V0(|v| str1("explode", v, explode))),
    ("implode", 0, Kind::V0(implode)),
    (
        "ascii_downcase",
        0,
        Kind::V0(|v| str1("ascii_downcase", v, |s| Val::str(s.to_ascii_lowercase()))),
    ),
    (
        "ascii_upcase",
        0,
        Kind::V0(|v| str1("ascii_upcase", v, |s| Val::str(s.to_ascii_uppercase()))),
    ),
    ("ascii", 0, Kind::V0(ascii)),
    ("split", 1, Kind::V1(split_plain)),
    ("split", 2, Kind::V2(split_regex)),
    (
        "indices",
        1,
        Kind::V1(|v, x| index_fn("indices", v, x, Which::All)),
    ),
    (
        "index",
        1,
        Kind::V1(|v, x| index_fn("index", v, x, Which::First)),
    ),
    (
        "rindex",
        1,
        Kind::V1(|v, x| index_fn("rindex", v, x, Which::Last)),
    ),
    (
        "format",
        1,
        Kind::V1(|v, f| match f {
            Val::Str(name) => format(name, v),
            other => Err(err(format!(
                "format cannot be applied to: {}",
                describe(other)
            ))),
        }),
    ),
    ("_match", 3, Kind::V3(match_fn)),
    ("_capture", 0, Kind::V0(capture)),
];

fn str1(name: &str, v: &Val, f: impl Fn(&str) -> Val) -> Result<Val, Flow> {
    match v {
        Val::Str(s) => Ok(f(s)),
        _ => Err(err(format!("{name} cannot be applied to: {}", describe(v)))),
    }
}

fn str2(name: &str, v: &Val, x: &Val, f: impl Fn(&str, &str) -> Val) -> Result<Val, Flow> {
    match (v, x) {
        (Val::Str(a), Val::Str(b)) => Ok(f(a, b)),
        _ => Err(err(format!(
            "{name}({}) cannot be applied to: {}",
            describe(x),
            describe(v)
        ))),
    }
}

fn explode(s: &str) -> Val {
    Val::arr(s.chars().map(|c| Val::Int(c as i64)).collect())
}

fn implode(v: &Val) -> Result<Val, Flow> {
    let Val::Arr(items) = v else {
        return Err(err(format!(
            "implode cannot be applied to: {}",
            describe(v)
        )));
    };
    let mut s = String::with_capacity(items.len());
    for x in items.iter() {
        let Some(i) = x.as_int() else {
            return Err(err(format!(
                "implode cannot be applied to: {}",
                describe(v)
            )));
        };
        let c = u32::try_from(i)
            .ok()
            .and_then(char::from_u32)
            .unwrap_or('\u{FFFD}');
        s.push(c);
    }
    Ok(Val::str(s))
}

fn ascii(v: &Val) -> Result<Val, Flow> {
    match v.as_int() {
        Some(i) if (0..128).contains(&i) => Ok(Val::str(((i as u8) as char).to_string())),
        _ => Err(err(format!("ascii cannot be applied to: {}", describe(v)))),
    }
}

fn split_plain(v: &Val, sep: &Val) -> Result<Val, Flow> {
    let (Val::Str(s), Val::Str(sep)) = (v, sep) else {
        return Err(err(format!(
            "split cannot be applied to: {}",
            describe(if matches!(v, Val::Str(_)) { sep } else { v })
        )));
    };
    let parts: Vec<Val> = if sep.is_empty() {
        s.chars().map(|c| Val::str(c.to_string())).collect()
    } else {
        s.split(&**sep).map(Val::str).collect()
    };
    Ok(Val::arr(parts))
}

fn split_regex(v: &Val, re: &Val, flags: &Val) -> Result<Val, Flow> {
    let (Val::Str(s), Val::Str(re)) = (v, re) else {
        return Err(err(format!("split cannot be applied to: {}", describe(v))));
    };
    let flags = flag_text("split", flags)?;
    let r = compile_regex(re, &flags)?;
    // Go's Regexp.Split: an empty match at the very start does not make an empty first part.
    let mut parts = Vec::new();
    let mut last = 0;
    for m in r.find_iter(s) {
        if m.end() == 0 && m.start() == 0 {
            continue;
        }
        if m.start() == m.end() && m.start() == s.len() {
            break;
        }
        parts.push(Val::str(&s[last..m.start()]));
        last = m.end();
    }
    parts.push(Val::str(&s[last..]));
    Ok(Val::arr(parts))
}

enum Which {
    All,
    First,
    Last,
}

fn index_fn(name: &str, v: &Val, x: &Val, which: Which) -> Result<Val, Flow> {
    let (hay, needle): (Vec<Val>, Vec<Val>) = match (v, x) {
        (Val::Null, _) => return Ok(Val::Null),
        (Val::Arr(a), Val::Arr(b)) => (a.to_vec(), b.to_vec()),
        (Val::Arr(a), other) => (a.to_vec(), vec![other.clone()]),
        (Val::Str(a), Val::Str(b)) => (chars(a), chars(b)),
        _ => {
            return Err(err(format!(
                "{name}({}) cannot be applied to: {}",
                describe(x),
                describe(v)
            )));
        }
    };
    let all = ops::array_indices(&hay, &needle);
    let found: Vec<Val> = match all {
        Val::Arr(items) => items.to_vec(),
        _ => Vec::new(),
    };
    Ok(match which {
        Which::All => Val::arr(found),
        Which::First => found.first().cloned().unwrap_or(Val::Null),
        Which::Last => found.last().cloned().unwrap_or(Val::Null),
    })
}

fn chars(s: &str) -> Vec<Val> {
    s.chars().map(|c| Val::Int(c as i64)).collect()
}

/// `@name` applied to `v`.
pub fn format(name: &str, v: &Val) -> Result<Val, Flow> {
    let text = || tostring(v);
    Ok(Val::str(match name {
        "text" => text(),
        "json" => encode::to_json_text(v),
        "html" => html(&text()),
        "uri" => uri(&text()),
        "urid" => urid(&text())?,
        "csv" => join_row("csv", v, ",", |s| {
            format!("\"{}\"", s.replace('"', "\"\"").replace('\0', "\\0"))
        })?,
        "tsv" => join_row("tsv", v, "\t", tsv_escape)?,
        "sh" => sh(v)?,
        "base64" => base64::engine::general_purpose::STANDARD.encode(text()),
        "base64d" => base64d(&text())?,
        "base32" => base32(&text()),
        "base32d" => base32d(&text())?,
        _ => return Err(err(format!("format not defined: @{name}"))),
    }))
}

fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str(concat!("&", "apos;")),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `url.QueryEscape` with spaces as `%20`: everything but `A-Za-z0-9-_.~` is escaped.
fn uri(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn urid(s: &str) -> Result<String, Flow> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => {
                    return Err(err(format!(
                        "@urid cannot be applied to: {}: invalid URL escape",
                        describe(&Val::str(s))
                    )));
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn tsv_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out
}

fn join_row(
    typ: &str,
    v: &Val,
    sep: &str,
    escape: impl Fn(&str) -> String,
) -> Result<String, Flow> {
    let Val::Arr(items) = v else {
        return Err(err(format!("@{typ} cannot be applied to: {}", describe(v))));
    };
    let mut parts = Vec::with_capacity(items.len());
    for x in items.iter() {
        parts.push(match x {
            Val::Arr(_) | Val::Obj(_) => {
                return Err(err(format!("invalid value for @{typ}: {}", describe(x))));
            }
            Val::Str(s) => escape(s),
            Val::Null if typ != "sh" => String::new(),
            other => encode::to_json_text(other),
        });
    }
    Ok(parts.join(sep))
}

fn sh(v: &Val) -> Result<String, Flow> {
    let row = match v {
        Val::Arr(_) => v.clone(),
        other => Val::arr(vec![other.clone()]),
    };
    join_row("sh", &row, " ", |s| {
        format!("'{}'", s.replace('\'', "'\\''").replace('\0', "\\0"))
    })
}

fn base64d(s: &str) -> Result<String, Flow> {
    let trimmed = s.split('=').next().unwrap_or("");
    // Go's decoder ignores bits left over in the last character; so does this one.
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_encode_padding(false)
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    match engine.decode(trimmed) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => Err(err(format!(
            "@base64d cannot be applied to: {}: {e}",
            describe(&Val::str(s))
        ))),
    }
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn base32(s: &str) -> String {
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(BASE32[((n >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base32d(s: &str) -> Result<String, Flow> {
    let mut bits = 0u64;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in s.trim_end_matches('=').bytes() {
        let Some(v) = BASE32.iter().position(|b| *b == c) else {
            return Err(err(format!(
                "@base32d cannot be applied to: {}",
                describe(&Val::str(s))
            )));
        };
        bits = (bits << 5) | v as u64;
        nbits += 5;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

fn flag_text(name: &str, flags: &Val) -> Result<String, Flow> {
    match flags {
        Val::Null => Ok(String::new()),
        Val::Str(s) => Ok(s.to_string()),
        other => Err(err(format!(
            "{name} cannot be applied to: {}",
            describe(other)
        ))),
    }
}

/// The longest regular expression accepted, in bytes.
const MAX_REGEX_BYTES: usize = 8 * 1024;

/// Compiles a Go (RE2) regular expression with jq's flags `g`, `i` and `m` (gojq rejects others).
fn compile_regex(re: &str, flags: &str) -> Result<Regex, Flow> {
    if let Some(bad) = flags.chars().find(|c| !matches!(c, 'g' | 'i' | 'm')) {
        return Err(err(format!("unsupported regular expression flag: {bad:?}")));
    }
    if re.len() > MAX_REGEX_BYTES {
        return Err(err(format!(
            "regular expression longer than {MAX_REGEX_BYTES} bytes"
        )));
    }
    let mut pattern = String::new();
    if flags.contains('i') {
        pattern.push_str("(?i)");
    }
    if flags.contains('m') {
        pattern.push_str("(?s)");
    }
    pattern.push_str(&ascii_classes(&re.replace("(?<", "(?P<")));
    regex::RegexBuilder::new(&pattern)
        .size_limit(4 << 20)
        .build()
        .map_err(|e| {
            // The regex crate's syntax errors span several lines (pattern, caret, message).
            let text = e.to_string();
            let reason = text
                .lines()
                .last()
                .unwrap_or("")
                .trim_start_matches("error: ");
            err(format!("invalid regular expression {re:?}: {reason}"))
        })
}

/// Go's `\d`, `\w`, `\s` and `\b` are ASCII-only; Rust's are Unicode. Rewrites them.
fn ascii_classes(re: &str) -> String {
    let mut out = String::with_capacity(re.len());
    let mut in_class = false;
    let mut chars = re.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push(c);
                    break;
                };
                let (outside, inside) = match n {
                    'd' => ("[0-9]", "0-9"),
                    'D' => ("[^0-9]", ""),
                    'w' => ("[0-9A-Za-z_]", "0-9A-Za-z_"),
                    'W' => ("[^0-9A-Za-z_]", ""),
                    's' => ("[\\t\\n\\f\\r ]", "\\t\\n\\f\\r "),
                    'S' => ("[^\\t\\n\\f\\r ]", ""),
                    'b' if !in_class => ("(?-u:\\b)", ""),
                    'B' if !in_class => ("(?-u:\\B)", ""),
                    _ => ("", ""),
                };
                let replacement = if in_class { inside } else { outside };
                if replacement.is_empty() {
                    out.push('\\');
                    out.push(n);
                } else {
                    out.push_str(replacement);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // a POSIX class like [:alpha:] inside a bracket
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn cp_offset(s: &str, byte: usize) -> i64 {
    s[..byte].chars().count() as i64
}

fn match_obj(s: &str, caps: &regex::Captures, names: &[Option<&str>]) -> Val {
    let whole = caps.get(0);
    let (start, end) = whole.map_or((0, 0), |m| (m.start(), m.end()));
    let mut captures = Vec::new();
    for (i, name) in names.iter().enumerate().skip(1) {
        let name = name.map_or(Val::Null, Val::str);
        let mut c = Map::new();
        match caps.get(i) {
            Some(m) => {
                c.insert(Rc::from("offset"), Val::Int(cp_offset(s, m.start())));
                c.insert(
                    Rc::from("length"),
                    Val::Int(m.as_str().chars().count() as i64),
                );
                c.insert(Rc::from("string"), Val::str(m.as_str()));
            }
            None => {
                c.insert(Rc::from("offset"), Val::Int(-1));
                c.insert(Rc::from("length"), Val::Int(0));
                c.insert(Rc::from("string"), Val::Null);
            }
        }
        c.insert(Rc::from("name"), name);
        captures.push(Val::obj(c));
    }
    let mut m = Map::new();
    m.insert(Rc::from("offset"), Val::Int(cp_offset(s, start)));
    m.insert(
        Rc::from("length"),
        Val::Int(s[start..end].chars().count() as i64),
    );
    m.insert(Rc::from("string"), Val::str(&s[start..end]));
    m.insert(Rc::from("captures"), Val::arr(captures));
    Val::obj(m)
}

/// gojq's `_match($re; $flags; $testing)`: an array of match objects, or a boolean for `test`.
fn match_fn(v: &Val, re: &Val, flags: &Val, testing: &Val) -> Result<Val, Flow> {
    let name = if testing.truthy() { "test" } else { "match" };
    let flags = flag_text(name, flags)?;
    let (Val::Str(s), Val::Str(re)) = (v, re) else {
        return Err(err(format!(
            "{name}({}; {}) cannot be applied to: {}",
            describe(re),
            describe(&Val::str(flags.clone())),
            describe(v)
        )));
    };
    let r = compile_regex(re, &flags)?;
    if testing.truthy() {
        return Ok(Val::Bool(r.is_match(s)));
    }
    let names: Vec<Option<&str>> = r.capture_names().collect();
    let found: Vec<Val> = if flags.contains('g') {
        r.captures_iter(s)
            .map(|c| match_obj(s, &c, &names))
            .collect()
    } else {
        r.captures(s)
            .map(|c| match_obj(s, &c, &names))
            .into_iter()
            .collect()
    };
    Ok(Val::arr(found))
}

/// gojq's `_capture`: the named captures of a match object as an object.
fn capture(v: &Val) -> Result<Val, Flow> {
    let Val::Obj(m) = v else {
        return Err(err(format!("expected an object but got: {}", describe(v))));
    };
    let Some(Val::Arr(caps)) = m.get("captures") else {
        return Err(err("expected an array of captures"));
    };
    let mut out = Map::new();
    for c in caps.iter() {
        if let Val::Obj(c) = c
            && let Some(Val::Str(name)) = c.get("name")
        {
            out.insert(name.clone(), c.get("string").cloned().unwrap_or(Val::Null));
        }
    }
    Ok(Val::obj(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_like_go() {
        let r = compile_regex("^\\d+$", "").unwrap();
        assert!(r.is_match("123"));
        assert!(!r.is_match("١٢٣"));
        let r = compile_regex("[\\w.]+", "").unwrap();
        assert_eq!(r.find("ab.c d").unwrap().as_str(), "ab.c");
    }

    #[test]
    fn formats_escape_like_gojq() {
        let row = Val::arr(vec![
            Val::str("a\"b"),
            Val::Int(1),
            Val::Null,
            Val::Bool(true),
        ]);
        assert_eq!(
            format("csv", &row).unwrap().as_str(),
            Some("\"a\"\"b\",1,,true")
        );
        assert_eq!(
            format("tsv", &Val::arr(vec![Val::str("a\tb"), Val::Null]))
                .unwrap()
                .as_str(),
            Some("a\\tb\t")
        );
        assert_eq!(
            format("sh", &Val::str("it's")).unwrap().as_str(),
            Some("'it'\\''s'")
        );
        assert_eq!(
            format("uri", &Val::str("a b/ü")).unwrap().as_str(),
            Some("a%20b%2F%C3%BC")
        );
        assert_eq!(
            format("base64d", &Val::str("YWJj")).unwrap().as_str(),
            Some("abc")
        );
        assert_eq!(
            format("base64d", &Val::str("YWI")).unwrap().as_str(),
            Some("ab")
        );
        assert_eq!(
            format("base32", &Val::str("ab")).unwrap().as_str(),
            Some("MFRA====")
        );
        assert_eq!(
            format("base32d", &Val::str("MFRA====")).unwrap().as_str(),
            Some("ab")
        );
    }
}
