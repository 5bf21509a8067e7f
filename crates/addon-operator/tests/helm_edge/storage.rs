//! Release state read from helm's own storage through the API: the stored format of helm 3 and
//! 4, one cache read per decision, no helm process for a decision.

use addon_operator::edges::helm::Helm;
use base64::Engine as _;

use crate::common::{Env, NS};

pub async fn helm_stores_a_release_as_base64_of_gzip_inside_the_secret(env: Env) {
    let module = env.module("web", true);
    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();

    let secret = env
        .emu
        .object("", "secrets", NS, "sh.helm.release.v1.web.v1")
        .expect("helm wrote its storage Secret");
    assert_eq!(secret["metadata"]["labels"]["owner"], "helm");
    assert_eq!(secret["metadata"]["labels"]["status"], "deployed");
    let field = secret["data"]["release"].as_str().unwrap();
    let helm_text = base64::engine::general_purpose::STANDARD
        .decode(field)
        .unwrap();
    let gzip = base64::engine::general_purpose::STANDARD
        .decode(&helm_text)
        .unwrap();
    assert_eq!(&gzip[..3], &[0x1f, 0x8b, 0x08], "gzip inside helm's base64");
    // the edge decoded that revision: same checksum, no upgrade
    assert!(
        !env.helm
            .should_upgrade(&env.request(&module, "hello", "sum-1"))
            .await
            .unwrap()
    );
}

pub async fn a_decision_is_one_cache_read_and_no_helm_process(env: Env) {
    let module = env.module("web", true);
    let req = env.request(&module, "hello", "sum-1");
    env.helm.upgrade(&req).await.unwrap();
    let calls = env.helm_calls();
    assert!(
        calls.iter().all(|c| !c.starts_with("status")),
        "no helm status: {calls:?}"
    );
    let (reads, lists) = env.helm.storage_counters().unwrap();

    for _ in 0..5 {
        assert!(!env.helm.should_upgrade(&req).await.unwrap());
    }
    assert!(
        env.helm
            .should_upgrade(&env.request(&module, "hello", "sum-2"))
            .await
            .unwrap()
    );

    assert_eq!(env.helm_calls(), calls, "no helm process for a decision");
    assert_eq!(
        env.helm.storage_counters().unwrap(),
        (reads + 6, lists),
        "one cache read per decision and no storage request"
    );
}

pub async fn an_upgrade_reads_the_release_once_and_spawns_one_helm(env: Env) {
    let module = env.module("web", true);
    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();
    let before = env.helm_calls().len();
    let (reads, _) = env.helm.storage_counters().unwrap();
    let req = env.request(&module, "bye", "sum-2");

    assert!(env.helm.should_upgrade(&req).await.unwrap());
    env.helm.upgrade(&req).await.unwrap();

    let calls = env.helm_calls();
    assert_eq!(calls.len(), before + 1, "{calls:?}");
    assert!(calls[before].starts_with("upgrade --install web"));
    assert_eq!(env.helm.storage_counters().unwrap().0, reads + 1);
    assert!(
        !env.helm.should_upgrade(&req).await.unwrap(),
        "fresh after the upgrade"
    );
    assert_eq!(env.helm.releases().await.unwrap(), ["web"]);
    assert_eq!(
        env.helm_calls().len(),
        before + 1,
        "releases() runs no helm list"
    );
}

pub async fn a_revision_written_by_another_helm_reaches_the_decision_through_the_watch(env: Env) {
    let module = env.module("web", true);
    let req = env.request(&module, "hello", "sum-1");
    env.helm.upgrade(&req).await.unwrap();
    let lists = env.helm.storage_counters().unwrap().1;

    // another client upgrades the release with other values (and no checksum)
    let out = tokio::process::Command::new(env.dir.path().join("helm-wrapper"))
        .args(["upgrade", "web"])
        .arg(&module)
        .args(["-n", NS, "--set", "web.greeting=other,web.replicas=1"])
        .env("KUBECONFIG", env.dir.path().join("kubeconfig"))
        .env("HELM_CONFIG_HOME", env.dir.path().join("other-helm"))
        .env("HELM_CACHE_HOME", env.dir.path().join("other-helm"))
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    assert!(
        env.eventually_needs_upgrade(&req).await,
        "v2 has no checksum"
    );
    assert_eq!(
        env.helm.storage_counters().unwrap().1,
        lists,
        "seen without a list"
    );
}

#[tokio::test]
async fn config_map_storage_is_read_without_a_helm_process_too() {
    for name in ["helm3", "helm4"] {
        let Some(env) = Env::start_with_driver(name, "configmap").await else {
            return;
        };
        let module = env.module("web", true);
        let req = env.request(&module, "hello", "sum-1");
        env.helm.upgrade(&req).await.unwrap();
        let calls = env.helm_calls().len();

        assert!(!env.helm.should_upgrade(&req).await.unwrap(), "{name}");
        env.delete_deployment("web").await;
        assert!(
            env.helm.should_upgrade(&req).await.unwrap(),
            "{name}: absent"
        );

        assert_eq!(env.helm_calls().len(), calls, "{name}");
        assert!(env.release_secrets().is_empty(), "{name}");
    }
}
