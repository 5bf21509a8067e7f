//! Module enablement as a pure function: merged `*Enabled` flags, then `enabled` scripts run by
//! the caller one module at a time (a step-by-step pass), then the run / delete / purge lists.

use crate::names::ModuleName;

/// An enablement step that could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnablementError {
    #[error(
        "enabled script of module '{module}' must write \"true\" or \"false\" to $MODULE_ENABLED_RESULT, got {got:?}"
    )]
    ParseScriptResult { module: ModuleName, got: String },
    #[error("verdict given for module '{module}' but the pass is waiting for {expected:?}")]
    AcceptVerdict {
        module: ModuleName,
        expected: Option<ModuleName>,
    },
    #[error("the pass is still waiting for the enabled script verdict of module '{module}'")]
    NextStep { module: ModuleName },
}

impl EnablementError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            EnablementError::ParseScriptResult { .. } => "enabled_script",
            _ => "enablement_pass",
        }
    }
}

/// The `*Enabled` flag of one module in every layer, and whether its merged section is `false`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlagLayers {
    /// `<modules dir>/values.yaml`.
    pub common: Option<bool>,
    /// The module's own `values.yaml`.
    pub module_file: Option<bool>,
    /// The config (ConfigMap or local file).
    pub config: Option<bool>,
    /// Set by global hooks' patches.
    pub dynamic: Option<bool>,
    /// The last layer that has the module's section holds `false` / `"false"`.
    pub section_disabled: bool,
}

impl FlagLayers {
    /// Enabled by configuration: the last flag set is `true`, and the module's section is not
    /// `false`. No flag at all ⇒ disabled. The layers apply in the order of the Go operator's
    /// extenders: static (common, module file), dynamic (global hooks), then the config, so a
    /// config flag beats a global hook's dynamic flag.
    pub fn enabled(&self) -> bool {
        let flag = [self.common, self.module_file, self.dynamic, self.config]
            .into_iter()
            .flatten()
            .last();
        flag == Some(true) && !self.section_disabled
    }
}

/// A module entering an enablement pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: ModuleName,
    /// The result of [`FlagLayers::enabled`].
    pub enabled_by_flags: bool,
    /// The module has an `enabled` script.
    pub has_script: bool,
}

/// What the caller must do next in a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run the module's `enabled` script with `global.enabledModules` = `enabled_so_far`, then
    /// call [`EnablementPass::accept_verdict`].
    RunScript {
        module: ModuleName,
        enabled_so_far: Vec<ModuleName>,
    },
    /// The pass is over: the enabled modules in order.
    Done(Vec<ModuleName>),
}

/// One pass over the modules in order, deciding who is enabled.
#[derive(Debug, Clone)]
pub struct EnablementPass {
    candidates: Vec<Candidate>,
    next: usize,
    enabled: Vec<ModuleName>,
    waiting: Option<ModuleName>,
}

impl EnablementPass {
    /// Starts a pass over `candidates` in module order.
    pub fn new(candidates: Vec<Candidate>) -> Self {
        Self {
            candidates,
            next: 0,
            enabled: Vec::new(),
            waiting: None,
        }
    }

    /// Advances until a script must run or the pass is over.
    pub fn next_step(&mut self) -> Result<Step, EnablementError> {
        if let Some(module) = &self.waiting {
            return Err(EnablementError::NextStep {
                module: module.clone(),
            });
        }
        while let Some(c) = self.candidates.get(self.next) {
            self.next += 1;
            if !c.enabled_by_flags {
                continue;
            }
            if c.has_script {
                self.waiting = Some(c.name.clone());
                return Ok(Step::RunScript {
                    module: c.name.clone(),
                    enabled_so_far: self.enabled.clone(),
                });
            }
            self.enabled.push(c.name.clone());
        }
        Ok(Step::Done(self.enabled.clone()))
    }

    /// Records the verdict of the script the pass is waiting for.
    pub fn accept_verdict(
        &mut self,
        module: &ModuleName,
        enabled: bool,
    ) -> Result<(), EnablementError> {
        if self.waiting.as_ref() != Some(module) {
            return Err(EnablementError::AcceptVerdict {
                module: module.clone(),
                expected: self.waiting.clone(),
            });
        }
        self.waiting = None;
        if enabled {
            self.enabled.push(module.clone());
        }
        Ok(())
    }

