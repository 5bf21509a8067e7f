//! Binding contexts: what a hook run receives in `$BINDING_CONTEXT_PATH`, built from a hook's config and the caller's snapshots, rendered exactly as the Go operator does.

mod combine;
mod write;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

pub use combine::{Combined, append_compacted, combine, combines, compact_groups, joins_queued};
pub use write::{ContextDocument, write_contexts, write_item, write_items};

pub use crate::hook_config::KeptObject;
use crate::hook_config::{
    AdmissionBinding, AdmissionKind, BindingType, ConfigVersion, ConversionBinding, ConversionRule,
    HookConfig, KubernetesBinding, ScheduleBinding, WatchEvent,
};

/// The coordinates of a Kubernetes object (`namespace` is empty for cluster-scoped objects).
/// Shared text: the items of events and snapshots taken from a binding's cache hold the cache's
/// copies (one of each namespace and kind for all its objects), not copies of their own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectId {
    pub namespace: Arc<str>,
    pub kind: Arc<str>,
    pub name: Arc<str>,
}

impl ObjectId {
    /// Reads `kind`, `metadata.namespace` and `metadata.name` of an object.
    pub fn of(object: &Value) -> Self {
        let id = IdRef::of(object);
        Self {
            namespace: Arc::from(id.namespace),
            kind: Arc::from(id.kind),
            name: Arc::from(id.name),
        }
    }
}

/// An object's id read in place from its JSON (a missing field is empty): what [`ObjectId::of`]
/// copies, and what a cache looks an object up by without making a key.
pub(crate) struct IdRef<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
}

impl<'a> IdRef<'a> {
    pub(crate) fn of(object: &'a Value) -> Self {
        let text = |v: Option<&'a Value>| v.and_then(Value::as_str).unwrap_or_default();
        let metadata = object.get("metadata");
        Self {
            namespace: text(metadata.and_then(|m| m.get("namespace"))),
            kind: text(object.get("kind")),
            name: text(metadata.and_then(|m| m.get("name"))),
        }
    }
}

/// One object as a binding keeps it: the full object (unless `keepFullObjectsInMemory: false`)
/// and the jqFilter result (when the binding has a jqFilter).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectAndFilterResult {
    pub id: ObjectId,
    pub object: Option<KeptObject>,
    /// The jqFilter result as compact JSON text: the copy the binding's cache keeps, shared by
    /// every snapshot and event that shows it (and by bindings with the same filter).
    pub filter_result: Option<KeptObject>,
}

impl ObjectAndFilterResult {
    /// An item holding the full object, its id taken from the object.
    pub fn new(object: Value, filter_result: Option<Value>) -> Self {
        Self {
            id: ObjectId::of(&object),
            object: Some(KeptObject::new(&object)),
            filter_result: filter_result.as_ref().map(KeptObject::new),
        }
    }

    /// The item as the binding `source` shows it: no `object` without `keepFullObjectsInMemory`,
    /// no `filterResult` without a jqFilter, `null` when the filter gave nothing.
    fn shaped_for(&self, source: Option<&KubernetesBinding>) -> Self {
        let mut shaped = self.clone();
        shaped.shape_for(source);
        shaped
    }

    /// [`ObjectAndFilterResult::shaped_for`] in place.
    fn shape_for(&mut self, source: Option<&KubernetesBinding>) {
        if !source.is_none_or(|b| b.keep_full_objects_in_memory) {
            self.object = None;
        }
        if source.is_some_and(|b| b.jq_filter.is_some()) {
            self.filter_result
                .get_or_insert_with(|| KeptObject::new(&Value::Null));
        } else {
            self.filter_result = None;
        }
    }

    /// The item as the hook sees it: `object` and `filterResult` when held.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        if let Some(object) = &self.object {
            map.insert("object".into(), object.to_value());
        }
        if let Some(result) = &self.filter_result {
            map.insert("filterResult".into(), result.to_value());
        }
        Value::Object(map)
    }
}

