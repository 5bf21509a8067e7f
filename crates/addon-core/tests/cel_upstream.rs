//! Upstream's CEL cases (`pkg/values/validation/cel/cel_test.go` and the CEL table of
//! `pkg/values/validation/validator_test.go`) as one table, run through the config schema the
//! way a config edit is checked: same inputs, same verdicts, same messages.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use addon_core::names::ModuleName;
use addon_core::schema::{SchemaError, SchemaFile, ScopeSchemas};
use addon_core::values::Scope;
use serde_json::{Value, json};

/// What upstream expects.
enum Expect {
    /// Valid.
    Pass,
    /// Invalid with exactly these rule messages (in any order).
    Messages(&'static [&'static str]),
    /// Invalid, and the error holds each of these.
    Contains(&'static [&'static str]),
    /// The rule list itself is refused.
    SchemaError,
}

struct Case {
    name: &'static str,
    schema: &'static str,
    values: &'static str,
    old: Option<&'static str>,
    expect: Expect,
}

const FILE: &str = "modules/010-module-name/openapi/config-values.yaml";

fn load(schema: &str) -> Result<ScopeSchemas, SchemaError> {
    let scope = Scope::Module(ModuleName::new("module-name").unwrap());
    ScopeSchemas::load(
        &scope,
        Some(SchemaFile {
            file: FILE,
            text: schema,
        }),
        None,
    )
}

/// The section of `moduleName` when the YAML has one (validator_test's inputs), else all of it.
fn values(text: &str) -> Value {
    let v = addon_core::yaml::parse(text).unwrap();
    v.get("moduleName").cloned().unwrap_or(v)
}

fn messages(err: &SchemaError) -> Vec<String> {
    let SchemaError::Validate { issues, .. } = err else {
        panic!("not a validation error: {err}");
    };
    let mut out: Vec<String> = issues
        .iter()
        .map(|i| i.split_once(": ").map_or(i.clone(), |(_, m)| m.to_string()))
        .collect();
    out.sort();
    out
}

fn run(case: &Case) -> Result<(), String> {
    let schemas = match (load(case.schema), &case.expect) {
        (Err(_), Expect::SchemaError) => return Ok(()),
        (Err(e), _) => return Err(format!("schema refused: {e}")),
        (Ok(_), Expect::SchemaError) => return Err("schema accepted".into()),
        (Ok(s), _) => s,
    };
    let old = case.old.map(values);
    let got = schemas.validate_config_with_fallback(&values(case.values), &json!({}), old.as_ref());
    match (&case.expect, got) {
        (Expect::Pass, Ok(())) => Ok(()),
        (Expect::Messages(want), Err(e)) => {
            let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
            want.sort();
            let got = messages(&e);
            (got == want)
                .then_some(())
                .ok_or(format!("messages {got:?}, want {want:?}"))
        }
        (Expect::Contains(parts), Err(e)) => {
            let text = e.to_string();
            match parts.iter().find(|p| !text.contains(*p)) {
                None => Ok(()),
                Some(p) => Err(format!("'{text}' lacks '{p}'")),
            }
        }
        (_, got) => Err(format!("verdict {got:?}")),
    }
}

const REPLICAS_RULE: &str = "
type: object
properties:
  replicas:
    type: integer
x-deckhouse-validations:
  - expression: \"self.replicas >= 1\"
    message: \"replicas must be >= 1\"
";

const DOMAIN_RULE: &str = "
type: object
properties:
  clusterDomain:
    type: string
x-deckhouse-validations:
  - expression: \"self.clusterDomain == oldSelf.clusterDomain\"
    message: \"clusterDomain is immutable\"
";

const REGISTRY_MODE_RULE: &str = "
type: object
properties:
  registry:
    type: object
    properties:
      mode:
        type: string
    x-deckhouse-validations:
      - expression: \"self.mode == oldSelf.mode\"
        message: \"registry.mode is immutable\"
";