    /// Runs a whole pass with a synchronous script runner.
    pub fn run<E>(
        candidates: Vec<Candidate>,
        mut run_script: impl FnMut(&ModuleName, &[ModuleName]) -> Result<bool, E>,
    ) -> Result<Vec<ModuleName>, E>
    where
        E: From<EnablementError>,
    {
        let mut pass = Self::new(candidates);
        loop {
            match pass.next_step()? {
                Step::Done(enabled) => return Ok(enabled),
                Step::RunScript {
                    module,
                    enabled_so_far,
                } => {
                    let verdict = run_script(&module, &enabled_so_far)?;
                    pass.accept_verdict(&module, verdict)?;
                }
            }
        }
    }
}

/// What 'reload all modules' must do after a pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModulesPlan {
    /// Enabled modules in module order: run each.
    pub to_run: Vec<ModuleName>,
    /// The subset of `to_run` that was not enabled before (their `onStartup` hooks run).
    pub newly_enabled: Vec<ModuleName>,
    /// Known modules that are disabled now but were enabled or have a release, reverse order.
    pub to_delete: Vec<ModuleName>,
    /// Helm releases that belong to no known module, reverse-sorted.
    pub to_purge: Vec<String>,
}

/// Builds the run / delete / purge lists from the pass result, the previous enabled set and the
/// current Helm release names (a release is named after its module in kebab-case).
pub fn plan(
    all_modules: &[ModuleName],
    enabled: &[ModuleName],
    previously_enabled: &[ModuleName],
    releases: &[String],
) -> ModulesPlan {
    let has_release = |m: &ModuleName| releases.iter().any(|r| r == m.as_str());
    let to_delete = all_modules
        .iter()
        .rev()
        .filter(|m| !enabled.contains(m))
        .filter(|m| previously_enabled.contains(m) || has_release(m))
        .cloned()
        .collect();
    let mut to_purge: Vec<String> = releases
        .iter()
        .filter(|r| !all_modules.iter().any(|m| m.as_str() == r.as_str()))
        .cloned()
        .collect();
    to_purge.sort_by(|a, b| b.cmp(a));
    to_purge.dedup();
    ModulesPlan {
        to_run: enabled.to_vec(),
        newly_enabled: enabled
            .iter()
            .filter(|m| !previously_enabled.contains(m))
            .cloned()
            .collect(),
        to_delete,
        to_purge,
    }
}

/// An `enabled` script's answer, with a warning when the legacy stdout form was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptVerdict {
    pub enabled: bool,
    pub warning: Option<String>,
}

