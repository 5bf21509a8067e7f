//! The module graph: modules by weight and the modules they require; cycles refused, the run
//! order (a module after the modules it requires), requirements checked against the enabled
//! set, and the graph as Graphviz DOT (the debug API's `/graph`, `module graph`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::discovery::ModuleSource;
use crate::names::ModuleName;

use crate::module_definition::{ModuleRequirement, Version};

/// Modules that require each other in a ring, in the order of the ring, the first one again
/// at the end (`a → b → a`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("modules require each other in a cycle: {}", path.iter().map(ModuleName::as_str).collect::<Vec<_>>().join(" -> "))]
pub struct Cycle {
    pub path: Vec<ModuleName>,
}

/// The modules of the tree that `module` requires (requirements on absent modules left out).
fn present<'a>(
    module: &'a ModuleSource,
    names: &'a BTreeSet<&'a ModuleName>,
) -> impl Iterator<Item = &'a ModuleRequirement> {
    (module.definition.requires.iter()).filter(|r| names.contains(&r.module))
}

/// The first cycle of requirements among `modules`, if any (modules in their order, each one's
/// requirements in the file's order, so the answer is the same every time).
pub fn find_cycle<M: AsRef<ModuleSource>>(modules: &[M]) -> Option<Cycle> {
    let modules: Vec<&ModuleSource> = modules.iter().map(AsRef::as_ref).collect();
    let by_name: BTreeMap<&ModuleName, &ModuleSource> =
        modules.iter().map(|m| (&m.name, *m)).collect();
    let names: BTreeSet<&ModuleName> = by_name.keys().copied().collect();
    let mut done: BTreeSet<&ModuleName> = BTreeSet::new();
    for start in modules.iter().copied() {
        if done.contains(&start.name) {
            continue;
        }
        // an explicit stack (no recursion on untrusted input): (module, next requirement)
        let mut path: Vec<(&ModuleSource, usize)> = vec![(start, 0)];
        while let Some((module, next)) = path.last_mut() {
            let module: &ModuleSource = module;
            let Some(required) = present(module, &names).nth(*next) else {
                done.insert(&module.name);
                path.pop();
                continue;
            };
            *next += 1;
            if let Some(at) = path.iter().position(|(m, _)| m.name == required.module) {
                let mut ring: Vec<ModuleName> =
                    path[at..].iter().map(|(m, _)| m.name.clone()).collect();
                ring.push(required.module.clone());
                return Some(Cycle { path: ring });
            }
            if let Some(next_module) = by_name.get(&required.module)
                && !done.contains(&required.module)
            {
                path.push((next_module, 0));
            }
        }
    }
    None
}

/// The modules in the order they run: module order (weight, then name), except that a module
/// comes after every module of the tree it requires. Without requirements this is module order
/// itself. Expects a tree without cycles (a module in a cycle keeps its place).
pub fn run_order<M: AsRef<ModuleSource>>(modules: &[M]) -> Vec<ModuleName> {
    let modules: Vec<&ModuleSource> = modules.iter().map(AsRef::as_ref).collect();
    let names: BTreeSet<&ModuleName> = modules.iter().map(|m| &m.name).collect();
    let mut placed: BTreeSet<&ModuleName> = BTreeSet::new();
    let mut order = Vec::with_capacity(modules.len());
    let mut left: Vec<&ModuleSource> = modules.clone();
    while !left.is_empty() {
        let ready = left
            .iter()
            .position(|m| present(m, &names).all(|r| placed.contains(&r.module)))
            .unwrap_or(0);
        let module = left.remove(ready);
        placed.insert(&module.name);
        order.push(module.name.clone());
    }
    order
}

/// Why an enabled module does not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unmet {
    /// A required module is not in the tree or is disabled.
    NotEnabled {
        module: ModuleName,
        required: ModuleName,
        constraint: String,
    },
    /// A required module's version does not satisfy the constraint.
    Version {
        module: ModuleName,
        required: ModuleName,
        constraint: String,
        version: Version,
    },
    /// The cluster's Kubernetes version does not satisfy `requirements.kubernetes`.
    Kubernetes {
        module: ModuleName,
        constraint: String,
        version: Version,
    },
}

impl Unmet {
    /// The module that does not run.
    pub fn module(&self) -> &ModuleName {
        match self {
            Unmet::NotEnabled { module, .. }
            | Unmet::Version { module, .. }
            | Unmet::Kubernetes { module, .. } => module,
        }
    }
}

impl std::fmt::Display for Unmet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unmet::NotEnabled {
                module,
                required,
                constraint,
            } => write!(
                f,
                "module '{module}' requires module '{required}' ({constraint}), which is disabled or absent"
            ),
            Unmet::Version {
                module,
                required,
                constraint,
                version,
            } => write!(
                f,
                "module '{module}' requires module '{required}' {constraint}, but its version is {version}"
            ),
            Unmet::Kubernetes {
                module,
                constraint,
                version,
            } => write!(
                f,
                "module '{module}' requires Kubernetes {constraint}, but the cluster runs {version}"
            ),
        }
    }
}