/// Objects per kubernetes binding name, as the caller's monitors hold them.
pub type Snapshots = BTreeMap<String, Vec<ObjectAndFilterResult>>;

/// What triggered the run.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextKind {
    OnStartup,
    /// `beforeAll`, `afterAll`, `beforeHelm`, `afterHelm`, `beforeDeleteHelm`, `afterDeleteHelm`.
    Lifecycle(BindingType),
    Schedule,
    Synchronization {
        objects: Vec<ObjectAndFilterResult>,
    },
    Event {
        watch_event: WatchEvent,
        object: ObjectAndFilterResult,
    },
    /// An AdmissionReview for a `kubernetesValidating` / `kubernetesMutating` binding.
    Admission {
        kind: AdmissionKind,
        /// The whole AdmissionReview as the API server sent it.
        review: Arc<Value>,
    },
    /// One step of a conversion for a `kubernetesCustomResourceConversion` binding.
    Conversion {
        rule: ConversionRule,
        /// The ConversionReview whose `request.objects` this step converts.
        review: Arc<Value>,
    },
}

/// One element of the binding context array.
#[derive(Debug, Clone, PartialEq)]
pub struct BindingContext {
    /// Binding name (or the binding type for lifecycle bindings and `onStartup`).
    pub binding: String,
    pub kind: ContextKind,
    /// The binding's group: the context renders as `type: Group`.
    pub group: Option<String>,
    /// Binding names whose snapshots are attached; `None` renders no `snapshots` key.
    pub snapshot_names: Option<Vec<String>>,
    pub snapshots: Snapshots,
    /// v0 hooks get the v0 form.
    pub format: ConfigVersion,
    /// Settings of the kubernetes binding (true for other bindings); used when combining.
    pub execute_hook_on_synchronization: bool,
    pub wait_for_synchronization: bool,
}

impl BindingContext {
    pub fn is_synchronization(&self) -> bool {
        matches!(self.kind, ContextKind::Synchronization { .. })
    }

    /// The JSON object the hook sees.
    pub fn to_json(&self) -> Value {
        match self.format {
            ConfigVersion::V0 => self.to_json_v0(),
            ConfigVersion::V1 => self.to_json_v1(),
        }
    }

    fn to_json_v1(&self) -> Value {
        let mut map = Map::new();
        map.insert("binding".into(), json!(self.binding));
        if self.kind == ContextKind::OnStartup {
            return Value::Object(map);
        }
        let group = self
            .group
            .as_ref()
            .filter(|g| !g.is_empty() && !matches!(self.kind, ContextKind::Lifecycle(_)));
        if let ContextKind::Admission { kind, review } = &self.kind {
            map.insert("type".into(), json!(kind.context_type()));
            map.insert("review".into(), (**review).clone());
        } else if let ContextKind::Conversion { rule, review } = &self.kind {
            map.insert("type".into(), json!("Conversion"));
            map.insert("fromVersion".into(), json!(rule.from_version));
            map.insert("toVersion".into(), json!(rule.to_version));
            map.insert("review".into(), (**review).clone());
        } else if let Some(group) = group {
            map.insert("type".into(), json!("Group"));
            map.insert("groupName".into(), json!(group));
        } else {
            match &self.kind {
                ContextKind::OnStartup
                | ContextKind::Lifecycle(_)
                | ContextKind::Admission { .. }
                | ContextKind::Conversion { .. } => {}
                ContextKind::Schedule => {
                    map.insert("type".into(), json!("Schedule"));
                }
                ContextKind::Synchronization { objects } => {
                    map.insert("type".into(), json!("Synchronization"));
                    let items = objects.iter().map(ObjectAndFilterResult::to_json);
                    map.insert("objects".into(), Value::Array(items.collect()));
                }
                ContextKind::Event {
                    watch_event,
                    object,
                } => {
                    map.insert("type".into(), json!("Event"));
                    map.insert("watchEvent".into(), json!(watch_event.as_str()));
                    if let Value::Object(item) = object.to_json() {
                        map.extend(item);
                    }
                }
            }
        }
        if self.snapshot_names.is_some() {
            let snapshots = self
                .snapshots
                .iter()
                .map(|(name, items)| {
                    let items = items.iter().map(ObjectAndFilterResult::to_json).collect();
                    (name.clone(), Value::Array(items))
                })
                .collect();
            map.insert("snapshots".into(), Value::Object(snapshots));
        }
        Value::Object(map)
    }

