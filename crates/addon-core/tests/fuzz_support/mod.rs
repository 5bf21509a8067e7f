//! Generated inputs for the fuzz targets (`tests/fuzz_*.rs`): a seeded generator, the fixture corpus and mutations that keep inputs near valid ones.
//!
//! The property of every target: the parser returns (a value or an error) and never panics,
//! aborts or hangs. `FUZZ_CASES=N` sets the cases per target (default: a short run for `cargo
//! test`); `FUZZ_SEED=N` changes the inputs. Stable Rust only, no extra crates.

#![allow(dead_code)] // each target uses its own subset

use std::path::Path;

/// A xorshift generator: the same seed gives the same inputs, so a failure reproduces.
pub struct Rng(u64);

impl Rng {
    /// Seeded from `FUZZ_SEED` (default fixed) and the target's name.
    pub fn new(target: &str) -> Self {
        let base: u64 = std::env::var("FUZZ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed);
        let mixed = target.bytes().fold(base ^ 0x9e37_79b9_7f4a_7c15, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Self(mixed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Cases per target: `FUZZ_CASES`, else `default`.
pub fn cases(default: usize) -> usize {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Every file under `tests/fixtures/<area>` whose name passes `keep`.
pub fn corpus(area: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let root = format!("{}/tests/fixtures/{area}", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    collect(Path::new(&root), &keep, &mut out);
    assert!(!out.is_empty(), "no corpus in {root}");
    out
}

fn collect(dir: &Path, keep: &impl Fn(&str) -> bool, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, keep, out);
        } else if path.file_name().and_then(|n| n.to_str()).is_some_and(keep)
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            out.push(text);
        }
    }
}

/// Tokens that matter to the parsers: JSON/YAML syntax, numbers at the edges, long and deep text.
pub const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "'",
    "\n",
    "\n  ",
    "- ",
    "#",
    "&a ",
    "*a",
    "!!str ",
    "~",
    "null",
    "true",
    "false",
    "yes",
    "on",
    "1e309",
    "-0",
    "9223372036854775808",
    "0.1",
    "NaN",
    "\\u0000",
    "\u{0}",
    "\u{feff}",
    "é",
    "---\n",
    "...\n",
    "<<: *a\n",
    "? ",
    "|\n  ",
    ">-\n  ",
    "\t",
    "\r\n",
    "%YAML 1.1\n",
];

/// `text` after 1–4 random edits: delete, insert a token or `extra` word, duplicate, truncate,
/// or wrap in deep nesting.
pub fn mutate(rng: &mut Rng, text: &str, extra: &[&str]) -> String {
    let mut out: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(out.len() + 1);
        match rng.below(7) {
            0 if !out.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            1 | 2 => {
                let token = if !extra.is_empty() && rng.chance(50) {
                    rng.pick(extra).to_string()
                } else {
                    rng.pick(TOKENS).to_string()
                };
                out.splice(at..at, token.chars());
            }
            3 if !out.is_empty() => {
                let end = (at + rng.below(64)).min(out.len());
                let copy: Vec<char> = out[at.min(end)..end].to_vec();
                out.splice(
                    at..at,
                    copy.into_iter()
                        .cycle()
                        .take((end - at.min(end)) * (1 + rng.below(8))),
                );
            }
            4 => out.truncate(at),
            5 => {
                let depth = 1 + rng.below(3000);
                let (open, close) = *rng.pick(&[("[", "]"), ("{a: ", "}"), ("- ", ""), ("(", ")")]);
                let wrapped = format!(
                    "{}{}{}",
                    open.repeat(depth),
                    out.iter().collect::<String>(),
                    close.repeat(depth)
                );
                out = wrapped.chars().collect();
            }
            _ => {
                if let Some(c) = out.get_mut(at) {
                    *c = char::from(rng.below(128) as u8);
                }
            }
        }
    }
    out.into_iter().collect()
}

/// Text nested `depth` levels deep in the flow syntax of JSON/YAML.
pub fn deep(depth: usize) -> Vec<String> {
    vec![
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth)),
        format!("{}1{}", "{a: ".repeat(depth), "}".repeat(depth)),
        (0..depth.min(2000))
            .map(|i| format!("{}- ", "  ".repeat(i)))
            .collect::<Vec<_>>()
            .join("\n")
            + "1",
    ]
}
