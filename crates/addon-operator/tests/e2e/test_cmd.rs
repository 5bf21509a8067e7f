//! `addon-operator test`: declarative hook tests on a small tree of bash hooks, run without a
//! cluster: passing and failing cases, the diff, JUnit output, `--update`, and `check`.

use std::path::Path;

use crate::support::{demo_dir, require_tool, run, write};

const COUNT_HOOK: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<'CFG'
configVersion: v1
onStartup: 1
kubernetes:
- name: pods
  kind: Pod
  jqFilter: .metadata.name
- name: nodes
  kind: Node
  group: cluster
- name: zones
  kind: Zone
  group: cluster
CFG
  exit 0
fi
count=$(jq '[.[0].snapshots.pods // .[0].objects // [] | .[]] | length' "$BINDING_CONTEXT_PATH")
kind=$(jq -r '.[0].type // "none"' "$BINDING_CONTEXT_PATH")
jq -n --argjson n "$count" '[{"op": "add", "path": "/global/podCount", "value": $n}]' > "$VALUES_JSON_PATCH_PATH"
if [[ "$kind" == "Event" ]]; then
  name=$(jq -r '.[0].filterResult' "$BINDING_CONTEXT_PATH")
  jq -nc --arg n "$name" '{"operation": "CreateOrUpdate", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ("seen-" + $n), "namespace": "d"}}}' > "$KUBERNETES_PATCH_PATH"
  echo '{"name": "pods_seen", "action": "add", "value": 1}' > "$METRICS_PATH"
fi
if [[ "$kind" == "Group" ]]; then
  jq -c '{"operation": "Delete", "kind": "Node", "name": .[0].snapshots.nodes[0].object.metadata.name}' "$BINDING_CONTEXT_PATH" > "$KUBERNETES_PATCH_PATH"
fi
"#;

const SCALE_HOOK: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  echo '{"configVersion": "v1", "beforeHelm": 1, "afterDeleteHelm": 1}'
  exit 0
fi
replicas=$(jq '.web.replicas' "$VALUES_PATH")
if [[ "$replicas" == "0" ]]; then echo "no replicas" >&2; exit 3; fi
jq -n --argjson r "$replicas" '[{"op": "add", "path": "/web/replicas", "value": ($r * 2)}]' > "$VALUES_JSON_PATCH_PATH"
"#;

const ENABLED: &str = r#"#!/usr/bin/env bash
set -euo pipefail
if [[ "${WEB_OFF:-}" == "1" ]]; then echo false > "$MODULE_ENABLED_RESULT"; else echo true > "$MODULE_ENABLED_RESULT"; fi
"#;

const SCALE_TESTS: &str = r#"# tests of hooks/scale
hook: hooks/scale
cases:
- name: doubles the replicas
  binding: beforeHelm
  expect:
    values: {web: {replicas: 4}}
    valuesPatch: [{op: add, path: /web/replicas, value: 4}]
- name: follows the config
  binding: beforeHelm
  configValues: {web: {replicas: 5}}
  expect:
    values: {web: {replicas: 10}}
- name: no replicas is an error
  binding: afterDeleteHelm
  configValues: {web: {replicas: 0}}
  expect:
    error: "exit status 3"
"#;

const COUNT_TESTS: &str = r#"cases:
- name: startup counts nothing
  binding: onStartup
  expect:
    values: {global: {podCount: 0}}
    kubernetesOperations: []
- name: synchronization counts the pods
  binding: pods
  snapshots:
    pods: [{kind: Pod, metadata: {name: a, namespace: d}}, {kind: Pod, metadata: {name: b, namespace: d}}]
  expect:
    values: {global: {podCount: 2}}
- name: an added pod is recorded
  binding: pods
  event: Added
  object: {kind: Pod, metadata: {name: c, namespace: d}}
  snapshots:
    pods: [{kind: Pod, metadata: {name: a, namespace: d}}]
  expect:
    kubernetesOperations:
    - {operation: CreateOrUpdate, object: {metadata: {name: seen-c}}}
    metrics: [{name: pods_seen, value: 1}]
