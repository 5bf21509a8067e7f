//! Tests of the hook I/O contract with real `#!/bin/sh` scripts.

use super::*;
use addon_core::error::error_chain;
use addon_operator_testkit::wait::wait_for_async;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

const OUTPUT_VARS: [&str; 4] = [
    "CONFIG_VALUES_JSON_PATCH_PATH",
    "VALUES_JSON_PATCH_PATH",
    "METRICS_PATH",
    "KUBERNETES_PATCH_PATH",
];
const INPUT_VARS: [&str; 3] = ["BINDING_CONTEXT_PATH", "CONFIG_VALUES_PATH", "VALUES_PATH"];

struct Fixture {
    root: tempfile::TempDir,
    settings: HookRunSettings,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let settings = HookRunSettings {
            tmp_dir: root.path().join("tmp"),
            keep_tmp_files: false,
            timeout: Duration::from_secs(20),
            kill_grace: Duration::from_millis(200),
            pool: None,
        };
        Self { root, settings }
    }

    /// A fixture whose runs take their files from a pool (as `start` runs them).
    fn pooled() -> Self {
        let mut fixture = Self::new();
        fixture.settings.pool = Some(TmpPool::start(&fixture.settings.tmp_dir).unwrap());
        fixture
    }

    /// One fixture without a pool and one with.
    fn both() -> [Self; 2] {
        [Self::new(), Self::pooled()]
    }

    /// Stops the pool (which removes the files it made ahead and the used ones it was given).
    fn settle(&self) {
        if let Some(pool) = &self.settings.pool {
            pool.shutdown();
        }
    }

    fn module_dir(&self) -> PathBuf {
        self.root.path().join("modules/001-my-module")
    }

    fn hook(&self, body: &str) -> PathBuf {
        let dir = self.module_dir().join("hooks/sub");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hook.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    async fn run(&self, hook_path: &Path) -> HookRunOutput {
        self.try_run(hook_path).await.unwrap()
    }

    async fn try_run(&self, hook_path: &Path) -> Result<HookRunOutput, HookRunError> {
        let module_dir = self.module_dir();
        let context = json!([{"binding": "onStartup"}]);
        let config_values = json!({"global": {}, "myModule": {"a": 1}});
        let values = json!({"global": {"x": true}, "myModule": {"a": 1, "b": 2}});
        let invocation = HookInvocation {
            owner: HookOwner::Module("my-module".into()),
            hook_name: "hooks/sub/hook.sh",
            hook_path,
            working_dir: &module_dir,
            binding: "onStartup",
            binding_context: ContextDocument::Json(&context),
            config_values: &config_values,
            values: &values,
            extra_env: &[("EXTRA_VAR".into(), "extra".into())],
            hook_args: &[],
            webhook_response: false,
        };
        run_hook(&self.settings, &invocation, &CancellationToken::new()).await
    }

    /// The files in the tmp dir once the pool (if any) has stopped.
    fn tmp_file_names(&self) -> Vec<String> {
        self.settle();
        let mut names: Vec<String> = std::fs::read_dir(&self.settings.tmp_dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn report(&self) -> String {
        std::fs::read_to_string(self.module_dir().join("hooks/sub/report")).unwrap()
    }
}

/// A script line that appends `NAME=<value> <mode>` for each variable to `report`.
fn report_vars(vars: &[&str]) -> String {
    vars.iter()
        .map(|var| format!("echo \"{var}=${var} $(stat -c %a ${var})\" >> report\n"))
        .collect()
}

#[tokio::test]
async fn the_hook_gets_every_io_variable_and_private_files() {
    for fixture in Fixture::both() {
        let mut vars = INPUT_VARS.to_vec();
        vars.extend(OUTPUT_VARS);
        let hook = fixture.hook(&report_vars(&vars));
        let output = fixture.run(&hook).await;
        assert!(
            output.process.succeeded(),
            "{}",
            output.process.failure_message()
        );
        let report = fixture.report();
        for var in vars {
            let line = report
                .lines()
                .find(|line| line.starts_with(&format!("{var}=")))
                .unwrap();
            assert!(line.ends_with(" 600"), "{line}");
            assert!(
                line.contains(&fixture.settings.tmp_dir.display().to_string()),
                "{line}"
            );
        }
    }
}

#[tokio::test]
async fn output_files_exist_empty_when_the_hook_starts() {
    for fixture in Fixture::both() {
        let checks: String = OUTPUT_VARS
            .iter()
            .map(|var| {
                format!("[ -f \"${var}\" ] && [ ! -s \"${var}\" ] || echo {var} >> report\n")
            })
            .collect();
        let hook = fixture.hook(&format!("{checks}touch report"));
        let output = fixture.run(&hook).await;
        assert!(
            output.process.succeeded(),
            "{}",
            output.process.failure_message()
        );
        assert_eq!(fixture.report(), "", "missing or non-empty outputs");
    }
}

#[tokio::test]
async fn a_run_never_gets_a_file_an_earlier_run_had() {
    let fixture = Fixture::pooled();
    let writes: String = OUTPUT_VARS
        .iter()
        .map(|var| format!("echo \"${var}\" >> report\necho '[]' > \"${var}\"\n"))
        .collect();
    let hook = fixture.hook(&writes);
    for _ in 0..5 {
        assert!(fixture.run(&hook).await.process.succeeded());
    }
    let report = fixture.report();
    let paths: Vec<&str> = report.lines().collect();
    let unique: std::collections::HashSet<&&str> = paths.iter().collect();
    assert_eq!(paths.len(), 5 * OUTPUT_VARS.len());
    assert_eq!(
        unique.len(),
        paths.len(),
        "a path was handed out twice: {report}"
    );
    let checks: String = OUTPUT_VARS
        .iter()
        .map(|var| format!("[ ! -s \"${var}\" ] || echo {var} >> empty-check\n"))
        .collect();
    let check = fixture.hook(&format!("{checks}touch empty-check"));
    assert!(fixture.run(&check).await.process.succeeded());
    let leftover = fixture.module_dir().join("hooks/sub/empty-check");
    assert_eq!(std::fs::read_to_string(leftover).unwrap(), "");
    assert_eq!(fixture.tmp_file_names(), Vec::<String>::new());
}

#[tokio::test]
async fn inputs_hold_the_json_documents_and_the_hook_runs_in_its_directory() {
    for fixture in Fixture::both() {
        let hook = fixture.hook(
            "{ cat \"$BINDING_CONTEXT_PATH\"; echo; cat \"$CONFIG_VALUES_PATH\"; echo; \
             cat \"$VALUES_PATH\"; echo; echo \"$WORKING_DIR\"; pwd; echo \"$EXTRA_VAR\"; } > report",
        );
        let output = fixture.run(&hook).await;
        assert!(output.process.succeeded());
        let report = fixture.report();
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines[0], r#"[{"binding":"onStartup"}]"#);
        assert_eq!(lines[1], r#"{"global":{},"myModule":{"a":1}}"#);
        assert_eq!(
            lines[2],
            r#"{"global":{"x":true},"myModule":{"a":1,"b":2}}"#
        );
        assert_eq!(lines[3], fixture.module_dir().display().to_string());
        let hook_dir = fixture
            .module_dir()
            .join("hooks/sub")
            .canonicalize()
            .unwrap();
        assert_eq!(lines[4], hook_dir.display().to_string());
        assert_eq!(lines[5], "extra");
    }
}

#[tokio::test]
async fn outputs_are_read_back_after_success() {
    for fixture in Fixture::both() {
        let hook = fixture.hook(
            "echo '[{\"op\":\"add\",\"path\":\"/myModule/c\",\"value\":1}]' > \"$VALUES_JSON_PATCH_PATH\"\n\
             echo '[]' > \"$CONFIG_VALUES_JSON_PATCH_PATH\"\n\
             echo '{\"name\":\"m\",\"set\":1}' > \"$METRICS_PATH\"\n\
             echo 'operation: Delete' > \"$KUBERNETES_PATCH_PATH\"",
        );
        let outputs = fixture.run(&hook).await.outputs.unwrap();
        assert_eq!(
            outputs.values_patch,
            "[{\"op\":\"add\",\"path\":\"/myModule/c\",\"value\":1}]\n"
        );
        assert_eq!(outputs.config_values_patch, "[]\n");
        assert_eq!(outputs.metrics, "{\"name\":\"m\",\"set\":1}\n");
        assert_eq!(outputs.kubernetes_patch, "operation: Delete\n");
    }
}

#[tokio::test]
async fn untouched_outputs_read_as_empty_strings() {
    for fixture in Fixture::both() {
        let hook = fixture.hook("exit 0");
        assert_eq!(
            fixture.run(&hook).await.outputs,
            Some(HookOutputs::default())
        );
    }
}

#[tokio::test]
async fn every_tmp_file_is_removed_after_the_run() {
    for fixture in Fixture::both() {
        let hook = fixture.hook("echo '[]' > \"$VALUES_JSON_PATCH_PATH\"");
        fixture.run(&hook).await;
        assert_eq!(fixture.tmp_file_names(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn tmp_files_are_kept_with_upstream_names_when_debugging() {
    let mut fixture = Fixture::new();
    fixture.settings.keep_tmp_files = true;
    let hook = fixture.hook("exit 0");
    fixture.run(&hook).await;
    let names = fixture.tmp_file_names();
    let expected = [
        ("hooks-sub-hook.sh-object-patch-", ""),
        (
            "hooks-sub-hook.sh.module-hook-config-values-",
            ".json-patch",
        ),
        ("hooks-sub-hook.sh.module-hook-metrics-", ".json"),
        ("hooks-sub-hook.sh.module-hook-values-", ".json-patch"),
        ("my-module.module-config-values-", ".json"),
        (
            "my-module.module-hook-hooks-sub-hook.sh-binding-context-",
            ".json",
        ),
        ("my-module.module-values-", ".json"),
    ];
    assert_eq!(names.len(), expected.len(), "{names:?}");
    for (name, (prefix, suffix)) in names.iter().zip(expected) {
        assert!(
            name.starts_with(prefix) && name.ends_with(suffix),
            "{name} vs {prefix}*{suffix}"
        );
        assert_eq!(name.len(), prefix.len() + 16 + suffix.len(), "{name}");
    }
}

#[tokio::test]
async fn outputs_of_a_failed_hook_are_ignored() {
    for fixture in Fixture::both() {
        let hook =
            fixture.hook("echo '[]' > \"$VALUES_JSON_PATCH_PATH\"\necho 'it broke' >&2\nexit 2");
        let output = fixture.run(&hook).await;
        assert_eq!(output.process.exit, process::ExitKind::Code(2));
        assert_eq!(output.outputs, None);
        assert_eq!(output.process.failure_message(), "it broke");
        assert_eq!(fixture.tmp_file_names(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn a_timeout_kills_the_hook_and_its_child_quickly() {
    let mut fixture = Fixture::new();
    fixture.settings.timeout = Duration::from_millis(300);
    let hook = fixture.hook("sleep 100 &\necho $! > report\nsleep 100");
    let started = std::time::Instant::now();
    let output = fixture.run(&hook).await;
    assert_eq!(output.process.exit, process::ExitKind::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(5));
    let child: i32 = fixture.report().trim().parse().unwrap();
    let ended = || async {
        std::fs::read_to_string(format!("/proc/{child}/stat"))
            .map_or(true, |stat| stat.contains(") Z "))
    };
    let what = format!("the hook's child {child} to end after the timeout");
    wait_for_async(&what, Duration::from_secs(5), ended, String::new).await;
}

#[tokio::test]
async fn heavy_stderr_does_not_break_a_successful_run() {
    let fixture = Fixture::new();
    let hook = fixture.hook(
        "i=0; while [ $i -lt 2000 ]; do echo \"warning line $i\" >&2; i=$((i+1)); done\n\
         printf 'no newline at the end' >&2\n\
         echo '[]' > \"$VALUES_JSON_PATCH_PATH\"",
    );
    let output = fixture.run(&hook).await;
    assert!(output.process.succeeded());
    assert_eq!(output.outputs.unwrap().values_patch, "[]\n");
    assert!(
        output
            .process
            .stderr_tail
            .ends_with("warning line 1999\nno newline at the end")
    );
}

#[tokio::test]
async fn the_enabled_script_returns_its_result_file_and_last_stdout_line() {
    for fixture in Fixture::both() {
        let script = fixture.hook(
            "cat \"$VALUES_PATH\" > report\necho checking\necho false\necho false > \"$MODULE_ENABLED_RESULT\"\n\
             echo 'no nodes' > \"$MODULE_ENABLED_REASON\"",
        );
        let values = json!({"global": {"enabledModules": []}, "myModule": {}});
        let invocation = EnabledScriptInvocation {
            module: "my-module",
            script_path: &script,
            config_values: &json!({}),
            values: &values,
            extra_env: &[],
        };
        let output = run_enabled_script(&fixture.settings, &invocation, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(output.result.as_deref(), Some("false\n"));
        assert_eq!(output.reason.as_deref(), Some("no nodes\n"));
        assert_eq!(output.stdout_last_line.as_deref(), Some("false"));
        assert_eq!(
            fixture.report(),
            r#"{"global":{"enabledModules":[]},"myModule":{}}"#
        );
        assert_eq!(fixture.tmp_file_names(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn a_failing_enabled_script_has_no_result() {
    for fixture in Fixture::both() {
        let body = "echo true > \"$MODULE_ENABLED_RESULT\"\nexit 1";
        let output = run_enabled(&fixture, body).await.unwrap();
        assert_eq!(output.result, None);
        assert!(!output.process.succeeded());
    }
}

#[tokio::test]
async fn global_hooks_get_global_file_names() {
    let mut fixture = Fixture::new();
    fixture.settings.keep_tmp_files = true;
    let hook = fixture.hook("exit 0");
    let context = json!([]);
    let invocation = HookInvocation {
        owner: HookOwner::Global,
        hook_name: "010-hook.sh",
        hook_path: &hook,
        working_dir: fixture.root.path(),
        binding: "beforeAll",
        binding_context: ContextDocument::Json(&context),
        config_values: &context,
        values: &context,
        extra_env: &[],
        hook_args: &[],
        webhook_response: false,
    };
    run_hook(&fixture.settings, &invocation, &CancellationToken::new())
        .await
        .unwrap();
    let names = fixture.tmp_file_names();
    assert!(
        names
            .iter()
            .any(|name| name.starts_with("global-hook-010-hook.sh-binding-context-"))
    );
    assert!(
        names
            .iter()
            .any(|name| name.starts_with("010-hook.sh.global-hook-values-"))
    );
    assert!(names.iter().any(|name| name.starts_with("global-values-")));
}

#[tokio::test]
async fn the_config_spec_runs_the_hook_with_config_and_captures_stdout() {
    let fixture = Fixture::new();
    let hook = fixture.hook("if [ \"$1\" = --config ]; then echo 'configVersion: v1'; fi");
    let spec = config_spec(&fixture.settings, &hook, hook.parent().unwrap());
    let output = process::run(&spec, &LogFields::default()).await.unwrap();
    assert!(output.succeeded());
    assert_eq!(output.stdout, "configVersion: v1\n");
}

#[tokio::test]
async fn dropping_a_running_hook_removes_its_tmp_files() {
    for fixture in Fixture::both() {
        let hook = fixture.hook("echo started > report\nsleep 100");
        let running = fixture.run(&hook);
        tokio::select! {
            _ = running => panic!("the hook should still be running"),
            () = wait_for_async(
                "the hook's report",
                Duration::from_secs(10),
                || async { fixture.module_dir().join("hooks/sub/report").exists() },
                String::new,
            ) => {}
        }
        assert_eq!(fixture.tmp_file_names(), Vec::<String>::new());
    }
}

#[tokio::test]
async fn a_sparse_1g_output_file_fails_the_hook_naming_hook_and_file() {
    for fixture in Fixture::both() {
        for var in OUTPUT_VARS {
            let hook = fixture.hook(&format!("truncate -s 1G \"${var}\""));
            let error = fixture.try_run(&hook).await.unwrap_err();
            let message = error_chain(&error);
            assert!(message.contains("hook 'hooks/sub/hook.sh'"), "{message}");
            assert!(message.contains(&format!("${var} (")), "{message}");
            assert!(message.contains("larger than the limit of"), "{message}");
            assert_eq!(error.category(), "hook_output_too_large");
            assert_eq!(fixture.tmp_file_names(), Vec::<String>::new());
        }
    }
}

async fn run_enabled(fixture: &Fixture, body: &str) -> Result<EnabledScriptOutput, HookRunError> {
    let script = fixture.hook(body);
    let invocation = EnabledScriptInvocation {
        module: "my-module",
        script_path: &script,
        config_values: &json!({}),
        values: &json!({}),
        extra_env: &[],
    };
    run_enabled_script(&fixture.settings, &invocation, &CancellationToken::new()).await
}

#[tokio::test]
async fn a_100_mb_enabled_answer_fails_the_script_with_a_short_error() {
    let fixture = Fixture::new();
    let in_file = run_enabled(&fixture, "truncate -s 100M \"$MODULE_ENABLED_RESULT\"")
        .await
        .unwrap_err();
    let message = error_chain(&in_file);
    assert!(message.contains("my-module/enabled"), "{message}");
    assert!(message.contains("$MODULE_ENABLED_RESULT ("), "{message}");
    assert!(message.len() < 400, "{message}");

    let on_stdout = run_enabled(&fixture, "head -c 100000000 /dev/zero | tr '\\0' t")
        .await
        .unwrap_err();
    let message = error_chain(&on_stdout);
    assert_eq!(
        message,
        "the stdout of 'my-module/enabled' is larger than the limit of 67108864 bytes"
    );
}

#[tokio::test]
async fn a_webhook_run_names_one_response_file_three_ways_and_reads_it_back() {
    let fixture = Fixture::new();
    let hook = fixture.hook(
        r#"[ "$VALIDATING_RESPONSE_PATH" = "$ADMISSION_RESPONSE_PATH" ] || exit 3
[ "$VALIDATING_RESPONSE_PATH" = "$CONVERSION_RESPONSE_PATH" ] || exit 4
echo '{"allowed": false, "message": "no"}' > "$ADMISSION_RESPONSE_PATH""#,
    );
    let context = json!([]);
    let invocation = HookInvocation {
        owner: HookOwner::Global,
        hook_name: "policy.sh",
        hook_path: &hook,
        working_dir: fixture.root.path(),
        binding: "policy.example.com",
        binding_context: addon_core::binding_context::ContextDocument::Json(&context),
        config_values: &context,
        values: &context,
        extra_env: &[],
        hook_args: &[],
        webhook_response: true,
    };
    let out = run_hook(&fixture.settings, &invocation, &CancellationToken::new())
        .await
        .unwrap();
    assert!(out.process.succeeded(), "{}", out.process.failure_message());
    assert_eq!(
        out.outputs.unwrap().webhook_response.trim(),
        r#"{"allowed": false, "message": "no"}"#
    );
}

#[tokio::test]
async fn other_runs_get_no_response_path() {
    let fixture = Fixture::new();
    let hook = fixture.hook(r#"[ -z "${VALIDATING_RESPONSE_PATH+set}" ] || exit 5"#);
    let out = fixture.run(&hook).await;
    assert!(out.process.succeeded(), "{}", out.process.failure_message());
}

/// A Synchronization of many kept objects, a grouped Event and a lifecycle context with
/// snapshots, streamed into the hook's file: byte for byte the serialized document, with and
/// without the pool (larger than the write buffer, so the file is written in several parts).
#[tokio::test]
async fn a_streamed_binding_context_file_is_the_serialized_document() {
    use addon_core::binding_context::{ContextBuilder, ObjectAndFilterResult, Snapshots, render};
    use addon_core::hook_config::{BindingType, HookScope, WatchEvent, parse};
    let name = addon_core::names::HookName::new("hooks/sub/hook.sh").unwrap();
    let config = parse(
        &name,
        HookScope::Module,
        "configVersion: v1\nkubernetes:\n- name: cms\n  kind: ConfigMap\n  jqFilter: .data.n\n- name: grouped\n  kind: Pod\n  group: g\n",
    )
    .unwrap();
    let items: Vec<ObjectAndFilterResult> = (0..400)
        .map(|i| {
            let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:03}"), "namespace": "ns"},
                "data": {"n": i.to_string(), "pad": "é\"\\".repeat(100)}});
            ObjectAndFilterResult::new(object, Some(json!(i.to_string())))
        })
        .collect();
    let mut snapshots = Snapshots::new();
    snapshots.insert("cms".into(), items.clone());
    snapshots.insert("grouped".into(), items[..3].to_vec());
    let builder = ContextBuilder::new(&config, &snapshots);
    let mut contexts = vec![
        builder.synchronization(&config.kubernetes[0], &items),
        builder.event(&config.kubernetes[1], WatchEvent::Added, &items[1]),
        builder.lifecycle(BindingType::BeforeHelm),
    ];
    for context in &mut contexts {
        builder.refresh(context);
    }
    let expected = serde_json::to_vec(&render(&contexts)).unwrap();
    assert!(expected.len() > 128 * 1024, "{}", expected.len());
    for fixture in Fixture::both() {
        let hook = fixture.hook("cp \"$BINDING_CONTEXT_PATH\" written");
        let module_dir = fixture.module_dir();
        let empty = json!({});
        let invocation = HookInvocation {
            owner: HookOwner::Module("my-module".into()),
            hook_name: "hooks/sub/hook.sh",
            hook_path: &hook,
            working_dir: &module_dir,
            binding: "cms",
            binding_context: ContextDocument::Contexts(&contexts),
            config_values: &empty,
            values: &empty,
            extra_env: &[],
            hook_args: &[],
            webhook_response: false,
        };
        let output = run_hook(&fixture.settings, &invocation, &CancellationToken::new())
            .await
            .unwrap();
        assert!(
            output.process.succeeded(),
            "{}",
            output.process.failure_message()
        );
        let written = std::fs::read(module_dir.join("hooks/sub/written")).unwrap();
        assert!(
            written == expected,
            "the file differs from the serialized document"
        );
        fixture.settle();
    }
}
