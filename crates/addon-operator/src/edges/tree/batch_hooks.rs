//! Batch hooks (the Go operator's module-sdk protocol): one executable lists its hooks
//! (`hook list`), describes them (`hook config`) and runs one (`hook run <i>`, `hook ready`).
//! Each becomes a hook of its own, with the shell-operator v1 config its description maps to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use addon_core::discovery::{Discovered, HookFile};
use addon_core::names::HookName;
use futures::stream::{self, StreamExt};
use serde_json::{Map, Value, json};

use crate::edges::exec::process::{self, LogFields, ProcessSpec};
use crate::edges::tree::hook_configs::{ConfigRunOptions, run_process};

/// A batch hook whose `hook config` answer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("batch hook {}: run 'hook config'", path.display())]
    Exec {
        path: PathBuf,
        #[source]
        source: process::ExecError,
    },
    #[error("batch hook {}: 'hook config' failed ({exit}): {message}", path.display())]
    Failed {
        path: PathBuf,
        exit: String,
        message: String,
    },
    #[error("batch hook {}: 'hook config' is not a batch config: {reason}", path.display())]
    Parse {
        path: PathBuf,
        reason: BatchConfigError,
    },
    #[error("batch hook {}: invalid hook name", path.display())]
    Name {
        path: PathBuf,
        #[source]
        source: addon_core::names::NameError,
    },
}

/// The hooks found inside batch executables: their files replace the executable's in
/// `Discovered`; their configs (shell-operator v1 JSON) are by [`HookFile::config_key`].
#[derive(Debug, Default)]
pub struct Expanded {
    pub configs: BTreeMap<PathBuf, String>,
    pub errors: Vec<String>,
}

/// Finds batch executables among the hooks of `found` and replaces each by its hooks. The
/// `hook list` probes run side by side (as `--config` runs do); they are the startup's
/// largest cost in a tree of extension-less hooks.
pub async fn expand(found: &mut Discovered, options: &ConfigRunOptions) -> Expanded {
    let mut out = Expanded::default();
    let all_hooks = (found.global.hooks.iter()).chain(found.modules.iter().flat_map(|m| &m.hooks));
    let candidates = all_hooks.filter(|hook| may_be_batch(&hook.path)).cloned();
    let batches = batch_executables(candidates.collect(), options).await;
    let global = std::mem::take(&mut found.global.hooks);
    found.global.hooks = expand_list(global, true, &batches, options, &mut out)
        .await
        .hooks;
    for module in &mut found.modules {
        let hooks = std::mem::take(&mut module.hooks);
        let list = expand_list(hooks, false, &batches, options, &mut out).await;
        module.hooks = list.hooks;
        module.settings_check = list.settings_check;
    }
    out
}

/// The hooks of one module (or the global hooks) after expansion.
struct ExpandedList {
    hooks: Vec<HookFile>,
    /// The first batch executable that declared a settings check.
    settings_check: Option<PathBuf>,
}

/// The paths of the `candidates` that answer `hook list` in the batch format, probed side by
/// side (a task each, as `--config` runs).
async fn batch_executables(
    candidates: Vec<HookFile>,
    options: &ConfigRunOptions,
) -> BTreeSet<PathBuf> {
    stream::iter(candidates)
        .map(|hook| {
            let options = options.clone();
            let probe =
                tokio::spawn(
                    async move { lists_hooks(&hook, &options).await.then_some(hook.path) },
                );
            async move { probe.await.ok().flatten() }
        })
        .buffered(options.parallelism)
        .filter_map(std::future::ready)
        .collect()
        .await
}

async fn expand_list(
    hooks: Vec<HookFile>,
    global: bool,
    batches: &BTreeSet<PathBuf>,
    options: &ConfigRunOptions,
    out: &mut Expanded,
) -> ExpandedList {
    let mut result = ExpandedList {
        hooks: Vec::with_capacity(hooks.len()),
        settings_check: None,
    };
    let mut readiness: Option<PathBuf> = None;
    for hook in hooks {
        if !batches.contains(&hook.path) {
            result.hooks.push(hook);
            continue;
        }
        let described = match describe(&hook, global, options).await {
            Ok(described) => described,
            Err(e) => {
                out.errors.push(addon_core::error::error_chain(&e));
                continue;
            }
        };
        if described.settings_check && result.settings_check.is_none() {
            result.settings_check = Some(hook.path.clone());
        }
        for (file, config) in described.hooks {
            if file.args == Id::Ready.args() {
                // as upstream: one readiness hook per module (and one among global hooks)
                if let Some(first) = &readiness {
                    out.errors.push(format!(
                        "batch hook {}: multiple readiness hooks found (the first is in {})",
                        hook.path.display(),
                        first.display()
                    ));
                    continue;
                }
                readiness = Some(hook.path.clone());
            }
            out.configs.insert(file.config_key(), config);
            result.hooks.push(file);
        }
    }
    result
}

