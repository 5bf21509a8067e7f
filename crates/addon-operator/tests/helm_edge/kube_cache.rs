//! helm's discovery cache: one private directory of the operator that every helm process it
//! starts writes and reads, never the user's `~/.kube/cache`.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use addon_operator::edges::helm::Helm;

use crate::common::Env;

/// The `servergroups.json` helm keeps for the one API server it talked to under `cache`.
fn server_groups(cache: &Path) -> PathBuf {
    let hosts: Vec<_> = std::fs::read_dir(cache.join("discovery"))
        .expect("helm wrote a discovery cache in the private directory")
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(hosts.len(), 1, "{hosts:?}");
    hosts[0].join("servergroups.json")
}

pub async fn every_helm_process_shares_the_operators_private_discovery_cache(env: Env) {
    let started = std::time::SystemTime::now();
    let cache = env.helm.kube_cache_dir().to_path_buf();
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "private to the operator");
    let module = env.module("web", true);

    env.helm
        .upgrade(&env.request(&module, "hello", "sum-1"))
        .await
        .unwrap();
    let first = std::fs::metadata(server_groups(&cache)).unwrap().ino();
    env.helm
        .upgrade(&env.request(&module, "bye", "sum-2"))
        .await
        .unwrap();
    let second = std::fs::metadata(server_groups(&cache)).unwrap().ino();

    assert_ne!(
        first, second,
        "the second helm process rewrote the same cache"
    );
    let host = server_groups(&cache)
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_owned();
    if let Some(home) = std::env::var_os("HOME") {
        // other tests' helm processes may have used an emulator on the same port before: only a
        // write during this test counts
        let shared = Path::new(&home)
            .join(".kube/cache/discovery")
            .join(host)
            .join("servergroups.json");
        if let Ok(modified) = std::fs::metadata(&shared).and_then(|m| m.modified()) {
            assert!(modified < started, "helm wrote {}", shared.display());
        }
    }
}

#[tokio::test]
async fn the_private_discovery_cache_is_made_in_ram_when_it_can_be_and_removed_with_the_edge() {
    let Some(env) = Env::start("helm3").await else {
        return;
    };
    let cache = env.helm.kube_cache_dir().to_path_buf();
    if Path::new("/dev/shm").is_dir() {
        assert!(cache.starts_with("/dev/shm"), "{}", cache.display());
    } else {
        assert!(cache.starts_with(env.dir.path()), "{}", cache.display());
    }
    drop(env);
    if cache.starts_with("/dev/shm") {
        assert!(!cache.exists(), "{} left behind", cache.display());
    }
}