const APPEND_ONLY_RULE: &str = "
type: object
properties:
  items:
    type: array
    items:
      type: string
x-deckhouse-validations:
  - expression: \"self.items.all(x, x in oldSelf.items)\"
    message: \"items can only be appended to\"
";

/// cel_test.go, one entry per test function.
const CEL_TEST_GO: &[Case] = &[
    Case {
        name: "TestValidate_NoRules",
        schema: "type: object\nproperties:\n  foo:\n    type: string\n",
        values: "foo: bar",
        old: None,
        expect: Expect::Pass,
    },
    Case {
        name: "TestValidate_PlainSelfRulePass",
        schema: REPLICAS_RULE,
        values: "replicas: 3",
        old: None,
        expect: Expect::Pass,
    },
    Case {
        name: "TestValidate_PlainSelfRuleFail",
        schema: REPLICAS_RULE,
        values: "replicas: 0",
        old: None,
        expect: Expect::Messages(&["replicas must be >= 1"]),
    },
    Case {
        name: "TestValidateTransition_OldSelfSkippedWhenNoOldValues",
        schema: DOMAIN_RULE,
        values: "clusterDomain: cluster.local",
        old: None,
        expect: Expect::Pass,
    },
    Case {
        name: "TestValidateTransition_ImmutableTopLevelFieldUnchanged",
        schema: DOMAIN_RULE,
        values: "clusterDomain: cluster.local",
        old: Some("clusterDomain: cluster.local"),
        expect: Expect::Pass,
    },
    Case {
        name: "TestValidateTransition_ImmutableTopLevelFieldChanged",
        schema: DOMAIN_RULE,
        values: "clusterDomain: cluster.local",
        old: Some("clusterDomain: example.com"),
        expect: Expect::Messages(&["clusterDomain is immutable"]),
    },
    Case {
        name: "TestValidateTransition_NestedImmutableField",
        schema: REGISTRY_MODE_RULE,
        values: "registry:\n  mode: Direct\n",
        old: Some("registry:\n  mode: Proxy\n"),
        expect: Expect::Messages(&["registry.mode is immutable"]),
    },
    Case {
        name: "TestValidateTransition_NestedTransitionSkippedForNewlyAddedSubtree",
        schema: REGISTRY_MODE_RULE,
        values: "registry:\n  mode: Direct\n",
        old: Some("{}"),
        expect: Expect::Pass,
    },
    Case {
        name: "TestValidateTransition_NonTransitionRuleStillEnforcedOnUpdate",
        schema: "
type: object
properties:
  replicas:
    type: integer
  mode:
    type: string
x-deckhouse-validations:
  - expression: \"self.replicas >= 1\"
    message: \"replicas must be >= 1\"
  - expression: \"self.mode == oldSelf.mode\"
    message: \"mode is immutable\"
",
        values: "replicas: 0\nmode: Proxy\n",
        old: Some("replicas: 5\nmode: Direct\n"),
        expect: Expect::Messages(&["replicas must be >= 1", "mode is immutable"]),
    },
    Case {
        name: "TestValidateTransition_OldSelfInComprehension",
        schema: APPEND_ONLY_RULE,
        values: "items: [a, b, c]",
        old: Some("items: [a, b]"),
        expect: Expect::Messages(&["items can only be appended to"]),
    },
    Case {
        name: "TestValidateTransition_OldSelfMacroSkippedWithoutOld",
        schema: APPEND_ONLY_RULE,
        values: "items: [a, b, c]",
        old: None,
        expect: Expect::Pass,
    },
    Case {
        name: "TestValidate_BackwardCompatibilityWithoutOldSelf",
        schema: "
type: object
properties:
  minReplicas:
    type: integer
  replicas:
    type: integer
  maxReplicas:
    type: integer
x-deckhouse-validations:
  - expression: \"self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas\"
    message: \"replicas must be between minReplicas and maxReplicas\"
",
        values: "minReplicas: 1\nreplicas: 10\nmaxReplicas: 5\n",
        old: None,
        expect: Expect::Contains(&["replicas must be between"]),
    },
    Case {
        name: "TestValidate_InvalidExtensionShape",
        schema: "type: object\nx-deckhouse-validations: \"not a list\"\n",
        values: "{}",
        old: None,
        expect: Expect::SchemaError,
    },
    Case {
        name: "TestValidate_MissingExpression",
        schema: "type: object\nx-deckhouse-validations:\n  - message: \"no expression\"\n",
        values: "{}",
        old: None,
        expect: Expect::SchemaError,
    },
];

