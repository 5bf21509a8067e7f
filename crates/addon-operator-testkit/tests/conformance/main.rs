//! The kube-emulator measured against kube-apiserver: the requests of `corpus.yaml` (what the
//! operator, helm, kubectl and kube-rs send) go to a real API server and to the emulator, each in
//! a fresh namespace; the answers are compared after normalising what is volatile. The steps that
//! differ must be exactly those of `known_differences.yaml`, each listed with its reason in
//! `docs/kube-emulator.md` together with the figure this test prints. Run it with
//! `cargo test -p addon-operator-testkit --test conformance -- --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod client;
mod corpus;
mod normalise;

use std::collections::{BTreeMap, BTreeSet};

use addon_operator_testkit::real_cluster::{RealCluster, repo_root};
use kube_emulator::{Emulator, EmulatorConfig};
use serde_json::Value;

use client::{Answer, Server};
use corpus::Step;
use normalise::{differences, normalise, select};

/// One step's answers from both servers, normalised.
struct Compared {
    id: String,
    sent_by: Option<String>,
    differences: Vec<String>,
}

#[test]
fn the_emulator_answers_the_corpus_as_kube_apiserver_does() {
    let Some(cluster) = RealCluster::shared() else {
        return;
    };
    let steps = corpus::steps();
    let namespace = format!("conformance-{}", std::process::id());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let compared = runtime.block_on(async {
        let config = EmulatorConfig {
            // kube-apiserver alone runs no controllers: nothing writes status there either
            simulate_status: false,
            fsync: false,
            ..EmulatorConfig::default()
        };
        let emulator = Emulator::start(config).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        emulator.write_kubeconfig(&kubeconfig).unwrap();
        let compact_real = || {
            cluster.compact_etcd();
        };
        let mut real = Server::connect(
            "kube-apiserver",
            &cluster.admin_kubeconfig,
            &namespace,
            compact_real,
        )
        .await;
        let mut emulated = Server::connect("kube-emulator", &kubeconfig, &namespace, || {
            emulator.expire_history()
        })
        .await;
        let real_answers = run_all(&mut real, &steps).await;
        let emulated_answers = run_all(&mut emulated, &steps).await;
        compare_all(
            &steps,
            (&real, &real_answers),
            (&emulated, &emulated_answers),
        )
    });
    report_and_check(&compared);
}

async fn run_all(server: &mut Server<'_>, steps: &[Step]) -> Vec<Option<Answer>> {
    let mut answers = Vec::new();
    for step in steps {
        answers.push(server.run(step).await);
    }
    answers
}

fn compare_all(
    steps: &[Step],
    (real, real_answers): (&Server, &[Option<Answer>]),
    (emulated, emulated_answers): (&Server, &[Option<Answer>]),
) -> Vec<Compared> {
    let mut out = Vec::new();
    for (step, (a, b)) in steps.iter().zip(real_answers.iter().zip(emulated_answers)) {
        let (Some(a), Some(b)) = (a, b) else {
            continue;
        };
        let (a, b) = (answer_value(a), answer_value(b));
        if shown(&step.id) {
            println!(
                "step {} real:\n{a:#}\nstep {} emulator:\n{b:#}",
                step.id, step.id
            );
        }
        let a = normalise(&a, &real.vars);
        let b = normalise(&b, &emulated.vars);
        out.push(Compared {
            id: step.id.clone(),
            sent_by: step.sent_by.clone(),
            differences: compare(step, &a, &b),
        });
    }
    out
}

/// Whether `CONFORMANCE_SHOW` (comma-separated step ids, or `all`) asks to print the answers of
/// `id` in full, as they came.
fn shown(id: &str) -> bool {
    let wanted = std::env::var("CONFORMANCE_SHOW").unwrap_or_default();
    wanted.split(',').any(|w| w == id || w == "all")
}

/// `{"status": code, "body": body}`, so a selection can name either.
fn answer_value(answer: &Answer) -> Value {
    serde_json::json!({ "status": answer.status, "body": answer.body })
}

fn compare(step: &Step, real: &Value, emulated: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if real["status"] != emulated["status"] {
        found.push(format!(
            "status code: real {} | emulator {}",
            real["status"], emulated["status"]
        ));
    }
    if step.status_only {
        return found;
    }
    match &step.fields {
        None => found.extend(differences(&real["body"], &emulated["body"])),
        Some(fields) => {
            for field in fields {
                let (a, b) = (
                    select(&real["body"], field),
                    select(&emulated["body"], field),
                );
                if a != b {
                    found.push(format!(
                        "{field}: real {} | emulator {}",
                        Value::from(a),
                        Value::from(b)
                    ));
                }
            }
        }
    }
    found
}

fn report_and_check(compared: &[Compared]) {
    let differing: BTreeSet<&str> = compared
        .iter()
        .filter(|c| !c.differences.is_empty())
        .map(|c| c.id.as_str())
        .collect();
    for c in compared.iter().filter(|c| !c.differences.is_empty()) {
        let sent_by = c.sent_by.as_deref().unwrap_or("");
        println!("step {} differs ({sent_by}):", c.id);
        for d in c.differences.iter().take(20) {
            println!("    {d}");
        }
    }
    let figure = format!(
        "{} requests, {} identical",
        compared.len(),
        compared.len() - differing.len()
    );
    println!("kube-emulator against kube-apiserver: {figure}");
    let known = corpus::known_differences();
    let listed: BTreeMap<&str, &str> = known
        .iter()
        .map(|k| (k.step.as_str(), k.reason.as_str()))
        .collect();
    let new: Vec<&&str> = differing
        .iter()
        .filter(|d| !listed.contains_key(**d))
        .collect();
    let fixed: Vec<&&str> = listed.keys().filter(|k| !differing.contains(*k)).collect();
    assert!(
        new.is_empty() && fixed.is_empty(),
        "the differing steps are not those of known_differences.yaml: new {new:?}, now identical {fixed:?}"
    );
    check_docs(&figure, &listed);
}

/// `docs/kube-emulator.md` states the figure and names every known difference.
fn check_docs(figure: &str, listed: &BTreeMap<&str, &str>) {
    let docs = std::fs::read_to_string(repo_root().join("docs/kube-emulator.md")).unwrap();
    assert!(
        docs.contains(figure),
        "docs/kube-emulator.md does not state the figure {figure:?}"
    );
    let missing: Vec<&&str> = listed
        .iter()
        .filter(|(id, reason)| !docs.contains(&format!("| `{id}` | {reason} |")))
        .map(|(id, _)| id)
        .collect();
    assert!(
        missing.is_empty(),
        "docs/kube-emulator.md does not list these known differences as `| `step` | reason |` rows: {missing:?}"
    );
}
