//! A typed walk over the `--config` JSON that records every problem with its field path instead of stopping at the first.

use serde_json::{Map, Value};

/// Problems found so far, each with the path of the field it concerns (empty for the document).
#[derive(Debug, Default)]
pub(crate) struct Problems {
    pub(crate) items: Vec<(String, String)>,
}

impl Problems {
    /// Records a problem; a path or message longer than 256 bytes (it quotes a huge key or value
    /// of the hook's output) is cut, saying how much was left out.
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.items
            .push((shorten(path.into()), shorten(message.into())));
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }
}

fn shorten(text: String) -> String {
    if text.len() <= crate::quote::MAX_QUOTED_BYTES {
        text
    } else {
        crate::quote::prefix(&text)
    }
}

/// The JSON type name used in messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `parent` + `.key` (or just `key` at the top).
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// `parent[index]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// A JSON object being read, with its path.
#[derive(Clone)]
pub(crate) struct Obj<'a> {
    pub(crate) path: String,
    pub(crate) map: &'a Map<String, Value>,
}

impl<'a> Obj<'a> {
    /// Reads `value` as an object or records a type problem.
    pub(crate) fn new(value: &'a Value, path: impl Into<String>, p: &mut Problems) -> Option<Self> {
        let path = path.into();
        match value {
            Value::Object(map) => Some(Self { path, map }),
            other => {
                p.push(path, format!("must be an object, got {}", type_name(other)));
                None
            }
        }
    }

    pub(crate) fn path_of(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// Records every key that is not in `allowed`.
    pub(crate) fn reject_unknown(&self, allowed: &[&str], p: &mut Problems) {
        for key in self.map.keys() {
            if !allowed.contains(&key.as_str()) {
                p.push(
                    self.path_of(key),
                    format!("unknown field (allowed: {})", allowed.join(", ")),
                );
            }
        }
    }

    /// Records a problem when the object has fewer than `min` keys.
    pub(crate) fn require_min_fields(&self, min: usize, what: &str, p: &mut Problems) {
        if self.map.len() < min {
            p.push(self.path.clone(), format!("must not be empty: set {what}"));
        }
    }

    pub(crate) fn required<T>(
        &self,
        key: &str,
        read: impl FnOnce(&Self, &str, &mut Problems) -> Option<T>,
        p: &mut Problems,
    ) -> Option<T> {
        if !self.map.contains_key(key) {
            p.push(self.path_of(key), "is required");
            return None;
        }
        read(self, key, p)
    }

    fn typed<T>(
        &self,
        key: &str,
        expected: &str,
        convert: impl FnOnce(&'a Value) -> Option<T>,
        p: &mut Problems,
    ) -> Option<T> {
        let value = self.map.get(key)?;
        let converted = convert(value);
        if converted.is_none() {
            p.push(
                self.path_of(key),
                format!("must be {expected}, got {}", type_name(value)),
            );
        }
        converted
    }

    pub(crate) fn string(&self, key: &str, p: &mut Problems) -> Option<String> {
        self.typed(key, "a string", |v| v.as_str().map(str::to_string), p)
    }

    /// A string where empty means unset, as in the Go operator.
    pub(crate) fn optional_string(&self, key: &str, p: &mut Problems) -> Option<String> {
        self.string(key, p).filter(|s| !s.is_empty())
    }

    /// A string that must not be empty.
    pub(crate) fn non_empty_string(&self, key: &str, p: &mut Problems) -> Option<String> {
        let s = self.string(key, p)?;
        if s.is_empty() {
            p.push(self.path_of(key), "must not be empty");
            return None;
        }
        Some(s)
    }

    pub(crate) fn bool(&self, key: &str, p: &mut Problems) -> Option<bool> {
        self.typed(key, "a boolean", Value::as_bool, p)
    }

    pub(crate) fn number(&self, key: &str, p: &mut Problems) -> Option<f64> {
        self.typed(key, "a number", Value::as_f64, p)
    }

    pub(crate) fn array(
        &self,
        key: &str,
        min_items: usize,
        p: &mut Problems,
    ) -> Option<&'a [Value]> {
        let items = self.typed(key, "an array", |v| v.as_array().map(Vec::as_slice), p)?;
        if items.len() < min_items {
            p.push(
                self.path_of(key),
                format!("must have at least {min_items} item(s)"),
            );
            return None;
        }
        Some(items)
    }

    pub(crate) fn object(&self, key: &str, p: &mut Problems) -> Option<Obj<'a>> {
        let value = self.map.get(key)?;
        match value {
            Value::Object(map) => Some(Obj {
                path: self.path_of(key),
                map,
            }),
            other => {
                p.push(
                    self.path_of(key),
                    format!("must be an object, got {}", type_name(other)),
                );
                None
            }
        }
    }

    /// An array of strings with at least `min_items` items.
    pub(crate) fn string_list(
        &self,
        key: &str,
        min_items: usize,
        p: &mut Problems,
    ) -> Option<Vec<String>> {
        let items = self.array(key, min_items, p)?;
        let path = self.path_of(key);
        let mut out = Vec::with_capacity(items.len());
        let before = p.len();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s.to_string()),
                None => p.push(
                    index(&path, i),
                    format!("must be a string, got {}", type_name(item)),
                ),
            }
        }
        (p.len() == before).then_some(out)
    }

    /// An object whose values are all strings.
    pub(crate) fn string_map(
        &self,
        key: &str,
        p: &mut Problems,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        let value = self.map.get(key)?;
        let path = self.path_of(key);
        let Value::Object(map) = value else {
            p.push(path, format!("must be an object, got {}", type_name(value)));
            return None;
        };
        let before = p.len();
        let mut out = std::collections::BTreeMap::new();
        for (k, v) in map {
            match v.as_str() {
                Some(s) => {
                    out.insert(k.clone(), s.to_string());
                }
                None => p.push(
                    join(&path, k),
                    format!("must be a string, got {}", type_name(v)),
                ),
            }
        }
        (p.len() == before).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_and_messages_are_cut_with_the_count_of_what_was_left_out() {
        let mut problems = Problems::default();
        problems.push("a.b", "short");
        problems.push(
            "k".repeat(1000),
            format!("unknown event type '{}'", "z".repeat(100_000)),
        );
        assert_eq!(problems.items[0], ("a.b".to_string(), "short".to_string()));
        let (path, message) = &problems.items[1];
        assert_eq!(path, &format!("{}... (744 more bytes)", "k".repeat(256)));
        assert!(message.starts_with("unknown event type 'zzz"));
        assert!(message.ends_with("... (99765 more bytes)"), "{message}");
    }
}
