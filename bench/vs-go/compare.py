#!/usr/bin/env python3
"""Compares what the Go operator and this one did on the same trees (bench/vs-go).

  compare.py OUT_DIR [--json FILE]

Reads OUT_DIR/<tree>/run/{meta.json,go/,rs/} (vsgo.py writes them) and prints every difference,
normalised for what may legitimately differ, then the counts. Compared per scripted event (the
segment between two marks of the run logs):

- hook runs per scope (the global hooks; each module's hooks and `enabled` script), in order:
  hook, binding, binding context type, watch event, group, snapshot names, then for runs that
  match: the binding contexts (objects, filter results, snapshots), the values and config values
  the hook saw, what it wrote (values and config patches, kubernetes operations, metrics, the
  `enabled` result), its exit code and the contract's environment variables;
- the order in which module orders first ran (modules of one order may run in parallel);
- the operator's writes of its config ConfigMap (the keys each write changed and their values);
- readiness, exit, the Helm releases at the end (status, revision, values, manifest), the metric
  names and label names.

Normalised, each with its reason (docs/compatibility.md, "Side by side with the Go operator"):
timings, the namespace and tree paths of each operator, the other operator's objects (both share
the API server), object metadata the server sets (uid, resourceVersion, times, managedFields),
Helm's release Secrets' payload, repeated runs of a failing task (retry timing), schedule runs
outside the schedule event, and the documented differences listed in RULES.
"""
import difflib
import json
import os
import re
import sys

# documented differences, applied before comparing (docs/compatibility.md names each)
RULES = {
    "enabledModules": "`global.enabledModules` is in every hook's values here, in the Go operator's only "
                      "with non-default module loaders (VALUES and LIFECYCLE-STEPS seeds)",
    "WORKING_DIR": "`WORKING_DIR` is set for hooks here (HOOKS seed); the Go operator sets none",
    "combined": "watch events that arrive together are combined into one run here more often "
                "(compared as the stream of events each hook saw)",
    "config-defaults": "`$CONFIG_VALUES_PATH` holds `{}` for an absent section and the config schema's defaults here, "
                       "the section as written (null when absent) in the Go operator",
    "discovery": "`global.discovery.apiVersions` (the CRDs of modules' crds/) is in the values here; the Go operator "
                 "writes it only with non-default module loaders",
    "checksum": "the release checksum is a values key here (`_addonOperatorModuleChecksum`), a "
                "release label in the Go operator",
}

# Differences of behaviour the comparison still shows, each documented in docs/compatibility.md
# ("Side by side with the Go operator", table "Differences found"): (id, what it is, test).
# A difference matching none is unexplained. ctx: tree id, variant, modules enabled only by their
# own values.yaml; ev: the event; where, text: the difference as printed.
SECTION_EDITS = ("config-module", "config-invalid-schema", "config-restored-module", "hook-failing",
                 "hook-recovered", "values-patch-invalid", "values-patch-fixed", "values-patch-garbage",
                 "values-patch-garbage-fixed", "module-disabled-with-section", "module-enabled-with-section")
