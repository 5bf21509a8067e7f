//! A hook's snapshots (`/hook/{name}/snapshots`) rendered an object at a time from the texts the binding caches keep, never as one parsed document of all objects.
//!
//! The output is the same text as rendering the whole `{"<binding>": [<item>, ...]}` document at
//! once: each item is parsed and rendered alone and placed at its indentation, so a binding of
//! 10,000 full objects costs one parsed object at a time instead of all of them.

use serde_json::Value;

use super::format::Format;
use crate::runtime::edges::status::BindingItems;

/// Renders `{"<binding>": [<item>, ...], ...}` in `format` (`text` and `json`: indented JSON).
pub fn render(format: Format, bindings: &[BindingItems]) -> String {
    match format {
        Format::Yaml => yaml(bindings),
        Format::Text | Format::Json => json(bindings),
    }
}

/// Indented JSON, as `serde_json::to_string_pretty` writes the whole document.
fn json(bindings: &[BindingItems]) -> String {
    if bindings.is_empty() {
        return "{}\n".to_string();
    }
    let mut out = String::from("{\n");
    for (index, (name, items)) in bindings.iter().enumerate() {
        if index > 0 {
            out.push_str(",\n");
        }
        out.push_str("  ");
        out.push_str(&serde_json::to_string(name).unwrap_or_default());
        out.push_str(": ");
        if items.is_empty() {
            out.push_str("[]");
            continue;
        }
        out.push_str("[\n");
        for (at, item) in items.iter().enumerate() {
            if at > 0 {
                out.push_str(",\n");
            }
            let text = serde_json::to_string_pretty(&item.to_json()).unwrap_or_default();
            push_indented(&mut out, &text, "    ", "    ");
        }
        out.push_str("\n  ]");
    }
    out.push_str("\n}\n");
    out
}

/// YAML, as the whole document renders: `binding:` and a `- ` entry per object.
fn yaml(bindings: &[BindingItems]) -> String {
    if bindings.is_empty() {
        return to_yaml(&Value::Object(serde_json::Map::new()));
    }
    let mut out = String::new();
    for (name, items) in bindings {
        let mut key = serde_json::Map::new();
        key.insert(name.clone(), Value::Array(Vec::new()));
        let line = to_yaml(&Value::Object(key));
        if items.is_empty() {
            out.push_str(&line);
            continue;
        }
        // `name: []` without its empty list
        out.push_str(line.trim_end().trim_end_matches("[]").trim_end());
        out.push('\n');
        for item in items {
            let text = to_yaml(&item.to_json());
            push_indented(&mut out, text.trim_end(), "- ", "  ");
            out.push('\n');
        }
    }
    out
}

fn to_yaml(value: &Value) -> String {
    addon_core::yaml::to_string(value).unwrap_or_else(|e| format!("cannot render YAML: {e}\n"))
}

/// Appends `text`, its first line after `first` and every other line after `rest` (JSON and YAML
/// strings hold no raw line breaks outside block scalars, whose lines move with their parent).
fn push_indented(out: &mut String, text: &str, first: &str, rest: &str) {
    for (index, line) in text.lines().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(if index == 0 { first } else { rest });
        out.push_str(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use addon_core::binding_context::ObjectAndFilterResult;
    use serde_json::json;

    fn items() -> Vec<BindingItems> {
        let pod = |name: &str| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
                "data": {"script": "line 1\nline 2\n", "empty": {}, "list": [], "nested": [{"a": [1, 2]}]}})
        };
        vec![
            (
                "pods".to_string(),
                vec![
                    ObjectAndFilterResult::new(pod("a"), Some(json!({"name": "a", "n": [1]}))),
                    ObjectAndFilterResult::new(pod("b"), None),
                ],
            ),
            ("none yet".to_string(), Vec::new()),
            (
                "lean".to_string(),
                vec![ObjectAndFilterResult {
                    object: None,
                    ..ObjectAndFilterResult::new(pod("c"), Some(json!("c")))
                }],
            ),
        ]
    }

    /// The whole document, as the route rendered it before.
    fn whole(bindings: &[BindingItems]) -> Value {
        let mut map = serde_json::Map::new();
        for (name, items) in bindings {
            let items = items.iter().map(ObjectAndFilterResult::to_json).collect();
            map.insert(name.clone(), Value::Array(items));
        }
        Value::Object(map)
    }

    #[test]
    fn snapshots_rendered_an_object_at_a_time_are_the_text_of_the_whole_document() {
        for bindings in [items(), Vec::new(), vec![("only".to_string(), Vec::new())]] {
            let doc = whole(&bindings);
            for format in [Format::Text, Format::Json, Format::Yaml] {
                assert_eq!(
                    render(format, &bindings),
                    format.render(&doc),
                    "{format:?} of {doc}"
                );
            }
        }
    }
}