/// As the Go operator, every executable file without an extension is asked `hook list`; one
/// that does not answer in the batch format (or fails, or times out) stays a plain hook.
fn may_be_batch(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.extension().is_none()
        && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The longest a `hook list` probe may take (the `--config` time limit when shorter): a batch
/// executable answers at once, and a plain hook that does real work when called so must not
/// hold startup for the whole hook time limit.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// `<hook> hook list` (with an empty environment, as upstream, and a time limit) answers
/// `Found N items`.
async fn lists_hooks(hook: &HookFile, options: &ConfigRunOptions) -> bool {
    let mut spec = spec(hook, &["hook", "list"], options, true);
    spec.timeout = spec.timeout.min(PROBE_TIMEOUT);
    match run_process(&spec, &log(hook, "hook list"), options).await {
        Ok(output) if output.succeeded() => says_found(&output.stdout),
        _ => false,
    }
}

/// Upstream's `Found ([1-9]|[1-9]\d|[1-9]\d\d|[1-9]\d\d\d) items`, anywhere in the output.
fn says_found(stdout: &str) -> bool {
    stdout.match_indices("Found ").any(|(at, _)| {
        let rest = &stdout[at + "Found ".len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let count_ok = !rest.starts_with('0') && (1..=4).contains(&digits);
        count_ok && rest[digits..].starts_with(" items")
    })
}

/// What `hook config` describes: every hook as a file and a v1 config, and whether the
/// executable answers `hook check`.
struct Described {
    hooks: Vec<(HookFile, String)>,
    settings_check: bool,
}

/// Runs `hook config` and maps every hook it describes to a file and a v1 config.
async fn describe(
    hook: &HookFile,
    global: bool,
    options: &ConfigRunOptions,
) -> Result<Described, BatchError> {
    let path = hook.path.clone();
    let spec = spec(hook, &["hook", "config"], options, false);
    let output = run_process(&spec, &log(hook, "hook config"), options)
        .await
        .map_err(|source| BatchError::Exec {
            path: path.clone(),
            source,
        })?;
    if !output.succeeded() {
        return Err(BatchError::Failed {
            path,
            exit: output.exit.to_string(),
            message: output.failure_message(),
        });
    }
    let batch = parse_batch_config(&output.stdout).map_err(|reason| BatchError::Parse {
        path: path.clone(),
        reason,
    })?;
    let hooks = (batch.entries.into_iter())
        .map(|entry| {
            let name = match &entry.id {
                Id::Ready => format!("{}-readiness", hook.name),
                Id::Index(i) => format!("{}:{}:{i}", hook.name, entry.metadata_name),
            };
            let name = HookName::new(&name).map_err(|source| BatchError::Name {
                path: path.clone(),
                source,
            })?;
            let file = HookFile {
                name,
                args: entry.id.args(),
                ..hook.clone()
            };
            Ok((file, to_v1(&entry.config, global).to_string()))
        })
        .collect::<Result<_, BatchError>>()?;
    Ok(Described {
        hooks,
        settings_check: batch.settings_check,
    })
}

fn spec(
    hook: &HookFile,
    args: &[&str],
    options: &ConfigRunOptions,
    clear_env: bool,
) -> ProcessSpec {
    // the probe's environment is empty, as upstream's: not even WORKING_DIR
    let env = if clear_env {
        Vec::new()
    } else {
        vec![(
            "WORKING_DIR".to_string(),
            hook.working_dir.display().to_string(),
        )]
    };
    ProcessSpec {
        program: hook.path.clone(),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: hook
            .path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        env,
        clear_env,
        timeout: options.timeout,
        kill_grace: options.kill_grace,
        capture_stdout: true,
    }
}

fn log(hook: &HookFile, binding: &str) -> LogFields {
    LogFields {
        hook: hook.name.to_string(),
        module: String::new(),
        binding: binding.to_string(),
        // a plain hook asked `hook list` prints what it prints when misused: upstream drops it
        quiet: binding == "hook list",
    }
}

/// Which hook of the batch: `hook run <i>` or `hook ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Id {
    Index(usize),
    Ready,
}

impl Id {
    fn args(&self) -> Vec<String> {
        match self {
            Id::Index(i) => vec!["hook".into(), "run".into(), i.to_string()],
            Id::Ready => vec!["hook".into(), "ready".into()],
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    id: Id,
    metadata_name: String,
    config: Map<String, Value>,
}

/// Why the answer of `hook config` is not a batch config.
#[derive(Debug, thiserror::Error)]
pub enum BatchConfigError {
    /// Not JSON (serde's message, with line and column).
    #[error("{0}")]
    Json(String),
    #[error("unknown version '{version}'")]
    Version { version: String },
    #[error("'hooks' must be a list")]
    HooksNotList,
    #[error("expected an object or a list")]
    NotObjectOrList,
    #[error("every hook config must be an object")]
    EntryNotObject,
}

/// A parsed `hook config` answer.
#[derive(Debug)]
struct BatchConfig {
    entries: Vec<Entry>,
    /// `has_settings_check`: the executable answers `hook check`.
    settings_check: bool,
}

/// Reads `hook config`: `{"version": "v1", "hooks": [...], "readiness": {...},
/// "has_settings_check": true}`, or the older plain list of hook configs.
fn parse_batch_config(stdout: &str) -> Result<BatchConfig, BatchConfigError> {
    let doc: Value =
        serde_json::from_str(stdout.trim()).map_err(|e| BatchConfigError::Json(e.to_string()))?;
    let settings_check = doc.get("has_settings_check") == Some(&Value::Bool(true));
    let (hooks, readiness) = match doc {
        Value::Array(hooks) => (hooks, None),
        Value::Object(mut map) => {
            let version = map.get("version").and_then(Value::as_str).unwrap_or("");
            if version != "v1" {
                return Err(BatchConfigError::Version {
                    version: version.to_string(),
                });
            }
            let hooks = match map.remove("hooks") {
                Some(Value::Array(hooks)) => hooks,
                None | Some(Value::Null) => Vec::new(),
                Some(_) => return Err(BatchConfigError::HooksNotList),
            };
            (hooks, map.remove("readiness").filter(|r| !r.is_null()))
        }
        _ => return Err(BatchConfigError::NotObjectOrList),
    };
    let entry = |id: Id, value: Value| match value {
        Value::Object(config) => Ok(Entry {
            id,
            metadata_name: config
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            config,
        }),
        _ => Err(BatchConfigError::EntryNotObject),
    };
    let mut entries: Vec<Entry> = hooks
        .into_iter()
        .enumerate()
        .map(|(i, v)| entry(Id::Index(i), v))
        .collect::<Result<_, _>>()?;
    if let Some(readiness) = readiness {
        entries.push(entry(Id::Ready, readiness)?);
    }
    Ok(BatchConfig {
        entries,
        settings_check,
    })
}

/// The shell-operator v1 config of one module-sdk hook config, as the Go operator maps it:
/// bindings join group `main`, kubernetes bindings keep only filter results unless told
/// otherwise, and a global hook's `beforeHelm`/`afterHelm` are its `beforeAll`/`afterAll`.
fn to_v1(sdk: &Map<String, Value>, global: bool) -> Value {
    let mut v1 = Map::new();
    // Upstream maps every entry to a v1 config, whatever `configVersion` says (the readiness
    // entry has none).
    v1.insert("configVersion".into(), json!("v1"));
    let orders: &[(&str, &str)] = if global {
        &[
            ("onStartup", "onStartup"),
            ("beforeHelm", "beforeAll"),
            ("afterHelm", "afterAll"),
        ]
    } else {
        &[
            ("onStartup", "onStartup"),
            ("beforeHelm", "beforeHelm"),
            ("afterHelm", "afterHelm"),
            ("beforeDeleteHelm", "beforeDeleteHelm"),
            ("afterDeleteHelm", "afterDeleteHelm"),
        ]
    };
    for (from, to) in orders {
        if let Some(order) = sdk.get(*from).filter(|v| !v.is_null()) {
            v1.insert((*to).into(), order.clone());
        }
    }
    if let Some(Value::Object(settings)) = sdk.get("settings") {
        v1.insert("settings".into(), settings_v1(settings));
    }
    if let Some(Value::Array(schedules)) = sdk.get("schedule") {
        let list = schedules.iter().map(schedule_v1).collect();
        v1.insert("schedule".into(), Value::Array(list));
    }
    if let Some(Value::Array(kube)) = sdk.get("kubernetes") {
        let list = kube.iter().map(kubernetes_v1).collect();
        v1.insert("kubernetes".into(), Value::Array(list));
    }
    Value::Object(v1)
}

/// `executionMinInterval` is a Go `time.Duration` in JSON: nanoseconds.
fn settings_v1(settings: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    if let Some(ns) = settings.get("executionMinInterval").and_then(Value::as_u64) {
        out.insert(
            "executionMinInterval".into(),
            json!(format!("{}ms", ns / 1_000_000)),
        );
    }
    if let Some(burst) = settings.get("executionBurst").filter(|v| !v.is_null()) {
        out.insert("executionBurst".into(), burst.clone());
    }
    Value::Object(out)
}

fn schedule_v1(sdk: &Value) -> Value {
    let mut out = pick(sdk, &["name", "crontab", "queue"]);
    out.insert("group".into(), json!("main"));
    Value::Object(out)
}

fn kubernetes_v1(sdk: &Value) -> Value {
    let mut out = pick(
        sdk,
        &[
            "name",
            "apiVersion",
            "kind",
            "nameSelector",
            "namespace",
            "labelSelector",
            "fieldSelector",
            "jqFilter",
            "executeHookOnSynchronization",
            "waitForSynchronization",
            "keepFullObjectsInMemory",
            "includeSnapshotsFrom",
            "queue",
            "allowFailure",
        ],
    );
    out.entry("keepFullObjectsInMemory")
        .or_insert_with(|| json!(false));
    if sdk.get("executeHookOnEvent") == Some(&Value::Bool(false)) {
        out.insert("executeHookOnEvent".into(), json!([]));
    }
    out.insert("group".into(), json!("main"));
    Value::Object(out)
}

/// The non-null `keys` of `value`, in that order.
fn pick(value: &Value, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| {
            let v = value
                .get(*k)
                .filter(|v| !v.is_null() && v.as_str() != Some(""))?;
            Some(((*k).to_string(), v.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::edges::tree::hook_configs::tests::script;

    #[tokio::test]
    async fn a_plain_hook_that_hangs_or_fails_on_hook_list_stays_a_plain_hook() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = ConfigRunOptions::new(std::time::Duration::from_millis(300));
        options.kill_grace = std::time::Duration::from_millis(100);
        // an unbounded probe would wait for the hour
        let hangs = script(dir.path(), "hangs", "#!/bin/sh\nexec sleep 3600\n");
        let fails = script(
            dir.path(),
            "fails",
            "#!/bin/sh\necho 'Found 1 items'; exit 1\n",
        );
        let answers = script(
            dir.path(),
            "answers",
            "#!/bin/sh\necho \"$(printf Fou)nd 3 items\"\n",
        );
        assert!(may_be_batch(&hangs.path));
        assert!(!lists_hooks(&hangs, &options).await);
        assert!(!lists_hooks(&fails, &options).await);
        assert!(lists_hooks(&answers, &options).await);
        let with_extension = script(dir.path(), "plain.sh", "#!/bin/sh\n");
        assert!(!may_be_batch(&with_extension.path));
    }

    #[tokio::test]
    async fn the_probe_runs_with_an_empty_environment_and_all_hooks_are_probed_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let options = ConfigRunOptions::new(std::time::Duration::from_secs(10));
        // answers only when nothing but the shell's own PWD is in its environment
        let text = "#!/bin/sh\n[ \"$1 $2\" = 'hook list' ] || exit 1\n\
                    [ -z \"$(env | grep -v '^PWD=')\" ] && echo 'Found 1 items'\n";
        let batch = script(dir.path(), "batch", text);
        let plain = script(dir.path(), "plain", "#!/bin/sh\nexit 0\n");
        let found = batch_executables(vec![plain.clone(), batch.clone(), plain], &options).await;
        assert_eq!(found, BTreeSet::from([batch.path.clone()]));
    }

    #[test]
    fn the_answer_to_hook_list_is_recognised() {
        assert!(says_found("Found 2 items:\n0 - a\n1 - b\n"));
        assert!(says_found("Found 1234 items:\n"));
        assert!(!says_found("Found 0 items:\n"));
        assert!(!says_found("Found 12345 items:\n"));
        assert!(!says_found("nothing here\n"));
    }

    #[test]
    fn answers_that_are_not_batch_configs_say_why() {
        let why = |text: &str| parse_batch_config(text).unwrap_err().to_string();
        assert_eq!(why(r#"{"version":"v2"}"#), "unknown version 'v2'");
        assert_eq!(
            why(r#"{"version":"v1","hooks":{}}"#),
            "'hooks' must be a list"
        );
        assert_eq!(why("42"), "expected an object or a list");
        assert_eq!(why("[1]"), "every hook config must be an object");
        assert!(matches!(
            parse_batch_config("{"),
            Err(BatchConfigError::Json(_))
        ));
    }

    #[test]
    fn sdk_configs_map_to_v1_as_upstream_does() {
        let entries = parse_batch_config(
            r#"{"version":"v1","hooks":[
                {"configVersion":"v1","metadata":{"name":"a","path":"x"},"onStartup":10,
                 "beforeHelm":5,"settings":{"executionMinInterval":3000000000,"executionBurst":2},
                 "schedule":[{"name":"s","crontab":"* * * * *"}],
                 "kubernetes":[{"name":"pods","apiVersion":"v1","kind":"Pod","executeHookOnEvent":false,"jqFilter":".metadata.name"}]}],
               "readiness":{"configVersion":"v1","metadata":{"name":"ready"},"schedule":[{"name":"r","crontab":"*/5 * * * * *"}]}}"#,
        )
        .unwrap()
        .entries;
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].id, Id::Index(0));
        assert_eq!(entries[1].id.args(), ["hook", "ready"]);
        let v1 = to_v1(&entries[0].config, false);
        assert_eq!(v1["onStartup"], 10);
        assert_eq!(v1["beforeHelm"], 5);
        assert_eq!(
            v1["settings"],
            json!({"executionMinInterval": "3000ms", "executionBurst": 2})
        );
        assert_eq!(
            v1["schedule"][0],
            json!({"name": "s", "crontab": "* * * * *", "group": "main"})
        );
        let kube = &v1["kubernetes"][0];
        assert_eq!(kube["executeHookOnEvent"], json!([]));
        assert_eq!(kube["keepFullObjectsInMemory"], false);
        assert_eq!(kube["group"], "main");
        let global = to_v1(&entries[0].config, true);
        assert_eq!(global["beforeAll"], 5);
        assert!(global.get("beforeHelm").is_none());
    }

    #[test]
    fn an_entry_without_config_version_is_v1() {
        let entries = parse_batch_config(
            r#"{"version":"v1","hooks":[],"readiness":{"configVersion":"","metadata":{"name":""},
               "schedule":[{"name":"m-moduleReadinessSchedule","crontab":"*/15 * * * * *"}]}}"#,
        )
        .unwrap()
        .entries;
        let v1 = to_v1(&entries[0].config, false);
        assert_eq!(v1["configVersion"], "v1");
        assert_eq!(v1["schedule"][0]["crontab"], "*/15 * * * * *");
    }

    #[test]
    fn has_settings_check_marks_an_executable_that_answers_hook_check() {
        let with = r#"{"version":"v1","hooks":[],"has_settings_check":true}"#;
        assert!(parse_batch_config(with).unwrap().settings_check);
        let without = r#"{"version":"v1","hooks":[{"onStartup":1}]}"#;
        assert!(!parse_batch_config(without).unwrap().settings_check);
    }

    #[tokio::test]
    async fn a_second_readiness_hook_in_one_module_is_an_error_and_the_check_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let options = ConfigRunOptions::new(std::time::Duration::from_secs(10));
        let batch = |ready: bool, check: bool| {
            let readiness = if ready {
                r#","readiness":{"schedule":[{"name":"r","crontab":"*/15 * * * * *"}]}"#
            } else {
                ""
            };
            format!(
                "#!/bin/sh\ncase \"$1 $2\" in\n\"hook list\") echo 'Found 1 items' ;;\n\
                 \"hook config\") echo '{{\"version\":\"v1\",\"has_settings_check\":{check},\
                 \"hooks\":[{{\"onStartup\":1}}]{readiness}}}' ;;\nesac\n"
            )
        };
        let a = script(dir.path(), "a", &batch(true, false));
        let b = script(dir.path(), "b", &batch(true, true));
        let c = script(dir.path(), "c", &batch(false, true));
        let all = vec![a.clone(), b.clone(), c];
        let batches = batch_executables(all.clone(), &options).await;
        let mut out = Expanded::default();
        let list = expand_list(all, false, &batches, &options, &mut out).await;
        assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
        assert!(
            out.errors[0].contains("multiple readiness hooks"),
            "{:?}",
            out.errors
        );
        let ready: Vec<_> = (list.hooks.iter())
            .filter(|h| h.args == Id::Ready.args())
            .map(|h| h.path.clone())
            .collect();
        assert_eq!(ready, std::slice::from_ref(&a.path));
        assert_eq!(list.settings_check, Some(b.path.clone()));
    }

    #[test]
    fn the_older_list_form_and_bad_answers() {
        let entries = parse_batch_config(r#"[{"configVersion":"v1","onStartup":1}]"#)
            .unwrap()
            .entries;
        assert_eq!(entries[0].id.args(), ["hook", "run", "0"]);
        assert!(parse_batch_config(r#"{"version":"v9","hooks":[]}"#).is_err());
        assert!(parse_batch_config("not json").is_err());
    }
}
