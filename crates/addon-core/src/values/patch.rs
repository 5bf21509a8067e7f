//! JSON patches from hooks (RFC 6902): parsing with the seeds' legacy forms, scope rules, strict
//! application, lenient re-application over fresh layers and compaction of remembered patches.
//!
//! Patches are untrusted: one patch holds at most [`MAX_PATCH_OPERATIONS`] operations, the values
//! it leaves are at most [`MAX_VALUES_BYTES`] of JSON, and its `copy` operations clone at most
//! [`MAX_COPIED_BYTES`] in total. Applying and compacting are linear in the operations and the
//! bytes they carry (sizes are charged as operations run, the document is measured only after
//! the charges reach twice the limit).

use std::fmt;

use json_patch::PatchOperation;
use serde_json::Value;

pub use crate::names::Scope;
use crate::names::{HookName, ModuleName};

/// A hook and the scope it belongs to; the scope decides which paths its patches may touch.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HookRef {
    pub scope: Scope,
    pub hook: HookName,
}

impl HookRef {
    pub fn global(hook: HookName) -> Self {
        Self {
            scope: Scope::Global,
            hook,
        }
    }

    pub fn module(module: ModuleName, hook: HookName) -> Self {
        Self {
            scope: Scope::Module(module),
            hook,
        }
    }
}

impl fmt::Display for HookRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.scope {
            Scope::Global => write!(f, "global hook '{}'", self.hook),
            Scope::Module(m) => write!(f, "hook '{}' of module '{m}'", self.hook),
        }
    }
}

/// Which of the two patch files a patch came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `$CONFIG_VALUES_JSON_PATCH_PATH`: persisted to the config store.
    Config,
    /// `$VALUES_JSON_PATCH_PATH`: kept in memory.
    Values,
}

impl fmt::Display for PatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatchKind::Config => f.write_str("config values patch"),
            PatchKind::Values => f.write_str("values patch"),
        }
    }
}

/// The most operations one patch file may hold.
pub const MAX_PATCH_OPERATIONS: usize = 10_000;
/// The largest values (as compact JSON) a patch may leave in one scope (`global` or a module).
pub const MAX_VALUES_BYTES: usize = 4 << 20;
/// The most bytes the `copy` operations of one patch may clone in total.
pub const MAX_COPIED_BYTES: usize = 8 * MAX_VALUES_BYTES;

/// A patch that was refused.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error(
        "{hook}: {kind} holds {count} operations, more than the limit of {MAX_PATCH_OPERATIONS}"
    )]
    TooManyOperations {
        hook: String,
        kind: PatchKind,
        count: usize,
    },
    #[error(
        "{hook}: {kind} operation #{index} makes the values larger than the limit of {MAX_VALUES_BYTES} bytes"
    )]
    TooLarge {
        hook: String,
        kind: PatchKind,
        index: usize,
    },
    #[error(
        "{hook}: {kind} operation #{index}: the copy operations clone more than the limit of {MAX_COPIED_BYTES} bytes"
    )]
    CopiesTooMuch {
        hook: String,
        kind: PatchKind,
        index: usize,
    },
    #[error("{hook}: {kind} is not valid JSON")]
    ParseJson {
        hook: String,
        kind: PatchKind,
        #[source]
        source: serde_json::Error,
    },
    #[error("{hook}: {kind} must be a JSON array of operations, got {got}")]
    NotAList {
        hook: String,
        kind: PatchKind,
        got: &'static str,
    },
    #[error("{hook}: {kind} operation #{index} is not a valid RFC 6902 operation")]
    ParseOperation {
        hook: String,
        kind: PatchKind,
        index: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("{hook}: {kind} may not touch path '{path}' (allowed: {allowed})")]
    OutOfScope {
        hook: String,
        kind: PatchKind,
        path: String,
        allowed: String,
    },
    #[error("{hook}: {kind} could not be applied")]
    Apply {
        hook: String,
        kind: PatchKind,
        #[source]
        source: json_patch::PatchError,
    },
    #[error("{hook}: {kind} sets '{key}' to {value}, but an enable flag must be true or false")]
    EnabledFlagNotBool {
        hook: String,
        kind: PatchKind,
        key: String,
        value: String,
    },
    #[error("{hook}: {kind} leaves '{key}' as {value}, but values of a scope must be an object")]
    SectionNotObject {
        hook: String,
        kind: PatchKind,
        key: String,
        value: String,
    },
}