/// validator_test.go, `Test_ValidateConfigValues_CEL`.
const VALIDATOR_TEST_GO: &[Case] = &[
    Case {
        name: "CEL validation fails when array length < 1",
        schema: "
type: object
properties:
  arr:
    type: array
x-deckhouse-validations:
  - expression: \"self.arr.size() < 1\"
    message: \"arr must be greater than 1\"
",
        values: "moduleName:\n  arr: [1]\n",
        old: None,
        expect: Expect::Contains(&["arr must be greater than 1"]),
    },
    Case {
        name: "CEL validation fails when array length < 1 self is array",
        schema: "
type: object
properties:
  arr:
    type: array
    x-deckhouse-validations:
      - expression: \"self.size() < 1\"
        message: \"arr must be greater than 1\"
",
        values: "moduleName:\n  arr: [1]\n",
        old: None,
        expect: Expect::Contains(&["arr must be greater than 1"]),
    },
    Case {
        name: "CEL validation fails when replicas < 1 and self is not a map",
        schema: "
type: object
properties:
  replicas:
    type: integer
    x-deckhouse-validations:
      - expression: \"self < 1\"
        message: \"replicas must be greater than 1\"
",
        values: "moduleName:\n  replicas: 1\n",
        old: None,
        expect: Expect::Contains(&["replicas must be greater than 1"]),
    },
    Case {
        name: "CEL validation fails when replicas < 1 and ignores not existing field",
        schema: "
type: object
properties:
  replicas:
    type: integer
x-deckhouse-validations:
  - expression: \"self.ignoredField == 'Ignored'\"
    message: \"ignore not existing field\"
  - expression: \"self.replicas < 1\"
    message: \"replicas must be greater than 1\"
",
        values: "moduleName:\n  replicas: 1\n",
        old: None,
        expect: Expect::Contains(&["replicas must be greater than 1"]),
    },
    Case {
        name: "CEL validation works",
        schema: "
type: object
properties:
  a:
    type: object
    properties:
      b:
        type: string

x-deckhouse-validations:
- expression: 'self.a.b == \"abc\"'
  message: \"Not equal to abc\"
",
        values: "moduleName:\n  a:\n    b: abd\n",
        old: None,
        expect: Expect::Contains(&["Not equal to abc"]),
    },
    Case {
        name: "CEL validation works with nested properties",
        schema: "
type: object
properties:
  a:
    type: object
    properties:
      b:
        type: string
      c:
        type: number
    x-deckhouse-validations:
      - expression: 'self.b == \"abc\"'
        message: \"Not equal to abc\"
      - expression: 'self.c == 123'
        message: \"Not equal to 123\"
",
        values: "moduleName:\n  a:\n    b: abd\n    c: 122\n",
        old: None,
        expect: Expect::Contains(&["Not equal to abc", "Not equal to 123"]),
    },
    Case {
        name: "CEL validation works with deep nested properties",
        schema: "
type: object
properties:
  a:
    type: object
    properties:
      b:
        type: object
        properties:
          c:
            type: object
            properties:
              d:
                type: number
            x-deckhouse-validations:
            - expression: 'self.d == 123'
              message: \"Not equal to 123\"
",
        values: "moduleName:\n  a:\n    b:\n      c:\n        d: 122\n",
        old: None,
        expect: Expect::Contains(&["Not equal to 123"]),
    },
    Case {
        name: "CEL validation works with several similliar field with different types on different levels",
        schema: "
type: object
properties:
  a:
    type: object
    properties:
      a:
        type: string
      c:
        type: object
        properties:
          a:
            type: number
        x-deckhouse-validations:
        - expression: 'self.a == 25'
          message: \"Not equal to 25\"
    x-deckhouse-validations:
      - expression: 'self.a == \"abc\"'
        message: \"Not equal to abc\"
",
        values: "moduleName:\n  a:\n    a: \"ab\"\n    c:\n      a: 21\n",
        old: None,
        expect: Expect::Contains(&["Not equal to abc", "Not equal to 25"]),
    },
    Case {
        name: "CEL validation for map values",
        schema: "
type: object
properties:
  mymap:
    type: object
    foo:
      type: integer
    bar:
      type: integer
x-deckhouse-validations:
- expression: \"self.mymap.all(key, self.mymap[key] > 0)\"
  message: \"all map values must be greater than 0\"
",
        values: "moduleName:\n  mymap:\n    foo: 1\n    bar: 0\n",
        old: None,
        expect: Expect::Contains(&["all map values must be greater than 0"]),
    },
    Case {
        name: "CEL validation for additionalProperties (map values)",
        schema: "
type: object
properties:
  mymap:
    type: object
    additionalProperties:
      type: integer
    x-deckhouse-validations:
    - expression: \"self.all(key, self[key] > 0)\"
      message: \"all map values must be greater than 0\"
",
        values: "moduleName:\n  mymap:\n    foo: 1\n    bar: 0\n",
        old: None,
        expect: Expect::Contains(&["all map values must be greater than 0"]),
    },
];

