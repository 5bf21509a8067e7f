//! The kit used as the architecture page shows it: a tree, an operator on the fakes, settle, inspect.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use addon_operator_testkit::scenario::{start, tree};
use addon_operator_testkit::{FakeHelm, FakeHooks, HelmCall};

#[tokio::test(start_paused = true)]
async fn a_module_is_installed_on_startup() {
    let dir = tree(&[("modules/010-web/Chart.yaml", "name: web\nversion: 0.1.0\n")]);
    let op = start(dir, "webEnabled: true\n", FakeHooks::new(), FakeHelm::new()).await;
    op.settle().await;
    assert_eq!(op.helm.release_names(), ["web"]);
}

#[tokio::test(start_paused = true)]
async fn a_release_without_a_module_is_purged_and_hooks_are_recorded_in_order() {
    let dir = tree(&[(
        "global-hooks/hooks/startup",
        "configVersion: v1\nonStartup: 1\n",
    )]);
    let helm = FakeHelm::new().with_release("gone");
    let op = start(dir, "", FakeHooks::new(), helm).await;
    op.settle().await;
    assert_eq!(op.hooks.names(), ["hooks/startup"]);
    assert!(op.helm.release_names().is_empty());
    assert_eq!(
        op.helm.calls(),
        [HelmCall::Uninstall {
            release: "gone".into()
        }]
    );
}
