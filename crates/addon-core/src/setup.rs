//! Builds the values store from what discovery found: common `values.yaml` files, the global and
//! module schemas, and each module's own `values.yaml`.

use crate::discovery::{Discovered, OpenApiFiles, SourceFile};
use crate::schema::{SchemaError, SchemaFile, ScopeSchemas};
use crate::values::patch::Scope;
use crate::values::store::{ValuesError, ValuesStore};

/// A file that could not be turned into values or a schema.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Values(#[from] ValuesError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

impl SetupError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::Values(e) => e.category(),
            Self::Schema(e) => e.category(),
        }
    }
}

/// The store for `found`, and every file that had to be skipped. A module whose schemas are
/// broken is still registered (without schemas) so the rest of the tree can be checked.
pub fn build_store(found: &Discovered) -> (ValuesStore, Vec<SetupError>) {
    let mut store = ValuesStore::new();
    let mut errors = Vec::new();
    for file in &found.modules_values {
        if let Err(e) = store.add_common_values(&display(file), &file.text) {
            errors.push(e.into());
        }
    }
    match load_schemas(&Scope::Global, &found.global.openapi) {
        Ok(schemas) => store.set_global_schemas(schemas),
        Err(e) => errors.push(e.into()),
    }
    for module in &found.modules {
        let scope = Scope::Module(module.name.clone());
        let schemas = load_schemas(&scope, &module.openapi).unwrap_or_else(|e| {
            errors.push(e.into());
            ScopeSchemas::none(&scope)
        });
        let values = module
            .values_yaml
            .as_ref()
            .map(|f| (display(f), f.text.as_str()));
        let values = values.as_ref().map(|(file, text)| (file.as_str(), *text));
        if let Err(e) = store.add_module(module.name.clone(), values, schemas) {
            errors.push(e.into());
        }
        if let Some(dir) = &module.modules_dir {
            let file = dir.join("values.yaml").display().to_string();
            if let Err(e) = store.use_dir_values(&module.name, &file) {
                errors.push(e.into());
            }
        }
    }
    (store, errors)
}

fn load_schemas(scope: &Scope, files: &OpenApiFiles) -> Result<ScopeSchemas, SchemaError> {
    let config_file = files.config_values.as_ref().map(display);
    let values_file = files.values.as_ref().map(display);
    let config = files.config_values.as_ref().zip(config_file.as_ref());
    let values = files.values.as_ref().zip(values_file.as_ref());
    ScopeSchemas::load_with_files(
        scope,
        config.map(|(f, name)| SchemaFile {
            file: name,
            text: &f.text,
        }),
        values.map(|(f, name)| SchemaFile {
            file: name,
            text: &f.text,
        }),
        &files.ref_files,
    )
}

