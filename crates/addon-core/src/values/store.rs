//! `ValuesStore`: the single-writer owner of static values, config, schemas and remembered values
//! patches, producing the documents each hook kind, `enabled` script and Helm receive.

use std::collections::BTreeMap;
use std::fmt;

use json_patch::PatchOperation;
use serde_json::{Map, Value};

use crate::enablement::FlagLayers;
use crate::names::ModuleName;
use crate::schema::{SchemaError, ScopeSchemas};
use crate::values::checksum::checksum;
use crate::values::config::{Config, ConfigChange};
use crate::values::merge::merged;
use crate::values::patch::{
    self, HookRef, PatchError, PatchKind, Scope, ValuesPatch, enabled_flag_module,
};
use crate::values::static_values::{ModuleStatic, Section, StaticError, StaticLayer};

/// An operation on the values store that failed; the store is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    #[error("cannot load static values")]
    LoadStaticValues {
        #[source]
        source: StaticError,
    },
    #[error("module '{module}' is not registered in the values store")]
    UnknownModule { module: ModuleName },
    #[error("patch refused")]
    ApplyPatch {
        #[source]
        source: PatchError,
    },
    #[error("{}", Invalid(errors))]
    Validate { errors: Vec<SchemaError> },
}

struct Invalid<'a>(&'a [SchemaError]);

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.0.iter().map(|e| e.to_string()).collect();
        f.write_str(&lines.join("; "))
    }
}

impl ValuesError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            ValuesError::LoadStaticValues { .. } => "static_values",
            ValuesError::UnknownModule { .. } => "unknown_module",
            ValuesError::ApplyPatch { source } => source.category(),
            ValuesError::Validate { .. } => "values_invalid",
        }
    }
}

/// The two files a hook or `enabled` script reads: `$CONFIG_VALUES_PATH` and `$VALUES_PATH`.
#[derive(Debug, Clone, PartialEq)]
pub struct HookValues {
    pub config_values: Value,
    pub values: Value,
}

/// The result of a values patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchOutcome {
    /// The values of the hook's scope changed (by checksum).
    pub values_changed: bool,
    /// Modules whose dynamic enable flag changed (global hooks only).
    pub enabled_changed: Vec<ModuleName>,
}

/// The result of a config patch; write `ValuesStore::config().to_data()` to the config store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigPatchOutcome {
    /// The merged values of the hook's scope changed (by checksum).
    pub values_changed: bool,
    /// What changed in the config.
    pub config_change: ConfigChange,
}

#[derive(Debug)]
struct ModuleEntry {
    name: ModuleName,
    /// The `values.yaml` of the module's modules directory (`None`: all of them, merged).
    dir_values: Option<String>,
    file: ModuleStatic,
    schemas: ScopeSchemas,
    patches: Vec<PatchOperation>,
}

/// Values of the global scope and every module; pure data, owned by one writer.
#[derive(Debug)]
pub struct ValuesStore {
    common: StaticLayer,
    /// Each modules directory's `values.yaml`, by file name.
    dir_layers: BTreeMap<String, StaticLayer>,
    global_schemas: ScopeSchemas,
    global_patches: Vec<PatchOperation>,
    modules: Vec<ModuleEntry>,
    config: Config,
    dynamic_enabled: BTreeMap<ModuleName, bool>,
    /// `group/version/Kind` of every CRD the modules' `crds/` installed
    /// (`global.discovery.apiVersions`).
    discovered_api_versions: std::collections::BTreeSet<String>,
}

impl Default for ValuesStore {
    fn default() -> Self {
        Self::new()
    }
}

impl ValuesStore {
    pub fn new() -> Self {
        Self {
            common: StaticLayer {
                global: Value::Object(Map::new()),
                ..Default::default()
            },
            dir_layers: BTreeMap::new(),
            global_schemas: ScopeSchemas::none(&Scope::Global),
            global_patches: Vec::new(),
            modules: Vec::new(),
            config: Config::empty(),
            dynamic_enabled: BTreeMap::new(),
            discovered_api_versions: std::collections::BTreeSet::new(),
        }
    }