    fn to_json_v0(&self) -> Value {
        let mut map = Map::new();
        map.insert("binding".into(), json!(self.binding));
        if let ContextKind::Event {
            watch_event,
            object,
        } = &self.kind
        {
            map.insert("resourceEvent".into(), json!(watch_event.v0_str()));
            map.insert("resourceNamespace".into(), json!(*object.id.namespace));
            map.insert("resourceKind".into(), json!(*object.id.kind));
            map.insert("resourceName".into(), json!(*object.id.name));
        }
        Value::Object(map)
    }
}

/// The whole `$BINDING_CONTEXT_PATH` document: a JSON array.
pub fn render(contexts: &[BindingContext]) -> Value {
    Value::Array(contexts.iter().map(BindingContext::to_json).collect())
}

/// Builds contexts for one hook from its config and the current snapshots.
pub struct ContextBuilder<'a> {
    config: &'a HookConfig,
    snapshots: &'a Snapshots,
}

impl<'a> ContextBuilder<'a> {
    pub fn new(config: &'a HookConfig, snapshots: &'a Snapshots) -> Self {
        Self { config, snapshots }
    }

    fn base(&self, binding: &str, kind: ContextKind) -> BindingContext {
        BindingContext {
            binding: binding.to_string(),
            kind,
            group: None,
            snapshot_names: None,
            snapshots: Snapshots::new(),
            format: self.config.version,
            execute_hook_on_synchronization: true,
            wait_for_synchronization: true,
        }
    }

    /// `[{"binding":"onStartup"}]`: never any snapshots.
    pub fn on_startup(&self) -> BindingContext {
        self.base(BindingType::OnStartup.as_str(), ContextKind::OnStartup)
    }

    /// The context of an ORDER binding: `onStartup` (no snapshots) or a lifecycle binding.
    pub fn ordered(&self, binding: BindingType) -> BindingContext {
        match binding {
            BindingType::OnStartup => self.on_startup(),
            _ => self.lifecycle(binding),
        }
    }

    /// `beforeAll`, `afterHelm`, ...: snapshots of every kubernetes binding of the hook.
    pub fn lifecycle(&self, binding: BindingType) -> BindingContext {
        let mut names: Vec<String> = Vec::new();
        for k in &self.config.kubernetes {
            if !names.contains(&k.name) {
                names.push(k.name.clone());
            }
        }
        let mut ctx = self.base(binding.as_str(), ContextKind::Lifecycle(binding));
        self.attach(&mut ctx, Some(names));
        ctx
    }

    pub fn schedule(&self, binding: &ScheduleBinding) -> BindingContext {
        let mut ctx = self.base(&binding.name, ContextKind::Schedule);
        ctx.group = binding.group.clone();
        self.attach(&mut ctx, requested(&binding.include_snapshots_from));
        ctx
    }

    /// A Synchronization context with every current object of `binding`.
    pub fn synchronization(
        &self,
        binding: &KubernetesBinding,
        objects: &[ObjectAndFilterResult],
    ) -> BindingContext {
        self.synchronization_of(binding, objects.to_vec())
    }

    /// [`ContextBuilder::synchronization`] taking the snapshot's items: they are shaped and
    /// sorted in place (a snapshot of many objects is not held twice).
    pub fn synchronization_of(
        &self,
        binding: &KubernetesBinding,
        objects: Vec<ObjectAndFilterResult>,
    ) -> BindingContext {
        let objects = shape_in_place(objects, Some(binding));
        let mut ctx = self.kubernetes_base(binding, ContextKind::Synchronization { objects });
        self.attach(&mut ctx, requested(&binding.include_snapshots_from));
        ctx
    }

