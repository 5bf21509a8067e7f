//! The results of `addon-operator test` and their renderings: a line per case and a summary for
//! people, JUnit XML, TAP and JSON for CI systems.

use std::fmt::Write as _;

use serde::Serialize;

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Passed,
    Failed,
    /// `--update` wrote the run's outputs into its expectations.
    Updated,
}

/// One case's result (or a test file's problem, as a failed case named after the file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub file: String,
    pub line: usize,
    pub name: String,
    pub outcome: Outcome,
    /// The differences, or the problem, one line each.
    pub diff: Vec<String>,
}

impl CaseResult {
    fn title(&self) -> String {
        format!("{}:{}: {}", self.file, self.line, self.name)
    }
}

/// All results, in file and case order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub cases: Vec<CaseResult>,
}

impl Report {
    pub fn count(&self, outcome: Outcome) -> usize {
        self.cases.iter().filter(|c| c.outcome == outcome).count()
    }

    pub fn passed(&self) -> bool {
        self.count(Outcome::Failed) == 0
    }

    /// `3 passed, 1 failed` (and `, 2 updated`).
    pub fn summary(&self) -> String {
        let mut text = format!(
            "{} passed, {} failed",
            self.count(Outcome::Passed),
            self.count(Outcome::Failed)
        );
        let updated = self.count(Outcome::Updated);
        if updated > 0 {
            let _ = write!(text, ", {updated} updated");
        }
        text
    }

    /// A line per case, the diff of each failure indented below it, then the summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            let word = match case.outcome {
                Outcome::Passed => "ok     ",
                Outcome::Failed => "FAIL   ",
                Outcome::Updated => "updated",
            };
            let _ = writeln!(out, "{word} {}", case.title());
            for line in &case.diff {
                let _ = writeln!(out, "          {line}");
            }
        }
        let _ = writeln!(out, "{}", self.summary());
        out
    }

    /// JUnit XML: a test suite per file, a test case per case, a failure with the diff.
    pub fn to_junit(&self) -> String {
        let mut files: Vec<&str> = Vec::new();
        for case in &self.cases {
            if !files.contains(&case.file.as_str()) {
                files.push(&case.file);
            }
        }
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"addon-operator test\" tests=\"{}\" failures=\"{}\">",
            self.cases.len(),
            self.count(Outcome::Failed)
        );
        for file in files {
            let cases: Vec<&CaseResult> = self.cases.iter().filter(|c| c.file == file).collect();
            let failures = cases
                .iter()
                .filter(|c| c.outcome == Outcome::Failed)
                .count();
            let _ = writeln!(
                out,
                "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">",
                xml(file),
                cases.len()
            );
            for case in cases {
                let _ = write!(
                    out,
                    "    <testcase classname=\"{}\" name=\"{}\"",
                    xml(file),
                    xml(&case.name)
                );
                if case.outcome == Outcome::Failed {
                    let first = case.diff.first().map_or("", String::as_str);
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                        xml(first),
                        xml(&case.diff.join("\n"))
                    );
                } else {
                    out.push_str("/>\n");
                }
            }
            out.push_str("  </testsuite>\n");
        }
        out.push_str("</testsuites>\n");
        out
    }

    /// TAP version 13: `ok`/`not ok` per case, the diff as comment lines.
    pub fn to_tap(&self) -> String {
        let mut out = format!("TAP version 13\n1..{}\n", self.cases.len());
        for (i, case) in self.cases.iter().enumerate() {
            let ok = if case.outcome == Outcome::Failed {
                "not ok"
            } else {
                "ok"
            };
            let title = case.title().replace('#', "\\#");
            let _ = writeln!(out, "{ok} {} - {title}", i + 1);
            for line in &case.diff {
                let _ = writeln!(out, "# {line}");
            }
        }
        let _ = writeln!(out, "# {}", self.summary());
        out
    }

    /// `{"cases": [...], "passed": n, "failed": n, "updated": n}`.
    pub fn to_json(&self) -> String {
        let value = serde_json::json!({
            "cases": self.cases,
            "passed": self.count(Outcome::Passed),
            "failed": self.count(Outcome::Failed),
            "updated": self.count(Outcome::Updated),
        });
        serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
    }
}

/// Text escaped for XML attributes and content (control characters other than tab and newline
/// are not allowed in XML 1.0 and are dropped).
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push('\t'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        Report {
            cases: vec![
                CaseResult {
                    file: "m/h.test.yaml".into(),
                    line: 2,
                    name: "works".into(),
                    outcome: Outcome::Passed,
                    diff: vec![],
                },
                CaseResult {
                    file: "m/h.test.yaml".into(),
                    line: 9,
                    name: "a <b> & \"c\"".into(),
                    outcome: Outcome::Failed,
                    diff: vec!["values.x: expected 1, got 2".into()],
                },
            ],
        }
    }

    #[test]
    fn text_has_a_line_per_case_the_diff_and_a_summary() {
        let text = report().to_text();
        assert!(text.contains("ok      m/h.test.yaml:2: works\n"), "{text}");
        assert!(text.contains("FAIL    m/h.test.yaml:9: a <b>"), "{text}");
        assert!(
            text.contains("\n          values.x: expected 1, got 2\n"),
            "{text}"
        );
        assert!(text.ends_with("1 passed, 1 failed\n"), "{text}");
        assert!(!report().passed());
    }

    #[test]
    fn junit_escapes_names_and_counts_failures() {
        let xml = report().to_junit();
        assert!(
            xml.contains("<testsuites name=\"addon-operator test\" tests=\"2\" failures=\"1\">")
        );
        assert!(
            xml.contains("name=\"a &lt;b&gt; &amp; &quot;c&quot;\""),
            "{xml}"
        );
        assert!(
            xml.contains("<failure message=\"values.x: expected 1, got 2\">"),
            "{xml}"
        );
        assert_eq!(xml.matches("<testcase ").count(), 2);
        assert_eq!(xml.matches("</testsuite>").count(), 1);
    }

    #[test]
    fn tap_numbers_cases() {
        let tap = report().to_tap();
        assert!(
            tap.starts_with("TAP version 13\n1..2\nok 1 - m/h.test.yaml:2: works\n"),
            "{tap}"
        );
        assert!(tap.contains("not ok 2 - "), "{tap}");
        assert!(tap.contains("# values.x: expected 1, got 2\n"), "{tap}");
    }

    #[test]
    fn json_counts_outcomes() {
        let value: serde_json::Value = serde_json::from_str(&report().to_json()).unwrap();
        assert_eq!(value["passed"], 1);
        assert_eq!(value["failed"], 1);
        assert_eq!(value["cases"][1]["outcome"], "failed");
        assert_eq!(value["cases"][1]["diff"][0], "values.x: expected 1, got 2");
    }
}