    /// Adds the `group/version/Kind` of CRDs a module's `crds/` installed; they appear, sorted,
    /// as `global.discovery.apiVersions` in global values (as upstream's ModuleEnsureCRDs
    /// writes them). Returns whether the list changed.
    pub fn add_discovered_api_versions(
        &mut self,
        versions: impl IntoIterator<Item = String>,
    ) -> bool {
        let before = self.discovered_api_versions.len();
        self.discovered_api_versions.extend(versions);
        self.discovered_api_versions.len() != before
    }

    /// `global` values with `discovery.apiVersions` set when CRDs were installed.
    fn with_discovery(&self, mut global: Value) -> Value {
        if self.discovered_api_versions.is_empty() {
            return global;
        }
        let list: Vec<Value> = self
            .discovered_api_versions
            .iter()
            .cloned()
            .map(Value::String)
            .collect();
        if let Value::Object(map) = &mut global {
            let discovery = map
                .entry("discovery")
                .or_insert_with(|| Value::Object(Map::new()));
            if !discovery.is_object() {
                *discovery = Value::Object(Map::new());
            }
            if let Value::Object(d) = discovery {
                d.insert("apiVersions".to_string(), Value::Array(list));
            }
        }
        global
    }

    /// Adds `<modules dir>/values.yaml`; call once per modules directory, in order.
    pub fn add_common_values(&mut self, file: &str, text: &str) -> Result<(), ValuesError> {
        let layer = StaticLayer::parse(file, text)
            .map_err(|source| ValuesError::LoadStaticValues { source })?;
        self.common.merge(layer.clone());
        self.dir_layers.insert(file.to_string(), layer);
        Ok(())
    }

    /// Takes a module's section and enable flag from `file` (its modules directory's
    /// `values.yaml`, as given to [`Self::add_common_values`]) only, as the Go operator does with
    /// several modules directories. A file that was never added gives nothing.
    pub fn use_dir_values(&mut self, module: &ModuleName, file: &str) -> Result<(), ValuesError> {
        self.module_mut(module)?.dir_values = Some(file.to_string());
        Ok(())
    }

    /// The directory layer that gives `m` its section and enable flag.
    fn dir_layer(&self, m: &ModuleEntry) -> Option<&StaticLayer> {
        match &m.dir_values {
            None => Some(&self.common),
            Some(file) => self.dir_layers.get(file),
        }
    }

    /// Sets the global OpenAPI schemas.
    pub fn set_global_schemas(&mut self, schemas: ScopeSchemas) {
        self.global_schemas = schemas;
    }

    /// Registers a module in module order, with its own `values.yaml` (`(file name, text)`) and
    /// schemas. Registering a name again replaces it and forgets its patches.
    pub fn add_module(
        &mut self,
        name: ModuleName,
        values_file: Option<(&str, &str)>,
        schemas: ScopeSchemas,
    ) -> Result<(), ValuesError> {
        let file = match values_file {
            Some((file, text)) => ModuleStatic::parse(file, text, &name)
                .map_err(|source| ValuesError::LoadStaticValues { source })?,
            None => ModuleStatic::default(),
        };
        let entry = ModuleEntry {
            name,
            dir_values: None,
            file,
            schemas,
            patches: Vec::new(),
        };
        match self.modules.iter_mut().find(|m| m.name == entry.name) {
            Some(existing) => *existing = entry,
            None => self.modules.push(entry),
        }
        Ok(())
    }