/// The enabled modules whose requirements hold, and why the others do not run. A module that
/// loses its place can take others with it (they require it), so this repeats until nothing
/// changes. `kubernetes`: the cluster's version (`None`: not known, not checked).
pub fn check_requirements<M: AsRef<ModuleSource>>(
    modules: &[M],
    enabled: &[ModuleName],
    kubernetes: Option<&Version>,
) -> (Vec<ModuleName>, Vec<Unmet>) {
    let by_name: BTreeMap<&ModuleName, &ModuleSource> = (modules.iter().map(AsRef::as_ref))
        .map(|m| (&m.name, m))
        .collect();
    let mut running: Vec<ModuleName> = enabled.to_vec();
    let mut unmet = Vec::new();
    loop {
        let found = running.iter().find_map(|name| {
            let module = by_name.get(name)?;
            first_unmet(module, &running, &by_name, kubernetes)
        });
        let Some(found) = found else {
            return (running, unmet);
        };
        running.retain(|m| m != found.module());
        unmet.push(found);
    }
}

fn first_unmet(
    module: &ModuleSource,
    running: &[ModuleName],
    by_name: &BTreeMap<&ModuleName, &ModuleSource>,
    kubernetes: Option<&Version>,
) -> Option<Unmet> {
    let def = &module.definition;
    if let (Some(constraint), Some(version)) = (&def.kubernetes, kubernetes)
        && !constraint.matches(version)
    {
        return Some(Unmet::Kubernetes {
            module: module.name.clone(),
            constraint: constraint.to_string(),
            version: version.clone(),
        });
    }
    def.requires.iter().find_map(|r| {
        let enabled = running.contains(&r.module);
        if !enabled {
            return (!r.optional).then(|| Unmet::NotEnabled {
                module: module.name.clone(),
                required: r.module.clone(),
                constraint: r.constraint.to_string(),
            });
        }
        let version = by_name.get(&r.module)?.definition.version.as_ref()?;
        (!r.constraint.matches(version)).then(|| Unmet::Version {
            module: module.name.clone(),
            required: r.module.clone(),
            constraint: r.constraint.to_string(),
            version: version.clone(),
        })
    })
}

