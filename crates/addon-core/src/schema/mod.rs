//! OpenAPI schemas of a scope (global or a module): `openapi/config-values.yaml` and
//! `openapi/values.yaml` loaded into Draft 4 validators, with defaults and Helm-only requirements.

pub mod cel_rules;
pub mod defaults;
pub mod issue;
pub mod re2;
pub mod refs;
pub mod transform;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::names::Scope;
use crate::yaml::{self, YamlError};

pub use defaults::apply_defaults;

/// The usual file names, as given to [`ScopeSchemas::load`] by the loader.
pub const CONFIG_VALUES_FILE: &str = "openapi/config-values.yaml";
pub const VALUES_FILE: &str = "openapi/values.yaml";

/// A schema that could not be loaded, or values that do not match one.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("{scope}: cannot parse schema {file}")]
    ParseSchema {
        scope: String,
        file: String,
        #[source]
        source: YamlError,
    },
    #[error(
        "{scope}: schema {file} has 'x-extend: {{schema: {target}}}' but only config-values.yaml can be extended and it must exist"
    )]
    ExtendTarget {
        scope: String,
        file: String,
        target: String,
    },
    #[error("{scope}: schema {file}")]
    ExpandRefs {
        scope: String,
        file: String,
        #[source]
        source: Box<refs::RefError>,
    },
    #[error("{scope}: schema {file} is not a valid JSON Schema (Draft 4): {message}")]
    CompileSchema {
        scope: String,
        file: String,
        message: String,
    },
    #[error("{scope}: schema {file}")]
    CelRule {
        scope: String,
        file: String,
        #[source]
        source: Box<cel_rules::CelRuleError>,
    },
    #[error("{scope}: {what} do not match schema {file}: {}", issues.join("; "))]
    Validate {
        scope: String,
        file: String,
        what: &'static str,
        /// One `path: message` line per problem, the path a JSON pointer into the document.
        issues: Vec<String>,
    },
}

impl SchemaError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            SchemaError::Validate { .. } => "values_invalid",
            _ => "schema_invalid",
        }
    }
}

/// Which check a schema serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// `config-values.yaml`: the user's config.
    Config,
    /// `values.yaml` (extended): merged values after each hook.
    Values,
    /// `values.yaml` plus `x-required-for-helm`: values right before Helm.
    Helm,
}

impl SchemaKind {
    fn what(self) -> &'static str {
        match self {
            SchemaKind::Config => "config values",
            SchemaKind::Values => "values",
            SchemaKind::Helm => "values for Helm",
        }
    }
}

/// One compiled schema and the effective document it was compiled from.
pub struct Schema {
    kind: SchemaKind,
    file: String,
    effective: Value,
    validator: jsonschema::Validator,
    rules: cel_rules::CelRules,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("kind", &self.kind)
            .field("file", &self.file)
            .field("effective", &self.effective)
            .finish_non_exhaustive()
    }
}

impl Schema {
    /// The schema after `x-extend`, `nullable`, `additionalProperties` and Helm rewrites.
    pub fn effective(&self) -> &Value {
        &self.effective
    }

    pub fn file(&self) -> &str {
        &self.file
    }
}

/// The schemas of one scope. `label` names the scope in messages (`global`, `module 'x'`) and
/// `key` is its top-level values key (`global`, `certManager`), which prefixes error paths.
#[derive(Debug, Default)]
pub struct ScopeSchemas {
    label: String,
    key: String,
    /// Other files of `openapi/` that `$ref`s may name (dropped after loading).
    files: BTreeMap<String, String>,
    config: Option<Schema>,
    values: Option<Schema>,
    helm: Option<Schema>,
}

/// A schema file's name (for messages) and its text.
#[derive(Debug, Clone, Copy)]
pub struct SchemaFile<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl ScopeSchemas {
    /// A scope without schemas: nothing is validated and no defaults are applied.
    pub fn none(scope: &Scope) -> Self {
        Self {
            label: scope.to_string(),
            key: scope.key(),
            ..Default::default()
        }
    }

