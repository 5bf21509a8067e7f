//! The config writer under the runtime: a config patch is saved before memory changes, so a failed
//! save leaves nothing applied and the retry applies the patch once; edits by others and hook
//! patches of the same key end with memory equal to the store.

use std::time::Duration;

use addon_operator::edges::helm::fake::FakeHelm;
use addon_operator::runtime::FakeHooks;
use serde_json::json;

use crate::harness::{config_patch, start, tree};

/// A global hook that adds one to `global.counter` of the config values it is given, on startup
/// and every 10 s.
fn counter_tree() -> tempfile::TempDir {
    tree(&[(
        "global-hooks/hooks/count",
        "configVersion: v1\nonStartup: 1\nschedule:\n- name: tick\n  crontab: '*/10 * * * * *'\n",
    )])
}

fn incrementing_hooks() -> FakeHooks {
    let hooks = FakeHooks::new();
    hooks.respond(|call| {
        let counter = call.config_values["global"]["counter"]
            .as_i64()
            .unwrap_or(0);
        Ok(config_patch(&format!(
            r#"[{{"op": "add", "path": "/global/counter", "value": {}}}]"#,
            counter + 1
        )))
    });
    hooks
}

#[tokio::test(start_paused = true)]
async fn a_config_patch_whose_save_fails_is_not_applied_and_its_retry_applies_it_once() {
    let op = start(
        counter_tree(),
        "global: {counter: 0}\n",
        incrementing_hooks(),
        FakeHelm::new(),
    )
    .await;
    op.config.fail_next_saves(1);
    op.settle().await;
    let runs: Vec<_> = op.hooks.calls();
    assert_eq!(runs.len(), 2, "the failed run and its retry");
    assert_eq!(runs[0].config_values["global"]["counter"], json!(0));
    assert_eq!(
        runs[1].config_values["global"]["counter"],
        json!(0),
        "the retry sees the config without the unsaved patch"
    );
    assert_eq!(op.config.current().global_values(), json!({"counter": 1}));
    assert_eq!(
        op.handle.values()["global"]["counter"],
        json!(1),
        "memory holds no double increment"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hook_patch_and_a_later_edit_of_the_same_key_end_with_memory_equal_to_the_store() {
    let op = start(
        counter_tree(),
        "global: {counter: 0}\n",
        incrementing_hooks(),
        FakeHelm::new(),
    )
    .await;
    op.settle().await;
    assert_eq!(op.config.current().global_values(), json!({"counter": 1}));
    op.edit_config("global: {counter: 100}\n").await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    op.settle().await;
    let last = op.hooks.calls().pop().unwrap();
    assert_eq!(
        last.config_values["global"]["counter"],
        json!(100),
        "the hook saw the user's later write"
    );
    assert_eq!(op.config.current().global_values(), json!({"counter": 101}));
    assert_eq!(op.handle.values()["global"]["counter"], json!(101));
}
