//! What a case runs: its hook (global or a module's) and binding, or a module's `enabled`
//! script, resolved against the tree; a case naming a missing hook or binding is refused here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use addon_core::discovery::{Discovered, HookFile, ModuleSource};
use addon_core::hook_config::{BindingType, HookConfig};
use addon_core::names::ModuleName;

use super::spec::{Case, EventKind, LoadedFile, SUFFIX, SpecError};
use crate::cli::hook_run::find_hook;

/// What one case runs.
#[derive(Debug, Clone)]
pub enum Target<'a> {
    Hook {
        module: Option<ModuleName>,
        hook: &'a HookFile,
        config: &'a HookConfig,
        binding: String,
    },
    Enabled {
        module: ModuleName,
    },
}

impl Target<'_> {
    pub fn module(&self) -> Option<&ModuleName> {
        match self {
            Self::Hook { module, .. } => module.as_ref(),
            Self::Enabled { module } => Some(module),
        }
    }
}

/// Resolves case `index` of `file` in the tree `found` whose hook configs are `configs`.
pub fn resolve<'a>(
    file: &LoadedFile,
    index: usize,
    found: &'a Discovered,
    configs: &'a BTreeMap<PathBuf, HookConfig>,
) -> Result<Target<'a>, SpecError> {
    let invalid = |message: String| {
        file.invalid(
            index,
            format!("case '{}': {message}", case_name(file, index)),
        )
    };
    let Some(case) = file.file.cases.get(index) else {
        return Err(invalid("no such case".into()));
    };
    let module = owner(file, case, found).map_err(&invalid)?;
    check_values_keys(case, module.as_ref()).map_err(&invalid)?;
    if case.enabled_script {
        return enabled_target(case, module, found).map_err(invalid);
    }
    if case.expect.enabled.is_some() {
        return Err(invalid(
            "'expect.enabled' is for an enabledScript case".into(),
        ));
    }
    let hook_name = case
        .hook
        .clone()
        .or_else(|| file.file.hook.clone())
        .or_else(|| hook_beside(&file.path, module.as_ref(), found))
        .ok_or_else(|| {
            invalid(
                "name the hook ('hook:'), or put the file beside it as '<hook>.test.yaml'".into(),
            )
        })?;
    let owner_text = module
        .as_ref()
        .map_or("the global hooks".into(), |m| format!("module '{m}'"));
    let hook = find_hook(found, module.as_ref(), &hook_name)
        .ok_or_else(|| invalid(format!("no hook '{hook_name}' in {owner_text}")))?;
    let config = configs
        .get(&hook.config_key())
        .ok_or_else(|| invalid(format!("hook '{hook_name}' has no valid config")))?;
    let binding = case
        .binding
        .clone()
        .ok_or_else(|| invalid("name the binding to run ('binding:')".into()))?;
    check_binding(case, config, &binding).map_err(invalid)?;
    Ok(Target::Hook {
        module,
        hook,
        config,
        binding,
    })
}

fn case_name(file: &LoadedFile, index: usize) -> &str {
    file.file.cases.get(index).map_or("", |c| c.name.as_str())
}

/// The case's module: named by the case or the file, else the module whose directory holds the
/// file; `None` is the global hooks.
fn owner(file: &LoadedFile, case: &Case, found: &Discovered) -> Result<Option<ModuleName>, String> {
    if let Some(name) = case.module.as_ref().or(file.file.module.as_ref()) {
        let module = ModuleName::new(name).map_err(|e| e.to_string())?;
        if !found.modules.iter().any(|m| m.name == module) {
            return Err(format!("no module '{module}' in the tree"));
        }
        return Ok(Some(module));
    }
    let path = absolute(&file.path);
    Ok(found
        .modules
        .iter()
        .find(|m| path.starts_with(&m.path))
        .map(|m| m.name.clone()))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The hook `<name>` of the file `<name>.test.yaml`, when the owner has it.
fn hook_beside(path: &Path, module: Option<&ModuleName>, found: &Discovered) -> Option<String> {
    let hook_path = absolute(path)
        .to_string_lossy()
        .strip_suffix(SUFFIX)?
        .to_string();
    let hooks = match module {
        None => &found.global.hooks,
        Some(m) => &found.modules.iter().find(|s| &s.name == m)?.hooks,
    };
    hooks
        .iter()
        .find(|h| h.path == Path::new(&hook_path) && h.args.is_empty())
        .map(|h| h.name.to_string())
}

fn module_source<'a>(found: &'a Discovered, module: &ModuleName) -> Option<&'a ModuleSource> {
    found.modules.iter().find(|m| &m.name == module)
}