impl PatchError {
    /// A stable label for metrics.
    pub fn category(&self) -> &'static str {
        match self {
            PatchError::ParseJson { .. }
            | PatchError::NotAList { .. }
            | PatchError::ParseOperation { .. } => "patch_parse",
            PatchError::OutOfScope { .. } => "patch_scope",
            PatchError::TooManyOperations { .. }
            | PatchError::TooLarge { .. }
            | PatchError::CopiesTooMuch { .. } => "patch_limit",
            PatchError::Apply { .. } => "patch_apply",
            PatchError::EnabledFlagNotBool { .. } | PatchError::SectionNotObject { .. } => {
                "patch_result"
            }
        }
    }
}

/// A parsed patch: RFC 6902 operations plus warnings about legacy forms that were accepted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValuesPatch {
    pub ops: Vec<PatchOperation>,
    /// One message per legacy form, naming the hook and the RFC form to use instead.
    pub warnings: Vec<String>,
}

impl ValuesPatch {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Parses the text a hook wrote into a patch file. An empty file is an empty patch. Besides
    /// the RFC form (one JSON array) it accepts, with a warning, a single operation object, a
    /// stream of several arrays/objects, and dotted paths without a leading `/`.
    pub fn parse(hook: &HookRef, kind: PatchKind, text: &str) -> Result<Self, PatchError> {
        let mut raw_ops = Vec::new();
        let mut warnings = Vec::new();
        let mut documents = 0;
        for doc in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            let doc = doc.map_err(|source| PatchError::ParseJson {
                hook: hook.to_string(),
                kind,
                source,
            })?;
            documents += 1;
            match doc {
                Value::Array(items) => raw_ops.extend(items),
                Value::Object(_) => {
                    warnings.push(format!(
                        "{hook}: {kind} holds a single operation object; write a JSON array of operations (RFC 6902): [{{\"op\": ...}}]"
                    ));
                    raw_ops.push(doc);
                }
                other => {
                    return Err(PatchError::NotAList {
                        hook: hook.to_string(),
                        kind,
                        got: json_kind(&other),
                    });
                }
            }
        }
        if raw_ops.len() > MAX_PATCH_OPERATIONS {
            return Err(PatchError::TooManyOperations {
                hook: hook.to_string(),
                kind,
                count: raw_ops.len(),
            });
        }
        if documents > 1 {
            warnings.push(format!(
                "{hook}: {kind} holds {documents} JSON documents; write one JSON array of operations (RFC 6902)"
            ));
        }
        let mut ops = Vec::with_capacity(raw_ops.len());
        for (index, mut raw) in raw_ops.into_iter().enumerate() {
            fix_legacy_paths(hook, kind, &mut raw, &mut warnings);
            let op = serde_json::from_value::<PatchOperation>(raw).map_err(|source| {
                PatchError::ParseOperation {
                    hook: hook.to_string(),
                    kind,
                    index,
                    source,
                }
            })?;
            ops.push(op);
        }
        Ok(Self { ops, warnings })
    }
}

