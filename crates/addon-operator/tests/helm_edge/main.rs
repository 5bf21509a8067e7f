//! The Helm edge end to end: `BinaryHelm` with helm 3 and helm 4 against an in-process emulator.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod absent;
mod common;
mod failures;
mod kube_cache;
mod lifecycle;
mod startup;
mod storage;

/// One `#[tokio::test]` per scenario and helm binary: `helm3::<scenario>`, `helm4::<scenario>`.
macro_rules! with_each_helm {
    ($($scenario:path => $name:ident;)*) => {
        mod helm3 {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(env) = crate::common::Env::start("helm3").await {
                        $scenario(env).await;
                    }
                }
            )*
        }
        mod helm4 {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(env) = crate::common::Env::start("helm4").await {
                        $scenario(env).await;
                    }
                }
            )*
        }
    };
}

with_each_helm! {
    crate::lifecycle::installs_a_module_and_upgrades_only_when_the_checksum_changes
        => installs_a_module_and_upgrades_only_when_the_checksum_changes;
    crate::lifecycle::a_resource_deleted_from_the_cluster_makes_the_release_need_an_upgrade
        => a_resource_deleted_from_the_cluster_makes_the_release_need_an_upgrade;
    crate::lifecycle::an_upgrade_with_changed_values_changes_the_config_map
        => an_upgrade_with_changed_values_changes_the_config_map;
    crate::lifecycle::a_module_without_chart_yaml_installs_from_its_templates
        => a_module_without_chart_yaml_installs_from_its_templates;
    crate::lifecycle::uninstall_removes_the_release_and_its_resources
        => uninstall_removes_the_release_and_its_resources;
    crate::lifecycle::a_missing_release_namespace_is_created_and_only_then
        => a_missing_release_namespace_is_created_and_only_then;
    crate::failures::a_broken_template_fails_with_helms_message
        => a_broken_template_fails_with_helms_message;
    crate::failures::a_failed_last_revision_needs_an_upgrade
        => a_failed_last_revision_needs_an_upgrade;
    crate::failures::a_release_stuck_in_pending_upgrade_is_unstuck_by_the_next_upgrade
        => a_release_stuck_in_pending_upgrade_is_unstuck_by_the_next_upgrade;
    crate::failures::a_release_stuck_in_pending_install_is_installed_afresh
        => a_release_stuck_in_pending_install_is_installed_afresh;
    crate::absent::absent_cluster_scoped_objects_and_kinds_no_longer_served_are_detected
        => absent_cluster_scoped_objects_and_kinds_no_longer_served_are_detected;
    crate::storage::helm_stores_a_release_as_base64_of_gzip_inside_the_secret
        => helm_stores_a_release_as_base64_of_gzip_inside_the_secret;
    crate::storage::a_decision_is_one_cache_read_and_no_helm_process
        => a_decision_is_one_cache_read_and_no_helm_process;
    crate::storage::an_upgrade_reads_the_release_once_and_spawns_one_helm
        => an_upgrade_reads_the_release_once_and_spawns_one_helm;
    crate::storage::a_revision_written_by_another_helm_reaches_the_decision_through_the_watch
        => a_revision_written_by_another_helm_reaches_the_decision_through_the_watch;
    crate::kube_cache::every_helm_process_shares_the_operators_private_discovery_cache
        => every_helm_process_shares_the_operators_private_discovery_cache;
}