KNOWN = [
    ("broken-hook-config", "a module hook whose --config is refused: this operator exits 1 before any module "
     "runs; the Go operator runs the global hooks, then fails that module's run and retries it",
     lambda ctx, ev, where, text: "broken-config" in (ctx.get("variant") or {})),
    ("module-level-enabled", "`<module>Enabled` in the module's own values.yaml enables it here (LIFECYCLE seed); "
     "the Go operator reads it only from the modules directory's values.yaml",
     lambda ctx, ev, where, text: any(m in where or f"release {m}" in text or f"/{m}" in text
                                      or f"-{m}/" in text for m in ctx["module_level_enabled"])
     or (ctx["module_level_enabled"] and ("module orders" in text or "ready" in text or "errors logged" in text
                                          or "convergence_" in text))),
    ("enabled-flag-only", "an edit of `<module>Enabled` alone: the Go operator ignores it until the next converge "
     "(its change detection covers the section's values, not the flag); here the module is disabled or enabled "
     "at once (LIFECYCLE-STEPS seed, step 16)",
     lambda ctx, ev, where, text: ev in ("module-disabled", "module-enabled")),
    ("flag-converge", "a changed `<module>Enabled` flag converges here (beforeAll, afterAll) even when the set of "
     "enabled modules stays the same (seed step 16); the Go operator converges when the set changes",
     lambda ctx, ev, where, text: ev in ("module-disabled-with-section", "module-enabled-with-section")
     and re.search(r"\[(beforeAll|afterAll)\]|module orders", text)),
    ("section-edit-enabled-scripts", "an edit of a module's section: the Go operator runs every `enabled` script "
     "again (it recalculates its module graph); here the module runs (seed step 16), other modules' scripts, "
     "whose input did not change, do not",
     lambda ctx, ev, where, text: ev in SECTION_EDITS and re.search(r"only in the Go operator: \S+/enabled \[enabled\]", text)),
    ("stale-enabled-values", "after a config edit, `enabled` scripts see the new config here; the Go "
     "operator gives them the previous one (flant/addon-operator#535)",
     lambda ctx, ev, where, text: (ev == "config-global" or ev in SECTION_EDITS)
     and re.search(r"/enabled \[enabled\]: (values|config)\.", text)),
    ("module-name-roundtrip", "a module directory name that does not survive kebab -> camel -> kebab "
     "(`module-1`, `with-values-1`): the Go operator exits at start; here it is accepted (its values key is "
     "`module1`, names compare by that key), as earlier Go releases did and upstream's own test trees expect",
     lambda ctx, ev, where, text: "restorable from camelCase" in ctx["go_log"]),
    ("cluster-scoped-namespace", "a binding of a cluster-scoped kind (Namespace) with a namespace selector: the "
     "Go operator lists it under the namespace (`/api/v1/namespaces/<ns>/namespaces`), gets 404 and retries "
     "forever, never ready; here the selector is ignored for cluster-scoped kinds (the kind has no namespace)",
     lambda ctx, ev, where, text: "initial list resources of kind" in ctx["go_log"]
     and "could not find the requested resource" in ctx["go_log"]),
    ("retry-window", "a task failing on both sides is retried with backoff (5 s doubling to 32 s on both, "
     "with jitter): which retries fall into a fixed window differs",
     lambda ctx, ev, where, text: ev == "not-ready-window" and ctx["sides"][0].dropped["retries"] > 0
     and ctx["sides"][1].dropped["retries"] > 0),
    ("invalid-config-refused", "a config edit that breaks a schema is refused when it arrives here (the previous "
     "config stays, nothing is queued, the repair changes nothing); the Go operator takes it, its module run "
     "fails validation and is retried at the head of `main` until the config is repaired",
     lambda ctx, ev, where, text: ev in ("config-invalid-schema", "config-restored-module")),
    ("metric-client-go", "client-go's request metrics (`kubernetes_client_*`) are not exported (docs/metrics.md)",
     lambda ctx, ev, where, text: ev == "metrics" and "kubernetes_client_r" in text),
    ("metric-additions", "metrics this operator adds, or exports from the start (docs/metrics.md)",
     lambda ctx, ev, where, text: ev == "metrics" and "only here" in text),
]

SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")


def load_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    return out


def walk_replace(v, subs):
    if isinstance(v, str):
        for a, b in subs:
            if a in v:
                v = v.replace(a, b)
        return v
    if isinstance(v, list):
        return [walk_replace(x, subs) for x in v]
    if isinstance(v, dict):
        return {walk_replace(k, subs): walk_replace(x, subs) for k, x in v.items()}
    return v


RANDOM = [(re.compile(r"kube-api-access-[a-z0-9]{5}"), "kube-api-access-*")]


def walk_regex(v):
    """Server-made random name suffixes replaced."""
    if isinstance(v, str):
        for rx, sub in RANDOM:
            v = rx.sub(sub, v)
        return v
    if isinstance(v, list):
        return [walk_regex(x) for x in v]
    if isinstance(v, dict):
        return {k: walk_regex(x) for k, x in v.items()}
    return v