- name: a group sees the group's snapshots
  binding: zones
  snapshots:
    nodes: [{kind: Node, metadata: {name: n1}}]
  expect:
    kubernetesOperations: [{operation: Delete, name: n1}]
- name: the enabled script follows the environment
  module: web
  enabledScript: true
  env: {WEB_OFF: "1"}
  expect:
    enabled: false
"#;

/// A tree with a global hook, a module hook and an `enabled` script, with passing tests.
fn tree(root: &Path) {
    write(&root.join("global-hooks/hooks/count"), COUNT_HOOK, true);
    write(
        &root.join("global-hooks/openapi/values.yaml"),
        "type: object\nproperties:\n  podCount: {type: integer}\n",
        false,
    );
    write(
        &root.join("global-hooks/hooks/count.test.yaml"),
        COUNT_TESTS,
        false,
    );
    write(
        &root.join("modules/values.yaml"),
        "webEnabled: true\nweb:\n  replicas: 2\n",
        false,
    );
    write(&root.join("modules/010-web/hooks/scale"), SCALE_HOOK, true);
    write(&root.join("modules/010-web/enabled"), ENABLED, true);
    write(
        &root.join("modules/010-web/tests/scale.test.yaml"),
        SCALE_TESTS,
        false,
    );
    write(
        &root.join("modules/010-web/tests/more.test.yaml"),
        "hook: hooks/scale\ncases:\n- name: web is enabled\n  enabledScript: true\n  expect: {enabled: true}\n",
        false,
    );
}