    /// Takes into this store, built for a reloaded tree, what the running store `old` learned:
    /// its config, the values patches of the global scope and of every module both know, the
    /// dynamic enable flags and the discovered API versions. The modules of `kept` (gone from
    /// the tree, not deleted yet) are taken whole, after the others.
    pub fn carry_over(&mut self, mut old: ValuesStore, kept: &[ModuleName]) {
        self.config = std::mem::replace(&mut old.config, Config::empty());
        self.global_patches = std::mem::take(&mut old.global_patches);
        self.dynamic_enabled = std::mem::take(&mut old.dynamic_enabled);
        self.discovered_api_versions = std::mem::take(&mut old.discovered_api_versions);
        for entry in old.modules {
            if kept.contains(&entry.name) {
                if !self.modules.iter().any(|m| m.name == entry.name) {
                    let dir = entry.dir_values.as_ref();
                    if let Some((file, layer)) = dir.and_then(|f| Some((f, old.dir_layers.get(f)?)))
                    {
                        self.dir_layers.entry(file.clone()).or_insert(layer.clone());
                    }
                    self.modules.push(entry);
                }
            } else if let Some(new) = self.modules.iter_mut().find(|m| m.name == entry.name) {
                new.patches = entry.patches;
            }
        }
    }

    /// Forgets a module (deleted after it left the tree).
    pub fn remove_module(&mut self, module: &ModuleName) {
        self.modules.retain(|m| &m.name != module);
        self.dynamic_enabled.remove(module);
    }

    /// Registered modules in module order.
    pub fn modules(&self) -> Vec<ModuleName> {
        self.modules.iter().map(|m| m.name.clone()).collect()
    }

    fn module(&self, name: &ModuleName) -> Result<&ModuleEntry, ValuesError> {
        self.modules
            .iter()
            .find(|m| &m.name == name)
            .ok_or_else(|| ValuesError::UnknownModule {
                module: name.clone(),
            })
    }

    fn module_mut(&mut self, name: &ModuleName) -> Result<&mut ModuleEntry, ValuesError> {
        self.modules
            .iter_mut()
            .find(|m| &m.name == name)
            .ok_or_else(|| ValuesError::UnknownModule {
                module: name.clone(),
            })
    }

    /// The current config.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Dynamic `*Enabled` flags set by global hooks' values patches.
    pub fn dynamic_enabled(&self) -> &BTreeMap<ModuleName, bool> {
        &self.dynamic_enabled
    }

    // ---- layers ---------------------------------------------------------------------------

    fn global_config_with(&self, config: &Config) -> Value {
        let mut v = config.global_values();
        self.global_schemas.apply_config_defaults(&mut v);
        v
    }

    fn global_values_with(&self, config: &Config, patches: &[PatchOperation]) -> Value {
        let mut v = merged([&self.common.global, &config.global_values()]);
        self.global_schemas.apply_values_defaults(&mut v);
        apply_remembered(&Scope::Global.key(), v, patches)
    }

    fn module_config_with(&self, m: &ModuleEntry, config: &Config) -> Value {
        let mut v = config.module_values(&m.name);
        m.schemas.apply_config_defaults(&mut v);
        v
    }

    /// A module's section of `<modules dir>/values.yaml`, then of its own `values.yaml`, then
    /// of the config, merged.
    fn module_static_and_config(&self, m: &ModuleEntry, config: &Config) -> Value {
        let key = m.name.values_key();
        let layer = self.dir_layer(m);
        let common = layer
            .and_then(|l| l.sections.get(&key))
            .and_then(Section::values);
        let file = m.file.section.as_ref().and_then(Section::values);
        let cfg = config.module_values(&m.name);
        merged(common.into_iter().chain(file).chain([&cfg]))
    }

    fn module_values_with(
        &self,
        m: &ModuleEntry,
        config: &Config,
        patches: &[PatchOperation],
    ) -> Value {
        let mut v = self.module_static_and_config(m, config);
        m.schemas.apply_values_defaults(&mut v);
        apply_remembered(&m.name.values_key(), v, patches)
    }

    /// `global` config values: the config's `global` section plus config-schema defaults.
    pub fn global_config_values(&self) -> Value {
        self.global_config_with(&self.config)
    }

    /// Merged global values: `global` of the static files, of the config, schema defaults, then
    /// values patches of global hooks.
    pub fn global_values(&self) -> Value {
        self.with_discovery(self.global_values_with(&self.config, &self.global_patches))
    }

    /// A module's config values: its config section plus config-schema defaults.
    pub fn module_config_values(&self, module: &ModuleName) -> Result<Value, ValuesError> {
        let m = self.module(module)?;
        Ok(self.module_config_with(m, &self.config))
    }