class Side:
    """One operator's records of one tree, normalised."""

    def __init__(self, run_dir, key, meta, other_ns):
        self.key = key
        self.dir = os.path.join(run_dir, key)
        op = meta["operators"][key]
        self.ns = op["namespace"]
        self.other_ns = other_ns
        self.meta = op
        tree = meta["tree"]
        self.modules_rel = [os.path.normpath(m) for m in tree["modules"].split(":")]
        self.subs = [(op["tree"], "$TREE"), (self.ns, "$NS"), (os.path.join(self.dir, "tmp"), "$TMP")]
        self.used = {}
        self.dropped = {"foreign": 0, "schedule": 0, "retries": 0}
        raw = load_jsonl(os.path.join(self.dir, "runs.jsonl"))
        self.segments = []  # [(mark, [runs])]
        cur = []
        for rec in raw:
            if "mark" in rec:
                self.segments.append((rec, cur))
                cur = []
            else:
                cur.append(rec)
        if cur:
            self.segments.append(({"mark": "(after the last event)"}, cur))
        self.cm = load_jsonl(os.path.join(self.dir, "cm.jsonl"))
        self.helm = self.load_json("helm.json") or {}
        self.metrics = self.load_text("metrics.txt")

    def load_json(self, name):
        try:
            with open(os.path.join(self.dir, name), encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def load_text(self, name):
        try:
            with open(os.path.join(self.dir, name), encoding="utf-8") as f:
                return f.read()
        except OSError:
            return ""

    def rule(self, name):
        self.used[name] = self.used.get(name, 0) + 1

    # --- objects and binding contexts
    def foreign(self, obj):
        if not isinstance(obj, dict):
            return False
        meta = obj.get("metadata") or {}
        return meta.get("namespace") == self.other_ns or (obj.get("kind") == "Namespace" and meta.get("name") == self.other_ns)

    def norm_object(self, obj):
        if not isinstance(obj, dict):
            return obj
        obj = dict(obj)
        meta = dict(obj.get("metadata") or {})
        for k in SERVER_META:
            meta.pop(k, None)
        if obj.get("kind") == "Secret" and (obj.get("type") == "helm.sh/release.v1"):
            obj["data"] = "<helm release payload>"
            for k in ("modifiedAt", "createdAt"):
                (meta.get("labels") or {}).pop(k, None)
        obj["metadata"] = meta
        return obj

    def norm_item(self, item):
        """An entry of objects/snapshots: {object, filterResult}; None when it is foreign."""
        if not isinstance(item, dict):
            return item
        if self.foreign(item.get("object")):
            return None
        item = dict(item)
        if "object" in item:
            item["object"] = self.norm_object(item["object"])
        return item

    def norm_context(self, ctx):
        if not isinstance(ctx, dict):
            return ctx
        ctx = dict(ctx)
        if ctx.get("type") == "Event" and self.foreign(ctx.get("object")):
            return None
        if "object" in ctx:
            ctx["object"] = self.norm_object(ctx["object"])
        if isinstance(ctx.get("objects"), list):
            ctx["objects"] = [x for x in (self.norm_item(i) for i in ctx["objects"]) if x is not None]
        if isinstance(ctx.get("snapshots"), dict):
            ctx["snapshots"] = {k: [x for x in (self.norm_item(i) for i in v or []) if x is not None]
                                for k, v in ctx["snapshots"].items()}
        return ctx

    def scope(self, hook):
        for m in self.modules_rel:
            prefix = "" if m == "." else m + "/"
            if hook.startswith(prefix) and "/" in hook[len(prefix):]:
                d = hook[len(prefix):].split("/", 1)[0]
                if self.is_module_dir(os.path.join(self.meta["tree"], prefix, d)):
                    head, _, rest = d.partition("-")
                    return rest if head.isdigit() and rest else d
        return "global"

    def is_module_dir(self, path):
        return os.path.isdir(path)

    def order_of(self, scope, hook):
        if scope == "global":
            return -1
        m = re.search(r"(?:^|/)(\d+)-" + re.escape(scope) + "/", hook)
        return int(m.group(1)) if m else 1

    def norm_run(self, rec, segment):
        rec = walk_regex(walk_replace(rec, self.subs))
        ctxs = rec.get("context")
        if isinstance(ctxs, dict) and "text" in ctxs:
            ctxs = None
        had = isinstance(ctxs, list) and len(ctxs) > 0
        if isinstance(ctxs, list):
            ctxs = [c for c in (self.norm_context(c) for c in ctxs) if c is not None]
            if had and not ctxs:
                self.dropped["foreign"] += 1
                return None
        types = {c.get("type") for c in ctxs or [] if isinstance(c, dict)}
        if types == {"Schedule"} and segment != "schedule-tick":
            self.dropped["schedule"] += 1
            return None
        out = {"hook": rec["hook"], "kind": rec["kind"], "contexts": ctxs, "exit": rec.get("exit")}
        for k in ("values", "config", "valuesPatch", "configPatch", "kubePatch", "metrics", "enabledResult",
                  "injected"):
            if k in rec:
                out[k] = rec[k]
        env = list(rec.get("env") or [])
        if "WORKING_DIR" in env:
            env.remove("WORKING_DIR")
            if self.key == "rs":
                self.rule("WORKING_DIR")
        out["env"] = env
        if rec["kind"] == "hook" and isinstance(out.get("values"), dict):
            g = out["values"].get("global")
            if isinstance(g, dict) and "enabledModules" in g:
                out["values"] = dict(out["values"], **{"global": {k: v for k, v in g.items() if k != "enabledModules"}})
                if self.key == "rs":
                    self.rule("enabledModules")
        out["scope"] = self.scope(rec["hook"])
        out["order"] = self.order_of(out["scope"], rec["hook"])
        return out

    def runs(self, idx):
        """The normalised runs of segment idx, per scope, plus the order sequence."""
        mark, recs = self.segments[idx]
        runs = [r for r in (self.norm_run(x, mark["mark"]) for x in sorted(recs, key=lambda r: r.get("t0", 0)))
                if r is not None]
        per, streams = {}, {}
        for r in runs:
            if all_events(r) and r["exit"] == 0 and "injected" not in r:
                # events: compared as the stream each hook saw, whatever the run boundaries
                st = streams.setdefault(r["hook"], {"events": [], "last": r})
                st["events"] += r["contexts"]
                st["last"] = r
                continue
            per.setdefault(r["scope"], []).append(r)
        for scope, lst in per.items():
            per[scope] = self.collapse(lst)
        self.streams = streams
        orders = []
        for r in runs:
            if r["kind"] != "hook":
                continue
            if not orders or orders[-1] != r["order"]:
                if r["order"] not in orders:
                    orders.append(r["order"])
        return per, orders, len(runs)

    def collapse(self, runs):
        out = []
        for r in runs:
            prev = out[-1] if out else None
            if prev and prev["hook"] == r["hook"] and strip(prev) == strip(r) and not all_events(r):
                prev["repeated"] = prev.get("repeated", 1) + 1
                self.dropped["retries"] += 1
                continue
            if (prev and prev["hook"] == r["hook"] and all_events(prev) and all_events(r)
                    and prev["exit"] == 0 and r["exit"] == 0):
                prev["contexts"] = prev["contexts"] + r["contexts"]
                for k in ("values", "config"):
                    if k in r:
                        prev[k] = r[k]
                prev["combined"] = prev.get("combined", 1) + 1
                continue
            out.append(dict(r))
        return out

    def error_names(self, t0, t1, names):
        """Which modules (or `global`, or `-` for none of them) the error lines logged between
        t0 and t1 name; the wording is not compared."""
        found = set()
        for line in self.log_lines():
            ts = line.get("_t")
            coarse = line.get("_coarse")  # a time in whole seconds
            if ts is None or not ((int(t0) if coarse else t0) <= ts < (t1 + 1 if coarse else t1)):
                continue
            if str(line.get("level", "")).lower() not in ("error", "fatal"):
                continue
            text = json.dumps({k: v for k, v in line.items() if k not in ("stacktrace", "_t")})
            hit = {n for n in names if n in text or camel(n) in text}
            found |= hit or {"-"}
        return found

    def log_lines(self):
        if not hasattr(self, "_log"):
            import datetime
            self._log = []
            for raw in self.load_text("log").splitlines():
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(line, dict):
                    continue
                t = line.get("time")
                try:
                    line["_t"] = datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()
                    line["_coarse"] = "." not in t
                except (AttributeError, ValueError):
                    line["_t"] = None
                self._log.append(line)
        return self._log

    def cm_writes(self, t0, t1):
        """The operator's writes of its ConfigMap between t0 and t1, as key changes."""
        writes = []
        prev = None
        for ev in self.cm:
            data = ev.get("data") or {}
            if prev is not None and ev.get("by") == "operator" and t0 <= ev["t"] < t1:
                changed = {k: parse_yaml(data.get(k)) for k in sorted(set(data) | set(prev))
                           if data.get(k) != prev.get(k)}
                if changed:
                    writes.append(walk_replace(changed, self.subs))
            prev = data
        return writes


ERROR_EVENTS = ("ready", "not-ready-window", "config-invalid-yaml", "config-invalid-schema", "hook-failing",
                "values-patch-invalid", "values-patch-garbage")


def camel(name):
    parts = name.split("-")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def module_names(meta):
    tree = meta["operators"]["go"]["tree"]
    names = set()
    for m in meta["tree"]["modules"].split(":"):
        d = os.path.join(tree, m)
        if os.path.isdir(d):
            for e in os.listdir(d):
                if os.path.isdir(os.path.join(d, e)) and not e.startswith("."):
                    head, _, rest = e.partition("-")
                    names.add(rest if head.isdigit() and rest else e)
    return names


def module_level_enabled(meta):
    """Modules whose `<module>Enabled` is only in their own values.yaml."""
    import yaml
    tree = meta["operators"]["go"]["tree"]
    found = set()
    for m in meta["tree"]["modules"].split(":"):
        d = os.path.join(tree, m)
        if not os.path.isdir(d):
            continue
        try:
            with open(os.path.join(d, "values.yaml"), encoding="utf-8") as f:
                common = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError):
            common = {}
        for e in os.listdir(d):
            try:
                with open(os.path.join(d, e, "values.yaml"), encoding="utf-8") as f:
                    own = yaml.safe_load(f) or {}
            except (OSError, yaml.YAMLError):
                continue
            head, _, rest = e.partition("-")
            name = rest if head.isdigit() and rest else e
            key = camel(name) + "Enabled"
            if isinstance(own, dict) and key in own and key not in (common if isinstance(common, dict) else {}):
                found.add(name)
    return found


