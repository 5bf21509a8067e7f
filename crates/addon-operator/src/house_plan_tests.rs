//! The house plan as tests, over every crate of the workspace (the operator, the core, the test
//! kit and the emulator): no source file imports a file that imports it back, no module imports a
//! module that imports it back (a module is a file, or a folder's `mod.rs` with everything under
//! it, at the first and at the second level), and nothing under `runtime/` names `edges/` (the
//! runtime's port modules own their types; the edges implement them). So the rooms (`cli` →
//! `edges` → `runtime`) stay layered as docs/architecture.md draws them. And errors are types
//! everywhere but the command line (no `Result<_, String>` outside `cli/`).
//!
//! A file's uses of its own ancestors (a folder's `mod.rs`, the folder's front door) are not
//! counted; every other `crate::…`, `super::…` or grouped `crate::{…}` path is an edge to the
//! file that defines the longest matching module. Test-only files (`tests.rs`, `*_tests.rs`) and
//! inline `#[cfg(test)] mod tests` blocks are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `runtime/handlers/mod.rs` → `[runtime, handlers]`; `cli/start.rs` → `[cli, start]`.
fn module_of(root: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(root).unwrap().with_extension("");
    let mut parts: Module = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text of a file without its inline test module and without `//` comments.
fn production_text(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_path(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for seg in text.split("::") {
        let name: String = seg
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            break;
        }
        let whole = name.len() == seg.len();
        out.push(name);
        if !whole {
            break;
        }
    }
    out
}

/// Every module path a file names through `crate::` or `super::`, made absolute.
fn referenced(module: &Module, text: &str) -> Vec<Module> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let head = ident_path(rest);
        let after: String = head.iter().map(|s| format!("{s}::")).collect();
        if let Some(group) = rest
            .strip_prefix(after.as_str())
            .and_then(|r| r.strip_prefix('{'))
        {
            for item in group.split('}').next().unwrap_or("").split(',') {
                let mut path = head.clone();
                path.extend(ident_path(item.trim()));
                out.push(path);
            }
        } else {
            out.push(head);
        }
    }
    for (i, _) in text.match_indices("super::") {
        if text[..i].ends_with("super::") {
            continue;
        }
        let mut rest = &text[i..];
        let mut base = module.clone();
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        base.extend(ident_path(rest));
        out.push(base);
    }
    out
}

/// The crate's source files, test-only files left out.
fn production_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    source_files(root, &mut files);
    files
        .into_iter()
        .filter(|f| !f.to_string_lossy().ends_with("tests.rs"))
        .collect()
}

/// The source folder of every crate of the workspace, this one first.
fn crate_roots() -> Vec<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let crates = here.parent().unwrap();
    let mut roots = vec![here.join("src")];
    for name in ["addon-core", "addon-operator-testkit", "kube-emulator"] {
        roots.push(crates.join(name).join("src"));
    }
    roots
}