/// Rewrites `a.b.c` (no leading `/`) in `path` and `from` to `/a/b/c`, with a warning.
fn fix_legacy_paths(hook: &HookRef, kind: PatchKind, raw: &mut Value, warnings: &mut Vec<String>) {
    let Value::Object(map) = raw else { return };
    for field in ["path", "from"] {
        if let Some(Value::String(path)) = map.get_mut(field)
            && !path.is_empty()
            && !path.starts_with('/')
        {
            let fixed = format!("/{}", path.replace('.', "/"));
            warnings.push(format!(
                "{hook}: {kind} uses the dotted path '{path}'; write a JSON pointer (RFC 6901): '{fixed}'"
            ));
            *path = fixed;
        }
    }
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The top-level key an operation writes to (and reads from, for `move`/`copy`).
fn touched_roots(op: &PatchOperation) -> Vec<Option<String>> {
    let root = |p: &json_patch::jsonptr::Pointer| p.first().map(|t| t.decoded().into_owned());
    match op {
        PatchOperation::Move(m) => vec![root(&m.from), root(&m.path)],
        PatchOperation::Copy(c) => vec![root(&c.from), root(&c.path)],
        other => vec![root(other.path())],
    }
}

/// Checks that every operation stays inside what `hook` may touch: its module's camelCase key for
/// a module hook; `global` and `<module>Enabled` flags for a global hook.
pub fn check_scope(
    hook: &HookRef,
    kind: PatchKind,
    ops: &[PatchOperation],
) -> Result<(), PatchError> {
    for op in ops {
        for root in touched_roots(op) {
            let allowed = match (&hook.scope, root.as_deref()) {
                (Scope::Global, Some("global")) => true,
                (Scope::Global, Some(key)) => enabled_flag_module(key).is_some(),
                (Scope::Module(m), Some(key)) => key == m.values_key(),
                (_, None) => false,
            };
            if !allowed {
                return Err(PatchError::OutOfScope {
                    hook: hook.to_string(),
                    kind,
                    path: op.path().to_string(),
                    allowed: allowed_paths(&hook.scope),
                });
            }
        }
    }
    Ok(())
}

fn allowed_paths(scope: &Scope) -> String {
    match scope {
        Scope::Global => "'/global/...' and '/<moduleName>Enabled'".to_string(),
        Scope::Module(m) => format!("'/{}/...'", m.values_key()),
    }
}

/// The module whose enable flag `key` is (`certManagerEnabled` → `cert-manager`).
pub fn enabled_flag_module(key: &str) -> Option<ModuleName> {
    let camel = key.strip_suffix("Enabled")?;
    ModuleName::from_values_key(camel).ok()
}

/// Applies `ops` to `doc` all-or-nothing; any failing operation (including `test`) or exceeded
/// limit is an error.
pub fn apply_strict(
    hook: &HookRef,
    kind: PatchKind,
    doc: &mut Value,
    ops: &[PatchOperation],
) -> Result<(), PatchError> {
    let original = doc.clone();
    let applied = apply_each(hook, kind, doc, ops);
    if applied.is_err() {
        *doc = original;
    }
    applied
}

/// [`apply_strict`] without the restore on error.
fn apply_each(
    hook: &HookRef,
    kind: PatchKind,
    doc: &mut Value,
    ops: &[PatchOperation],
) -> Result<(), PatchError> {
    if ops.len() > MAX_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            hook: hook.to_string(),
            kind,
            count: ops.len(),
        });
    }
    let mut budget = SizeBudget::new(doc);
    for (index, op) in ops.iter().enumerate() {
        let limit_error = |exceeded| match exceeded {
            Exceeded::Size => PatchError::TooLarge {
                hook: hook.to_string(),
                kind,
                index,
            },
            Exceeded::Copies => PatchError::CopiesTooMuch {
                hook: hook.to_string(),
                kind,
                index,
            },
        };
        budget.charge(doc, op).map_err(limit_error)?;
        json_patch::patch(doc, std::slice::from_ref(op)).map_err(|mut source| {
            source.operation = index;
            PatchError::Apply {
                hook: hook.to_string(),
                kind,
                source,
            }
        })?;
    }
    budget.finish(doc).map_err(|_| PatchError::TooLarge {
        hook: hook.to_string(),
        kind,
        index: ops.len().saturating_sub(1),
    })
}

/// Re-applies remembered operations over fresh layers one by one, skipping those that no longer
/// apply (their parent disappeared after a config change, say) and, once the size limits are
/// reached, all the rest. Returns how many were skipped.
pub fn apply_lenient(doc: &mut Value, ops: &[PatchOperation]) -> usize {
    let mut budget = SizeBudget::new(doc);
    for (index, op) in ops.iter().enumerate() {
        if budget.charge(doc, op).is_err() {
            return ops.len() - index;
        }
        if json_patch::patch(doc, std::slice::from_ref(op)).is_err() {
            budget.skipped += 1;
        }
    }
    budget.skipped
}

/// Which limit an operation exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exceeded {
    Size,
    Copies,
}