def parse_yaml(text):
    if text is None:
        return None
    try:
        import yaml
        return yaml.safe_load(text)
    except Exception:  # noqa: BLE001
        return text


def all_events(r):
    return bool(r.get("contexts")) and all(isinstance(c, dict) and c.get("type") == "Event" for c in r["contexts"])


def strip(r):
    return {k: v for k, v in r.items() if k not in ("repeated", "combined")}


def summary(r):
    ctx = []
    for c in r.get("contexts") or []:
        if isinstance(c, dict):
            ctx.append("/".join(str(x) for x in (c.get("binding"), c.get("type"), c.get("watchEvent"),
                                                 c.get("group")) if x))
    tag = "" if r["exit"] == 0 else f" exit={r['exit']}" + (" (repeated)" if r.get("repeated") else "")
    return f"{r['hook']} [{', '.join(ctx) or r['kind']}]{tag}"


def leaf_diffs(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append((f"{path}.{k}", "(absent)", b[k]))
            elif k not in b:
                out.append((f"{path}.{k}", a[k], "(absent)"))
            else:
                out += leaf_diffs(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += leaf_diffs(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [(path or ".", a, b)]


def short(v, n=160):
    s = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n] + "..."


# present or not depending on the moment of the scrape (a queue busy then), not compared
MOMENTARY = ("addon_operator_tasks_queue_head_info",)


def metric_shapes(text, prefix="addon_operator_"):
    shapes = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?", line)
        if not m or not m.group(1).startswith(prefix):
            continue
        name = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
        if name in MOMENTARY:
            continue
        labels = tuple(sorted(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or "")))
        labels = tuple(x for x in labels if x != "le")
        shapes.setdefault(name, set()).add(labels)
    return shapes


class Report:
    def __init__(self):
        self.diffs = []
        self.trees = 0
        self.events = 0
        self.runs = {"go": 0, "rs": 0}
        self.rules = {}
        self.dropped = {}

    def add(self, tree, where, text, ctx=None, event=""):
        known = next((k for k, _, test in KNOWN if ctx is not None and test(ctx, event, where, text)), None)
        self.diffs.append({"tree": tree, "where": where, "text": text, "known": known})
        print(f"  [{where}] {text}" + (f"  (documented: {known})" if known else ""))


def compare_tree(run_dir, report):
    with open(os.path.join(run_dir, "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    tid = meta["tree"]["id"]
    go = Side(run_dir, "go", meta, meta["operators"]["rs"]["namespace"])
    rs = Side(run_dir, "rs", meta, meta["operators"]["go"]["namespace"])
    print(f"== {tid}")
    report.trees += 1
    ctx = {"id": tid, "variant": meta["tree"].get("variant"), "module_level_enabled": module_level_enabled(meta),
           "go_log": go.load_text("log"), "sides": (go, rs)}
    add = lambda where, text: report.add(tid, where, text, ctx, where.split(" ")[0])  # noqa: E731
    for key, side in (("go", go), ("rs", rs)):
        if side.meta.get("exit") not in (None, 0):
            pass
    ready = {k: meta["operators"][k].get("ready_s") is not None for k in ("go", "rs")}
    if ready["go"] != ready["rs"]:
        add("ready", f"ready: go {ready['go']} (exit {meta['operators']['go'].get('exit')}), "
                     f"this {ready['rs']} (exit {meta['operators']['rs'].get('exit')})")
    names = module_names(meta)
    last_state = (True, True, True, True)
    names_go = [m[0]["mark"] for m in go.segments]
    names_rs = [m[0]["mark"] for m in rs.segments]
    events = {e["name"]: e for e in meta["events"]}
    for idx, name in enumerate(names_go):
        if idx >= len(names_rs) or names_rs[idx] != name:
            add(name, "event missing from this operator's log")
            continue
        report.events += 1
        ev = events.get(name, {})
        alive = {k: s.segments[idx][0].get("alive") for k, s in (("go", go), ("rs", rs))}
        rdy = {k: s.segments[idx][0].get("ready") for k, s in (("go", go), ("rs", rs))}
        state = (alive["go"], alive["rs"], rdy["go"], rdy["rs"])
        if state != last_state:  # said once, when it changes
            if alive["go"] != alive["rs"]:
                add(name, f"running after the event: go {alive['go']}, this {alive['rs']}")
            elif rdy["go"] != rdy["rs"]:
                add(name, f"/readyz after the event: go {rdy['go']}, this {rdy['rs']}")
        last_state = state
        pg, og, ng = go.runs(idx)
        pr, orr, nr = rs.runs(idx)
        report.runs["go"] += ng
        report.runs["rs"] += nr
        for scope in sorted(set(pg) | set(pr)):
            compare_runs(name, scope, pg.get(scope, []), pr.get(scope, []), add, rs)
        compare_streams(name, go.streams, rs.streams, add, rs)
        if [o for o in og if o != -1] != [o for o in orr if o != -1]:
            add(name, f"module orders ran in another order: go {og}, this {orr}")
        if ev:
            t0 = ev.get("t0", 0) if idx else 0
            t1 = ev.get("t1", 1e18)
            eg, er = go.error_names(t0, t1, names), rs.error_names(t0, t1, names)
            if name not in ("hook-failing", "values-patch-invalid", "values-patch-garbage"):
                eg, er = {"an error"} if eg else set(), {"an error"} if er else set()
            if eg != er and name in ERROR_EVENTS:
                add(name, f"errors logged naming: go {sorted(eg) or 'nothing'}, this {sorted(er) or 'nothing'}")
            wg, wr = go.cm_writes(t0, t1), rs.cm_writes(t0, t1)
            if wg != wr:
                add(name, f"ConfigMap writes: go {short(wg, 300)}, this {short(wr, 300)}")
    for extra in names_rs[len(names_go):]:
        add(extra, "event missing from the Go operator's log")
    # Helm releases at the end
    hg, hr = walk_replace(go.helm, go.subs), walk_replace(rs.helm, rs.subs)
    for rel in sorted(set(hg) | set(hr)):
        a, b = hg.get(rel), hr.get(rel)
        if a is None or b is None:
            add("helm", f"release {rel}: go {'present' if a else 'absent'}, this {'present' if b else 'absent'}")
            continue
        for r, side in ((a, "go"), (b, "rs")):
            if isinstance(r.get("values"), dict) and "_addonOperatorModuleChecksum" in r["values"]:
                r["values"] = {k: v for k, v in r["values"].items() if k != "_addonOperatorModuleChecksum"}
                if side == "rs":
                    rs.rule("checksum")
        for field in ("status", "revision", "chart"):
            if a.get(field) != b.get(field):
                add("helm", f"release {rel} {field}: go {a.get(field)}, this {b.get(field)}")
        b["values"] = pair_values(a.get("values"), b.get("values"), rs)
        for path, x, y in leaf_diffs(a.get("values"), b.get("values"))[:5]:
            add("helm", f"release {rel} values{path}: go {short(x)}, this {short(y)}")
        if norm_manifest(a.get("manifest")) != norm_manifest(b.get("manifest")):
            d = list(difflib.unified_diff(norm_manifest(a.get("manifest")), norm_manifest(b.get("manifest")),
                                          "go", "this", n=0, lineterm=""))
            add("helm", f"release {rel} manifest differs: {' | '.join(d[2:8])}")
    # metrics
    mg, mr = metric_shapes(go.metrics), metric_shapes(rs.metrics)
    if go.metrics and rs.metrics:
        for name in sorted(set(mg) | set(mr)):
            if name not in mr:
                add("metrics", f"metric {name} {sorted(mg[name])[0]} only in the Go operator")
            elif name not in mg:
                add("metrics", f"metric {name} {sorted(mr[name])[0]} only here")
            else:
                lg = set().union(*[set(x) for x in mg[name]])
                lr = set().union(*[set(x) for x in mr[name]])
                if lg != lr:
                    add("metrics", f"metric {name} labels: go {sorted(lg)}, this {sorted(lr)}")
    for k, v in rs.used.items():
        report.rules[k] = report.rules.get(k, 0) + v
    for s in (go, rs):
        for k, v in s.dropped.items():
            report.dropped[f"{s.key}.{k}"] = report.dropped.get(f"{s.key}.{k}", 0) + v


def norm_manifest(text):
    """The manifest's documents, parsed, without empty ones; as YAML lines for a diff."""
    import yaml
    try:
        docs = [d for d in yaml.safe_load_all(text or "") if d]
    except yaml.YAMLError:
        return [line for line in (text or "").splitlines() if line.strip()]
    docs.sort(key=lambda d: json.dumps(d, sort_keys=True))
    return yaml.safe_dump_all(docs, sort_keys=True).splitlines()


def event_key(c):
    obj = c.get("object") if isinstance(c.get("object"), dict) else {}
    meta = obj.get("metadata") or {}
    return "/".join(str(x) for x in (c.get("binding"), c.get("watchEvent"), obj.get("kind"), meta.get("namespace"),
                                     meta.get("name")) if x)


def compare_streams(event, a, b, add, rs):
    """The watch events each hook saw in this segment, in order, whatever runs carried them."""
    for hook in sorted(set(a) | set(b)):
        ea = (a.get(hook) or {}).get("events", [])
        eb = (b.get(hook) or {}).get("events", [])
        if len(ea) > 1 and [event_key(c) for c in ea] != [event_key(c) for c in eb] and \
                sorted(map(event_key, ea)) == sorted(map(event_key, eb)):
            # the same events, another interleaving of different objects: two watches (a kind
            # watched twice) deliver each object's events in order but not one order between them
            ea = sorted(ea, key=event_key)
            eb = sorted(eb, key=event_key)
        where = f"{event} {hook}"
        sm = difflib.SequenceMatcher(a=[event_key(c) for c in ea], b=[event_key(c) for c in eb], autojunk=False)
        for op, i1, i2, j1, j2 in sm.get_opcodes():
            if op == "equal":
                for x, y in zip(ea[i1:i2], eb[j1:j2]):
                    for path, p, q in leaf_diffs(x, y)[:4]:
                        add(where, f"event {event_key(x)}: context{path}: go {short(p)}, this {short(q)}")
            else:
                for c in ea[i1:i2]:
                    add(where, f"event only in the Go operator: {event_key(c)}")
                for c in eb[j1:j2]:
                    add(where, f"event only here: {event_key(c)}")
        la, lb = (a.get(hook) or {}).get("last"), (b.get(hook) or {}).get("last")
        if la and lb:
            for f in ("values", "config"):
                x, y = la.get(f), lb.get(f)
                if f == "config":
                    y = pair_config(x, y, rs)
                else:
                    y = pair_values(x, y, rs)
                for path, p, q in leaf_diffs(x, y)[:4]:
                    add(where, f"values at its last event run: {f}{path}: go {short(p)}, this {short(q)}")


def pair_config(g, r, rs):
    """This operator's config values with what the documented difference adds taken out:
    `{}` for an absent section (the Go operator: null), the config schema's defaults."""
    if not isinstance(g, dict) or not isinstance(r, dict):
        return r
    out = dict(r)
    for k in r:
        gv, rv = g.get(k), r[k]
        if gv is None and rv == {}:
            out[k] = gv
            rs.rule("config-defaults")
        elif isinstance(gv, dict) and isinstance(rv, dict):
            extra = [x for x in rv if x not in gv]
            if extra:
                out[k] = {x: v for x, v in rv.items() if x in gv}
                rs.rule("config-defaults")
    return out


def pair_values(g, r, rs):
    """This operator's values without `global.discovery.apiVersions` when the Go operator's have none."""
    if not isinstance(g, dict) or not isinstance(r, dict):
        return r
    gg, rg = g.get("global"), r.get("global")
    if isinstance(rg, dict) and isinstance(rg.get("discovery"), dict) and "apiVersions" in rg["discovery"]:
        gd = (gg or {}).get("discovery") if isinstance(gg, dict) else None
        if not (isinstance(gd, dict) and "apiVersions" in gd):
            d = {k: v for k, v in rg["discovery"].items() if k != "apiVersions"}
            rg = dict(rg)
            if d or (isinstance(gd, dict)):
                rg["discovery"] = d
            else:
                rg.pop("discovery")
            r = dict(r, **{"global": rg})
            rs.rule("discovery")
    return r


def compare_runs(event, scope, a, b, add, rs):
    ka, kb = [summary(r) for r in a], [summary(r) for r in b]
    sm = difflib.SequenceMatcher(a=ka, b=kb, autojunk=False)
    where = f"{event} {scope}"
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            for x, y in zip(a[i1:i2], b[j1:j2]):
                y = dict(y, config=pair_config(x.get("config"), y.get("config"), rs),
                         values=pair_values(x.get("values"), y.get("values"), rs))
                compare_fields(where, x, y, add)
        else:
            for r in a[i1:i2]:
                add(where, f"run only in the Go operator: {summary(r)}")
            for r in b[j1:j2]:
                add(where, f"run only here: {summary(r)}")


def compare_fields(where, x, y, add):
    fields = ("contexts", "values", "config", "valuesPatch", "configPatch", "kubePatch", "metrics",
              "enabledResult", "env", "exit")
    for f in fields:
        diffs = leaf_diffs(x.get(f), y.get(f))
        for path, p, q in diffs[:4]:
            add(where, f"{summary(x)}: {f}{'' if path == '.' else path}: go {short(p)}, this {short(q)}")
        if len(diffs) > 4:
            add(where, f"{summary(x)}: {f}: {len(diffs) - 4} more differences")


def main():
    out = sys.argv[1]
    report = Report()
    dirs = sorted(d for d in os.listdir(out) if os.path.exists(os.path.join(out, d, "run", "meta.json")))
    for d in dirs:
        compare_tree(os.path.join(out, d, "run"), report)
    print()
    known = {}
    for d in report.diffs:
        if d["known"]:
            known[d["known"]] = known.get(d["known"], 0) + 1
    unexplained = len(report.diffs) - sum(known.values())
    print(f"trees: {report.trees}; events compared: {report.events}; hook runs: go {report.runs['go']}, "
          f"this {report.runs['rs']}; differences: {len(report.diffs)} ({sum(known.values())} documented, "
          f"{unexplained} unexplained)")
    for k, text, _ in KNOWN:
        if known.get(k):
            print(f"  documented {k} ×{known[k]}: {text}")
    if report.rules:
        print("normalised by documented differences: " +
              ", ".join(f"{k} ×{v} ({RULES[k]})" for k, v in sorted(report.rules.items())))
    if report.dropped:
        print("not compared: " + ", ".join(f"{k} {v}" for k, v in sorted(report.dropped.items()) if v))
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"trees": report.trees, "events": report.events, "runs": report.runs,
                       "diffs": report.diffs, "rules": report.rules, "known": known,
                       "unexplained": unexplained}, f, indent=1)


if __name__ == "__main__":
    main()