/// The file-level import graph of the crate under `root`: each file's module to the modules it
/// names. A `main.rs` beside a `lib.rs` is a second crate (the binary) and is left out.
fn import_graph(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let has_lib = root.join("lib.rs").exists();
    let files: Vec<PathBuf> = production_files(root)
        .into_iter()
        .filter(|f| !(has_lib && f == &root.join("main.rs")))
        .collect();
    let modules: BTreeMap<Module, PathBuf> = files
        .iter()
        .map(|f| (module_of(root, f), f.clone()))
        .collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &modules {
        let text = production_text(&std::fs::read_to_string(file).unwrap());
        let mut targets = BTreeSet::new();
        for path in referenced(module, &text) {
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains_key(p));
            if let Some(t) = target.filter(|t| !module.starts_with(t)) {
                targets.insert(t);
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// The graph between modules `depth` levels deep: a file counts as the module (file, or folder
/// with its `mod.rs` and everything under it) that holds it at that depth. A use of an ancestor
/// (a folder's front door) or of the module itself is no edge.
fn module_graph(
    files: &BTreeMap<Module, BTreeSet<Module>>,
    depth: usize,
) -> BTreeMap<Module, BTreeSet<Module>> {
    let cut = |m: &Module| m[..m.len().min(depth)].to_vec();
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, targets) in files {
        let from = cut(from);
        let edges = graph.entry(from.clone()).or_default();
        for to in targets.iter().map(cut) {
            if !from.starts_with(&to) {
                edges.insert(to);
            }
        }
    }
    graph
}

fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    graph
        .keys()
        .filter_map(|m| circle_through(graph, m))
        .map(|c| {
            c.iter()
                .map(|m| m.join("::"))
                .collect::<Vec<_>>()
                .join(" → ")
        })
        .collect()
}

/// A circle through `start`, if one exists (depth-first search back to it).
fn circle_through(
    graph: &BTreeMap<Module, BTreeSet<Module>>,
    start: &Module,
) -> Option<Vec<Module>> {
    let mut stack = vec![(start.clone(), vec![start.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                return Some(path.clone());
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

#[test]
fn no_source_file_imports_a_file_that_imports_it_back() {
    let mut found = Vec::new();
    for root in crate_roots() {
        let graph = import_graph(&root);
        assert!(
            graph.len() > 5,
            "the walk found the source files of {}",
            root.display()
        );
        found.extend(
            circles(&graph)
                .into_iter()
                .map(|c| format!("{}: {c}", root.display())),
        );
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut found = BTreeSet::new();
    for root in crate_roots() {
        let files = import_graph(&root);
        for depth in [1, 2] {
            let graph = module_graph(&files, depth);
            found.extend(
                circles(&graph)
                    .into_iter()
                    .map(|c| format!("{}: {c}", root.display())),
            );
        }
    }
    assert!(
        found.is_empty(),
        "module circles:\n{}",
        found.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_runtime_imports_no_edge() {
    let root = &crate_roots()[0];
    let graph = import_graph(root);
    assert!(graph.len() > 50, "the walk found the source files");
    let runtime = |m: &Module| m.first().is_some_and(|s| s == "runtime");
    let edges = |m: &Module| m.first().is_some_and(|s| s == "edges");
    let offenders: Vec<String> = graph
        .iter()
        .filter(|(from, _)| runtime(from))
        .flat_map(|(from, to)| {
            to.iter()
                .filter(|t| edges(t))
                .map(move |t| format!("{} → {}", from.join("::"), t.join("::")))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "the runtime names the edges (ports own their types; edges implement them):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn a_module_circle_is_seen_through_its_files() {
    let m = |s: &str| -> Module { s.split("::").map(String::from).collect() };
    let files = BTreeMap::from([
        (
            m("runtime::worker"),
            BTreeSet::from([m("runtime::handlers::module")]),
        ),
        (m("runtime::handlers::module"), BTreeSet::new()),
        (
            m("runtime::handlers::converge"),
            BTreeSet::from([m("runtime::reload")]),
        ),
        (m("runtime::reload"), BTreeSet::from([m("runtime::worker")])),
    ]);
    assert!(circles(&files).is_empty(), "no circle between files");
    assert_eq!(circles(&module_graph(&files, 2)).len(), 3);
    assert!(circles(&module_graph(&files, 1)).is_empty());
}

#[test]
fn the_graph_sees_grouped_and_relative_imports() {
    let m = |s: &str| -> Module { s.split("::").map(String::from).collect() };
    let refs = referenced(
        &m("runtime::handlers::module"),
        "use crate::edges::{helm::Helm, kube};\nuse super::super::state::State;",
    );
    assert_eq!(
        refs,
        vec![
            m("edges::helm::Helm"),
            m("edges::kube"),
            m("runtime::state::State")
        ]
    );
}

/// The error types of every `Result<…>` written in `text` whose error is a plain `String`.
fn string_errors(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("Result<") {
        let args = &text[start + "Result<".len()..];
        let (mut depth, mut last_comma, mut end) = (0usize, None, None);
        for (i, c) in args.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' if depth == 0 => {
                    end = Some(i);
                    break;
                }
                '>' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => last_comma = Some(i),
                _ => {}
            }
        }
        if let (Some(comma), Some(end)) = (last_comma, end)
            && args[comma + 1..end].trim() == "String"
        {
            found.push(format!("Result<{}>", &args[..end]));
        }
    }
    found
}

#[test]
fn no_result_with_a_string_error_outside_the_command_line() {
    let mut offenders = Vec::new();
    for root in crate_roots() {
        for file in production_files(&root) {
            if file.starts_with(root.join("cli")) {
                continue;
            }
            let text = production_text(&std::fs::read_to_string(&file).unwrap());
            for found in string_errors(&text) {
                offenders.push(format!("{}: {found}", file.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

#[test]
fn a_string_error_is_found_however_the_result_is_nested() {
    let text = "fn a() -> Result<Vec<(u8, u8)>, String> {}\nfn b() -> Result<(), MyError> {}\nfn c() -> Result<BTreeMap<String, String>, E> {}";
    assert_eq!(string_errors(text), vec!["Result<Vec<(u8, u8)>, String>"]);
}