/// Keeps the size of a document being patched under [`MAX_VALUES_BYTES`] in linear time: each
/// operation is charged the bytes it adds (removals are not credited), and the document is
/// measured only when the charges pass twice the limit, which needs at least the limit in new
/// charges since the last measure.
struct SizeBudget {
    estimate: usize,
    copied: usize,
    skipped: usize,
}

impl SizeBudget {
    fn new(doc: &Value) -> Self {
        Self {
            estimate: crate::jq::json_size(doc),
            copied: 0,
            skipped: 0,
        }
    }

    /// Charges `op` before it is applied to `doc`.
    fn charge(&mut self, doc: &Value, op: &PatchOperation) -> Result<(), Exceeded> {
        let growth = match op {
            PatchOperation::Add(a) => crate::jq::json_size(&a.value),
            PatchOperation::Replace(r) => crate::jq::json_size(&r.value),
            PatchOperation::Copy(c) => {
                let size = doc.pointer(c.from.as_str()).map_or(0, crate::jq::json_size);
                self.copied = self.copied.saturating_add(size);
                if self.copied > MAX_COPIED_BYTES {
                    return Err(Exceeded::Copies);
                }
                size
            }
            PatchOperation::Remove(_) | PatchOperation::Move(_) | PatchOperation::Test(_) => 0,
        };
        self.estimate = self.estimate.saturating_add(growth);
        if self.estimate > 2 * MAX_VALUES_BYTES {
            self.estimate = crate::jq::json_size(doc).saturating_add(growth);
            if self.estimate > MAX_VALUES_BYTES {
                return Err(Exceeded::Size);
            }
        }
        Ok(())
    }

    /// The final check of the patched document.
    fn finish(&self, doc: &Value) -> Result<(), Exceeded> {
        if self.estimate > MAX_VALUES_BYTES && crate::jq::json_size(doc) > MAX_VALUES_BYTES {
            return Err(Exceeded::Size);
        }
        Ok(())
    }
}

/// Appends `new` to the remembered operations of a scope, dropping `test` operations and earlier
/// writes that a later write to an enclosing object key makes irrelevant. Nothing before a
/// `move` or `copy` is dropped by what comes after it (the moved value may hold those writes).
/// Linear in the operations: one backward pass with the set of paths overwritten later.
pub fn compact_into(stored: &mut Vec<PatchOperation>, new: &[PatchOperation]) {
    stored.extend(
        new.iter()
            .filter(|op| !matches!(op, PatchOperation::Test(_)))
            .cloned(),
    );
    let barrier = stored
        .iter()
        .position(is_move_or_copy)
        .unwrap_or(stored.len());
    let mut overwritten: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut keep = vec![true; stored.len()];
    for (index, op) in stored[..barrier].iter().enumerate().rev() {
        let path = op.path().as_str();
        if pointer_prefixes(path).any(|p| overwritten.contains(p)) {
            keep[index] = false;
        } else if overwrites_subtree(op) {
            overwritten.insert(path);
        }
    }
    let mut keep = keep.into_iter();
    stored.retain(|_| keep.next().unwrap_or(true));
}

/// `/a/b/c` → `/a`, `/a/b`, `/a/b/c` (token boundaries of an encoded JSON pointer).
fn pointer_prefixes(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .skip(1)
        .map(move |(i, _)| &path[..i])
        .chain(std::iter::once(path))
}

fn is_move_or_copy(op: &PatchOperation) -> bool {
    matches!(op, PatchOperation::Move(_) | PatchOperation::Copy(_))
}

