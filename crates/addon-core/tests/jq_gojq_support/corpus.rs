//! The differential corpus: filters by class (`filters/<class>.jq`, one a line), Kubernetes objects (`objects/*.json`) and gojq 0.12.17's answers where Debian's 0.12.11 answers otherwise (`gojq-0.12.17.tsv`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The classes of the corpus, in report order: upstream's own filters, then the difference
/// classes of issue 21, then `?` and `try` (issue 40).
pub const CLASSES: &[&str] = &[
    "upstream",
    "missing-parents",
    "key-order",
    "numbers",
    "builtins",
    "semantics",
    "optional",
];

/// A filter of the corpus and the class (file) it comes from.
#[derive(Debug, Clone)]
pub struct Filter {
    pub class: &'static str,
    pub text: String,
}

/// A named input object.
#[derive(Debug, Clone)]
pub struct Object {
    pub name: String,
    pub value: Value,
}

/// What one filter gave on one object: the collected result (0 outputs: null, 1: it, n: an array)
/// or an error.
#[derive(Debug, Clone)]
pub enum Outcome {
    Value(Value),
    Error(String),
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jq_gojq")
}

/// Every filter, class by class; a line that is empty or starts with `#` is not a filter.
pub fn filters() -> Vec<Filter> {
    let dir = fixtures().join("filters");
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = {
        let mut v: Vec<String> = CLASSES.iter().map(|c| format!("{c}.jq")).collect();
        v.sort();
        v
    };
    assert_eq!(names, expected, "filters/ holds exactly one file per class");
    CLASSES
        .iter()
        .flat_map(|class| {
            let path = dir.join(format!("{class}.jq"));
            let text = fs::read_to_string(&path).unwrap();
            text.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(|line| Filter {
                    class,
                    text: line.to_string(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every object, by file name.
pub fn objects() -> Vec<Object> {
    let dir = fixtures().join("objects");
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| Object {
            name: path.file_stem().unwrap().to_string_lossy().into_owned(),
            value: serde_json::from_str(&fs::read_to_string(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        })
        .collect()
}

/// gojq 0.12.17's answer (for every object) to the filters whose answer changed after 0.12.11:
/// `filter<TAB>error` or `filter<TAB>JSON`, then a tab and the reason.
pub fn overrides() -> HashMap<String, Outcome> {
    let path = fixtures().join("gojq-0.12.17.tsv");
    let text = fs::read_to_string(&path).unwrap();
    let mut map = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let mut fields = line.split('\t');
        let filter = fields.next().unwrap().trim().to_string();
        let answer = fields
            .next()
            .unwrap_or_else(|| panic!("{}: no answer in {line:?}", path.display()));
        let reason = fields.next().unwrap_or_default();
        assert!(
            !reason.trim().is_empty(),
            "{}: every override says why: {line:?}",
            path.display()
        );
        let outcome = if answer == "error" {
            Outcome::Error(format!("gojq 0.12.17: {reason}"))
        } else {
            Outcome::Value(
                serde_json::from_str(answer)
                    .unwrap_or_else(|e| panic!("{}: {answer}: {e}", path.display())),
            )
        };
        assert!(
            map.insert(filter.clone(), outcome).is_none(),
            "{}: {filter} twice",
            path.display()
        );
    }
    map
}