/// Reads an `enabled` script's answer: `$MODULE_ENABLED_RESULT` holding `true`/`false`
/// (trimmed); when that file is empty, the last stdout line `true`/`false` is used with a warning
/// (the MODULES document's example prints its answer).
pub fn parse_script_result(
    module: &ModuleName,
    result_file: &str,
    stdout: &str,
) -> Result<ScriptVerdict, EnablementError> {
    let bad = |got: &str| EnablementError::ParseScriptResult {
        module: module.clone(),
        got: crate::quote::prefix(got),
    };
    let answer = result_file.trim();
    if !answer.is_empty() {
        return parse_bool(answer)
            .map(|enabled| ScriptVerdict {
                enabled,
                warning: None,
            })
            .ok_or_else(|| bad(answer));
    }
    let last_line = stdout.lines().rev().map(str::trim).find(|l| !l.is_empty());
    match last_line.and_then(parse_bool) {
        Some(enabled) => Ok(ScriptVerdict {
            enabled,
            warning: Some(format!(
                "enabled script of module '{module}' printed its answer to stdout; write it to $MODULE_ENABLED_RESULT instead"
            )),
        }),
        None => Err(bad(answer)),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str) -> ModuleName {
        ModuleName::new(name).unwrap()
    }

    fn c(name: &str, flags: bool, script: bool) -> Candidate {
        Candidate {
            name: m(name),
            enabled_by_flags: flags,
            has_script: script,
        }
    }

    #[test]
    fn module_without_any_flag_is_disabled() {
        assert!(!FlagLayers::default().enabled());
    }

    #[test]
    fn later_flag_layers_win() {
        let module_file_false_wins = FlagLayers {
            common: Some(true),
            module_file: Some(false),
            ..Default::default()
        };
        assert!(!module_file_false_wins.enabled());
        let config_true_wins = FlagLayers {
            common: Some(false),
            config: Some(true),
            ..Default::default()
        };
        assert!(config_true_wins.enabled());
        let dynamic_false_beats_files = FlagLayers {
            common: Some(true),
            module_file: Some(true),
            dynamic: Some(false),
            ..Default::default()
        };
        assert!(!dynamic_false_beats_files.enabled());
        let config_true_beats_dynamic = FlagLayers {
            config: Some(true),
            dynamic: Some(false),
            ..Default::default()
        };
        assert!(config_true_beats_dynamic.enabled());
    }

    #[test]
    fn false_section_disables_even_with_a_true_flag() {
        let l = FlagLayers {
            config: Some(true),
            section_disabled: true,
            ..Default::default()
        };
        assert!(!l.enabled());
    }

    #[test]
    fn scripts_run_only_for_flag_enabled_modules_and_see_earlier_modules() {
        let mut pass = EnablementPass::new(vec![
            c("alpha", true, false),
            c("beta", false, true),
            c("gamma", true, true),
            c("delta", true, true),
        ]);
        assert_eq!(
            pass.next_step().unwrap(),
            Step::RunScript {
                module: m("gamma"),
                enabled_so_far: vec![m("alpha")]
            }
        );
        pass.accept_verdict(&m("gamma"), true).unwrap();
        assert_eq!(
            pass.next_step().unwrap(),
            Step::RunScript {
                module: m("delta"),
                enabled_so_far: vec![m("alpha"), m("gamma")]
            }
        );
        pass.accept_verdict(&m("delta"), false).unwrap();
        assert_eq!(
            pass.next_step().unwrap(),
            Step::Done(vec![m("alpha"), m("gamma")])
        );
    }

    #[test]
    fn asking_for_the_next_step_while_a_script_is_pending_is_an_error() {
        let mut pass = EnablementPass::new(vec![c("alpha", true, true)]);
        pass.next_step().unwrap();
        assert!(pass.next_step().is_err());
        assert!(pass.accept_verdict(&m("beta"), true).is_err());
    }

    #[test]
    fn run_with_a_callback_gives_the_same_result() {
        let enabled = EnablementPass::run::<EnablementError>(
            vec![c("alpha", true, true), c("beta", true, true)],
            |module, so_far| Ok(module.as_str() == "alpha" || so_far.is_empty()),
        )
        .unwrap();
        assert_eq!(enabled, vec![m("alpha")]);
    }

    #[test]
    fn plan_lists_run_delete_in_reverse_and_purge_unknown_releases() {
        // modules_state__no_cm__simple in the Go operator's test data, with letter names.
        let all: Vec<ModuleName> = ["one", "two", "three", "four", "eight", "nine"]
            .into_iter()
            .map(m)
            .collect();
        let releases: Vec<String> = ["one", "three", "nine", "two-gone", "five", "six"]
            .into_iter()
            .map(String::from)
            .collect();
        let enabled = vec![m("one"), m("four"), m("eight")];
        let p = plan(&all, &enabled, &[], &releases);
        assert_eq!(p.to_run, enabled);
        assert_eq!(p.newly_enabled, enabled);
        assert_eq!(p.to_delete, vec![m("nine"), m("three")]);
        assert_eq!(p.to_purge, vec!["two-gone", "six", "five"]);
    }

    #[test]
    fn previously_enabled_module_without_release_is_deleted() {
        let all = vec![m("a"), m("b")];
        let p = plan(&all, &[m("a")], &[m("a"), m("b")], &[]);
        assert_eq!(p.to_delete, vec![m("b")]);
        assert!(p.newly_enabled.is_empty());
    }

    #[test]
    fn script_result_file_is_trimmed() {
        let v = parse_script_result(&m("a"), "false\n", "").unwrap();
        assert_eq!(
            v,
            ScriptVerdict {
                enabled: false,
                warning: None
            }
        );
    }

    #[test]
    fn a_long_wrong_answer_is_quoted_short() {
        let answer = "x".repeat(4000);
        let err = parse_script_result(&m("a"), &answer, "")
            .unwrap_err()
            .to_string();
        assert!(err.contains("... (3744 more bytes)"), "{err}");
        assert!(err.len() < 450, "{err}");
    }

    #[test]
    fn stdout_answer_is_used_with_a_warning_when_the_file_is_empty() {
        let v = parse_script_result(&m("simple-one-module"), "", "checking\ntrue\n").unwrap();
        assert!(v.enabled);
        assert!(v.warning.unwrap().contains("simple-one-module"));
    }

    #[test]
    fn anything_else_is_an_error_naming_the_module() {
        let err = parse_script_result(&m("some-module"), "yes", "").unwrap_err();
        assert!(err.to_string().contains("some-module"));
        assert!(parse_script_result(&m("some-module"), "", "maybe\n").is_err());
        assert!(parse_script_result(&m("some-module"), "", "").is_err());
    }
}