/// True for add/replace/remove at a path made of object keys only (no array indexes, no `-`), so
/// that the operation's result does not depend on what earlier operations wrote below it.
fn overwrites_subtree(op: &PatchOperation) -> bool {
    let writes = matches!(
        op,
        PatchOperation::Add(_) | PatchOperation::Replace(_) | PatchOperation::Remove(_)
    );
    writes
        && op.path().tokens().count() > 1
        && op.path().tokens().all(|t| {
            let s = t.decoded();
            s != "-" && !s.chars().all(|c| c.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn module_hook() -> HookRef {
        HookRef::module(
            ModuleName::new("simple-one-module").unwrap(),
            HookName::new("hooks/module-hooks.sh").unwrap(),
        )
    }

    fn global_hook() -> HookRef {
        HookRef::global(HookName::new("hooks/global.sh").unwrap())
    }

    fn parse(hook: &HookRef, text: &str) -> Result<ValuesPatch, PatchError> {
        ValuesPatch::parse(hook, PatchKind::Values, text)
    }

    #[test]
    fn empty_file_is_an_empty_patch() {
        let p = parse(&module_hook(), "  \n").unwrap();
        assert!(p.is_empty());
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn all_six_rfc_operations_parse_without_warnings() {
        let text = r#"[
          {"op":"add","path":"/a/b","value":1},
          {"op":"remove","path":"/a/b"},
          {"op":"replace","path":"/a/c","value":"x"},
          {"op":"move","from":"/a/c","path":"/a/d"},
          {"op":"copy","from":"/a/d","path":"/a/e"},
          {"op":"test","path":"/a/e","value":"x"}
        ]"#;
        let p = parse(&module_hook(), text).unwrap();
        assert_eq!(p.ops.len(), 6);
        assert!(p.warnings.is_empty());
    }

    #[test]
    fn single_object_with_dotted_path_is_accepted_with_warnings_naming_the_hook() {
        let text =
            r#"{"op": "replace", "path":"simpleOneModule.param2", "value":"patchedValue_2"}"#;
        let p = parse(&module_hook(), text).unwrap();
        assert_eq!(p.ops.len(), 1);
        assert_eq!(p.ops[0].path().as_str(), "/simpleOneModule/param2");
        assert_eq!(p.warnings.len(), 2);
        assert!(
            p.warnings
                .iter()
                .all(|w| w.contains("hooks/module-hooks.sh"))
        );
        assert!(p.warnings[0].contains("RFC 6902"));
        assert!(p.warnings[1].contains("'/simpleOneModule/param2'"));
    }

    #[test]
    fn invalid_json_is_refused_naming_the_hook() {
        let err = parse(&module_hook(), "[{\"op\": ").unwrap_err();
        assert_eq!(err.category(), "patch_parse");
        assert!(err.to_string().contains("hooks/module-hooks.sh"), "{err}");
    }

    #[test]
    fn unknown_op_is_refused() {
        let err = parse(&module_hook(), r#"[{"op":"merge","path":"/x","value":1}]"#).unwrap_err();
        assert!(
            matches!(err, PatchError::ParseOperation { index: 0, .. }),
            "{err}"
        );
    }

    #[test]
    fn scalar_document_is_refused() {
        let err = parse(&module_hook(), "42").unwrap_err();
        assert!(matches!(err, PatchError::NotAList { .. }), "{err}");
    }

    #[test]
    fn module_hook_may_not_touch_global_values() {
        let h = module_hook();
        let p = parse(&h, r#"[{"op":"add","path":"/global/x","value":1}]"#).unwrap();
        let err = check_scope(&h, PatchKind::Values, &p.ops).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("hooks/module-hooks.sh") && msg.contains("/global/x"),
            "{msg}"
        );
    }

    #[test]
    fn module_hook_may_not_move_values_out_of_another_module() {
        let h = module_hook();
        let p = parse(
            &h,
            r#"[{"op":"copy","from":"/otherModule/x","path":"/simpleOneModule/x"}]"#,
        )
        .unwrap();
        assert!(check_scope(&h, PatchKind::Values, &p.ops).is_err());
    }

    #[test]
    fn module_hook_may_not_set_enable_flags() {
        let h = module_hook();
        let p = parse(
            &h,
            r#"[{"op":"add","path":"/simpleOneModuleEnabled","value":true}]"#,
        )
        .unwrap();
        assert!(check_scope(&h, PatchKind::Values, &p.ops).is_err());
    }

    #[test]
    fn global_hook_may_touch_global_and_enable_flags_only() {
        let h = global_hook();
        let ok = parse(
            &h,
            r#"[{"op":"add","path":"/global/a","value":1},{"op":"add","path":"/certManagerEnabled","value":false}]"#,
        )
        .unwrap();
        check_scope(&h, PatchKind::Values, &ok.ops).unwrap();
        let bad = parse(&h, r#"[{"op":"add","path":"/certManager/a","value":1}]"#).unwrap();
        let err = check_scope(&h, PatchKind::Values, &bad.ops).unwrap_err();
        assert!(err.to_string().contains("/certManager/a"), "{err}");
    }

    #[test]
    fn root_path_is_out_of_scope() {
        let h = global_hook();
        let p = parse(&h, r#"[{"op":"replace","path":"","value":{}}]"#).unwrap();
        assert!(check_scope(&h, PatchKind::Values, &p.ops).is_err());
    }

    #[test]
    fn add_under_missing_parent_fails_strictly() {
        let h = global_hook();
        let p = parse(&h, r#"[{"op":"add","path":"/global/no/such","value":1}]"#).unwrap();
        let mut doc = json!({"global": {}});
        let err = apply_strict(&h, PatchKind::Values, &mut doc, &p.ops).unwrap_err();
        assert_eq!(err.category(), "patch_apply");
        assert_eq!(doc, json!({"global": {}}));
    }

    #[test]
    fn failing_test_op_rejects_the_whole_patch() {
        let h = global_hook();
        let p = parse(
            &h,
            r#"[{"op":"add","path":"/global/a","value":1},{"op":"test","path":"/global/a","value":2}]"#,
        )
        .unwrap();
        let mut doc = json!({"global": {}});
        assert!(apply_strict(&h, PatchKind::Values, &mut doc, &p.ops).is_err());
        assert_eq!(doc, json!({"global": {}}));
    }

    #[test]
    fn lenient_reapply_skips_operations_whose_parent_vanished() {
        let h = global_hook();
        let p = parse(
            &h,
            r#"[{"op":"add","path":"/global/gone/x","value":1},{"op":"add","path":"/global/b","value":2}]"#,
        )
        .unwrap();
        let mut doc = json!({"global": {}});
        assert_eq!(apply_lenient(&mut doc, &p.ops), 1);
        assert_eq!(doc, json!({"global": {"b": 2}}));
    }

    #[test]
    fn compaction_drops_earlier_writes_below_a_later_write_and_tests() {
        let h = global_hook();
        let first = parse(
            &h,
            r#"[{"op":"add","path":"/global/a","value":{"x":1}},{"op":"add","path":"/global/a/y","value":2},{"op":"test","path":"/global/a/y","value":2}]"#,
        )
        .unwrap();
        let second = parse(
            &h,
            r#"[{"op":"replace","path":"/global/a","value":{"z":3}}]"#,
        )
        .unwrap();
        let mut stored = Vec::new();
        compact_into(&mut stored, &first.ops);
        assert_eq!(stored.len(), 2);
        compact_into(&mut stored, &second.ops);
        assert_eq!(stored, second.ops);
    }

    #[test]
    fn compaction_keeps_array_index_writes() {
        let h = global_hook();
        let p = parse(
            &h,
            r#"[{"op":"add","path":"/global/l/0","value":1},{"op":"add","path":"/global/l/0","value":2}]"#,
        )
        .unwrap();
        let mut stored = Vec::new();
        compact_into(&mut stored, &p.ops);
        assert_eq!(stored.len(), 2);
    }

    fn doubling_copies(count: usize) -> String {
        let ops: Vec<String> = (0..count)
            .map(|i| format!(r#"{{"op":"copy","from":"/global/a","path":"/global/a/k{i}"}}"#))
            .collect();
        format!("[{}]", ops.join(","))
    }

    #[test]
    fn forty_one_doubling_copies_fail_the_patch_and_leave_the_document() {
        let h = global_hook();
        let p = parse(&h, &doubling_copies(41)).unwrap();
        let start = json!({"global": {"a": {"text": "x".repeat(100)}}});
        let mut doc = start.clone();
        let err = apply_strict(&h, PatchKind::Values, &mut doc, &p.ops).unwrap_err();
        assert_eq!(err.category(), "patch_limit");
        assert!(err.to_string().contains("hooks/global.sh"), "{err}");
        assert!(err.to_string().contains("limit of"), "{err}");
        assert_eq!(doc, start);
    }

    #[test]
    fn a_few_doubling_copies_within_the_limits_apply() {
        let h = global_hook();
        let p = parse(&h, &doubling_copies(5)).unwrap();
        let mut doc = json!({"global": {"a": {}}});
        apply_strict(&h, PatchKind::Values, &mut doc, &p.ops).unwrap();
        assert_eq!(doc["global"]["a"]["k4"]["k3"]["k2"]["k1"]["k0"], json!({}));
    }

    #[test]
    fn values_larger_than_the_limit_fail_the_patch() {
        let h = global_hook();
        let big = "x".repeat(MAX_VALUES_BYTES / 2);
        let text = format!(
            r#"[{{"op":"add","path":"/global/a","value":"{big}"}},{{"op":"add","path":"/global/b","value":"{big}"}}]"#
        );
        let p = parse(&h, &text).unwrap();
        let mut doc = json!({"global": {}});
        let err = apply_strict(&h, PatchKind::Values, &mut doc, &p.ops).unwrap_err();
        assert!(
            matches!(err, PatchError::TooLarge { index: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn replacing_a_big_value_many_times_stays_within_the_limit() {
        let h = global_hook();
        let value = "x".repeat(MAX_VALUES_BYTES / 8);
        let ops: Vec<String> = (0..40)
            .map(|_| format!(r#"{{"op":"add","path":"/global/a","value":"{value}"}}"#))
            .collect();
        let p = parse(&h, &format!("[{}]", ops.join(","))).unwrap();
        let mut doc = json!({"global": {}});
        apply_strict(&h, PatchKind::Values, &mut doc, &p.ops).unwrap();
    }

    #[test]
    fn more_operations_than_the_limit_are_refused_when_parsing() {
        let op = r#"{"op":"add","path":"/global/a","value":1}"#;
        let text = format!("[{}]", vec![op; MAX_PATCH_OPERATIONS + 1].join(","));
        let err = parse(&global_hook(), &text).unwrap_err();
        assert_eq!(err.category(), "patch_limit");
        assert!(err.to_string().contains("10001 operations"), "{err}");
    }

    #[test]
    fn lenient_reapply_stops_at_the_size_limit() {
        let h = global_hook();
        let p = parse(&h, &doubling_copies(41)).unwrap();
        let mut doc = json!({"global": {"a": {"text": "x".repeat(100)}}});
        let skipped = apply_lenient(&mut doc, &p.ops);
        assert!(skipped > 0 && skipped < 41, "{skipped}");
        assert!(crate::jq::json_size(&doc) <= 4 * MAX_VALUES_BYTES);
    }

    /// The quadratic algorithm compaction replaced, as the reference.
    fn compact_reference(stored: &mut Vec<PatchOperation>, new: &[PatchOperation]) {
        for op in new {
            if matches!(op, PatchOperation::Test(_)) {
                continue;
            }
            if overwrites_subtree(op) && stored.iter().all(|s| !is_move_or_copy(s)) {
                let prefix = op.path();
                stored.retain(|s| !s.path().starts_with(prefix));
            }
            stored.push(op.clone());
        }
    }

    #[test]
    fn compaction_keeps_what_the_reference_algorithm_keeps() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let paths = [
            "/m/a", "/m/a/b", "/m/a/b/c", "/m/ab", "/m/x/0", "/m/x/-", "/m",
        ];
        for _ in 0..300 {
            let mut ops = Vec::new();
            for _ in 0..next(12) {
                let path = paths[next(paths.len() as u64) as usize];
                let from = paths[next(paths.len() as u64) as usize];
                let op = match next(10) {
                    0 => json!({"op": "copy", "from": from, "path": path}),
                    1 => json!({"op": "move", "from": from, "path": path}),
                    2 => json!({"op": "test", "path": path, "value": 1}),
                    3 | 4 => json!({"op": "remove", "path": path}),
                    5 | 6 => json!({"op": "replace", "path": path, "value": 2}),
                    _ => json!({"op": "add", "path": path, "value": 3}),
                };
                ops.push(serde_json::from_value::<PatchOperation>(op).unwrap());
            }
            let split = next(ops.len() as u64 + 1) as usize;
            let mut stored = Vec::new();
            compact_reference(&mut stored, &ops[..split]);
            let (mut fast, mut slow) = (stored.clone(), stored);
            compact_into(&mut fast, &ops[split..]);
            compact_reference(&mut slow, &ops[split..]);
            assert_eq!(fast, slow, "{ops:?}");
        }
    }
}
