//! Which cluster a client talks to (`--kube-context`, `--kube-server`) and how hard it may hit it (the client-side request rate limit), against the emulator.

use std::time::{Duration, Instant};

use addon_operator::edges::kube::client::{build, load_config};
use addon_operator::edges::kube::{ApiSettings, ClusterTarget, RateLimit};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};

use crate::common::start;

/// A kubeconfig whose current context points at a closed port and whose context `emu` at `url`.
fn two_contexts(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n\
         - {{name: dead, cluster: {{server: 'http://127.0.0.1:1'}}}}\n\
         - {{name: emu, cluster: {{server: '{url}'}}}}\n\
         users:\n- {{name: u, user: {{}}}}\n\
         contexts:\n- {{name: dead, context: {{cluster: dead, user: u}}}}\n\
         - {{name: emu, context: {{cluster: emu, user: u}}}}\n\
         current-context: dead\n"
    )
}

async fn client(target: &ClusterTarget, rate: Option<RateLimit>) -> kube::Client {
    let api = ApiSettings {
        retries: 0,
        ..ApiSettings::default()
    };
    build(load_config(target).await.unwrap(), &api, rate).unwrap()
}

async fn list_namespaces(client: &kube::Client) -> Result<usize, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    Ok(api.list(&ListParams::default()).await?.items.len())
}

#[tokio::test]
async fn a_named_context_is_used_instead_of_the_current_one() {
    let env = start().await;
    let path = env.kubeconfig.with_file_name("two-contexts");
    std::fs::write(&path, two_contexts(&env.emu.url())).unwrap();
    let current = ClusterTarget::kubeconfig(Some(&path));
    assert!(
        list_namespaces(&client(&current, None).await)
            .await
            .is_err()
    );
    let named = ClusterTarget {
        context: Some("emu".into()),
        ..current.clone()
    };
    assert!(list_namespaces(&client(&named, None).await).await.unwrap() > 0);
    let missing = ClusterTarget {
        context: Some("nope".into()),
        ..current
    };
    let error = load_config(&missing).await.unwrap_err();
    assert!(error.to_string().contains("two-contexts"), "{error}");
}

#[tokio::test]
async fn a_server_url_is_used_without_reading_any_kubeconfig() {
    let env = start().await;
    let target = ClusterTarget {
        kubeconfig: Some("/nonexistent/kubeconfig".into()),
        context: Some("nope".into()),
        server: Some(env.emu.url()),
    };
    assert!(list_namespaces(&client(&target, None).await).await.unwrap() > 0);
    let bad = ClusterTarget {
        server: Some("not a url".into()),
        ..target
    };
    let error = load_config(&bad).await.unwrap_err().to_string();
    assert_eq!(error, "use --kube-server not a url: not a URL");
}

#[tokio::test]
async fn requests_past_the_burst_go_at_the_rate_limit() {
    let env = start().await;
    let target = ClusterTarget::kubeconfig(Some(&env.kubeconfig));
    let limited = client(&target, Some(RateLimit { qps: 4.0, burst: 4 })).await;
    let started = Instant::now();
    for _ in 0..4 {
        list_namespaces(&limited).await.unwrap();
    }
    // the burst goes at once (a generous bound: requests take milliseconds)
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    for _ in 0..6 {
        list_namespaces(&limited).await.unwrap();
    }
    // six more at 4 a second: at least 1.5 s after the burst
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(1450), "{elapsed:?}");
}