    /// Loads the config and values schema texts of a scope; either may be missing.
    pub fn load(
        scope: &Scope,
        config: Option<SchemaFile<'_>>,
        values: Option<SchemaFile<'_>>,
    ) -> Result<Self, SchemaError> {
        Self::load_with_files(scope, config, values, &BTreeMap::new())
    }

    /// Like [`Self::load`]; `files` holds the other files of the `openapi/` directory (by path
    /// relative to it) that `$ref`s may name.
    pub fn load_with_files(
        scope: &Scope,
        config: Option<SchemaFile<'_>>,
        values: Option<SchemaFile<'_>>,
        files: &BTreeMap<String, String>,
    ) -> Result<Self, SchemaError> {
        let mut out = Self::none(scope);
        out.files = files.clone();
        let config_doc = match config {
            Some(f) => Some((f.file, out.parse(f)?)),
            None => None,
        };
        if let Some((file, doc)) = &config_doc {
            let mut effective = doc.clone();
            prepare(&mut effective);
            out.config = Some(out.compile(SchemaKind::Config, file, effective)?);
        }
        if let Some(f) = values {
            let mut doc = out.parse(f)?;
            if let Some(target) = doc.get("x-extend") {
                let target = target.get("schema").and_then(Value::as_str).unwrap_or("");
                match &config_doc {
                    Some((_, parent)) if target == "config-values.yaml" => {
                        transform::extend(&mut doc, parent);
                    }
                    _ => {
                        return Err(SchemaError::ExtendTarget {
                            scope: out.label.clone(),
                            file: f.file.to_string(),
                            target: target.to_string(),
                        });
                    }
                }
            }
            prepare(&mut doc);
            let mut helm = doc.clone();
            transform::merge_required_for_helm(&mut helm);
            for schema in [&mut doc, &mut helm] {
                transform::walk_mut(schema, &mut |map| {
                    map.remove("x-required-for-helm");
                });
            }
            out.values = Some(out.compile(SchemaKind::Values, f.file, doc)?);
            out.helm = Some(out.compile(SchemaKind::Helm, f.file, helm)?);
        }
        out.files.clear();
        Ok(out)
    }

    /// Parses a schema file and expands its `$ref`s.
    fn parse(&self, f: SchemaFile<'_>) -> Result<Value, SchemaError> {
        let mut doc = yaml::parse(f.text).map_err(|source| SchemaError::ParseSchema {
            scope: self.label.clone(),
            file: f.file.to_string(),
            source,
        })?;
        let name = f.file.rsplit('/').next().unwrap_or(f.file);
        refs::expand(&mut doc, name, &self.files).map_err(|source| SchemaError::ExpandRefs {
            scope: self.label.clone(),
            file: f.file.to_string(),
            source: Box::new(source),
        })?;
        Ok(doc)
    }

    fn compile(
        &self,
        kind: SchemaKind,
        file: &str,
        effective: Value,
    ) -> Result<Schema, SchemaError> {
        let mut compiled = effective.clone();
        re2::hide_patterns(&mut compiled);
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .with_keyword(re2::KEYWORD, re2::factory)
            .build(&compiled)
            .map_err(|e| SchemaError::CompileSchema {
                scope: self.label.clone(),
                file: file.to_string(),
                message: e.to_string(),
            })?;
        let rules =
            cel_rules::CelRules::compile(&effective).map_err(|source| SchemaError::CelRule {
                scope: self.label.clone(),
                file: file.to_string(),
                source: Box::new(source),
            })?;
        Ok(Schema {
            kind,
            file: file.to_string(),
            effective,
            validator,
            rules,
        })
    }

    pub fn config(&self) -> Option<&Schema> {
        self.config.as_ref()
    }

    pub fn values(&self) -> Option<&Schema> {
        self.values.as_ref()
    }

