//! `module.yaml` requirements in the real binary: run order, modules that do not run, cycles,
//! and the module graph (`GET /graph`, `module graph`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{path_with_tools, run, start_command, write};

/// A module hook in plain sh: `beforeHelm`, it appends `<module> ran` to `$HOOK_LOG`.
fn module_with_hook(root: &Path, dir: &str, module: &str) {
    let text = format!(
        "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then echo '{{\"configVersion\":\"v1\",\"beforeHelm\":1}}'; exit 0; fi\necho '{module} ran' >> \"$HOOK_LOG\"\n"
    );
    write(&root.join(format!("modules/{dir}/hooks/mark")), &text, true);
}

fn requires(root: &Path, dir: &str, modules: &[(&str, &str)]) {
    let mut text = String::from("requirements:\n  modules:\n");
    for (name, constraint) in modules {
        text.push_str(&format!("    {name}: '{constraint}'\n"));
    }
    write(
        &root.join(format!("modules/{dir}/module.yaml")),
        &text,
        false,
    );
}

/// `app` (ORDER 10) requires `db` (ORDER 20); `ui` (ORDER 30) requires `search`, which is
/// disabled; `web` (ORDER 40) requires nothing.
fn dependency_tree() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(
        &r.join("modules/values.yaml"),
        "appEnabled: true\ndbEnabled: true\nuiEnabled: true\nwebEnabled: true\nsearchEnabled: false\n",
        false,
    );
    for (dir, module) in [
        ("010-app", "app"),
        ("020-db", "db"),
        ("030-ui", "ui"),
        ("040-web", "web"),
        ("050-search", "search"),
    ] {
        module_with_hook(r, dir, module);
    }
    requires(r, "010-app", &[("db", ">= 0.0.0")]);
    requires(r, "030-ui", &[("search", ">= 1.2")]);
    write(&r.join("config.yaml"), "", false);
    root
}

struct Operator {
    child: Child,
    root: tempfile::TempDir,
}