    /// An Event context for one watch event of `binding`.
    pub fn event(
        &self,
        binding: &KubernetesBinding,
        watch_event: WatchEvent,
        object: &ObjectAndFilterResult,
    ) -> BindingContext {
        let object = object.shaped_for(Some(binding));
        let kind = ContextKind::Event {
            watch_event,
            object,
        };
        let mut ctx = self.kubernetes_base(binding, kind);
        self.attach(&mut ctx, requested(&binding.include_snapshots_from));
        ctx
    }

    /// The context of an admission request: `type` `Validating` or `Mutating`, the `review`, and
    /// the snapshots of `includeSnapshotsFrom` and of the binding's group (never `type: Group`).
    pub fn admission(&self, binding: &AdmissionBinding, review: Arc<Value>) -> BindingContext {
        let kind = ContextKind::Admission {
            kind: binding.kind,
            review,
        };
        let mut ctx = self.base(&binding.name, kind);
        self.attach(&mut ctx, requested(&binding.include_snapshots_from));
        ctx
    }

    /// The context of one conversion step: `type: Conversion`, `fromVersion`, `toVersion` of the
    /// rule and the `review` (whose objects are those of this step).
    pub fn conversion(
        &self,
        binding: &ConversionBinding,
        rule: &ConversionRule,
        review: Arc<Value>,
    ) -> BindingContext {
        let kind = ContextKind::Conversion {
            rule: rule.clone(),
            review,
        };
        let mut ctx = self.base(&binding.name, kind);
        self.attach(&mut ctx, requested(&binding.include_snapshots_from));
        ctx
    }

    fn kubernetes_base(&self, binding: &KubernetesBinding, kind: ContextKind) -> BindingContext {
        let mut ctx = self.base(&binding.name, kind);
        ctx.group = binding.group.clone();
        ctx.execute_hook_on_synchronization = binding.execute_hook_on_synchronization;
        ctx.wait_for_synchronization = binding.wait_for_synchronization;
        if binding.v0 {
            ctx.format = ConfigVersion::V0;
        }
        ctx
    }

    /// Re-reads the snapshots of `ctx` (call right before the run, so they are fresh).
    pub fn refresh(&self, ctx: &mut BindingContext) {
        let names = ctx.snapshot_names.take();
        self.attach(ctx, names);
    }

    fn attach(&self, ctx: &mut BindingContext, names: Option<Vec<String>>) {
        ctx.snapshots = Snapshots::new();
        if let Some(names) = &names {
            for name in names {
                let source = self.config.kubernetes_binding(name);
                let items = self.snapshots.get(name).map(Vec::as_slice).unwrap_or(&[]);
                ctx.snapshots
                    .insert(name.clone(), shape_in_place(items.to_vec(), source));
            }
        }
        ctx.snapshot_names = names;
    }
}

fn requested(names: &[String]) -> Option<Vec<String>> {
    (!names.is_empty()).then(|| names.to_vec())
}

/// Shapes items for their binding and sorts them: by namespace and name when objects are kept,
/// else by `namespace/Kind/name`.
fn shape_in_place(
    mut out: Vec<ObjectAndFilterResult>,
    source: Option<&KubernetesBinding>,
) -> Vec<ObjectAndFilterResult> {
    for item in &mut out {
        item.shape_for(source);
    }
    if source.is_none_or(|b| b.keep_full_objects_in_memory) {
        out.sort_by(|a, b| (&a.id.namespace, &a.id.name).cmp(&(&b.id.namespace, &b.id.name)));
    } else {
        let key =
            |i: &ObjectAndFilterResult| format!("{}/{}/{}", i.id.namespace, i.id.kind, i.id.name);
        out.sort_by_cached_key(key);
    }
    out
}

#[cfg(test)]
mod tests;
