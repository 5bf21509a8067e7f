//! Releases that went wrong: broken templates, failed and stuck revisions.

use addon_operator::edges::helm::{Helm, HelmError};

use crate::common::Env;

pub async fn a_broken_template_fails_with_helms_message(env: Env) {
    let module = env.module("broken", true);
    std::fs::write(
        module.join("templates/broken.yaml"),
        "data: {{ .Values.web.greeting | noSuchFunction }}\n",
    )
    .unwrap();
    let req = env.request(&module, "hello", "sum-1");

    let error = env.helm.upgrade(&req).await.unwrap_err();

    match &error {
        HelmError::Command {
            operation,
            release,
            message,
        } => {
            assert_eq!(*operation, "upgrade");
            assert_eq!(release, "broken");
            assert!(message.contains("noSuchFunction"), "{message}");
            assert_eq!(message.trim(), message, "stderr is trimmed");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(env.config_map("broken-config").is_none());
    assert!(env.helm.should_upgrade(&req).await.unwrap());
}

pub async fn a_failed_last_revision_needs_an_upgrade(env: Env) {
    let module = env.module("web", true);
    let req = env.request(&module, "hello", "sum-1");
    env.helm.upgrade(&req).await.unwrap();

    env.write_revision("web", 2, "failed").await;

    assert!(
        env.eventually_needs_upgrade(&req).await,
        "the watch delivers v2"
    );
    env.helm.upgrade(&req).await.unwrap();
    assert!(!env.helm.should_upgrade(&req).await.unwrap());
}

pub async fn a_release_stuck_in_pending_upgrade_is_unstuck_by_the_next_upgrade(env: Env) {
    let module = env.module("web", true);
    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();
    // what a helm process killed in the middle of an upgrade leaves behind
    env.write_revision("web", 2, "pending-upgrade").await;
    let req = env.request(&module, "bye", "sum-2");
    assert!(env.helm.should_upgrade(&req).await.unwrap());

    env.helm.upgrade(&req).await.unwrap();

    assert_eq!(
        env.config_map("web-config").unwrap()["data"]["greeting"],
        "bye"
    );
    assert!(!env.helm.should_upgrade(&req).await.unwrap());
    assert_eq!(
        env.release_secrets(),
        ["sh.helm.release.v1.web.v1", "sh.helm.release.v1.web.v2"]
    );
}

pub async fn a_release_stuck_in_pending_install_is_installed_afresh(env: Env) {
    let module = env.module("web", true);
    env.write_revision("web", 1, "pending-install").await;
    let req = env.request(&module, "hello", "sum-1");
    assert!(env.helm.should_upgrade(&req).await.unwrap());

    env.helm.upgrade(&req).await.unwrap();

    assert!(env.config_map("web-config").is_some());
    assert!(!env.helm.should_upgrade(&req).await.unwrap());
}

#[tokio::test]
async fn a_stuck_release_kept_in_config_maps_is_unstuck_too() {
    for name in ["helm3", "helm4"] {
        let Some(env) = Env::start_with_driver(name, "configmap").await else {
            return;
        };
        let module = env.module("web", true);
        env.helm
            .upgrade(&env.request(&module, "hello", "sum-1"))
            .await
            .unwrap();
        env.write_revision("web", 2, "pending-upgrade").await;
        let req = env.request(&module, "bye", "sum-2");

        env.helm.upgrade(&req).await.unwrap();

        assert!(!env.helm.should_upgrade(&req).await.unwrap(), "{name}");
        assert!(
            env.release_secrets().is_empty(),
            "{name}: nothing in Secrets"
        );
        let revisions = env.emu.objects("", "configmaps").len();
        assert_eq!(revisions, 3, "{name}: v1, v2 and the chart's config map");
    }
}
