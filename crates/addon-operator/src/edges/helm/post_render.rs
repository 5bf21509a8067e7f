//! Helm's post-renderer, as upstream's: every object of a release gets the operator's labels
//! (`heritage: addon-operator`) while the chart's own labels are kept. Run by helm as
//! `addon-operator helm-post-render` (helm 3: `--post-renderer`; helm 4: a `postrenderer/v1`
//! plugin in a private plugins directory).

use std::path::{Path, PathBuf};

pub use addon_core::labels::overlay_labels;
use addon_core::yaml;
use addon_core::yaml_splice;
use serde_json::{Map, Value};

/// The labels upstream's post-renderer puts on every release object.
pub const RELEASE_LABELS: &[(&str, &str)] = &[("heritage", "addon-operator")];

/// Upstream's maintenance label: on the release (`true`/`false`) and, while the module is in
/// maintenance (`NoResourceReconciliation`), on every object of it (empty value).
pub const MAINTENANCE_LABEL: &str = "maintenance.deckhouse.io/no-resource-reconciliation";

/// Labels the post-renderer adds for one `helm upgrade` besides [`RELEASE_LABELS`]: `key=value`
/// lines in this variable of helm's environment, which helm hands down to its post-renderer.
pub const EXTRA_LABELS_ENV: &str = "ADDON_OPERATOR_POST_RENDER_LABELS";

/// [`RELEASE_LABELS`] and the `key=value` lines of `extra` ([`EXTRA_LABELS_ENV`]).
pub fn labels_with(extra: &str) -> Vec<(&str, &str)> {
    let mut labels = RELEASE_LABELS.to_vec();
    labels.extend(extra.lines().filter_map(|line| line.split_once('=')));
    labels
}

/// The hidden subcommand helm runs.
pub const SUBCOMMAND: &str = "helm-post-render";

/// The most manifest bytes the post-renderer reads (helm's own release limit is 1 MiB
/// compressed; this is far above any real chart).
pub const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// The name of the helm 4 plugin.
pub const PLUGIN_NAME: &str = "addon-operator-post-render";

/// A manifest stream that could not be post-rendered.
#[derive(Debug, thiserror::Error)]
pub enum PostRenderError {
    #[error("manifest document {index} does not parse as YAML")]
    ParseDocument {
        index: usize,
        #[source]
        source: yaml::YamlError,
    },
    #[error("render manifest document {index}")]
    RenderDocument {
        index: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("write the helm plugin {}", path.display())]
    WritePlugin {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl PostRenderError {
    pub fn category(&self) -> &'static str {
        match self {
            Self::ParseDocument { .. } | Self::RenderDocument { .. } => "helm_post_render",
            Self::WritePlugin { .. } => "helm_plugin",
        }
    }
}

/// The program helm runs to post-render, and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostRenderer {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl PostRenderer {
    /// This operator's own binary with [`SUBCOMMAND`].
    pub fn of_binary(program: PathBuf) -> Self {
        Self {
            program,
            args: vec![SUBCOMMAND.to_string()],
        }
    }

