//! Tests of the key-by-key patching of the config file text.

use super::*;
use serde_json::json;

const FILE: &str = "\
# Operator config, edited by hand.
# Keep the comments!

global:
  # replicas of every module
  replicas: 2 # two is enough
  counter: 1

# The web module
web:
  host: example.com   # public name
  ports: [80, 443]
webEnabled: true

# Last words
db: |
  size: 10Gi
";

fn change(pairs: &[(&str, Option<Value>)]) -> ConfigKeyChange {
    let mut change = ConfigKeyChange::default();
    for (key, value) in pairs {
        change = change.with(key, value.clone());
    }
    change
}

/// The file's text without the given line range (the span a patch may rewrite).
fn without(text: &str, from: &str, to: &str) -> String {
    let start = text.find(from).unwrap();
    let end = text[start..].find(to).map_or(text.len(), |e| start + e);
    format!("{}{}", &text[..start], &text[end..])
}

#[test]
fn a_patched_section_leaves_every_other_byte_alone() {
    let out = patch_text(
        FILE,
        &change(&[("global", Some(json!({"replicas": 2, "counter": 2})))]),
    )
    .unwrap();
    assert_eq!(
        without(&out, "global:", "\n# The web module"),
        without(FILE, "global:", "\n# The web module")
    );
    let parsed = yaml::parse(&out).unwrap();
    assert_eq!(parsed["global"], json!({"replicas": 2, "counter": 2}));
    assert_eq!(parsed["web"]["host"], "example.com");
    assert!(out.starts_with("# Operator config, edited by hand.\n# Keep the comments!\n\nglobal:"));
}

#[test]
fn comments_above_the_next_key_stay_with_it() {
    let out = patch_text(FILE, &change(&[("webEnabled", Some(json!(false)))])).unwrap();
    assert_eq!(
        out,
        FILE.replace("webEnabled: true\n", "webEnabled: false\n")
    );
}

#[test]
fn a_removed_key_takes_only_its_own_lines() {
    let out = patch_text(FILE, &change(&[("web", None)])).unwrap();
    let expected = FILE.replace(
        "web:\n  host: example.com   # public name\n  ports: [80, 443]\n",
        "",
    );
    assert_eq!(out, expected);
}

#[test]
fn a_new_key_is_appended_at_the_end() {
    let out = patch_text(FILE, &change(&[("cacheEnabled", Some(json!(true)))])).unwrap();
    assert_eq!(out, format!("{FILE}cacheEnabled: true\n"));
    let out = patch_text("a: 1", &change(&[("global", Some(json!({"x": 1})))])).unwrap();
    assert!(out.starts_with("a: 1\nglobal:"), "{out}");
}

#[test]
fn the_last_key_of_the_file_is_replaced_whole() {
    let out = patch_text(FILE, &change(&[("db", Some(json!({"size": "20Gi"})))])).unwrap();
    assert!(out.starts_with(&FILE[..FILE.find("db: |").unwrap()]));
    assert_eq!(yaml::parse(&out).unwrap()["db"], json!({"size": "20Gi"}));
}

#[test]
fn an_empty_or_missing_file_gets_the_keys() {
    let out = patch_text("", &change(&[("global", Some(json!({"a": 1})))])).unwrap();
    assert_eq!(yaml::parse(&out).unwrap(), json!({"global": {"a": 1}}));
}

#[test]
fn a_flow_mapping_file_is_rewritten_whole_and_stays_right() {
    let out = patch_text(
        "{global: {a: 1}, web: {b: 2}}\n",
        &change(&[("global", Some(json!({"a": 2})))]),
    )
    .unwrap();
    assert_eq!(
        yaml::parse(&out).unwrap(),
        json!({"global": {"a": 2}, "web": {"b": 2}})
    );
}

#[test]
fn a_file_that_does_not_parse_is_not_written() {
    let err = patch_text("global: [unclosed\n", &change(&[("web", Some(json!({})))])).unwrap_err();
    assert!(matches!(err, SpliceError::Parse(_)), "{err}");
}

/// Issue 27: a hook's patch of `global.counter` must not drop the comments inside `global`.
#[test]
fn a_nested_change_keeps_the_comments_before_inside_and_after_the_changed_key() {
    let text = "\
global:
  # the cluster's name
  clusterName: laptop   # keep this

  # the counter a hook bumps
  counter: 1
  # after the counter
  zone: 'eu-1'
";
    let out = patch_text(
        text,
        &change(&[(
            "global",
            Some(json!({"clusterName": "laptop", "counter": 2, "zone": "eu-1"})),
        )]),
    )
    .unwrap();
    assert_eq!(out, text.replace("  counter: 1\n", "  counter: 2\n"));
    let added = patch_text(
        text,
        &change(&[(
            "global",
            Some(json!({"clusterName": "laptop", "counter": 1, "zone": "eu-1", "new": "x"})),
        )]),
    )
    .unwrap();
    assert_eq!(added, format!("{text}  new: x\n"));
}
