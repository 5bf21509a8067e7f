//! Binding contexts written as a stream, object by object, from what the snapshots hold: the
//! same bytes as serializing [`render`](super::render)'s document, without building it.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use super::{BindingContext, ContextKind, ObjectAndFilterResult};
use crate::hook_config::ConfigVersion;

/// The `$BINDING_CONTEXT_PATH` document of one run: contexts, written as a stream, or a
/// document given whole (`hook run` with a context file, tests).
#[derive(Debug, Clone, Copy)]
pub enum ContextDocument<'a> {
    Contexts(&'a [BindingContext]),
    Json(&'a Value),
}

impl ContextDocument<'_> {
    /// Writes the document's compact JSON to `out` (which should be buffered).
    pub fn write_to<W: Write + ?Sized>(&self, out: &mut W) -> io::Result<()> {
        match self {
            Self::Contexts(contexts) => write_contexts(contexts, out),
            Self::Json(value) => Ok(serde_json::to_writer(out, value)?),
        }
    }

    /// The document as JSON (for tests and fakes: it builds the whole document).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Contexts(contexts) => super::render(contexts),
            Self::Json(value) => (*value).clone(),
        }
    }
}

/// Writes the `$BINDING_CONTEXT_PATH` document of `contexts` (a JSON array) to `out`: exactly
/// what `serde_json::to_writer(out, &render(contexts))` writes. Kept objects go out as the text
/// the snapshot holds; nothing is kept per object. `out` should be buffered.
pub fn write_contexts<W: Write + ?Sized>(
    contexts: &[BindingContext],
    out: &mut W,
) -> io::Result<()> {
    out.write_all(b"[")?;
    for (i, context) in contexts.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_context(context, out)?;
    }
    out.write_all(b"]")
}

/// Writes one context, as [`BindingContext::to_json`] renders it.
pub fn write_context<W: Write + ?Sized>(context: &BindingContext, out: &mut W) -> io::Result<()> {
    let mut map = Fields::open(out)?;
    map.field("binding", &context.binding)?;
    match context.format {
        ConfigVersion::V0 => write_v0_fields(context, &mut map)?,
        ConfigVersion::V1 => write_v1_fields(context, &mut map)?,
    }
    map.close()
}

fn write_v0_fields<W: Write + ?Sized>(
    context: &BindingContext,
    map: &mut Fields<'_, W>,
) -> io::Result<()> {
    if let ContextKind::Event {
        watch_event,
        object,
    } = &context.kind
    {
        map.field("resourceEvent", watch_event.v0_str())?;
        map.field("resourceNamespace", &*object.id.namespace)?;
        map.field("resourceKind", &*object.id.kind)?;
        map.field("resourceName", &*object.id.name)?;
    }
    Ok(())
}

fn write_v1_fields<W: Write + ?Sized>(
    context: &BindingContext,
    map: &mut Fields<'_, W>,
) -> io::Result<()> {
    if context.kind == ContextKind::OnStartup {
        return Ok(());
    }
    let group = context
        .group
        .as_ref()
        .filter(|g| !g.is_empty() && !matches!(context.kind, ContextKind::Lifecycle(_)));
    if let ContextKind::Admission { kind, review } = &context.kind {
        map.field("type", kind.context_type())?;
        map.field("review", &**review)?;
    } else if let ContextKind::Conversion { rule, review } = &context.kind {
        map.field("type", "Conversion")?;
        map.field("fromVersion", &rule.from_version)?;
        map.field("toVersion", &rule.to_version)?;
        map.field("review", &**review)?;
    } else if let Some(group) = group {
        map.field("type", "Group")?;
        map.field("groupName", group)?;
    } else {
        match &context.kind {
            ContextKind::OnStartup
            | ContextKind::Lifecycle(_)
            | ContextKind::Admission { .. }
            | ContextKind::Conversion { .. } => {}
            ContextKind::Schedule => map.field("type", "Schedule")?,
            ContextKind::Synchronization { objects } => {
                map.field("type", "Synchronization")?;
                map.key("objects")?;
                write_items(objects, map.out)?;
            }
            ContextKind::Event {
                watch_event,
                object,
            } => {
                map.field("type", "Event")?;
                map.field("watchEvent", watch_event.as_str())?;
                write_item_fields(object, map)?;
            }
        }
    }
    if context.snapshot_names.is_some() {
        map.key("snapshots")?;
        let mut snapshots = Fields::open(map.out)?;
        for (name, items) in &context.snapshots {
            snapshots.key(name)?;
            write_items(items, snapshots.out)?;
        }
        snapshots.close()?;
    }
    Ok(())
}

/// `[{"object":…,"filterResult":…},…]`.
pub fn write_items<W: Write + ?Sized>(
    items: &[ObjectAndFilterResult],
    out: &mut W,
) -> io::Result<()> {
    out.write_all(b"[")?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_item(item, out)?;
    }
    out.write_all(b"]")
}

/// One item as [`ObjectAndFilterResult::to_json`] renders it.
pub fn write_item<W: Write + ?Sized>(item: &ObjectAndFilterResult, out: &mut W) -> io::Result<()> {
    let mut map = Fields::open(out)?;
    write_item_fields(item, &mut map)?;
    map.close()
}

fn write_item_fields<W: Write + ?Sized>(
    item: &ObjectAndFilterResult,
    map: &mut Fields<'_, W>,
) -> io::Result<()> {
    if let Some(object) = &item.object {
        map.key("object")?;
        // the kept text is the compact serialization of the object: what serializing it again
        // would write
        map.out.write_all(object.text().as_bytes())?;
    }
    if let Some(result) = &item.filter_result {
        map.key("filterResult")?;
        map.out.write_all(result.text().as_bytes())?;
    }
    Ok(())
}

/// A JSON object being written: keys with commas between them.
struct Fields<'a, W: Write + ?Sized> {
    out: &'a mut W,
    empty: bool,
}

impl<'a, W: Write + ?Sized> Fields<'a, W> {
    fn open(out: &'a mut W) -> io::Result<Self> {
        out.write_all(b"{")?;
        Ok(Self { out, empty: true })
    }

    /// Writes `"key":`; the value follows.
    fn key(&mut self, key: &str) -> io::Result<()> {
        if !self.empty {
            self.out.write_all(b",")?;
        }
        self.empty = false;
        serde_json::to_writer(&mut *self.out, key)?;
        self.out.write_all(b":")
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> io::Result<()> {
        self.key(key)?;
        serde_json::to_writer(&mut *self.out, value)?;
        Ok(())
    }

    fn close(self) -> io::Result<()> {
        self.out.write_all(b"}")
    }
}