    /// Merged module values: its section of `<modules dir>/values.yaml`, of its own
    /// `values.yaml`, of the config, schema defaults, then its hooks' values patches.
    pub fn module_values(&self, module: &ModuleName) -> Result<Value, ValuesError> {
        let m = self.module(module)?;
        Ok(self.module_values_with(m, &self.config, &m.patches))
    }

    /// Merged values of a scope.
    pub fn scope_values(&self, scope: &Scope) -> Result<Value, ValuesError> {
        match scope {
            Scope::Global => Ok(self.global_values()),
            Scope::Module(m) => self.module_values(m),
        }
    }

    /// Checksum of the global values hooks and the config made, without what the operator adds
    /// (`discovery.apiVersions`): a converge that installed CRDs has not changed them.
    pub fn global_checksum_without_discovery(&self) -> String {
        checksum(&self.global_values_with(&self.config, &self.global_patches))
    }

    /// Checksum of a scope's merged values.
    pub fn checksum(&self, scope: &Scope) -> Result<String, ValuesError> {
        Ok(checksum(&self.scope_values(scope)?))
    }

    /// Remembered values patches of a scope (compacted), for the debug API.
    pub fn values_patches(&self, scope: &Scope) -> Result<&[PatchOperation], ValuesError> {
        match scope {
            Scope::Global => Ok(&self.global_patches),
            Scope::Module(m) => Ok(&self.module(m)?.patches),
        }
    }

    /// Forgets a module's values patches (when it becomes enabled again).
    pub fn reset_module_patches(&mut self, module: &ModuleName) -> Result<(), ValuesError> {
        self.module_mut(module)?.patches.clear();
        Ok(())
    }

    // ---- documents ------------------------------------------------------------------------

    /// `$CONFIG_VALUES_PATH` and `$VALUES_PATH` of a global hook: `{"global": ...}`.
    pub fn global_hook_values(&self) -> HookValues {
        HookValues {
            config_values: document([("global".into(), self.global_config_values())]),
            values: document([("global".into(), self.global_values())]),
        }
    }

    /// `$CONFIG_VALUES_PATH` and `$VALUES_PATH` of a module hook, with `global.enabledModules`.
    pub fn module_hook_values(
        &self,
        module: &ModuleName,
        enabled_modules: &[ModuleName],
    ) -> Result<HookValues, ValuesError> {
        let key = module.values_key();
        let mut global = self.global_values();
        if let Value::Object(map) = &mut global {
            let list = enabled_modules
                .iter()
                .map(|m| Value::String(m.to_string()))
                .collect();
            map.insert("enabledModules".into(), Value::Array(list));
        }
        Ok(HookValues {
            config_values: document([
                ("global".into(), self.global_config_values()),
                (key.clone(), self.module_config_values(module)?),
            ]),
            values: document([
                ("global".into(), global),
                (key, self.module_values(module)?),
            ]),
        })
    }

    /// The files of an `enabled` script: like a module hook's, with `global.enabledModules` =
    /// the modules enabled so far in this pass.
    pub fn enabled_script_values(
        &self,
        module: &ModuleName,
        enabled_so_far: &[ModuleName],
    ) -> Result<HookValues, ValuesError> {
        self.module_hook_values(module, enabled_so_far)
    }

    /// Helm values (`{"global": ..., "<camelKey>": ...}`, no `enabledModules`), checked against
    /// the global and module schemas with `x-required-for-helm`.
    pub fn helm_values(&self, module: &ModuleName) -> Result<Value, ValuesError> {
        let m = self.module(module)?;
        let global = self.global_values_with(&self.config, &self.global_patches);
        let values = self.module_values_with(m, &self.config, &m.patches);
        let errors: Vec<SchemaError> = [
            self.global_schemas.validate_helm(&global),
            m.schemas.validate_helm(&values),
        ]
        .into_iter()
        .filter_map(Result::err)
        .collect();
        if !errors.is_empty() {
            return Err(ValuesError::Validate { errors });
        }
        Ok(document([
            ("global".into(), self.with_discovery(global)),
            (module.values_key(), values),
        ]))
    }

