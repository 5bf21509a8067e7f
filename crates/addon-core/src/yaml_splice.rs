//! Edits YAML text key by key, at any depth of block mappings, so that only the lines of the
//! keys whose value changed are rewritten: comments, order, quoting and blank lines elsewhere
//! stay byte for byte.
//!
//! No YAML crate here both round-trips comments and reads YAML 1.1 like the rest of the
//! operator, so the text is treated as lines. A key's span runs from its line to the next key at
//! its indentation (or the end of its mapping), without the blank lines and the comments at or
//! left of its indentation right before that end (they belong to what follows). A changed
//! mapping written in block style is edited inside; any other changed value is rendered anew at
//! the key's indentation; a new key goes at the end of its mapping. The result is parsed back:
//! when it is not the intended document (an unusual layout, such as flow mappings), [`splice`]
//! gives `None` and the caller renders the document whole.

use std::ops::Range;

use serde_json::{Map, Value};

use crate::yaml;

/// `text` (a YAML document that parses to `old`) edited to parse to `new`, rewriting only the
/// lines of changed keys; `None` when the layout cannot be edited in place.
pub fn splice(text: &str, old: &Value, new: &Value) -> Option<String> {
    let empty = Map::new();
    let old_map = match old {
        Value::Null => &empty,
        Value::Object(map) => map,
        _ => return None,
    };
    let new_map = new.as_object()?;
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let all = 0..lines.len();
    splice_mapping(&mut lines, all, 0, old_map, new_map, true)?;
    let out = lines.concat();
    let parsed = yaml::parse(&out).ok()?;
    let same = match (&parsed, new) {
        (Value::Null, Value::Object(map)) => map.is_empty(),
        (parsed, new) => parsed == new,
    };
    same.then_some(out)
}

/// One edit of the lines of a mapping.
enum Edit {
    /// `range` replaced by `with`.
    Replace {
        range: Range<usize>,
        with: Vec<String>,
    },
    /// The block mapping in `range` (keys at `indent`) edited key by key.
    Nested {
        range: Range<usize>,
        indent: usize,
        old: Map<String, Value>,
        new: Map<String, Value>,
    },
}

impl Edit {
    fn range(&self) -> &Range<usize> {
        match self {
            Self::Replace { range, .. } | Self::Nested { range, .. } => range,
        }
    }
}

/// Edits the mapping whose keys sit at `indent` inside `range`; `top` appends new keys at the
/// very end of the range (the end of the document).
fn splice_mapping(
    lines: &mut Vec<String>,
    range: Range<usize>,
    indent: usize,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    top: bool,
) -> Option<()> {
    let spans = key_spans(lines, range.clone(), indent);
    let mut edits: Vec<Edit> = Vec::new();
    let mut appended: Vec<String> = Vec::new();
    let changed = new
        .keys()
        .chain(old.keys().filter(|k| !new.contains_key(*k)))
        .filter(|k| old.get(*k) != new.get(*k));
    for key in changed {
        let span = spans.iter().find(|(k, _)| k == key).map(|(_, s)| s.clone());
        let edit = match (span, old.get(key), new.get(key)) {
            (Some(span), Some(Value::Object(o)), Some(Value::Object(n))) => {
                match block_children(lines, &span, indent) {
                    Some((children, child_indent)) => Edit::Nested {
                        range: children,
                        indent: child_indent,
                        old: o.clone(),
                        new: n.clone(),
                    },
                    None => Edit::Replace {
                        range: span,
                        with: render(key, &Value::Object(n.clone()), indent)?,
                    },
                }
            }
            (Some(span), _, value) => Edit::Replace {
                range: span,
                with: match value {
                    Some(value) => render(key, value, indent)?,
                    None => Vec::new(),
                },
            },
            (None, None, Some(value)) => {
                appended.extend(render(key, value, indent)?);
                continue;
            }
            (None, None, None) => continue,
            (None, Some(_), _) => return None,
        };
        edits.push(edit);
    }
    if !appended.is_empty() {
        let at = if top {
            range.end
        } else {
            spans.last().map_or(range.end, |(_, s)| s.end)
        };
        if let Some(before) = at.checked_sub(1).and_then(|i| lines.get_mut(i))
            && !before.ends_with('\n')
        {
            before.push('\n');
        }
        edits.push(Edit::Replace {
            range: at..at,
            with: appended,
        });
    }
    // bottom up, so the ranges of the edits still to do stay valid
    edits.sort_by_key(|e| std::cmp::Reverse((e.range().start, e.range().end)));
    for edit in edits {
        match edit {
            Edit::Replace { range, with } => {
                lines.splice(range, with);
            }
            Edit::Nested {
                range,
                indent,
                old,
                new,
            } => splice_mapping(lines, range, indent, &old, &new, false)?,
        }
    }
    Some(())
}