fn display(file: &SourceFile) -> String {
    file.path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{GlobalSource, ModuleSource};
    use crate::names::ModuleName;
    use serde_json::json;
    use std::path::PathBuf;

    fn file(path: &str, text: &str) -> SourceFile {
        SourceFile {
            path: PathBuf::from(path),
            text: text.to_string(),
        }
    }

    fn module(name: &str, values: Option<SourceFile>, openapi: OpenApiFiles) -> ModuleSource {
        ModuleSource {
            name: ModuleName::new(name).unwrap(),
            order: 1,
            path: PathBuf::from(format!("/m/{name}")),
            modules_dir: None,
            values_yaml: values,
            enabled_script: None,
            openapi,
            definition: Default::default(),
            has_chart: false,
            settings_check: None,
            hooks: vec![],
        }
    }

    #[test]
    fn store_gets_common_and_module_values_and_schema_defaults() {
        let found = Discovered {
            global: GlobalSource::default(),
            modules_values: vec![file(
                "/m/values.yaml",
                "global: {a: 1}\nwebEnabled: true\nweb: {x: 1}\n",
            )],
            modules: vec![module(
                "web",
                Some(file("/m/web/values.yaml", "web: {y: 2}\n")),
                OpenApiFiles {
                    config_values: None,
                    values: Some(file(
                        "/m/web/openapi/values.yaml",
                        "type: object\nproperties:\n  x: {type: integer}\n  y: {type: integer}\n  z: {type: string, default: zed}\n",
                    )),
                    ..Default::default()
                },
            )],
            warnings: vec![],
        };
        let (store, errors) = build_store(&found);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(store.global_values(), json!({"a": 1}));
        let web = ModuleName::new("web").unwrap();
        assert_eq!(
            store.module_values(&web).unwrap(),
            json!({"x": 1, "y": 2, "z": "zed"})
        );
        assert!(store.flag_layers(&web).unwrap().enabled());
    }

    fn chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut cur = e.source();
        while let Some(next) = cur {
            out = format!("{out}: {next}");
            cur = next.source();
        }
        out
    }

    #[test]
    fn broken_files_are_reported_and_the_rest_is_kept() {
        let found = Discovered {
            global: GlobalSource::default(),
            modules_values: vec![file("/m/values.yaml", "global: [unclosed\n")],
            modules: vec![
                module(
                    "bad-schema",
                    None,
                    OpenApiFiles {
                        config_values: Some(file(
                            "/m/bad/openapi/config-values.yaml",
                            "type: [1, 2\n",
                        )),
                        ..Default::default()
                    },
                ),
                module(
                    "good",
                    Some(file("/m/good/values.yaml", "good: {k: v}\n")),
                    OpenApiFiles::default(),
                ),
            ],
            warnings: vec![],
        };
        let (store, errors) = build_store(&found);
        let text: Vec<String> = errors.iter().map(|e| chain(e)).collect();
        assert_eq!(errors.len(), 2, "{text:?}");
        assert!(text[0].contains("/m/values.yaml"), "{text:?}");
        assert!(text[1].contains("config-values.yaml"), "{text:?}");
        assert_eq!(store.modules().len(), 2);
        let good = ModuleName::new("good").unwrap();
        assert_eq!(store.module_values(&good).unwrap(), json!({"k": "v"}));
    }
}

#[cfg(test)]
mod config_schema_tests {
    use super::*;
    use crate::discovery::GlobalSource;
    use crate::values::config::Config;
    use std::path::PathBuf;

    fn found(values_yaml: &str) -> Discovered {
        let file = |path: &str, text: &str| SourceFile {
            path: PathBuf::from(path),
            text: text.to_string(),
        };
        Discovered {
            global: GlobalSource {
                openapi: OpenApiFiles {
                    config_values: Some(file(
                        "/gh/openapi/config-values.yaml",
                        "type: object\nrequired: [clusterName]\nproperties:\n  clusterName: {type: string}\n  replicas: {type: integer}\n",
                    )),
                    ..Default::default()
                },
                ..Default::default()
            },
            modules_values: vec![file("/m/values.yaml", values_yaml)],
            modules: vec![],
            warnings: vec![],
        }
    }

    /// VALUES seed: a `required` config field may take its value from values.yaml; as in Go,
    /// only a config section that exists is checked.
    #[test]
    fn config_schema_checks_the_config_section_with_values_files_for_required() {
        let (store, errors) = build_store(&found("global: {clusterName: demo}\n"));
        assert!(errors.is_empty(), "{errors:?}");
        let empty = Config::empty();
        assert!(
            store.check_config(&empty, &[]).is_ok(),
            "required field from values.yaml"
        );

        let bad = Config::from_file("c.yaml", "global: |\n  replicas: three\n").unwrap();
        let err = store.check_config(&bad, &[]).unwrap_err().to_string();
        let chain = format!("{err} {:?}", store.check_config(&bad, &[]).unwrap_err());
        assert!(chain.contains("replicas"), "{chain}");

        let (store, _) = build_store(&found("global: {}\n"));
        assert!(
            store.check_config(&empty, &[]).is_ok(),
            "no global section in the config: nothing to check"
        );
        let partial = Config::from_file("c.yaml", "global: |\n  replicas: 3\n").unwrap();
        let err = store.check_config(&partial, &[]).unwrap_err().to_string();
        assert!(err.contains("clusterName"), "{err}");

        let (store, _) = build_store(&found("global: {clusterName: demo, internal: {a: 1}}\n"));
        assert!(
            store.check_config(&partial, &[]).is_ok(),
            "keys only values.yaml holds are not the config schema's business"
        );
    }
}
