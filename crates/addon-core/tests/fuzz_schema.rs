//! Fuzz target: OpenAPI schema loading (config-values.yaml, values.yaml with x-extend) gives schemas or an error, and loaded schemas validate and default any value without panicking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_support;

use addon_core::schema::{SchemaFile, ScopeSchemas};
use addon_core::values::Scope;
use fuzz_support::{Rng, cases, corpus, deep, mutate};
use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "type: object\n",
    "type: array\n",
    "items: {type: string}\n",
    "x-extend: {schema: config-values.yaml}\n",
    "x-required-for-helm: [a]\n",
    "nullable: true\n",
    "default: {a: 1}\n",
    "enum: [1, a]\n",
    "additionalProperties: false\n",
    "$ref: '#'\n",
    "$ref: '#/properties/a'\n",
    "pattern: '(a+)+$'\n",
    "required: []\n",
    "minimum: 1e309\n",
    "oneOf: [{}, {}]\n",
    "properties:\n  a:\n    ",
];

fn values(rng: &mut Rng) -> Value {
    let pick = [
        json!(null),
        json!({}),
        json!({"a": 1}),
        json!({"a": {"b": [1, "x"]}}),
        json!("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"),
        json!([[]]),
        json!(1e300),
    ];
    rng.pick(&pick).clone()
}

fn check(rng: &mut Rng, config: Option<&str>, values_text: Option<&str>) {
    let loaded = ScopeSchemas::load(
        &Scope::Global,
        config.map(|text| SchemaFile {
            file: "config-values.yaml",
            text,
        }),
        values_text.map(|text| SchemaFile {
            file: "values.yaml",
            text,
        }),
    );
    let Ok(schemas) = loaded else {
        return;
    };
    for _ in 0..3 {
        let mut v = values(rng);
        schemas.apply_config_defaults(&mut v);
        schemas.apply_values_defaults(&mut v);
        let _ = schemas.validate_config(&v);
        let _ = schemas.validate_values(&v);
        let _ = schemas.validate_helm(&v);
    }
}

#[test]
fn mutated_schemas_load_or_fail_with_an_error() {
    let configs = corpus("schema", |n| n == "config-values.yaml");
    let all_values = corpus("schema", |n| n == "values.yaml");
    let mut rng = Rng::new("schema");
    for _ in 0..cases(150) {
        let config = rng.pick(&configs).clone();
        let config = mutate(&mut rng, &config, WORDS);
        let value = rng.pick(&all_values).clone();
        let value = mutate(&mut rng, &value, WORDS);
        let with_config = rng.chance(70);
        check(
            &mut rng,
            with_config.then_some(config.as_str()),
            Some(&value),
        );
    }
}

#[test]
fn deep_schema_texts_are_errors() {
    let mut rng = Rng::new("schema_deep");
    for text in deep(100_000) {
        check(&mut rng, Some(&text), Some(&text));
    }
    for depth in [10, 100, 1_000, 10_000] {
        let nested = format!(
            "{}type: string{}",
            "{type: object, properties: {a: ".repeat(depth),
            "}}".repeat(depth)
        );
        check(&mut rng, Some(&nested), Some(&nested));
    }
}