/// The child lines of a key written as a bare `key:` (or `key: # comment`) followed by a block
/// mapping, and the indentation of its keys.
fn block_children(
    lines: &[String],
    span: &Range<usize>,
    indent: usize,
) -> Option<(Range<usize>, usize)> {
    let head = lines.get(span.start)?;
    let after = after_colon(&head[indent..])?;
    let after = after.trim();
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    let children = span.start + 1..span.end;
    let first = children.clone().find_map(|i| indent_of(&lines[i]))?;
    if first <= indent {
        return None;
    }
    let is_key = children
        .clone()
        .find(|&i| indent_of(&lines[i]).is_some())
        .is_some_and(|i| key_of(&lines[i][first..]).is_some());
    is_key.then_some((children, first))
}

/// Each key at `indent` in `range` with the line range of its span.
fn key_spans(lines: &[String], range: Range<usize>, indent: usize) -> Vec<(String, Range<usize>)> {
    let starts: Vec<usize> = range
        .clone()
        .filter(|&i| indent_of(&lines[i]) == Some(indent))
        .filter(|&i| key_of(&lines[i][indent..]).is_some())
        .collect();
    let mut spans = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let Some(key) = key_of(&lines[start][indent..]) else {
            continue;
        };
        let mut end = starts.get(n + 1).copied().unwrap_or(range.end);
        while end > start + 1 && belongs_to_next(&lines[end - 1], indent) {
            end -= 1;
        }
        spans.push((key, start..end));
    }
    spans
}

/// A blank line, or a comment at or left of `indent`.
fn belongs_to_next(line: &str, indent: usize) -> bool {
    let trimmed = line.trim_start_matches(' ');
    trimmed.trim().is_empty() || (trimmed.starts_with('#') && line.len() - trimmed.len() <= indent)
}

/// The indentation of a content line; `None` for blank and comment lines.
fn indent_of(line: &str) -> Option<usize> {
    let trimmed = line.trim_start_matches(' ');
    let content = !trimmed.trim().is_empty() && !trimmed.starts_with('#');
    content.then(|| line.len() - trimmed.len())
}

/// `key: value` rendered as block YAML, every line indented by `indent`.
fn render(key: &str, value: &Value, indent: usize) -> Option<Vec<String>> {
    let mut doc = Map::new();
    doc.insert(key.to_string(), value.clone());
    let text = yaml::to_string(&Value::Object(doc)).ok()?;
    let pad = " ".repeat(indent);
    Some(
        text.split_inclusive('\n')
            .map(|line| {
                if line.trim().is_empty() {
                    line.to_string()
                } else {
                    format!("{pad}{line}")
                }
            })
            .collect(),
    )
}

/// What follows the colon of a key line (`line` starts at the key).
fn after_colon(line: &str) -> Option<&str> {
    let line = line.trim_end_matches(['\n', '\r']);
    let rest = match line.chars().next()? {
        q @ ('"' | '\'') => {
            let close = line[1..].find(q)? + 1;
            &line[close + 1..]
        }
        '-' | '{' | '[' | '%' | '.' | '#' => return None,
        _ => &line[line.find(':')?..],
    };
    let after = rest.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then_some(after)
}

/// The key a line starts (`key:`, `"key":`, `'key':`; `line` starts at the key), if it is a
/// mapping key line.
pub fn key_of(line: &str) -> Option<String> {
    let line = line.trim_end_matches(['\n', '\r']);
    after_colon(line)?;
    let key = match line.chars().next()? {
        q @ ('"' | '\'') => &line[1..line[1..].find(q)? + 1],
        _ => line[..line.find(':')?].trim_end(),
    };
    Some(key.to_string())
}

#[cfg(test)]
mod tests;
