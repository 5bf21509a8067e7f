//! Tests of the key-by-key YAML text edits.

use super::*;
use serde_json::json;

const FILE: &str = "\
# Operator config, edited by hand.

global:
  # the cluster's name
  clusterName: laptop   # keep this

  # bumped by a hook
  counter: 1 # changes
  'quoted': \"yes\"
  nested:
    deep: 1 # deep comment
    other: x
  # trailing comment of global

web:
  host: example.com
";

fn edit(text: &str, change: impl FnOnce(&mut Value)) -> String {
    let old = yaml::parse(text).unwrap();
    let mut new = old.clone();
    change(&mut new);
    splice(text, &old, &new).unwrap()
}

#[test]
fn a_changed_nested_key_rewrites_only_its_own_line() {
    let out = edit(FILE, |v| v["global"]["counter"] = json!(2));
    assert_eq!(
        out,
        FILE.replace("  counter: 1 # changes\n", "  counter: 2\n")
    );
}

#[test]
fn a_change_two_levels_down_keeps_the_comments_around_it() {
    let out = edit(FILE, |v| v["global"]["nested"]["other"] = json!("z"));
    assert_eq!(out, FILE.replace("    other: x\n", "    other: z\n"));
}

#[test]
fn a_new_key_goes_at_the_end_of_its_mapping_with_its_indentation() {
    let out = edit(FILE, |v| v["global"]["added"] = json!(true));
    let expected = FILE.replace("    other: x\n", "    other: x\n  added: true\n");
    assert_eq!(out, expected);
}

#[test]
fn a_removed_nested_key_takes_only_its_lines() {
    let out = edit(FILE, |v| {
        v["global"].as_object_mut().unwrap().remove("counter");
    });
    assert_eq!(out, FILE.replace("  counter: 1 # changes\n", ""));
}

#[test]
fn a_new_mapping_is_rendered_in_block_style_under_its_parent() {
    let text = "metadata:\n  name: x # the name\n";
    let out = edit(text, |v| {
        v["metadata"]["labels"] = json!({"heritage": "addon-operator"})
    });
    assert_eq!(
        out,
        "metadata:\n  name: x # the name\n  labels:\n    heritage: addon-operator\n"
    );
}

#[test]
fn a_flow_mapping_is_replaced_as_a_value() {
    let text = "# c\nmetadata:\n  labels: {app: web}\n  name: x\n";
    let out = edit(text, |v| {
        v["metadata"]["labels"]["heritage"] = json!("addon-operator")
    });
    assert!(out.starts_with("# c\nmetadata:\n"), "{out}");
    assert!(out.ends_with("  name: x\n"), "{out}");
    assert_eq!(
        yaml::parse(&out).unwrap()["metadata"]["labels"],
        json!({"app": "web", "heritage": "addon-operator"})
    );
}

#[test]
fn a_top_level_flow_document_cannot_be_edited_in_place() {
    let text = "{a: {b: 1}}\n";
    let old = yaml::parse(text).unwrap();
    assert_eq!(splice(text, &old, &json!({"a": {"b": 2}})), None);
}

#[test]
fn sequences_at_the_keys_indentation_stay_in_their_key() {
    let text = "a:\n- 1\n- 2\nb: 1\n";
    let out = edit(text, |v| v["b"] = json!(2));
    assert_eq!(out, "a:\n- 1\n- 2\nb: 2\n");
}

#[test]
fn key_lines_are_recognised_in_their_usual_spellings() {
    assert_eq!(key_of("global:\n").as_deref(), Some("global"));
    assert_eq!(key_of("web: {a: 1}\n").as_deref(), Some("web"));
    assert_eq!(key_of("\"quoted\": 1\n").as_deref(), Some("quoted"));
    assert_eq!(key_of("url:http://x\n"), None);
    assert_eq!(key_of("- item\n"), None);
    assert_eq!(key_of("---\n"), None);
}
