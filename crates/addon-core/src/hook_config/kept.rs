//! [`KeptObject`]: an object or filter result a binding keeps, as compact JSON text, deflated
//! when that is smaller.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use serde_json::Value;

/// A full object a binding keeps (`keepFullObjectsInMemory: true`), or a jqFilter result, shared
/// by the binding's cache and every snapshot and event taken from it. Held as its compact JSON
/// text, about a third of the memory of a parsed [`Value`] (a short filter result: a sixth), and
/// written to binding context files as it is; a text of [`DEFLATE_FROM`] bytes or more is held
/// deflated when that is smaller (objects are most of what a watch keeps, and their texts repeat
/// themselves: keys, label values, managedFields), and inflated when written or parsed.
#[derive(Clone, PartialEq, Eq)]
pub struct KeptObject(Arc<[u8]>);

/// The first byte of a deflated text, which JSON text (ASCII at its start) never has: then the
/// text's length (`u32`, little-endian) and the raw deflate stream.
const DEFLATED: u8 = 0xff;
/// The shortest text held deflated: a shorter one (a filter result, a small object) saves little
/// and is written more often than it is kept.
const DEFLATE_FROM: usize = 256;

thread_local! {
    /// A deflater for each thread that keeps objects (its state is a few hundred KB: made once).
    static DEFLATER: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
    static INFLATER: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

impl KeptObject {
    pub fn new(object: &Value) -> Self {
        let text = object.to_string();
        match deflate(text.as_bytes()) {
            Some(deflated) => Self(Arc::from(deflated)),
            None => Self(Arc::from(text.into_bytes())),
        }
    }

    /// The object as JSON. (The text was written from a `Value` that serde_json itself parsed,
    /// so it parses again; `null` would only show a broken invariant.)
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text()).unwrap_or(Value::Null)
    }

    /// The object's compact JSON text (inflated when held deflated; `null` for a broken
    /// invariant, as [`KeptObject::to_value`]).
    pub fn text(&self) -> Cow<'_, str> {
        let text = match self.0.first() {
            Some(&DEFLATED) => inflate(&self.0)
                .and_then(|t| String::from_utf8(t).ok())
                .map(Cow::Owned),
            _ => std::str::from_utf8(&self.0).ok().map(Cow::Borrowed),
        };
        text.unwrap_or(Cow::Borrowed("null"))
    }

    /// Whether both are the same shared copy (not only equal).
    pub fn is_same_copy(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The length of the JSON text.
    pub fn len(&self) -> usize {
        match self.0.first() {
            Some(&DEFLATED) => text_len(&self.0).unwrap_or_default(),
            _ => self.0.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held: the text's, or fewer when it is held deflated.
    pub fn held(&self) -> usize {
        self.0.len()
    }
}

/// `text` deflated behind its header, when that is shorter than the text.
fn deflate(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() < DEFLATE_FROM {
        return None;
    }
    let len = u32::try_from(text.len()).ok()?;
    // no room for more than the text: a stream that does not fit is not worth keeping
    let mut out = Vec::with_capacity(text.len());
    out.push(DEFLATED);
    out.extend_from_slice(&len.to_le_bytes());
    let status = DEFLATER.with_borrow_mut(|deflater| {
        deflater.reset();
        deflater.compress_vec(text, &mut out, FlushCompress::Finish)
    });
    (matches!(status, Ok(Status::StreamEnd)) && out.len() < text.len()).then_some(out)
}

/// The length of a deflated text, from its header.
fn text_len(held: &[u8]) -> Option<usize> {
    let len: [u8; 4] = held.get(1..5)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(len)).ok()
}

/// The text of a deflated copy.
fn inflate(held: &[u8]) -> Option<Vec<u8>> {
    let len = text_len(held)?;
    let mut out = Vec::with_capacity(len);
    let status = INFLATER.with_borrow_mut(|inflater| {
        inflater.reset(false);
        inflater
            .decompress_vec(held.get(5..)?, &mut out, FlushDecompress::Finish)
            .ok()
    });
    (matches!(status, Some(Status::StreamEnd)) && out.len() == len).then_some(out)
}

impl std::fmt::Debug for KeptObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}
