//! A staged start: the runtime runs global hooks and `enabled` scripts while the module hooks'
//! `--config` runs go on; no module runs before their hooks are known.

use std::collections::BTreeMap;
use std::time::Duration;

use addon_operator_testkit::FakeHelm;
use addon_operator_testkit::scenario::{enabling_hooks, start, start_staged, tree};

fn staged_tree() -> tempfile::TempDir {
    tree(&[
        (
            "global-hooks/hooks/startup",
            "configVersion: v1\nonStartup: 1\nbeforeAll: 1\nafterAll: 1\n",
        ),
        (
            "modules/values.yaml",
            "webEnabled: true\napiEnabled: true\n",
        ),
        ("modules/010-web/enabled", "#!/bin/sh\n"),
        (
            "modules/010-web/hooks/startup",
            "configVersion: v1\nonStartup: 1\n",
        ),
        (
            "modules/010-web/hooks/before",
            "configVersion: v1\nbeforeHelm: 1\n",
        ),
        ("modules/020-api/enabled", "#!/bin/sh\n"),
        (
            "modules/020-api/hooks/tick",
            "configVersion: v1\nschedule:\n- name: tick\n  crontab: '* * * * *'\n  queue: api-ticks\n",
        ),
    ])
}

#[tokio::test(start_paused = true)]
async fn global_hooks_and_enabled_scripts_run_before_module_hooks_are_known() {
    let op = start_staged(staged_tree(), "", enabling_hooks(), FakeHelm::new()).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        op.runs(),
        [
            "run hooks/startup onStartup",
            "run hooks/startup beforeAll",
            "enabled web",
            "enabled api",
        ],
        "no module runs while its hooks are unknown"
    );
    assert!(!op.handle.first_converge_done());
    op.add_module_hooks().unwrap();
    op.settle().await;
    let mark = op.runs().iter().position(|r| r == "enabled api").unwrap();
    assert_eq!(
        op.runs()[mark + 1..],
        [
            "run web/hooks/startup onStartup",
            "run web/hooks/before beforeHelm",
            "run hooks/startup afterAll",
        ]
    );
    assert!(
        op.handle.queues_text().contains("api-ticks"),
        "{}",
        op.handle.queues_text()
    );
}

#[tokio::test(start_paused = true)]
async fn a_staged_start_runs_what_a_whole_start_runs() {
    let whole = start(staged_tree(), "", enabling_hooks(), FakeHelm::new()).await;
    whole.settle().await;
    let staged = start_staged(staged_tree(), "", enabling_hooks(), FakeHelm::new()).await;
    staged.add_module_hooks().unwrap();
    staged.settle().await;
    assert_eq!(staged.runs(), whole.runs());
    assert_eq!(staged.handle.queues_text(), whole.handle.queues_text());
}

#[tokio::test(start_paused = true)]
async fn module_hooks_without_configs_are_refused_and_nothing_runs() {
    let op = start_staged(staged_tree(), "", enabling_hooks(), FakeHelm::new()).await;
    let (hooks, _) = op.module_hooks();
    let problems = op
        .handle
        .add_module_hooks(&hooks, &BTreeMap::new())
        .unwrap_err();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems.iter().any(|p| p.contains("before")),
        "{problems:?}"
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(op.runs().last().map(String::as_str), Some("enabled api"));
    assert!(!op.handle.first_converge_done());
}
