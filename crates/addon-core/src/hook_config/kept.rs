//! [`KeptObject`]: an object or filter result a binding keeps, as compact JSON text, packed
//! (LZ4 against a dictionary of its kind) when that is smaller.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;

/// A full object a binding keeps (`keepFullObjectsInMemory: true`), or a jqFilter result, shared
/// by the binding's cache and every snapshot and event taken from it. Held as its compact JSON
/// text, about a third of the memory of a parsed [`Value`] (a short filter result: a sixth), and
/// written to binding context files as it is. A text of [`PACK_FROM`] bytes or more is held
/// packed when that is smaller: an LZ4 block whose back-references may point into the
/// dictionary of the object's kind (the first object of that `apiVersion` and `kind` this
/// process kept), so what objects of one kind share (keys, label values, managedFields, owner
/// references) costs a few bytes. Packing a 1.3 KB ConfigMap takes about 1 µs and unpacking it
/// 0.2 µs (deflate, used before: 17 and 4.4 µs, and 7× the bytes).
#[derive(Clone, PartialEq, Eq)]
pub struct KeptObject(Arc<[u8]>);

/// The first byte of a packed text, which JSON text (ASCII at its start) never has; then the
/// dictionary's number (`u32`, little-endian; [`NO_DICTIONARY`] for none), the text's length
/// (`u32`) and the LZ4 block.
const PACKED: u8 = 0xfe;
const HEADER: usize = 9;
const NO_DICTIONARY: u32 = u32::MAX;
/// The shortest text held packed: a shorter one (a filter result, a small object) saves little
/// and is written more often than it is kept.
const PACK_FROM: usize = 256;
/// A dictionary is the start of its kind's first text, at most this long.
const DICTIONARY_BYTES: usize = 32 * 1024;
/// Kinds with a dictionary; objects of further kinds are packed without one. Dictionaries live
/// as long as the process, so this bounds their memory (a tree watches a few dozen kinds).
const MAX_DICTIONARIES: usize = 512;

/// The dictionaries of the kinds seen: numbered in the order made, never dropped (a packed text
/// names its dictionary by number).
#[derive(Default)]
struct Dictionaries {
    /// kind → apiVersion → number
    numbers: HashMap<Box<str>, HashMap<Box<str>, u32>>,
    texts: Vec<Arc<[u8]>>,
}

fn dictionaries() -> &'static RwLock<Dictionaries> {
    static DICTIONARIES: OnceLock<RwLock<Dictionaries>> = OnceLock::new();
    DICTIONARIES.get_or_init(RwLock::default)
}

/// The number and text of the dictionary of `object`'s kind, made from `text` (the object's) when
/// it is the first of its kind; `None` for a value without `apiVersion` and `kind`, or past
/// [`MAX_DICTIONARIES`].
fn dictionary_for(object: &Value, text: &[u8]) -> Option<(u32, Arc<[u8]>)> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let known = |d: &Dictionaries| {
        let number = *d.numbers.get(kind)?.get(api_version)?;
        Some((number, Arc::clone(d.texts.get(number as usize)?)))
    };
    if let Some(found) = known(&dictionaries().read().unwrap_or_else(|e| e.into_inner())) {
        return Some(found);
    }
    let mut d = dictionaries().write().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = known(&d) {
        return Some(found);
    }
    if d.texts.len() >= MAX_DICTIONARIES {
        return None;
    }
    let number = u32::try_from(d.texts.len()).ok()?;
    let dictionary: Arc<[u8]> = Arc::from(&text[..text.len().min(DICTIONARY_BYTES)]);
    d.texts.push(Arc::clone(&dictionary));
    (d.numbers.entry(kind.into()).or_default()).insert(api_version.into(), number);
    Some((number, dictionary))
}

fn dictionary(number: u32) -> Option<Arc<[u8]>> {
    let d = dictionaries().read().unwrap_or_else(|e| e.into_inner());
    d.texts.get(number as usize).cloned()
}

impl KeptObject {
    pub fn new(object: &Value) -> Self {
        let text = object.to_string();
        match pack(object, text.as_bytes()) {
            Some(packed) => Self(Arc::from(packed)),
            None => Self(Arc::from(text.into_bytes())),
        }
    }