    // ---- config ---------------------------------------------------------------------------

    /// Validates `config` as the Go operator does: the `global` section (when the config has
    /// one) and the non-empty sections of `modules` (the enabled ones; config of other modules
    /// is kept unchecked), each with its config-schema defaults, against `config-values.yaml`.
    /// Values schemas are not applied here: merged values are checked after a hook's values
    /// patch and before Helm, so a `required` value a hook fills never fails a config.
    ///
    /// The VALUES seed's intent that a `required` config field may take its value from the
    /// static `values.yaml` files is kept: such a missing property is forgiven.
    pub fn check_config(&self, config: &Config, modules: &[ModuleName]) -> Result<(), ValuesError> {
        let mut errors = Vec::new();
        if config.global.is_some() {
            errors.extend(self.config_error(config, &Scope::Global)?);
        }
        for name in modules {
            if has_values(&config.module_values(name)) {
                errors.extend(self.config_error(config, &Scope::Module(name.clone()))?);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ValuesError::Validate { errors })
        }
    }

    /// The config-schema problem of one scope's config section, if any; the stored config
    /// (`self.config`) is the old value of CEL transition rules.
    fn config_error(
        &self,
        config: &Config,
        scope: &Scope,
    ) -> Result<Option<SchemaError>, ValuesError> {
        let checked = match scope {
            Scope::Global => {
                let cfg = self.global_config_with(config);
                let old = Some(self.config.global_values()).filter(has_values);
                (self.global_schemas).validate_config_with_fallback(
                    &cfg,
                    &self.common.global,
                    old.as_ref(),
                )
            }
            Scope::Module(name) => {
                let m = self.module(name)?;
                let cfg = self.module_config_with(m, config);
                let statics = self.module_static_and_config(m, &Config::empty());
                let old = Some(self.config.module_values(name)).filter(has_values);
                (m.schemas).validate_config_with_fallback(&cfg, &statics, old.as_ref())
            }
        };
        Ok(checked.err())
    }

    /// Replaces the config (check it first with [`Self::check_config`]) and says what changed.
    pub fn set_config(&mut self, config: Config) -> ConfigChange {
        let change = self.config.diff(&config);
        self.config = config;
        change
    }

    // ---- patches --------------------------------------------------------------------------

    /// Applies a hook's `$CONFIG_VALUES_JSON_PATCH_PATH` patch to the config strictly, validates
    /// the scope's config and values, and keeps the new config. Global hooks may also set
    /// `/<module>Enabled` flags in the config.
    pub fn apply_config_patch(
        &mut self,
        hook: &HookRef,
        patch: &ValuesPatch,
    ) -> Result<ConfigPatchOutcome, ValuesError> {
        if patch.is_empty() {
            return Ok(ConfigPatchOutcome::default());
        }
        let kind = PatchKind::Config;
        let wrap = |source| ValuesError::ApplyPatch { source };
        patch::check_scope(hook, kind, &patch.ops).map_err(wrap)?;
        let key = hook.scope.key();
        let mut doc = Map::new();
        let current = match &hook.scope {
            Scope::Global => self.config.global_values(),
            Scope::Module(m) => self.config.module_values(m),
        };
        doc.insert(key.clone(), current);
        if hook.scope == Scope::Global {
            for (m, cfg) in &self.config.modules {
                if let Some(flag) = cfg.enabled {
                    doc.insert(m.enabled_key(), Value::Bool(flag));
                }
            }
        }
        let mut doc = Value::Object(doc);
        patch::apply_strict(hook, kind, &mut doc, &patch.ops).map_err(wrap)?;
        let (section, flags) = split_result(hook, kind, &key, doc).map_err(wrap)?;
        let mut config = self.config.clone();
        match &hook.scope {
            Scope::Global => {
                config.set_global(section);
                let known: Vec<ModuleName> = config.modules.keys().cloned().collect();
                for m in known {
                    if !flags.contains_key(&m) {
                        config.set_module_enabled(&m, None);
                    }
                }
                for (m, flag) in &flags {
                    config.set_module_enabled(m, Some(*flag));
                }
            }
            Scope::Module(m) => config.set_module_values(m, section),
        }
        if let Some(e) = self.config_error(&config, &hook.scope)? {
            return Err(ValuesError::Validate { errors: vec![e] });
        }
        let before = self.checksum(&hook.scope)?;
        let config_change = self.set_config(config);
        let after = self.checksum(&hook.scope)?;
        Ok(ConfigPatchOutcome {
            values_changed: before != after,
            config_change,
        })
    }