fn test(root: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["test", "--working-dir", root.to_str().unwrap()];
    args.extend(extra);
    let out = run(&args);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cases_of_a_tree_pass_with_a_line_each_and_a_summary() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    let (code, stdout, stderr) = test(tmp.path(), &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(
        stdout.matches("\nok ").count() + usize::from(stdout.starts_with("ok ")),
        9,
        "{stdout}"
    );
    assert!(
        stdout.contains("count.test.yaml:13: an added pod is recorded"),
        "{stdout}"
    );
    assert!(stdout.ends_with("9 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn a_changed_line_fails_exactly_the_cases_that_cover_it_with_a_diff() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    let hook = tmp.path().join("modules/010-web/hooks/scale");
    write(&hook, &SCALE_HOOK.replace("($r * 2)", "($r * 3)"), true);
    let (code, stdout, stderr) = test(tmp.path(), &[]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let failed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(failed.len(), 2, "{stdout}");
    assert!(
        failed[0].ends_with("scale.test.yaml:4: doubles the replicas"),
        "{stdout}"
    );
    assert!(
        failed[1].ends_with("scale.test.yaml:9: follows the config"),
        "{stdout}"
    );
    assert!(
        stdout.contains("          values.web.replicas: expected 4, got 6\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("          valuesPatch[0].value: expected 4, got 6\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("values.web.replicas: expected 10, got 15"),
        "{stdout}"
    );
    assert!(stdout.ends_with("7 passed, 2 failed\n"), "{stdout}");
}

#[test]
fn junit_output_is_well_formed_xml_with_a_failure_per_failing_case() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    let tests = tmp.path().join("modules/010-web/tests/scale.test.yaml");
    write(
        &tests,
        &SCALE_TESTS.replace("replicas: 10", "replicas: 11"),
        false,
    );
    let (code, stdout, _) = test(tmp.path(), &["--format", "junit"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    assert_well_formed(&stdout);
    assert_eq!(stdout.matches("<testsuite ").count(), 3, "{stdout}");
    assert_eq!(stdout.matches("<testcase ").count(), 9, "{stdout}");
    assert_eq!(stdout.matches("<failure ").count(), 1, "{stdout}");
    assert!(
        stdout.contains("<failure message=\"values.web.replicas: expected 11, got 10\">"),
        "{stdout}"
    );
}

/// Every element is closed in order, attributes are quoted, and `&` starts an entity.
fn assert_well_formed(xml: &str) {
    let body = xml.split_once("?>").map_or(xml, |(_, b)| b);
    let mut stack: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        assert!(!text.contains('>'), "stray '>' in {text}");
        check_entities(text);
        let end = rest[start..].find('>').expect("unclosed tag") + start;
        let tag = &rest[start + 1..end];
        assert_eq!(
            tag.matches('"').count() % 2,
            0,
            "unbalanced quotes in <{tag}>"
        );
        check_entities(tag);
        let name = tag
            .trim_start_matches('/')
            .split([' ', '/'])
            .next()
            .unwrap()
            .to_string();
        if let Some(closing) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(closing.trim()),
                "mismatched </{closing}>"
            );
        } else if !tag.ends_with('/') {
            stack.push(name);
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
}

fn check_entities(text: &str) {
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
        let known = ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#10;"];
        assert!(known.contains(&entity), "bad entity {entity}");
    }
}

#[test]
fn update_writes_the_outputs_into_the_named_cases_only() {
    if !require_tool("jq") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    let file = tmp.path().join("modules/010-web/tests/new.test.yaml");
    let text = "# first version\nhook: hooks/scale\ncases:\n- name: fresh\n  binding: beforeHelm\n- name: other\n  binding: beforeHelm\n  expect: {values: {web: {replicas: 99}}}\n";
    write(&file, text, false);
    let (code, stdout, stderr) = test(tmp.path(), &["--update", "--filter", "fresh"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("updated new.test.yaml") || stdout.contains("updated "),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("0 passed, 0 failed, 1 updated\n"),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("# first version\n"), "{written}");
    assert!(written.contains("valuesPatch"), "{written}");
    assert!(
        written.contains("replicas: 99"),
        "the other case is kept: {written}"
    );
    let (code, stdout, _) = test(tmp.path(), &[file.to_str().unwrap(), "--filter", "fresh"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.ends_with("1 passed, 0 failed\n"), "{stdout}");
}

#[test]
fn a_test_file_with_a_mistake_is_reported_with_its_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path());
    write(
        &tmp.path().join("modules/010-web/tests/bad.test.yaml"),
        "cases:\n- name: fine\n  hook: hooks/scale\n  binding: beforeHelm\n- name: wrong binding\n  hook: hooks/scale\n  binding: afterHelm\n",
        false,
    );
    write(
        &tmp.path().join("modules/010-web/tests/broken.test.yaml"),
        "cases:\n- name: a\n  bindin: beforeHelm\n",
        false,
    );
    let out = run(&["check", "--working-dir", tmp.path().to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout
            .contains("bad.test.yaml:5: case 'wrong binding': the hook has no binding 'afterHelm'"),
        "{stdout}"
    );
    assert!(
        stdout.contains("broken.test.yaml:3: unknown field `bindin`"),
        "{stdout}"
    );
    let (code, stdout, _) = test(tmp.path(), &["--filter", "wrong"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("FAIL    "), "{stdout}");
    assert!(
        stdout.contains("bad.test.yaml:5: wrong binding"),
        "{stdout}"
    );
}

#[test]
fn the_examples_ship_passing_tests() {
    if !require_tool("jq") {
        return;
    }
    let crds = demo_dir().join("../crds");
    for (tree, cases) in [(demo_dir(), 9), (crds, 3)] {
        let (code, stdout, stderr) = test(&tree, &["--format", "tap"]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert!(stdout.starts_with("TAP version 13\n"), "{stdout}");
        assert!(!stdout.contains("not ok"), "{stdout}");
        assert_eq!(stdout.matches("\nok ").count(), cases, "{stdout}");
    }
}