fn enabled_target<'a>(
    case: &Case,
    module: Option<ModuleName>,
    found: &'a Discovered,
) -> Result<Target<'a>, String> {
    let Some(module) = module else {
        return Err("an enabledScript case needs a module ('module:')".into());
    };
    if case.hook.is_some() || case.binding.is_some() || case.event.is_some() {
        return Err("an enabledScript case has no hook, binding or event".into());
    }
    let has_script = module_source(found, &module).is_some_and(|m| m.enabled_script.is_some());
    if !has_script {
        return Err(format!(
            "module '{module}' has no executable enabled script"
        ));
    }
    let e = &case.expect;
    if e.values_patch.is_some()
        || e.config_values_patch.is_some()
        || e.kubernetes_operations.is_some()
        || e.metrics.is_some()
    {
        return Err("an enabled script writes no patches, operations or metrics".into());
    }
    Ok(Target::Enabled { module })
}

/// `values` and `configValues` name only `global` and the owner's values key.
fn check_values_keys(case: &Case, module: Option<&ModuleName>) -> Result<(), String> {
    let own = module.map(ModuleName::values_key);
    for (field, value) in [
        ("values", &case.values),
        ("configValues", &case.config_values),
    ] {
        let Some(value) = value else { continue };
        let Some(map) = value.as_object() else {
            return Err(format!("'{field}' must be a mapping"));
        };
        for (key, section) in map {
            if key != "global" && Some(key) != own.as_ref() {
                let allowed = own.as_ref().map_or(String::new(), |k| format!(" or '{k}'"));
                return Err(format!(
                    "'{field}' has key '{key}'; allowed: 'global'{allowed}"
                ));
            }
            if !section.is_object() {
                return Err(format!("'{field}.{key}' must be a mapping"));
            }
        }
    }
    Ok(())
}

/// The binding exists, and the event, object and snapshots fit it.
fn check_binding(case: &Case, config: &HookConfig, binding: &str) -> Result<(), String> {
    let ordered = BindingType::ORDERED
        .into_iter()
        .find(|t| t.as_str() == binding);
    let kube = config.kubernetes_binding(binding);
    let known = match ordered {
        Some(kind) => config.order(kind).is_some(),
        None => kube.is_some() || config.schedules.iter().any(|s| s.name == binding),
    };
    if !known {
        let has = config.binding_summary().join(", ");
        return Err(format!(
            "the hook has no binding '{binding}' (it has: {has})"
        ));
    }
    let event = case.event.unwrap_or(EventKind::Synchronization);
    if kube.is_none() && case.event.is_some() {
        return Err(format!(
            "'{binding}' is not a kubernetes binding: it has no event"
        ));
    }
    match (event, &case.object) {
        (EventKind::Synchronization, Some(_)) => {
            return Err("an 'object' is for an Added, Modified or Deleted event".into());
        }
        (EventKind::Added | EventKind::Modified | EventKind::Deleted, None) => {
            return Err(format!("a {event:?} event needs its 'object'"));
        }
        _ => {}
    }
    if let Some(name) = case
        .snapshots
        .keys()
        .find(|n| config.kubernetes_binding(n).is_none())
    {
        return Err(format!(
            "'snapshots' names '{name}', not a kubernetes binding of the hook"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::test::spec::parse;

    fn loaded(text: &str) -> LoadedFile {
        LoadedFile {
            path: PathBuf::from("/nowhere/x.test.yaml"),
            shown: "x.test.yaml".into(),
            text: text.into(),
            file: parse(text).unwrap(),
        }
    }

    #[test]
    fn a_missing_hook_is_a_problem_with_file_and_line() {
        let file = loaded("cases:\n- name: a\n  hook: hooks/nope\n  binding: onStartup\n");
        let found = Discovered::default();
        let err = resolve(&file, 0, &found, &BTreeMap::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.test.yaml:2: case 'a': no hook 'hooks/nope' in the global hooks"
        );
    }

    #[test]
    fn values_may_name_only_global_and_the_owner() {
        let case = Case {
            values: Some(serde_json::json!({"other": {}})),
            ..Case::default()
        };
        let web = ModuleName::new("web").unwrap();
        let err = check_values_keys(&case, Some(&web)).unwrap_err();
        assert!(err.contains("'other'") && err.contains("'web'"), "{err}");
        let case = Case {
            config_values: Some(serde_json::json!({"web": {"a": 1}, "global": {}})),
            ..Case::default()
        };
        assert!(check_values_keys(&case, Some(&web)).is_ok());
    }
}