#[test]
fn upstream_cel_cases_give_upstream_verdicts_and_messages() {
    let cases: Vec<&Case> = CEL_TEST_GO.iter().chain(VALIDATOR_TEST_GO).collect();
    assert_eq!(
        cases.len(),
        24,
        "14 from cel_test.go, 10 from validator_test.go"
    );
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|c| run(c).err().map(|e| format!("{}: {e}", c.name)))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn a_failed_rule_names_the_module_the_file_and_the_value_path() {
    let schemas = load(REGISTRY_MODE_RULE).unwrap();
    let err = schemas
        .validate_config_with_fallback(
            &json!({"registry": {"mode": "Direct"}}),
            &json!({}),
            Some(&json!({"registry": {"mode": "Proxy"}})),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("module 'module-name'"), "{err}");
    assert!(err.contains(FILE), "{err}");
    assert!(
        err.contains("/moduleName/registry: registry.mode is immutable"),
        "{err}"
    );
}

#[test]
fn a_rule_that_does_not_compile_is_a_schema_error_naming_the_file_and_node() {
    let schema = "type: object\nproperties:\n  a:\n    type: string\n    x-deckhouse-validations:\n      - {expression: 'self ==', message: m}\n";
    let err = addon_core::error::error_chain(&load(schema).unwrap_err());
    assert!(err.contains(FILE), "{err}");
    assert!(
        err.contains("/properties/a/x-deckhouse-validations/0"),
        "{err}"
    );
}

#[test]
fn values_patches_compare_with_the_values_before_them() {
    let values = "x-extend:\n  schema: config-values.yaml\ntype: object\n";
    let scope = Scope::Module(ModuleName::new("module-name").unwrap());
    let schemas = ScopeSchemas::load(
        &scope,
        Some(SchemaFile {
            file: FILE,
            text: DOMAIN_RULE,
        }),
        Some(SchemaFile {
            file: "values.yaml",
            text: values,
        }),
    )
    .unwrap();
    let new = json!({"clusterDomain": "a.local"});
    schemas.validate_values_transition(&new, None).unwrap();
    let old = json!({"clusterDomain": "b.local"});
    assert!(
        schemas
            .validate_values_transition(&new, Some(&old))
            .is_err()
    );
}