/// The graph as Graphviz DOT, drawn as upstream draws its scheduler's graph: a chain of weight
/// nodes (blue) in ascending order, each pointing to its modules (green) that require no
/// module of the tree; a module that requires others hangs below them instead.
pub fn to_dot<M: AsRef<ModuleSource>>(modules: &[M]) -> String {
    let modules: Vec<&ModuleSource> = modules.iter().map(AsRef::as_ref).collect();
    let names: BTreeSet<&ModuleName> = modules.iter().map(|m| &m.name).collect();
    let weights: BTreeSet<u32> = modules.iter().map(|m| m.order).collect();
    let mut dot = String::from("strict digraph {\n\tlabel=\"Module Scheduler's Graph\";\n\n");
    for weight in &weights {
        let _ = writeln!(
            dot,
            "\t\"{weight}\" [ colorscheme=\"blues3\", style=\"filled\", color=\"2\", fillcolor=\"1\", type=\"weight\", weight={weight} ];"
        );
    }
    for module in &modules {
        let _ = writeln!(
            dot,
            "\t\"{}\" [ colorscheme=\"greens3\", style=\"filled\", color=\"2\", fillcolor=\"1\", type=\"module\" ];",
            module.name
        );
    }
    let _ = writeln!(dot);
    let chain: Vec<&u32> = weights.iter().collect();
    for pair in chain.windows(2) {
        let _ = writeln!(dot, "\t\"{}\" -> \"{}\";", pair[0], pair[1]);
    }
    for module in &modules {
        let mut parents = present(module, &names).peekable();
        if parents.peek().is_none() {
            let _ = writeln!(dot, "\t\"{}\" -> \"{}\";", module.order, module.name);
        }
        for r in parents {
            let label = if r.optional {
                format!("{} !optional", r.constraint)
            } else {
                r.constraint.to_string()
            };
            let _ = writeln!(
                dot,
                "\t\"{}\" -> \"{}\" [ label=\"{}\" ];",
                r.module,
                module.name,
                label.replace('\\', "\\\\").replace('"', "\\\"")
            );
        }
    }
    dot.push_str("}\n");
    dot
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::OpenApiFiles;
    use crate::module_definition::{Constraint, ModuleDefinition};
    use std::path::PathBuf;

    fn m(name: &str) -> ModuleName {
        ModuleName::new(name).unwrap()
    }

    fn module(name: &str, order: u32, requires: &[(&str, &str)]) -> ModuleSource {
        let requires = requires
            .iter()
            .map(|(n, c)| ModuleRequirement {
                module: m(n),
                constraint: Constraint::parse(c.trim_end_matches(" !optional")).unwrap(),
                optional: c.ends_with("!optional"),
            })
            .collect();
        ModuleSource {
            name: m(name),
            order,
            path: PathBuf::from(format!("/m/{name}")),
            modules_dir: None,
            values_yaml: None,
            enabled_script: None,
            openapi: OpenApiFiles::default(),
            has_chart: false,
            hooks: vec![],
            settings_check: None,
            definition: ModuleDefinition {
                requires,
                ..Default::default()
            },
        }
    }

    fn versioned(mut source: ModuleSource, version: &str) -> ModuleSource {
        source.definition.version = Version::parse(version);
        source
    }

    fn names(list: &[ModuleName]) -> Vec<&str> {
        list.iter().map(ModuleName::as_str).collect()
    }

    #[test]
    fn a_module_runs_after_the_modules_it_requires_whatever_their_weight() {
        let modules = [
            module("app", 10, &[("db", ">= 0.0.0")]),
            module("web", 10, &[]),
            module("db", 20, &[]),
            module("cache", 30, &[]),
        ];
        assert_eq!(names(&run_order(&modules)), ["web", "db", "app", "cache"]);
    }

    #[test]
    fn without_requirements_the_run_order_is_module_order() {
        let modules = [
            module("a", 1, &[]),
            module("b", 1, &[]),
            module("c", 2, &[]),
        ];
        assert_eq!(names(&run_order(&modules)), ["a", "b", "c"]);
    }

    #[test]
    fn a_cycle_names_its_modules_in_ring_order() {
        let modules = [
            module("a", 1, &[("b", "*")]),
            module("b", 2, &[("c", "*")]),
            module("c", 3, &[("a", "*")]),
            module("d", 4, &[("a", "*")]),
        ];
        let cycle = find_cycle(&modules).unwrap();
        assert_eq!(
            cycle.to_string(),
            "modules require each other in a cycle: a -> b -> c -> a"
        );
        assert_eq!(
            find_cycle(&modules[3..]),
            None,
            "an absent module makes no cycle"
        );
        assert_eq!(
            find_cycle(&[module("s", 1, &[("s", "*")])])
                .unwrap()
                .path
                .len(),
            2
        );
    }

    #[test]
    fn a_disabled_requirement_stops_the_module_and_those_requiring_it() {
        let modules = [
            module("db", 1, &[]),
            module("app", 2, &[("db", ">= 0.0.0")]),
            module("ui", 3, &[("app", ">= 0.0.0")]),
            module("extra", 4, &[("db", ">= 1 !optional")]),
        ];
        let (running, unmet) = check_requirements(&modules, &[m("app"), m("ui"), m("extra")], None);
        assert_eq!(
            names(&running),
            ["extra"],
            "an optional requirement may be disabled"
        );
        assert_eq!(
            unmet[0].to_string(),
            "module 'app' requires module 'db' (>= 0.0.0), which is disabled or absent"
        );
        assert_eq!(unmet[1].module().as_str(), "ui");
    }

    #[test]
    fn versions_and_the_kubernetes_version_are_checked_when_known() {
        let modules = [
            versioned(module("db", 1, &[]), "1.2.0"),
            module("app", 2, &[("db", "> 1.5")]),
            module("unversioned-user", 3, &[("plain", "> 9")]),
            module("plain", 4, &[]),
        ];
        let mut kube = module("kube", 5, &[]);
        kube.definition.kubernetes = Some(Constraint::parse(">= 1.30").unwrap());
        let mut all = modules.to_vec();
        all.push(kube);
        let enabled = [
            m("db"),
            m("app"),
            m("unversioned-user"),
            m("plain"),
            m("kube"),
        ];
        let k8s = Version::parse("v1.29.3").unwrap();
        let (running, unmet) = check_requirements(&all, &enabled, Some(&k8s));
        assert_eq!(names(&running), ["db", "unversioned-user", "plain"]);
        assert_eq!(
            unmet[0].to_string(),
            "module 'app' requires module 'db' > 1.5, but its version is 1.2.0"
        );
        assert_eq!(
            unmet[1].to_string(),
            "module 'kube' requires Kubernetes >= 1.30, but the cluster runs 1.29.3"
        );
        let (running, _) = check_requirements(&all, &enabled[4..], None);
        assert_eq!(
            names(&running),
            ["kube"],
            "no cluster: the Kubernetes version is not checked"
        );
    }

    #[test]
    fn the_dot_graph_chains_weights_and_hangs_modules_below_what_they_require() {
        let modules = [
            module("db", 10, &[]),
            module("app", 10, &[("db", ">= 1.0 !optional")]),
            module("web", 20, &[]),
        ];
        let dot = to_dot(&modules);
        assert!(dot.starts_with("strict digraph {\n"), "{dot}");
        assert!(dot.contains("\t\"10\" -> \"20\";\n"), "{dot}");
        assert!(dot.contains("\t\"10\" -> \"db\";\n"), "{dot}");
        assert!(
            dot.contains("\t\"db\" -> \"app\" [ label=\">= 1.0 !optional\" ];\n"),
            "{dot}"
        );
        assert!(!dot.contains("\"10\" -> \"app\""), "{dot}");
        assert!(dot.contains("\t\"20\" -> \"web\";\n"), "{dot}");
    }
}
