//! An answer of the debug API: status, content type and body (text, or a PNG of the module
//! graph).

use super::format::Format;

/// An answer of the debug API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub(super) fn ok(format: Format, body: String) -> Self {
        Self {
            status: 200,
            content_type: format.content_type(),
            body: body.into_bytes(),
        }
    }

    /// A PNG image.
    pub(super) fn png(body: Vec<u8>) -> Self {
        Self {
            status: 200,
            content_type: "image/png",
            body,
        }
    }

    /// The body as text (a PNG comes out lossily).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub(super) fn text(status: u16, body: impl Into<String>) -> Self {
        let mut body = body.into();
        if !body.ends_with('\n') {
            body.push('\n');
        }
        Self {
            status,
            content_type: Format::Text.content_type(),
            body: body.into_bytes(),
        }
    }

    pub(super) fn not_found(what: impl std::fmt::Display) -> Self {
        Self::text(404, format!("Error: {what}"))
    }
}
