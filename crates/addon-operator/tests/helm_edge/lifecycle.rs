//! A module's release from install to uninstall: checksums, changed values, absent resources.

use addon_operator::edges::helm::Helm;

use crate::common::Env;

pub async fn installs_a_module_and_upgrades_only_when_the_checksum_changes(env: Env) {
    let module = env.module("web", true);
    let req = env.request(&module, "hello", "sum-1");
    assert!(
        env.helm.should_upgrade(&req).await.unwrap(),
        "no release yet"
    );

    env.helm.upgrade(&req).await.unwrap();

    let cm = env.config_map("web-config").expect("config map installed");
    assert_eq!(cm["data"]["greeting"], "hello");
    // upstream's post-renderer: `heritage: addon-operator` on every object, the chart's kept
    let labels = &cm["metadata"]["labels"];
    assert_eq!(labels["heritage"], "addon-operator", "{labels}");
    assert_eq!(labels["tier"], "config", "{labels}");
    let deploy = env.deployment("web").expect("deployment installed");
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(deploy["metadata"]["labels"]["heritage"], "addon-operator");
    assert_eq!(deploy["metadata"]["labels"]["app"], "web");
    assert_eq!(env.helm.releases().await.unwrap(), ["web"]);
    assert!(
        !env.helm.should_upgrade(&req).await.unwrap(),
        "same checksum"
    );
    let changed = env.request(&module, "hello", "sum-2");
    assert!(
        env.helm.should_upgrade(&changed).await.unwrap(),
        "new checksum"
    );
}

pub async fn a_resource_deleted_from_the_cluster_makes_the_release_need_an_upgrade(env: Env) {
    let module = env.module("web", true);
    let req = env.request(&module, "hello", "sum-1");
    env.helm.upgrade(&req).await.unwrap();
    assert!(!env.helm.should_upgrade(&req).await.unwrap());

    env.delete_deployment("web").await;

    assert!(
        env.helm.should_upgrade(&req).await.unwrap(),
        "deployment absent"
    );
    env.helm.upgrade(&req).await.unwrap();
    assert!(env.deployment("web").is_some(), "the upgrade restores it");
    assert!(!env.helm.should_upgrade(&req).await.unwrap());
}

pub async fn an_upgrade_with_changed_values_changes_the_config_map(env: Env) {
    let module = env.module("web", true);
    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();

    let req = env.request(&module, "bye", "sum-2");
    env.helm.upgrade(&req).await.unwrap();

    let cm = env.config_map("web-config").unwrap();
    assert_eq!(cm["data"]["greeting"], "bye");
    assert!(!env.helm.should_upgrade(&req).await.unwrap());
    assert_eq!(
        env.release_secrets(),
        ["sh.helm.release.v1.web.v1", "sh.helm.release.v1.web.v2"]
    );
}

pub async fn a_module_without_chart_yaml_installs_from_its_templates(env: Env) {
    let module = env.module("no-chart", false);
    std::fs::create_dir_all(module.join("hooks")).unwrap();
    std::fs::write(module.join("hooks/startup.sh"), "#!/bin/bash\n").unwrap();
    std::fs::create_dir_all(module.join("openapi")).unwrap();
    std::fs::write(module.join("openapi/config-values.yaml"), "type: object\n").unwrap();
    std::fs::write(module.join("enabled"), "#!/bin/bash\necho true\n").unwrap();
    let req = env.request(&module, "hi", "sum-1");

    env.helm.upgrade(&req).await.unwrap();

    assert_eq!(
        env.config_map("no-chart-config").unwrap()["data"]["greeting"],
        "hi"
    );
    assert_eq!(env.helm.releases().await.unwrap(), ["no-chart"]);
    assert!(!env.helm.should_upgrade(&req).await.unwrap());
    assert!(
        !module.join("Chart.yaml").exists(),
        "the module dir is untouched"
    );
}

pub async fn uninstall_removes_the_release_and_its_resources(env: Env) {
    let module = env.module("web", true);
    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();

    env.helm.uninstall("web").await.unwrap();

    assert!(env.config_map("web-config").is_none());
    assert!(env.deployment("web").is_none());
    assert!(env.release_secrets().is_empty());
    assert!(env.helm.releases().await.unwrap().is_empty());
    env.helm.uninstall("web").await.unwrap();
    env.helm.uninstall("never-installed").await.unwrap();
}

/// A local tree against a cluster (`--config-file`) may name a namespace that does not exist:
/// helm is asked to create it then, and only then (least-privilege RBAC cannot create one).
pub async fn a_missing_release_namespace_is_created_and_only_then(env: Env) {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(env.client.clone());
    api.delete(crate::common::NS, &Default::default())
        .await
        .unwrap();
    let gone = || async { api.get_opt(crate::common::NS).await.unwrap().is_none() };
    let limit = std::time::Duration::from_secs(30);
    addon_operator_testkit::wait::wait_for_async("the namespace gone", limit, gone, String::new)
        .await;
    let module = env.module("web", true);
    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();
    assert!(env.config_map("web-config").is_some(), "installed");
    assert!(
        api.get_opt(crate::common::NS).await.unwrap().is_some(),
        "created"
    );
    env.helm
        .upgrade(&env.request(&module, "again", "sum-2"))
        .await
        .unwrap();
    let upgrades: Vec<String> = env
        .helm_calls()
        .into_iter()
        .filter(|call| call.starts_with("upgrade"))
        .collect();
    assert_eq!(upgrades.len(), 2, "{upgrades:?}");
    assert!(upgrades[0].contains("--create-namespace"), "{upgrades:?}");
    assert!(!upgrades[1].contains("--create-namespace"), "{upgrades:?}");
}
