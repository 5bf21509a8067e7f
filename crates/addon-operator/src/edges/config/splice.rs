//! Patches the text of the config file key by key: only the text span of each changed top-level key
//! is rewritten, so comments, key order and formatting of every other section stay byte for byte.
//!
//! No YAML crate in the registry both round-trips comments and parses YAML 1.1 like the rest of the
//! operator, so the file is treated as lines: a top-level key's span runs from its line to the next
//! line at column 0 that is not a comment or blank, without the comment and blank lines right before
//! that next line (they belong to what follows). A result that does not parse back to the intended
//! config (an unusual layout, such as a flow mapping `{...}` at the top) is replaced by a full
//! rendering of the config.

use std::ops::Range;

use addon_core::yaml::{self, YamlError};
use serde_json::{Map, Value};

use addon_core::config_change::ConfigKeyChange;

/// Why a patch could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SpliceError {
    #[error("the config file does not parse as YAML; fix it before the operator can save to it")]
    Parse(#[source] YamlError),
    #[error("the config file must hold a mapping")]
    NotMapping,
    #[error("cannot render config key '{key}'")]
    Render {
        key: String,
        #[source]
        source: YamlError,
    },
}

/// `text` with `change` applied. Untouched keys keep their exact bytes.
pub fn patch_text(text: &str, change: &ConfigKeyChange) -> Result<String, SpliceError> {
    let mut expected = match yaml::parse(text).map_err(SpliceError::Parse)? {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        _ => return Err(SpliceError::NotMapping),
    };
    for (key, value) in change.iter() {
        match value {
            Some(v) => expected.insert(key.to_string(), v.clone()),
            None => expected.remove(key),
        };
    }
    let spliced = splice(text, change)?;
    let expected = Value::Object(expected);
    if yaml::parse(&spliced).is_ok_and(|v| v == expected) {
        return Ok(spliced);
    }
    tracing::info!("the config file's layout cannot be patched in place; rewriting it whole");
    yaml::to_string(&expected).map_err(|source| SpliceError::Render {
        key: "<file>".to_string(),
        source,
    })
}

/// Replaces, removes or appends the span of each changed key.
fn splice(text: &str, change: &ConfigKeyChange) -> Result<String, SpliceError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let spans = key_spans(&lines);
    let mut replacements: Vec<(Range<usize>, String)> = Vec::new();
    let mut appended = String::new();
    for (key, value) in change.iter() {
        let block = value.map(|v| render_block(key, v)).transpose()?;
        match (spans.iter().find(|(k, _)| k == key), block) {
            (Some((_, span)), block) => {
                replacements.push((span.clone(), block.unwrap_or_default()))
            }
            (None, Some(block)) => appended.push_str(&block),
            (None, None) => {}
        }
    }
    replacements.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for (span, block) in replacements {
        out.splice(span, std::iter::once(block));
    }
    let mut result = out.concat();
    if !appended.is_empty() {
        if !result.is_empty() && !result.ends_with('\n') {
            result.push('\n');
        }
        result.push_str(&appended);
    }
    Ok(result)
}

/// `key: value` as block YAML, ending with a newline.
fn render_block(key: &str, value: &Value) -> Result<String, SpliceError> {
    let mut doc = Map::new();
    doc.insert(key.to_string(), value.clone());
    yaml::to_string(&Value::Object(doc)).map_err(|source| SpliceError::Render {
        key: key.to_string(),
        source,
    })
}

/// Each top-level key and the line range of its span.
fn key_spans(lines: &[&str]) -> Vec<(String, Range<usize>)> {
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| is_top_level(lines[i]))
        .collect();
    let mut spans = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let Some(key) = key_of(lines[start]) else {
            continue;
        };
        let mut end = starts.get(n + 1).copied().unwrap_or(lines.len());
        while end > start + 1 && is_blank_or_top_comment(lines[end - 1]) {
            end -= 1;
        }
        spans.push((key, start..end));
    }
    spans
}

/// A line at column 0 that is content (not blank, not a comment).
fn is_top_level(line: &str) -> bool {
    line.chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && c != '#')
}

fn is_blank_or_top_comment(line: &str) -> bool {
    line.trim().is_empty() || line.starts_with('#')
}

/// The key a top-level line starts (`key:`, `"key":`, `'key':`), if it is a mapping key line.
fn key_of(line: &str) -> Option<String> {
    let line = line.trim_end_matches(['\n', '\r']);
    let (key, rest) = match line.chars().next()? {
        q @ ('"' | '\'') => {
            let close = line[1..].find(q)? + 1;
            (&line[1..close], &line[close + 1..])
        }
        '-' | '{' | '[' | '%' | '.' => return None,
        _ => {
            let colon = line.find(':')?;
            (&line[..colon], &line[colon..])
        }
    };
    let after = rest.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then(|| key.trim_end().to_string())
}

#[cfg(test)]
mod tests;
