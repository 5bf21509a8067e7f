//! The report of a differential run: per class, how many results differ from gojq's, and the first differences in full.

use std::fmt::{self, Write as _};

use serde_json::Value;

use super::compare::same;
use super::corpus::{CLASSES, Outcome};

/// How one (filter, object) result compares with gojq's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Same value, or both failed.
    Agree,
    /// gojq succeeded and ours gave another value or failed: the test fails.
    Differs,
    /// gojq failed and ours succeeded: counted, allowed.
    OnlyOursSucceeds,
}

pub fn verdict(ours: &Outcome, theirs: &Outcome) -> Verdict {
    match (ours, theirs) {
        (Outcome::Value(a), Outcome::Value(b)) if same(a, b) => Verdict::Agree,
        (_, Outcome::Value(_)) => Verdict::Differs,
        (Outcome::Value(_), Outcome::Error(_)) => Verdict::OnlyOursSucceeds,
        (Outcome::Error(_), Outcome::Error(_)) => Verdict::Agree,
    }
}

/// One filter's results on every object.
pub struct FilterRun {
    pub class: &'static str,
    pub filter: String,
    /// (object name, ours, gojq's, verdict)
    pub cases: Vec<(String, Outcome, Outcome, Verdict)>,
}

impl FilterRun {
    fn count(&self, verdict: Verdict) -> usize {
        self.cases.iter().filter(|c| c.3 == verdict).count()
    }

    /// Whether gojq answered on at least one object: where it fails every answer is accepted, so
    /// a filter it fails on everywhere tests nothing.
    pub fn compares_something(&self) -> bool {
        self.cases.iter().any(|c| matches!(c.2, Outcome::Value(_)))
    }
}

pub struct Report {
    pub reference: String,
    pub objects: usize,
    pub runs: Vec<FilterRun>,
    /// How many differing filters of each class are shown in full.
    pub shown: usize,
}

impl Report {
    /// How many (filter, object) results differ where gojq succeeded.
    pub fn differences(&self) -> usize {
        self.runs.iter().map(|r| r.count(Verdict::Differs)).sum()
    }

    /// The filters gojq fails on for every object (they compare nothing).
    pub fn comparing_nothing(&self) -> Vec<&FilterRun> {
        self.runs
            .iter()
            .filter(|r| !r.compares_something())
            .collect()
    }

    /// The classes whose results differ somewhere.
    pub fn classes_differing(&self) -> Vec<&'static str> {
        CLASSES
            .iter()
            .copied()
            .filter(|class| {
                self.runs
                    .iter()
                    .any(|r| r.class == *class && r.count(Verdict::Differs) > 0)
            })
            .collect()
    }
}

fn shown(outcome: &Outcome) -> String {
    let text = match outcome {
        Outcome::Value(v) => Value::to_string(v),
        Outcome::Error(e) => format!("ERROR {e}"),
    };
    match text.char_indices().nth(240) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cases: usize = self.runs.iter().map(|r| r.cases.len()).sum();
        writeln!(
            f,
            "jq differential test: {} filters x {} objects = {cases} results, reference {}",
            self.runs.len(),
            self.objects,
            self.reference
        )?;
        writeln!(
            f,
            "{:<16} {:>7} {:>7} {:>8} {:>16} {:>18} {:>16}",
            "class",
            "filters",
            "results",
            "differ",
            "filters differ",
            "only ours succeeds",
            "compare nothing"
        )?;
        let mut total = [0usize; 6];
        for class in CLASSES {
            let runs: Vec<&FilterRun> = self.runs.iter().filter(|r| r.class == *class).collect();
            let row = [
                runs.len(),
                runs.iter().map(|r| r.cases.len()).sum(),
                runs.iter().map(|r| r.count(Verdict::Differs)).sum(),
                runs.iter()
                    .filter(|r| r.count(Verdict::Differs) > 0)
                    .count(),
                runs.iter()
                    .map(|r| r.count(Verdict::OnlyOursSucceeds))
                    .sum(),
                runs.iter().filter(|r| !r.compares_something()).count(),
            ];
            for (t, n) in total.iter_mut().zip(row) {
                *t += n;
            }
            writeln!(
                f,
                "{class:<16} {:>7} {:>7} {:>8} {:>16} {:>18} {:>16}",
                row[0], row[1], row[2], row[3], row[4], row[5]
            )?;
        }
        writeln!(
            f,
            "{:<16} {:>7} {:>7} {:>8} {:>16} {:>18} {:>16}",
            "total", total[0], total[1], total[2], total[3], total[4], total[5]
        )?;
        let mut listed = 0;
        let mut text = String::new();
        for class in CLASSES {
            let differing_runs = self
                .runs
                .iter()
                .filter(|r| r.class == *class && r.count(Verdict::Differs) > 0);
            for run in differing_runs.take(self.shown) {
                listed += 1;
                let differing: Vec<&(String, Outcome, Outcome, Verdict)> = run
                    .cases
                    .iter()
                    .filter(|c| c.3 == Verdict::Differs)
                    .collect();
                let (object, ours, theirs, _) = differing[0];
                let _ = writeln!(text, "[{}] {}", run.class, run.filter);
                let _ = writeln!(text, "    on {object}: ours  {}", shown(ours));
                let _ = writeln!(
                    text,
                    "    {:width$}  gojq  {}",
                    "",
                    shown(theirs),
                    width = object.len() + 3
                );
                if differing.len() > 1 {
                    let others: Vec<&str> = differing[1..].iter().map(|c| c.0.as_str()).collect();
                    let _ = writeln!(text, "    also on: {}", others.join(", "));
                }
            }
        }
        if listed > 0 {
            writeln!(
                f,
                "\nthe first {} filters of each class whose results differ where gojq succeeds:",
                self.shown
            )?;
            f.write_str(&text)?;
        }
        let nothing = self.comparing_nothing();
        if !nothing.is_empty() {
            writeln!(
                f,
                "\nfilters gojq fails on for every object (they compare nothing):"
            )?;
            for run in &nothing {
                let case = run
                    .cases
                    .first()
                    .map(|c| format!("on {}: ours {} / {}", c.0, shown(&c.1), shown(&c.2)))
                    .unwrap_or_default();
                writeln!(f, "[{}] {}\n    {case}", run.class, run.filter)?;
            }
        }
        let only_ours: Vec<&FilterRun> = self
            .runs
            .iter()
            .filter(|r| r.count(Verdict::OnlyOursSucceeds) > 0)
            .collect();
        if !only_ours.is_empty() {
            writeln!(f, "\nfilters where gojq fails and ours succeeds (allowed):")?;
            for run in only_ours.iter().take(self.shown * CLASSES.len()) {
                let case = run
                    .cases
                    .iter()
                    .find(|c| c.3 == Verdict::OnlyOursSucceeds)
                    .map(|c| format!("on {}: ours {} / {}", c.0, shown(&c.1), shown(&c.2)))
                    .unwrap_or_default();
                writeln!(f, "[{}] {}\n    {case}", run.class, run.filter)?;
            }
        }
        Ok(())
    }
}
