//! module-sdk's settings check: `<batch executable> hook check` with the module's new settings
//! in `$SETTINGS_PATH`; exit 0 is "valid", otherwise stderr holds the verdict as JSON.

use std::io::Write as _;
use std::path::Path;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::edges::exec::hook_run::HookRunSettings;
use crate::edges::exec::process::{self, ExitKind, LogFields, ProcessSpec};
use crate::runtime::edges::{HookFailure, SettingsVerdict};

/// One settings check to run.
pub struct CheckInvocation<'a> {
    pub module: &'a str,
    pub program: &'a Path,
    /// The module's section of the config (its settings, without the module key).
    pub settings: &'a Value,
    pub extra_env: &'a [(String, String)],
}

/// Runs the check under the hook time limit; a run that fails to start, times out or answers
/// something that is not a verdict is a [`HookFailure`].
pub async fn run(
    settings: &HookRunSettings,
    check: &CheckInvocation<'_>,
    cancel: &CancellationToken,
) -> Result<SettingsVerdict, HookFailure> {
    let fail = |what: String| {
        HookFailure::new(format!(
            "settings check of module '{}': {what}",
            check.module
        ))
    };
    let file = settings_file(settings, check.settings)
        .map_err(|e| fail(format!("write $SETTINGS_PATH: {e}")))?;
    let mut env = vec![(
        "SETTINGS_PATH".to_string(),
        file.path().to_string_lossy().into_owned(),
    )];
    env.extend(check.extra_env.iter().cloned());
    let spec = ProcessSpec {
        program: check.program.to_path_buf(),
        args: vec!["hook".into(), "check".into()],
        cwd: check
            .program
            .parent()
            .map_or_else(|| ".".into(), Path::to_path_buf),
        env,
        clear_env: false,
        timeout: settings.timeout,
        kill_grace: settings.kill_grace,
        capture_stdout: false,
    };
    let log = LogFields {
        hook: "check".to_string(),
        module: check.module.to_string(),
        binding: "check".to_string(),
        quiet: false,
    };
    let output = process::run_until_cancelled(&spec, &log, cancel)
        .await
        .map_err(|e| fail(addon_core::error::error_chain(&e)))?;
    if output.succeeded() {
        return Ok(SettingsVerdict::valid());
    }
    if output.exit == ExitKind::TimedOut {
        return Err(HookFailure {
            timed_out: true,
            usage: output.usage,
            ..fail(format!("timed out after {:?}", settings.timeout))
        });
    }
    parse_verdict(&output.stderr_tail).ok_or_else(|| {
        fail(format!(
            "failed ({}) without a verdict: {}",
            output.exit,
            output.failure_message()
        ))
    })
}

fn settings_file(
    settings: &HookRunSettings,
    value: &Value,
) -> std::io::Result<tempfile::NamedTempFile> {
    std::fs::create_dir_all(&settings.tmp_dir)?;
    let mut file = tempfile::Builder::new()
        .prefix("settings-check-")
        .suffix(".json")
        .tempfile_in(&settings.tmp_dir)?;
    file.write_all(value.to_string().as_bytes())?;
    file.flush()?;
    Ok(file)
}

/// The verdict module-sdk prints on stderr (`{"valid":false,"message":"...","warnings":[...]}`):
/// the whole (trimmed) stderr, else its last line that is one.
fn parse_verdict(stderr: &str) -> Option<SettingsVerdict> {
    let parse = |text: &str| serde_json::from_str::<SettingsVerdict>(text.trim()).ok();
    parse(stderr).or_else(|| stderr.lines().rev().find_map(parse))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_is_read_from_stderr_as_module_sdk_prints_it() {
        let v = parse_verdict(
            "{\"valid\":false,\"message\":\"replicas cannot be 0\",\"warnings\":null}\n",
        )
        .unwrap();
        assert!(!v.valid);
        assert_eq!(v.message, "replicas cannot be 0");
        let v = parse_verdict("some log\n{\"valid\":true,\"message\":\"\",\"warnings\":[\"w\"]}\n")
            .unwrap();
        assert!(v.valid);
        assert_eq!(v.warnings, ["w"]);
        assert!(parse_verdict("panic: boom").is_none());
    }

    #[tokio::test]
    async fn a_check_is_run_with_settings_path_and_bounded_in_time() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("check");
        std::fs::write(
            &script,
            "#!/bin/sh\n[ \"$1 $2\" = 'hook check' ] || exit 3\n\
             grep -q '\"replicas\":0' \"$SETTINGS_PATH\" || exit 0\n\
             echo '{\"valid\":false,\"message\":\"replicas cannot be 0\",\"warnings\":[]}' >&2; exit 1\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let settings = HookRunSettings {
            tmp_dir: dir.path().join("tmp"),
            timeout: std::time::Duration::from_secs(20),
            ..HookRunSettings::default()
        };
        let check = |value: &'static str| {
            let value: Value = serde_json::from_str(value).unwrap();
            let (settings, script) = (&settings, &script);
            async move {
                let invocation = CheckInvocation {
                    module: "web",
                    program: script,
                    settings: &value,
                    extra_env: &[],
                };
                run(settings, &invocation, &CancellationToken::new()).await
            }
        };
        assert!(check(r#"{"replicas":2}"#).await.unwrap().valid);
        let refused = check(r#"{"replicas":0}"#).await.unwrap();
        assert_eq!(refused.message, "replicas cannot be 0");

        let hangs = dir.path().join("hangs");
        std::fs::write(&hangs, "#!/bin/sh\nexec sleep 3600\n").unwrap();
        std::fs::set_permissions(&hangs, std::fs::Permissions::from_mode(0o755)).unwrap();
        let short = HookRunSettings {
            timeout: std::time::Duration::from_millis(200),
            kill_grace: std::time::Duration::from_millis(100),
            ..settings.clone()
        };
        let value = serde_json::json!({});
        let invocation = CheckInvocation {
            module: "web",
            program: &hangs,
            settings: &value,
            extra_env: &[],
        };
        let failure = run(&short, &invocation, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(failure.timed_out, "{failure:?}");
    }
}