    /// Applies a hook's `$VALUES_JSON_PATCH_PATH` patch strictly over the current values,
    /// validates the result and remembers the patch; global hooks' `/<module>Enabled` operations
    /// set dynamic enable flags instead.
    pub fn apply_values_patch(
        &mut self,
        hook: &HookRef,
        patch: &ValuesPatch,
    ) -> Result<PatchOutcome, ValuesError> {
        if patch.is_empty() {
            return Ok(PatchOutcome::default());
        }
        let kind = PatchKind::Values;
        let wrap = |source| ValuesError::ApplyPatch { source };
        patch::check_scope(hook, kind, &patch.ops).map_err(wrap)?;
        let key = hook.scope.key();
        let before_values = self.scope_values(&hook.scope)?;
        let mut doc = Map::new();
        doc.insert(key.clone(), before_values.clone());
        if hook.scope == Scope::Global {
            for (m, flag) in &self.dynamic_enabled {
                doc.insert(m.enabled_key(), Value::Bool(*flag));
            }
        }
        let mut doc = Value::Object(doc);
        patch::apply_strict(hook, kind, &mut doc, &patch.ops).map_err(wrap)?;
        let (section, flags) = split_result(hook, kind, &key, doc).map_err(wrap)?;
        let schemas = match &hook.scope {
            Scope::Global => &self.global_schemas,
            Scope::Module(m) => &self.module(m)?.schemas,
        };
        schemas
            .validate_values_transition(&section, Some(&before_values))
            .map_err(|e| ValuesError::Validate { errors: vec![e] })?;
        let own: Vec<PatchOperation> = patch
            .ops
            .iter()
            .filter(|op| only_under(op, &key))
            .cloned()
            .collect();
        match &hook.scope {
            Scope::Global => patch::compact_into(&mut self.global_patches, &own),
            Scope::Module(m) => patch::compact_into(&mut self.module_mut(m)?.patches, &own),
        }
        let mut enabled_changed = Vec::new();
        if hook.scope == Scope::Global {
            let all: Vec<ModuleName> = self
                .dynamic_enabled
                .keys()
                .chain(flags.keys())
                .cloned()
                .collect();
            for m in all {
                if self.dynamic_enabled.get(&m) != flags.get(&m) && !enabled_changed.contains(&m) {
                    enabled_changed.push(m);
                }
            }
            self.dynamic_enabled = flags;
        }
        let after = self.scope_values(&hook.scope)?;
        Ok(PatchOutcome {
            values_changed: checksum(&before_values) != checksum(&after),
            enabled_changed,
        })
    }

    // ---- enablement inputs ----------------------------------------------------------------

    /// The `*Enabled` flags of every layer for a module, and whether its section is `false`.
    pub fn flag_layers(&self, module: &ModuleName) -> Result<FlagLayers, ValuesError> {
        let m = self.module(module)?;
        let key = module.values_key();
        let layer = self.dir_layer(m);
        let sections = [
            layer.and_then(|l| l.sections.get(&key)),
            m.file.section.as_ref(),
            self.config
                .modules
                .get(module)
                .and_then(|c| c.section.as_ref()),
        ];
        let last_section = sections.into_iter().flatten().last();
        Ok(FlagLayers {
            common: layer.and_then(|l| l.enabled.get(module)).copied(),
            module_file: m.file.enabled,
            config: self.config.module_enabled(module),
            dynamic: self.dynamic_enabled.get(module).copied(),
            section_disabled: matches!(last_section, Some(Section::Disabled)),
        })
    }