impl Operator {
    /// Starts the operator on `root` with `extra_path` first on PATH (for a fake `dot`).
    fn start(root: tempfile::TempDir, extra_path: &Path, args: &[&str]) -> Self {
        let r = root.path();
        let mut cmd = start_command(r.join("tmp"), r.join("debug.socket"));
        cmd.arg("--working-dir")
            .arg(r)
            .arg("--config-file")
            .arg(r.join("config.yaml"))
            .args(args)
            .env(
                "PATH",
                format!("{}:{}", extra_path.display(), path_with_tools()),
            )
            .env("HOOK_LOG", r.join("hooks.log"))
            .env("LOG_LEVEL", "info")
            .env_remove("ADDON_OPERATOR_MODULES_DIR")
            .env_remove("MODULES_DIR")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(r.join("operator.log")).unwrap());
        let child = cmd.spawn().expect("start addon-operator");
        Self { child, root }
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root.path().join(rel)).unwrap_or_default()
    }

    fn debug(&self, route: &str) -> (bool, String) {
        let socket = self.root.path().join("debug.socket");
        let out = run(&[
            "raw",
            route,
            "--debug-unix-socket",
            socket.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }

    fn wait_until(&self, what: &str, done: impl FnMut() -> bool) {
        addon_operator_testkit::wait::wait_for(what, Duration::from_secs(60), done, || {
            format!(
                "hook log:\n{}\noperator log:\n{}",
                self.read("hooks.log"),
                self.read("operator.log")
            )
        });
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

#[test]
fn a_module_runs_after_the_module_it_requires_and_one_whose_requirement_is_disabled_does_not_run() {
    let fake_bin = tempfile::tempdir().unwrap();
    // a stand-in for Graphviz: reads the DOT, answers a PNG signature and the DOT's size
    write(
        &fake_bin.path().join("dot"),
        "#!/bin/sh\n[ \"$1\" = \"-Tpng\" ] || exit 2\nsize=$(wc -c)\nprintf '\\211PNG\\r\\n\\032\\n%s' \"$size\"\n",
        true,
    );
    let op = Operator::start(dependency_tree(), fake_bin.path(), &[]);
    op.wait_until("the first converge", || {
        op.read("operator.log").contains(" ready modules=")
    });
    let runs: Vec<String> = op.read("hooks.log").lines().map(str::to_string).collect();
    assert_eq!(
        runs,
        ["db ran", "app ran", "web ran"],
        "{}",
        op.read("operator.log")
    );
    let log = op.read("operator.log");
    assert!(
        log.contains("module 'ui' requires module 'search' (>= 1.2), which is disabled or absent"),
        "{log}"
    );
    let (ok, list) = op.debug("/module/list.json");
    assert!(ok, "{list}");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        list["enabledModules"],
        serde_json::json!(["app", "db", "web"])
    );
    let reason = list["notRunning"]["ui"].as_str().unwrap_or_default();
    assert!(reason.contains("requires module 'search'"), "{list}");

    let (ok, dot) = op.debug("/graph?format=text");
    assert!(ok, "{dot}");
    assert!(dot.starts_with("strict digraph {"), "{dot}");
    assert!(
        dot.contains("\t\"db\" -> \"app\" [ label=\">= 0.0.0\" ];"),
        "{dot}"
    );
    assert!(dot.contains("\t\"10\" -> \"20\";"), "{dot}");
    let (ok, png) = op.debug("/graph");
    assert!(ok, "{png}");
    assert!(png.starts_with("\u{FFFD}PNG\r\n"), "{png}");
    let size: usize = png
        .trim()
        .rsplit('\n')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(size, dot.trim_end().len() + 1, "dot got the graph on stdin");
}

#[test]
fn module_graph_prints_the_dot_of_the_tree_without_an_operator() {
    let root = dependency_tree();
    let out = run(&[
        "module",
        "graph",
        "--working-dir",
        root.path().to_str().unwrap(),
    ]);
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{dot}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        dot.contains("\t\"db\" -> \"app\" [ label=\">= 0.0.0\" ];"),
        "{dot}"
    );
    assert!(
        dot.contains("\t\"search\" -> \"ui\" [ label=\">= 1.2\" ];"),
        "{dot}"
    );
    assert!(dot.contains("\t\"40\" -> \"web\";"), "{dot}");
}

#[test]
fn a_cycle_of_requirements_refuses_the_tree_in_check_start_and_graph() {
    let root = dependency_tree();
    let r = root.path();
    requires(r, "020-db", &[("web", "*")]);
    requires(r, "040-web", &[("app", "*")]);
    let cycle = "modules require each other in a cycle: app -> db -> web -> app";
    let dir = r.to_str().unwrap();
    for args in [
        vec!["check", "--working-dir", dir],
        vec!["module", "graph", "--working-dir", dir],
    ] {
        let out = run(&args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(text.contains(cycle), "{args:?}: {text}");
    }
    let out = start_command(r.join("tmp"), r.join("debug.socket"))
        .arg("--working-dir")
        .arg(r)
        .arg("--config-file")
        .arg(r.join("config.yaml"))
        .env_remove("ADDON_OPERATOR_MODULES_DIR")
        .env_remove("MODULES_DIR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(cycle), "{text}");
}

#[test]
fn check_shows_requirements_and_why_an_enabled_module_does_not_run() {
    let root = dependency_tree();
    let out = run(&[
        "check",
        "--working-dir",
        root.path().to_str().unwrap(),
        "-o",
        "json",
    ]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let modules = report["modules"].as_array().unwrap();
    let ui = modules.iter().find(|m| m["name"] == "ui").unwrap();
    assert_eq!(ui["enabled"], false, "{report:#}");
    assert_eq!(ui["requires"], serde_json::json!(["search >= 1.2"]));
    let reason = ui["notRunning"].as_str().unwrap_or_default();
    assert!(
        reason.contains("module 'ui' requires module 'search' (>= 1.2)"),
        "{report:#}"
    );
    let names: Vec<&str> = modules
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["app", "db", "ui", "web", "search"],
        "module order stays by weight"
    );
}

/// `requirements.kubernetes` against the embedded cluster's `/version` (v1.35.0); without a
/// cluster the same tree runs both modules and says the requirement was not checked.
#[test]
fn a_kubernetes_requirement_is_checked_against_the_cluster_and_skipped_without_one() {
    let tree = || {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        write(
            &r.join("modules/values.yaml"),
            "futureEnabled: true
todayEnabled: true
",
            false,
        );
        module_with_hook(r, "010-future", "future");
        module_with_hook(r, "020-today", "today");
        let kube = |at: &str| format!("requirements:\n  kubernetes: '{at}'\n");
        write(
            &r.join("modules/010-future/module.yaml"),
            &kube(">= 1.99"),
            false,
        );
        write(
            &r.join("modules/020-today/module.yaml"),
            &kube(">= 1.20"),
            false,
        );
        write(&r.join("config.yaml"), "", false);
        root
    };
    let no_extra = tempfile::tempdir().unwrap();
    let op = Operator::start(tree(), no_extra.path(), &["--embedded-cluster"]);
    op.wait_until("the first converge", || {
        op.read("operator.log").contains(" ready modules=")
    });
    assert_eq!(
        op.read("hooks.log"),
        "today ran\n",
        "{}",
        op.read("operator.log")
    );
    let log = op.read("operator.log");
    assert!(
        log.contains("module 'future' requires Kubernetes >= 1.99, but the cluster runs 1.35.0"),
        "{log}"
    );
    drop(op);

    let op = Operator::start(tree(), no_extra.path(), &[]);
    op.wait_until("the first converge", || {
        op.read("operator.log").contains(" ready modules=")
    });
    assert_eq!(op.read("hooks.log"), "future ran\ntoday ran\n");
    let log = op.read("operator.log");
    assert!(
        log.contains("requirements.kubernetes not checked: no cluster"),
        "{log}"
    );
}
