//! Building the edge: version detection and a missing binary.

use addon_operator::edges::helm::binary::{BinaryHelm, BinaryHelmError, HelmSettings};

use crate::common::{Env, NS};

#[tokio::test]
async fn the_helm_major_version_is_detected_once_at_construction() {
    for (name, major) in [("helm3", 3), ("helm4", 4)] {
        let Some(env) = Env::start(name).await else {
            return;
        };
        assert_eq!(env.helm.version().major, major, "{name}");
    }
}

#[tokio::test]
async fn a_missing_helm_binary_is_reported_at_construction() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = HelmSettings::new(dir.path().join("no-helm"), NS.into(), dir.path().into());
    settings.kubeconfig = Some(dir.path().join("kubeconfig"));
    let Err(error) = BinaryHelm::new(settings).await else {
        panic!("construction succeeded without a helm binary");
    };
    assert!(
        matches!(error, BinaryHelmError::Version { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("no-helm"), "{error}");
}
