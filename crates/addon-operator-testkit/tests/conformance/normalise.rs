//! What is volatile is made equal before answers are compared (uids, timestamps,
//! resourceVersions, continue tokens, `Status` wording, the server's own variables), selections of
//! parts of an answer, and the differences between two normalised answers.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value, json};

static TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$").unwrap()
});
static UID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap()
});

/// `value` with volatile parts replaced by placeholders. `vars` (the server's saved values, e.g.
/// generated names) are replaced by `${name}` wherever they occur.
pub fn normalise(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    let mut vars: Vec<(&String, &String)> = vars
        .iter()
        .filter(|(_, v)| v.len() >= 3 && !v.chars().all(|c| c.is_ascii_digit()))
        .collect();
    vars.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    walk(value, None, &vars)
}

fn walk(value: &Value, key: Option<&str>, vars: &[(&String, &String)]) -> Value {
    match value {
        Value::Array(entries) if key == Some("managedFields") => managed_fields(entries, vars),
        Value::Object(map) => object(map, vars),
        Value::Array(items) => items.iter().map(|v| walk(v, None, vars)).collect(),
        Value::String(s) => Value::String(string(s, key, vars)),
        other => other.clone(),
    }
}

fn object(map: &Map<String, Value>, vars: &[(&String, &String)]) -> Value {
    let is_status = map.get("kind") == Some(&json!("Status")) && map.contains_key("status");
    let mut out = Map::new();
    for (k, v) in map {
        if k == "selfLink" || (is_status && k == "message") {
            continue;
        }
        let mut v = walk(v, Some(k), vars);
        if is_status && k == "details" {
            drop_cause_messages(&mut v);
        }
        out.insert(string(k, None, vars), v);
    }
    Value::Object(out)
}

/// Managers and their field sets, without times, in an order that does not depend on them (the
/// API server sorts entries by operation, time, then manager).
fn managed_fields(entries: &[Value], vars: &[(&String, &String)]) -> Value {
    let mut entries: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut e = walk(e, None, vars);
            if let Some(map) = e.as_object_mut() {
                map.remove("time");
            }
            e
        })
        .collect();
    let key =
        |e: &Value| ["operation", "manager", "apiVersion", "subresource"].map(|k| e[k].to_string());
    entries.sort_by_key(key);
    Value::Array(entries)
}

/// `Status` wording differs between the servers: a cause's `reason` and `field` are compared, in
/// a fixed order (kube-apiserver reports a custom resource's failed fields in map order).
fn drop_cause_messages(details: &mut Value) {
    let Some(causes) = details.get_mut("causes").and_then(Value::as_array_mut) else {
        return;
    };
    for cause in causes.iter_mut() {
        if let Some(map) = cause.as_object_mut() {
            map.remove("message");
        }
    }
    causes.sort_by_key(|c| (c["field"].to_string(), c["reason"].to_string()));
}

fn string(s: &str, key: Option<&str>, vars: &[(&String, &String)]) -> String {
    match key {
        Some("uid") if !s.is_empty() => return "<uid>".into(),
        Some("resourceVersion") if !s.is_empty() => return "<rv>".into(),
        Some("continue") if !s.is_empty() => return "<continue>".into(),
        _ => {}
    }
    if TIME.is_match(s) {
        return "<time>".into();
    }
    let mut out = UID.replace_all(s, "<uid>").into_owned();
    for (name, value) in vars {
        out = out.replace(value.as_str(), &format!("${{{name}}}"));
    }
    out
}

/// The parts of `value` a selection names: `/`-separated steps, each a key (`~1` is `/`), an
/// index, `*` (every element or member), `[key=value]` (the elements whose `key` is `value`),
/// `@keys` (the sorted member names) or `@len` (the length).
pub fn select(value: &Value, selection: &str) -> Vec<Value> {
    let mut current = vec![value.clone()];
    for step in selection.split('/').filter(|s| !s.is_empty()) {
        // `key[k=v]` is `key` then `[k=v]`
        let (key, filter) = match step.find('[') {
            Some(i) if i > 0 && step.ends_with(']') => (&step[..i], Some(&step[i..])),
            _ => (step, None),
        };
        for part in std::iter::once(key).chain(filter) {
            current = current.iter().flat_map(|v| select_step(v, part)).collect();
        }
    }
    current
}

fn select_step(value: &Value, step: &str) -> Vec<Value> {
    match (step, value) {
        ("*", Value::Array(items)) => items.clone(),
        ("*", Value::Object(map)) => map.values().cloned().collect(),
        ("@keys", Value::Object(map)) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            vec![json!(keys)]
        }
        ("@len", Value::Array(items)) => vec![json!(items.len())],
        ("@len", Value::Object(map)) => vec![json!(map.len())],
        (filter, Value::Array(items)) if filter.starts_with('[') && filter.ends_with(']') => {
            let (key, want) = filter[1..filter.len() - 1].split_once('=').unwrap();
            let text = |v: &Value| v.as_str().map(String::from).unwrap_or(v.to_string());
            items
                .iter()
                .filter(|i| i.get(key).map(text).as_deref() == Some(want))
                .cloned()
                .collect()
        }
        (index, Value::Array(items)) => index
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get(i))
            .cloned()
            .into_iter()
            .collect(),
        (key, Value::Object(map)) => map
            .get(&key.replace("~1", "/").replace("~0", "~"))
            .cloned()
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// Where two normalised values differ: `pointer: real … emulator …` lines.
pub fn differences(real: &Value, emulated: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff(real, emulated, String::new(), &mut out);
    out
}

fn diff(real: &Value, emulated: &Value, at: String, out: &mut Vec<String>) {
    match (real, emulated) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let child = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff(x, y, child, out),
                    (x, y) => out.push(line(&child, x, y)),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(x, y, format!("{at}/{i}"), out);
            }
        }
        (a, b) if a != b => out.push(line(&at, Some(a), Some(b))),
        _ => {}
    }
}

fn line(at: &str, real: Option<&Value>, emulated: Option<&Value>) -> String {
    let show = |v: Option<&Value>| {
        let text = v.map_or("(absent)".to_string(), Value::to_string);
        match text.char_indices().nth(300) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    };
    let at = if at.is_empty() { "/" } else { at };
    format!("{at}: real {} | emulator {}", show(real), show(emulated))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_fields_and_status_messages_are_replaced() {
        let vars = BTreeMap::from([("ns".to_string(), "conf-1".to_string())]);
        let value = json!({"kind": "Status", "status": "Failure", "message": "x", "details":
            {"causes": [{"field": "a", "message": "m"}]},
            "metadata": {"uid": "u", "namespace": "conf-1", "creationTimestamp": "2024-01-02T03:04:05Z",
                         "resourceVersion": "7"}});
        let out = normalise(&value, &vars);
        assert_eq!(out.get("message"), None);
        assert_eq!(out["details"]["causes"][0], json!({"field": "a"}));
        assert_eq!(
            out["metadata"],
            json!({"uid": "<uid>", "namespace": "${ns}", "creationTimestamp": "<time>",
                   "resourceVersion": "<rv>"})
        );
    }

    #[test]
    fn selections_filter_wildcard_and_count() {
        let value = json!({"resources": [{"name": "a", "verbs": ["get"]}, {"name": "b"}]});
        assert_eq!(
            select(&value, "/resources/*/name"),
            [json!("a"), json!("b")]
        );
        assert_eq!(select(&value, "/resources[name=a]/verbs"), [json!(["get"])]);
        assert_eq!(select(&value, "/resources/@len"), [json!(2)]);
        assert_eq!(select(&value, "/@keys"), [json!(["resources"])]);
    }
}