    pub fn helm(&self) -> Option<&Schema> {
        self.helm.as_ref()
    }

    /// Fills missing keys with the config schema's defaults.
    pub fn apply_config_defaults(&self, values: &mut Value) {
        if let Some(s) = &self.config {
            apply_defaults(&s.effective, values);
        }
    }

    /// Fills missing keys with the config schema's defaults, then the values schema's.
    pub fn apply_values_defaults(&self, values: &mut Value) {
        self.apply_config_defaults(values);
        if let Some(s) = &self.values {
            apply_defaults(&s.effective, values);
        }
    }

    /// Checks config values (with defaults) against `config-values.yaml`.
    pub fn validate_config(&self, values: &Value) -> Result<(), SchemaError> {
        self.validate(self.config.as_ref(), values)
    }

    /// Checks merged values against `values.yaml`.
    pub fn validate_values(&self, values: &Value) -> Result<(), SchemaError> {
        self.validate(self.values.as_ref(), values)
    }

    /// Checks merged values against `values.yaml`; `old` (the merged values before the change)
    /// is `oldSelf` of CEL transition rules, which are skipped without it.
    pub fn validate_values_transition(
        &self,
        values: &Value,
        old: Option<&Value>,
    ) -> Result<(), SchemaError> {
        self.validate_filtered(self.values.as_ref(), values, old, &|_| false)
    }

    /// Checks values against `values.yaml` with `x-required-for-helm`.
    pub fn validate_helm(&self, values: &Value) -> Result<(), SchemaError> {
        self.validate(self.helm.as_ref(), values)
    }

    /// Checks config values against `config-values.yaml`; a missing `required` property is
    /// forgiven when `fallback` (the static `values.yaml` layers) has it at the same place.
    /// `old` (the stored config section) is `oldSelf` of CEL transition rules.
    pub fn validate_config_with_fallback(
        &self,
        values: &Value,
        fallback: &Value,
        old: Option<&Value>,
    ) -> Result<(), SchemaError> {
        self.validate_filtered(self.config.as_ref(), values, old, &|e| {
            issue::required_present_in(e, fallback)
        })
    }

    fn validate(&self, schema: Option<&Schema>, values: &Value) -> Result<(), SchemaError> {
        self.validate_filtered(schema, values, None, &|_| false)
    }

    /// CEL rules first; when one fails, only their problems are reported (as upstream does),
    /// otherwise the JSON Schema's.
    fn validate_filtered(
        &self,
        schema: Option<&Schema>,
        values: &Value,
        old: Option<&Value>,
        forgiven: &dyn Fn(&jsonschema::ValidationError<'_>) -> bool,
    ) -> Result<(), SchemaError> {
        let Some(schema) = schema else { return Ok(()) };
        let rule_issues: Vec<String> = (schema.rules.check(values, old).into_iter())
            .map(|i| format!("/{}{}: {}", self.key, i.path, i.message))
            .collect();
        if !rule_issues.is_empty() {
            return Err(self.invalid(schema, rule_issues));
        }
        let issues: Vec<String> = schema
            .validator
            .iter_errors(values)
            .filter(|e| !forgiven(e))
            .map(|e| {
                format!(
                    "/{}{}: {}",
                    self.key,
                    e.instance_path(),
                    issue::describe(&e)
                )
            })
            .collect();
        if issues.is_empty() {
            return Ok(());
        }
        Err(self.invalid(schema, issues))
    }

    fn invalid(&self, schema: &Schema, issues: Vec<String>) -> SchemaError {
        SchemaError::Validate {
            scope: self.label.clone(),
            file: schema.file.clone(),
            what: schema.kind.what(),
            issues,
        }
    }
}

/// The rewrites shared by config and values schemas.
fn prepare(schema: &mut Value) {
    transform::rewrite_nullable(schema);
    transform::default_additional_properties(schema);
    transform::drop_empty_required(schema);
}