    /// The object as JSON. (The text was written from a `Value` that serde_json itself parsed,
    /// so it parses again; `null` would only show a broken invariant.)
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.text()).unwrap_or(Value::Null)
    }

    /// The object's compact JSON text (unpacked when held packed; `null` for a broken
    /// invariant, as [`KeptObject::to_value`]).
    pub fn text(&self) -> Cow<'_, str> {
        let text = match self.0.first() {
            Some(&PACKED) => unpack(&self.0)
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
            Some(&PACKED) => header(&self.0).map_or(0, |(_, len)| len),
            _ => self.0.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held: the text's, or fewer when it is held packed.
    pub fn held(&self) -> usize {
        self.0.len()
    }
}

/// `text` packed behind its header, when that is shorter than the text.
fn pack(object: &Value, text: &[u8]) -> Option<Vec<u8>> {
    if text.len() < PACK_FROM {
        return None;
    }
    let len = u32::try_from(text.len()).ok()?;
    let (number, block) = match dictionary_for(object, text) {
        Some((number, dictionary)) => (
            number,
            lz4_flex::block::compress_with_dict(text, &dictionary),
        ),
        None => (NO_DICTIONARY, lz4_flex::block::compress(text)),
    };
    if HEADER + block.len() >= text.len() {
        return None;
    }
    let mut out = Vec::with_capacity(HEADER + block.len());
    out.push(PACKED);
    out.extend_from_slice(&number.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&block);
    Some(out)
}

/// The dictionary number and text length of a packed text.
fn header(held: &[u8]) -> Option<(u32, usize)> {
    let number: [u8; 4] = held.get(1..5)?.try_into().ok()?;
    let len: [u8; 4] = held.get(5..HEADER)?.try_into().ok()?;
    Some((
        u32::from_le_bytes(number),
        usize::try_from(u32::from_le_bytes(len)).ok()?,
    ))
}

/// The text of a packed copy.
fn unpack(held: &[u8]) -> Option<Vec<u8>> {
    let (number, len) = header(held)?;
    let block = held.get(HEADER..)?;
    let text = match number {
        NO_DICTIONARY => lz4_flex::block::decompress(block, len),
        number => lz4_flex::block::decompress_with_dict(block, len, &dictionary(number)?),
    };
    text.ok().filter(|t| t.len() == len)
}

impl std::fmt::Debug for KeptObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config_map(kind: &str, name: &str, uid: &str) -> Value {
        json!({"apiVersion": "test.kept/v1", "kind": kind, "metadata": {"name": name,
            "namespace": "bench", "uid": uid, "labels": {"app": "web", "tier": "front"},
            "managedFields": [{"manager": "kubectl", "operation": "Update",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {}}}}]},
            "data": {"a": "value of the first key", "b": "and of the second one"}})
    }

    #[test]
    fn objects_of_one_kind_pack_against_the_first_ones_text() {
        let first = KeptObject::new(&config_map("KeptA", "first", "0a1b2c3d"));
        let second_object = config_map("KeptA", "second", "9f8e7d6c");
        let second = KeptObject::new(&second_object);
        let alone = lz4_flex::block::compress(second_object.to_string().as_bytes());
        assert_eq!(second.text(), second_object.to_string());
        assert!(
            second.held() * 4 < HEADER + alone.len(),
            "with its kind's dictionary {} bytes, alone {}",
            second.held(),
            HEADER + alone.len()
        );
        assert!(first.held() < first.len());
    }

    #[test]
    fn a_value_without_a_kind_packs_without_a_dictionary() {
        let value = json!({"payload": "y".repeat(1000)});
        let kept = KeptObject::new(&value);
        assert_eq!(header(&kept.0).map(|(n, _)| n), Some(NO_DICTIONARY));
        assert_eq!(kept.to_value(), value);
    }

    #[test]
    fn a_text_naming_a_dictionary_that_does_not_exist_reads_as_null() {
        let text = b"{\"a\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"}";
        let mut held = vec![PACKED];
        held.extend_from_slice(&(u32::MAX - 1).to_le_bytes());
        held.extend_from_slice(&(text.len() as u32).to_le_bytes());
        held.extend_from_slice(&lz4_flex::block::compress(text));
        let kept = KeptObject(Arc::from(held));
        assert_eq!(kept.text(), "null");
        assert_eq!(kept.to_value(), Value::Null);
    }

    #[test]
    fn a_text_that_does_not_pack_smaller_is_kept_as_it_is() {
        // 300 distinct characters: nothing for LZ4 to refer back to
        let noise: String = (0..300u32)
            .filter_map(|i| char::from_u32(0x4e00 + i * 7))
            .collect();
        let value = json!({"n": noise});
        let kept = KeptObject::new(&value);
        assert_eq!(kept.held(), value.to_string().len());
        assert!(matches!(kept.text(), Cow::Borrowed(_)));
    }
}
