//! Output formats of the debug API (`.text`, `.json`, `.yaml` on a route) and their rendering.

use serde_json::Value;

/// A debug API output format; `text` when a route has no extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    #[default]
    Text,
    Json,
    Yaml,
}

impl Format {
    /// The route extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
            Self::Yaml => "yaml",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Text => "text/plain; charset=utf-8",
            Self::Json => "application/json",
            Self::Yaml => "application/yaml",
        }
    }

    /// Splits `list.json` into (`list`, Json). No or an unknown extension: the whole segment, Text.
    pub fn split(segment: &str) -> (&str, Option<Format>) {
        let Some((stem, ext)) = segment.rsplit_once('.') else {
            return (segment, Some(Self::Text));
        };
        let format = match ext {
            "text" => Self::Text,
            "json" => Self::Json,
            "yaml" => Self::Yaml,
            _ => return (segment, None),
        };
        (stem, Some(format))
    }

    /// Renders a document; `text` shows structured data as JSON (like upstream), strings as they are.
    pub fn render(self, value: &Value) -> String {
        let mut out = match (self, value) {
            (Self::Text, Value::String(s)) => s.clone(),
            (Self::Yaml, _) => addon_core::yaml::to_string(value)
                .unwrap_or_else(|e| format!("cannot render YAML: {e}")),
            (Self::Text | Self::Json, _) => serde_json::to_string_pretty(value).unwrap_or_default(),
        };
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extension_selects_the_format_and_text_is_the_default() {
        assert_eq!(Format::split("list.json"), ("list", Some(Format::Json)));
        assert_eq!(Format::split("list.yaml"), ("list", Some(Format::Yaml)));
        assert_eq!(Format::split("list.text"), ("list", Some(Format::Text)));
        assert_eq!(Format::split("list"), ("list", Some(Format::Text)));
        assert_eq!(Format::split("list.xml"), ("list.xml", None));
    }

    #[test]
    fn documents_render_as_json_yaml_or_plain_text() {
        let doc = json!({"a": [1, "x"]});
        assert_eq!(
            Format::Json.render(&doc),
            "{\n  \"a\": [\n    1,\n    \"x\"\n  ]\n}\n"
        );
        assert_eq!(Format::Yaml.render(&doc), "a:\n- 1\n- x\n");
        assert_eq!(Format::Text.render(&json!("hello")), "hello\n");
    }
}