    /// The input of an enablement pass: every module in order, enabled by its flags or not, and
    /// whether it has an `enabled` script.
    pub fn enablement_candidates(
        &self,
        has_script: impl Fn(&ModuleName) -> bool,
    ) -> Vec<crate::enablement::Candidate> {
        self.all_flag_layers()
            .into_iter()
            .map(|(name, flags)| crate::enablement::Candidate {
                has_script: has_script(&name),
                enabled_by_flags: flags.enabled(),
                name,
            })
            .collect()
    }

    /// `{"global": ..., "<moduleKey>": ...}`: the merged values of every scope.
    pub fn all_values(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("global".into(), self.global_values());
        for m in &self.modules {
            if let Ok(values) = self.module_values(&m.name) {
                out.insert(m.name.values_key(), values);
            }
        }
        out
    }

    /// Modules enabled by their flags (before `enabled` scripts), in module order.
    pub fn enabled_by_flags(&self) -> Vec<ModuleName> {
        self.all_flag_layers()
            .into_iter()
            .filter(|(_, flags)| flags.enabled())
            .map(|(name, _)| name)
            .collect()
    }

    /// Every module in order with its flag layers: the input of enablement.
    pub fn all_flag_layers(&self) -> Vec<(ModuleName, FlagLayers)> {
        self.modules
            .iter()
            .filter_map(|m| Some((m.name.clone(), self.flag_layers(&m.name).ok()?)))
            .collect()
    }
}

/// Re-applies remembered patches to `{key: values}` and returns the values again.
fn apply_remembered(key: &str, values: Value, patches: &[PatchOperation]) -> Value {
    if patches.is_empty() {
        return values;
    }
    let mut doc = document([(key.to_string(), values)]);
    let skipped = patch::apply_lenient(&mut doc, patches);
    if skipped > 0 {
        tracing::debug!(
            scope = key,
            skipped,
            "remembered values patch operations skipped"
        );
    }
    match doc {
        Value::Object(mut map) => map.remove(key).unwrap_or_else(|| Value::Object(Map::new())),
        _ => Value::Object(Map::new()),
    }
}

/// A config section with at least one key (the Go operator skips empty sections).
fn has_values(section: &Value) -> bool {
    section.as_object().is_some_and(|m| !m.is_empty())
}

fn document(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    Value::Object(entries.into_iter().collect())
}

/// True when every path the operation touches is under `/<key>`.
fn only_under(op: &PatchOperation, key: &str) -> bool {
    let under = |p: &json_patch::jsonptr::Pointer| p.first().is_some_and(|t| t.decoded() == key);
    match op {
        PatchOperation::Move(m) => under(&m.from) && under(&m.path),
        PatchOperation::Copy(c) => under(&c.from) && under(&c.path),
        other => under(other.path()),
    }
}

/// Splits a patched document into the scope's section (must be an object; absent ⇒ `{}`) and
/// the `*Enabled` flags left in it (must be booleans).
fn split_result(
    hook: &HookRef,
    kind: PatchKind,
    key: &str,
    doc: Value,
) -> Result<(Value, BTreeMap<ModuleName, bool>), PatchError> {
    let Value::Object(mut map) = doc else {
        return Ok((Value::Object(Map::new()), BTreeMap::new()));
    };
    let section = match map.remove(key) {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(PatchError::SectionNotObject {
                hook: hook.to_string(),
                kind,
                key: key.to_string(),
                value: other.to_string(),
            });
        }
    };
    let mut flags = BTreeMap::new();
    for (flag_key, value) in map {
        let Some(module) = enabled_flag_module(&flag_key) else {
            continue;
        };
        match value {
            Value::Bool(b) => {
                flags.insert(module, b);
            }
            other => {
                return Err(PatchError::EnabledFlagNotBool {
                    hook: hook.to_string(),
                    kind,
                    key: flag_key,
                    value: other.to_string(),
                });
            }
        }
    }
    Ok((section, flags))
}