    /// Writes the helm 4 plugin that runs this post-renderer into `plugins_dir`.
    pub fn write_plugin(&self, plugins_dir: &Path) -> Result<(), PostRenderError> {
        let dir = plugins_dir.join(PLUGIN_NAME);
        let path = dir.join("plugin.yaml");
        let failed = |source| PostRenderError::WritePlugin {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(failed)?;
        let command = Value::from(self.program.to_string_lossy().into_owned());
        let args = Value::from(self.args.clone());
        let text = format!(
            "apiVersion: v1\ntype: postrenderer/v1\nname: {PLUGIN_NAME}\nversion: 0.1.0\n\
             runtime: subprocess\nruntimeConfig:\n  platformCommand:\n    - command: {command}\n      args: {args}\n"
        );
        std::fs::write(&path, text).map_err(failed)
    }
}

/// `stream` (helm's rendered manifests, `---`-separated) with `labels` set on every object. A
/// document is edited in place (only its label lines change); one whose layout cannot be edited
/// so is written back as JSON (valid YAML). Empty documents and comments are kept.
pub fn add_labels(stream: &str, labels: &[(&str, &str)]) -> Result<String, PostRenderError> {
    let mut out = String::with_capacity(stream.len() + 64);
    for (index, doc) in documents(stream).into_iter().enumerate() {
        out.push_str(&label_document(doc, index, labels)?);
    }
    Ok(out)
}

/// The documents of a stream, each with its leading `---` line.
fn documents(stream: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in stream.split_inclusive('\n') {
        let is_separator = line.trim_end() == "---" || line.starts_with("--- ");
        if is_separator && offset > start {
            docs.push(&stream[start..offset]);
            start = offset;
        }
        offset += line.len();
    }
    if offset > start {
        docs.push(&stream[start..offset]);
    }
    docs
}

fn label_document(
    doc: &str,
    index: usize,
    labels: &[(&str, &str)],
) -> Result<String, PostRenderError> {
    let (head, body) = split_separator(doc);
    let old =
        yaml::parse(body).map_err(|source| PostRenderError::ParseDocument { index, source })?;
    let Value::Object(object) = &old else {
        return Ok(doc.to_string());
    };
    if has_labels(object, labels) {
        return Ok(doc.to_string());
    }
    let mut new = Value::Object(object.clone());
    overlay_labels(&mut new, labels.iter().copied());

    if let Some(edited) = yaml_splice::splice(body, &old, &new) {
        return Ok(format!("{head}{edited}"));
    }
    let json = serde_json::to_string(&new)
        .map_err(|source| PostRenderError::RenderDocument { index, source })?;
    let comments: String = body
        .split_inclusive('\n')
        .take_while(|l| l.trim_start().starts_with('#') || l.trim().is_empty())
        .collect();
    Ok(format!("{head}{comments}{json}\n"))
}

/// A document's leading `---` line (if any) and the rest.
fn split_separator(doc: &str) -> (&str, &str) {
    match doc.split_inclusive('\n').next() {
        Some(first) if first.trim_end() == "---" => doc.split_at(first.len()),
        _ => ("", doc),
    }
}

/// Whether `object` already carries every one of `labels`.
fn has_labels(object: &Map<String, Value>, labels: &[(&str, &str)]) -> bool {
    let own = &object.get("metadata").and_then(|m| m.get("labels"));
    labels
        .iter()
        .all(|(k, v)| own.and_then(|l| l.get(*k)).and_then(Value::as_str) == Some(*v))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "\
---
# Source: web/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: web # the name
  labels:
    app: web
data:
  on: \"yes\"
---
# Source: web/templates/svc.yaml
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports: [{port: 80}]
";

    #[test]
    fn every_object_gets_heritage_and_keeps_its_own_labels_and_lines() {
        let out = add_labels(STREAM, RELEASE_LABELS).unwrap();
        let expected = STREAM
            .replace(
                "    app: web\n",
                "    app: web\n    heritage: addon-operator\n",
            )
            .replace(
                "kind: Service\nmetadata:\n  name: web\n",
                "kind: Service\nmetadata:\n  name: web\n  labels:\n    heritage: addon-operator\n",
            );
        assert_eq!(out, expected);
    }

    #[test]
    fn a_flow_style_object_is_written_back_as_json_with_its_comments() {
        let stream =
            "---\n# Source: x.yaml\n{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n";
        let out = add_labels(stream, RELEASE_LABELS).unwrap();
        assert!(out.starts_with("---\n# Source: x.yaml\n{"), "{out}");
        let doc = yaml::parse(out.trim_start_matches("---\n")).unwrap();
        assert_eq!(doc["metadata"]["labels"]["heritage"], "addon-operator");
        assert_eq!(doc["metadata"]["name"], "x");
    }

    #[test]
    fn empty_documents_and_a_label_already_set_are_left_alone() {
        let stream =
            "---\n# Source: empty.yaml\n---\nmetadata:\n  labels:\n    heritage: addon-operator\n";
        assert_eq!(add_labels(stream, RELEASE_LABELS).unwrap(), stream);
    }

    #[test]
    fn the_plugin_names_the_program_and_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let renderer = PostRenderer::of_binary(PathBuf::from("/bin/addon-operator"));
        renderer.write_plugin(dir.path()).unwrap();
        let text =
            std::fs::read_to_string(dir.path().join(PLUGIN_NAME).join("plugin.yaml")).unwrap();
        let plugin = yaml::parse(&text).unwrap();
        assert_eq!(plugin["type"], "postrenderer/v1");
        let command = &plugin["runtimeConfig"]["platformCommand"][0];
        assert_eq!(command["command"], "/bin/addon-operator");
        assert_eq!(command["args"], serde_json::json!([SUBCOMMAND]));
    }
}
