#!/usr/bin/env python3
"""Runs one module tree under both operators on one API server and records what happens
(bench/vs-go; run.sh starts the API server and calls this per tree, compare.py reads the result).

  vsgo.py TREE_ID OUT_DIR KUBECONFIG

Each operator gets its own namespace (`vsgo-go`, `vsgo-rs`), config ConfigMap and copy of the tree
with recording hooks (prepare.py, record.py). Both start at once; the harness waits until both are
ready and idle, then plays the scripted events on both, waiting for both to be idle after each
and writing a mark into each run log. It saves, per operator in OUT_DIR/<go|rs>/: runs.jsonl (hook
runs and marks), cm.jsonl (every write of its ConfigMap, from a watch), helm.json (releases, their
values and manifests at the end), metrics.txt, queue.json, log, and OUT_DIR/meta.json.

Environment: GO_ADDON_OPERATOR (the Go binary, required), ADDON_OPERATOR_BIN (this project's;
default target/debug/addon-operator), READY_TIMEOUT (s, 90), TICK_TIMEOUT (s, 70).
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import prepare  # noqa: E402
import trees as tree_catalog  # noqa: E402

SHARED_NS = "vsgo-shared"
OPS = {"go": "vsgo-go", "rs": "vsgo-rs"}


# ---------------------------------------------------------------------------------------------
# a small Kubernetes client (urllib; the kubeconfig bench/real-cluster.sh or the emulator writes)

class Kube:
    def __init__(self, kubeconfig):
        with open(kubeconfig, encoding="utf-8") as f:
            kc = yaml.safe_load(f)
        cluster = kc["clusters"][0]["cluster"]
        user = (kc.get("users") or [{}])[0].get("user") or {}
        self.url = cluster["server"].rstrip("/")
        self.headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
        self.ctx = None
        if self.url.startswith("https"):
            self.ctx = ssl.create_default_context(cafile=cluster.get("certificate-authority"))

    def request(self, method, path, body=None, ctype="application/json", timeout=30):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=dict(self.headers))
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            if e.code == 404 and method in ("GET", "DELETE"):
                return None
            if e.code == 409 and method == "POST":
                return None
            raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:300]!r}") from None

    def watch(self, path, rv, sink, stop):
        """Calls sink(event) for every event of a watch on path from rv, until stop is set."""
        while not stop.is_set():
            q = urllib.parse.urlencode({"watch": "1", "resourceVersion": rv, "timeoutSeconds": "30",
                                        "allowWatchBookmarks": "false"})
            sep = "&" if "?" in path else "?"
            req = urllib.request.Request(f"{self.url}{path}{sep}{q}", headers=dict(self.headers))
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=40) as r:
                    for line in r:
                        if stop.is_set():
                            return
                        ev = json.loads(line)
                        rv = ev["object"]["metadata"].get("resourceVersion", rv)
                        sink(ev)
            except Exception:  # noqa: BLE001 - a dropped watch resumes
                time.sleep(0.2)

    def apply_file(self, path):
        with open(path, encoding="utf-8") as f:
            for doc in yaml.safe_load_all(f):
                if doc:
                    self.create(doc)

    def create(self, obj):
        return self.request("POST", self.collection(obj), obj)

    def collection(self, obj, kind_plural=None):
        api = obj["apiVersion"]
        plural = kind_plural or PLURALS.get(obj["kind"], obj["kind"].lower() + "s")
        base = "/api/v1" if api == "v1" else f"/apis/{api}"
        ns = obj.get("metadata", {}).get("namespace")
        return f"{base}/namespaces/{ns}/{plural}" if ns and plural not in CLUSTER else f"{base}/{plural}"


PLURALS = {"ConfigMap": "configmaps", "Secret": "secrets", "Namespace": "namespaces", "Pod": "pods",
           "ServiceAccount": "serviceaccounts", "CustomResourceDefinition": "customresourcedefinitions",
           "Service": "services", "Endpoints": "endpoints", "Event": "events", "Node": "nodes",
           "Deployment": "deployments", "DaemonSet": "daemonsets", "StatefulSet": "statefulsets",
           "Ingress": "ingresses", "ClusterRole": "clusterroles", "Role": "roles",
           "ClusterRoleBinding": "clusterrolebindings", "RoleBinding": "rolebindings"}
CLUSTER = {"namespaces", "customresourcedefinitions", "nodes", "clusterroles", "clusterrolebindings"}


# ---------------------------------------------------------------------------------------------
# one operator process

class Operator:
    def __init__(self, key, binary, tree, out, kube, kubeconfig):
        self.key, self.ns, self.out, self.kube = key, OPS[key], os.path.join(out, key), kube
        os.makedirs(self.out, exist_ok=True)
        self.tree_dir = os.path.join(self.out, "tree")
        self.modules_dirs, self.global_dir, self.wrapped = prepare.prepare(tree, self.tree_dir)
        self.runs = os.path.join(self.out, "runs.jsonl")
        self.ctl = os.path.join(self.out, "ctl")
        self.tmp = os.path.join(self.out, "tmp")
        os.makedirs(self.ctl, exist_ok=True)
        open(self.runs, "w").close()
        self.port = free_port()
        # a Unix socket path must stay under 108 bytes: the tree ids make `out` long
        self.socket = os.path.join(tempfile.mkdtemp(prefix=f"vsgo-{key}-"), "debug.socket")
        self.args = [binary, "start", "--modules-dir", ":".join(self.modules_dirs),
                     "--global-hooks-dir", self.global_dir, "--namespace", self.ns,
                     "--config-map", "addon-operator", "--kube-config", kubeconfig,
                     "--tmp-dir", self.tmp, "--prometheus-listen-address", "127.0.0.1",
                     "--prometheus-listen-port", str(self.port), "--debug-unix-socket", self.socket,
                     "--log-type", "json", "--log-level", os.environ.get("VSGO_LOG_LEVEL", "info")]
        self.env = dict(os.environ, VSGO_LOG=self.runs, VSGO_TREE=self.tree_dir, VSGO_CTL=self.ctl,
                        VSGO_RECORDER=os.path.join(HERE, "record.py"), VSGO_OPERATOR=key,
                        PATH=f"{ROOT}/.tools/bin:{os.environ['PATH']}")
        for var in ("KUBECONFIG", "ADDON_OPERATOR_MODULES_DIR", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR",
                    "MODULES_DIR", "GLOBAL_HOOKS_DIR"):
            self.env.pop(var, None)
        self.env["KUBECONFIG"] = kubeconfig  # helm and kubectl in hooks reach the same server
        # hooks' admission and conversion webhooks (served here; the Go operator never wires
        # them and ignores these variables): a throwaway certificate, loopback, free ports
        certs = webhook_certs(out)
        for kind in ("VALIDATING", "CONVERSION"):
            self.env.update({f"{kind}_WEBHOOK_SERVER_CERT": f"{certs}/tls.crt",
                             f"{kind}_WEBHOOK_SERVER_KEY": f"{certs}/tls.key",
                             f"{kind}_WEBHOOK_CA": f"{certs}/ca.crt",
                             f"{kind}_WEBHOOK_LISTEN_ADDRESS": "127.0.0.1",
                             f"{kind}_WEBHOOK_LISTEN_PORT": str(free_port())})
        self.proc = None
        self.cm_events = []
        self.harness_rvs = []  # the ConfigMap versions the harness wrote
        self.exit = None

    def start(self):
        self.log = open(os.path.join(self.out, "log"), "w")
        self.started = time.time()
        self.proc = subprocess.Popen(self.args, cwd=self.tree_dir, env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def http(self, path, timeout=2):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, ""
        except Exception:  # noqa: BLE001
            return None, ""

    def debug(self, path):
        try:
            out = subprocess.run(["curl", "-sf", "--max-time", "3", "--unix-socket", self.socket,
                                  f"http://unix{path}"], capture_output=True, timeout=5)
            return json.loads(out.stdout) if out.returncode == 0 else None
        except Exception:  # noqa: BLE001
            return None

    def ready(self):
        return self.http("/readyz")[0] == 200

    def alive(self):
        if self.proc.poll() is not None and self.exit is None:
            self.exit = self.proc.returncode
        return self.exit is None

    def queued(self):
        dump = self.debug("/queue/list.json?showEmpty=true")
        if dump is None:
            return None
        return (dump.get("summary") or {}).get("totalTasks", 0)

    def mark(self, name):
        import fcntl
        with open(self.runs, "a", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.write(json.dumps({"mark": name, "t": time.time(), "alive": self.alive(),
                                "ready": self.alive() and self.ready()}) + "\n")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def webhook_certs(out):
    """A CA and a serving certificate for the webhook Services of both namespaces."""
    d = os.path.join(out, "webhook-certs")
    if os.path.exists(os.path.join(d, "tls.crt")):
        return d
    os.makedirs(d, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    names = ",".join(f"DNS:shell-operator-{k}-svc.{ns}.svc" for k in ("validating", "conversion") for ns in OPS.values())
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write(f"subjectAltName={names}\n")
    run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", *ec, "-days", "2", "-subj", "/CN=vsgo-ca", "-keyout", "ca.key", "-out", "ca.crt")
    run("openssl", "req", *ec, "-subj", "/CN=vsgo-webhook", "-keyout", "tls.key", "-out", "tls.csr")
    run("openssl", "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "san.ext", "-out", "tls.crt")
    return d


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_all(ops, pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if all(pred(o) or not o.alive() for o in ops):
            return True
        time.sleep(0.1)
    return False


def wait_idle(ops, quiet=1.5, timeout=40):
    """Until every live operator's queues are empty and no hook run was recorded for `quiet` s."""
    end = time.time() + timeout
    last = {o.key: (-1, time.time()) for o in ops}
    while time.time() < end:
        done = True
        for o in ops:
            if not o.alive():
                continue
            size = os.path.getsize(o.runs)
            if size != last[o.key][0]:
                last[o.key] = (size, time.time())
                done = False
            elif time.time() - last[o.key][1] < quiet or o.queued() != 0:
                done = False
        if done:
            return True
        time.sleep(0.25)
    return False


# ---------------------------------------------------------------------------------------------
# what a tree's hooks watch and schedule (from their --config), to script events for them

def hook_configs(op):
    """(hook path relative to the tree, parsed --config) of every wrapped hook."""
    found = []
    for dirpath, _, files in os.walk(op.tree_dir, followlinks=True):
        for n in files:
            if not n.startswith(".vsgo."):
                continue
            orig = os.path.join(dirpath, n)
            shim = os.path.join(dirpath, n[len(".vsgo."):])
            if os.path.basename(shim) == "enabled":
                continue
            cmd = (["python3", orig] if orig.endswith(".py") else [orig]) + ["--config"]
            try:
                out = subprocess.run(cmd, cwd=dirpath, capture_output=True, timeout=20, env=op.env).stdout
                cfg = yaml.safe_load(out)
            except Exception:  # noqa: BLE001 - a broken config is the operators' business
                cfg = None
            if isinstance(cfg, dict):
                found.append((os.path.relpath(shim, op.tree_dir), cfg))
    return sorted(found, key=lambda x: x[0])


def known_crds(paths):
    """kind (and its plural, singular, short names, lower case) -> (apiVersion, kind, plural,
    namespaced) of every CustomResourceDefinition in the YAML files under paths."""
    found = {}
    files = []
    for p in paths:
        if os.path.isfile(p):
            files.append(p)
        for dirpath, dirnames, names in os.walk(p):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".yaml", ".yml"))]
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                docs = list(yaml.safe_load_all(f))
        except Exception:  # noqa: BLE001 - templates and other non-YAML
            continue
        for d in docs:
            if not isinstance(d, dict) or d.get("kind") != "CustomResourceDefinition":
                continue
            spec = d.get("spec") or {}
            names = spec.get("names") or {}
            versions = [v.get("name") for v in spec.get("versions") or [] if v.get("served", True)]
            version = next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")), None) \
                or (versions or [spec.get("version")])[0]
            if not names.get("kind") or not version:
                continue
            entry = (f"{spec.get('group')}/{version}", names["kind"], names.get("plural"),
                     spec.get("scope", "Namespaced") == "Namespaced")
            for key in [names["kind"], names.get("plural"), names.get("singular")] + list(names.get("shortNames") or []):
                if key:
                    found[key.lower()] = entry
    return found


def watched_objects(configs, crds=None):
    """One object per kubernetes binding of a kind the harness can create, matching its selectors."""
    crds = crds or {}
    objs, seen = [], set()
    for hook, cfg in configs:
        bindings = list(cfg.get("kubernetes") or [])
        for b in cfg.get("onKubernetesEvent") or []:  # v0
            bindings.append({"kind": b.get("kind"), "labelSelector": b.get("selector"),
                             "namespace": {"nameSelector": (b.get("namespaceSelector") or {}).get("matchNames")
                                           and {"matchNames": b["namespaceSelector"]["matchNames"]}}})
        for b in bindings:
            kind = (b.get("kind") or "").lower()
            kind = {"configmap": "ConfigMap", "configmaps": "ConfigMap", "cm": "ConfigMap",
                    "secret": "Secret", "secrets": "Secret", "namespace": "Namespace",
                    "namespaces": "Namespace", "ns": "Namespace", "pod": "Pod", "pods": "Pod",
                    "po": "Pod"}.get(kind, kind)
            api = "v1"
            if kind not in ("ConfigMap", "Secret", "Namespace", "Pod"):
                if kind not in crds:
                    continue
                api, kind, plural, namespaced = crds[kind]
                PLURALS[kind] = plural
                if not namespaced:
                    CLUSTER.add(plural)
            labels = dict(((b.get("labelSelector") or {}).get("matchLabels") or {}))
            for expr in (b.get("labelSelector") or {}).get("matchExpressions") or []:
                if expr.get("operator") == "In" and expr.get("values"):
                    labels[expr["key"]] = expr["values"][0]
                elif expr.get("operator") == "Exists":
                    labels[expr["key"]] = "vsgo"
            names = ((b.get("nameSelector") or {}).get("matchNames") or [])
            nss = (((b.get("namespace") or {}).get("nameSelector") or {}).get("matchNames") or [])
            ns = nss[0] if nss else SHARED_NS
            name = names[0] if names else f"vsgo-{len(objs)}"
            key = (kind, ns, name)
            if key in seen:
                continue
            seen.add(key)
            meta = {"name": name, "labels": labels or {"vsgo": "1"}}
            if kind != "Namespace" and PLURALS.get(kind) not in CLUSTER:
                meta["namespace"] = ns
            obj = {"apiVersion": api, "kind": kind, "metadata": meta}
            if api != "v1":
                obj["spec"] = {}
            if kind in ("ConfigMap", "Secret"):
                obj["data"] = {"vsgo": "MQ==" if kind == "Secret" else "1"}
            if kind == "Pod":
                obj["spec"] = {"containers": [{"name": "c", "image": "vsgo:1"}]}
            objs.append(obj)
    return objs


def schedules(configs):
    return [h for h, c in configs if c.get("schedule")]


def camel(name):
    parts = name.split("-")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def module_names(op):
    names = []
    for mdir in op.modules_dirs:
        for entry in sorted(os.listdir(mdir)):
            if entry.startswith(".") or not os.path.isdir(os.path.join(mdir, entry)):
                continue
            parts = entry.split("-", 1)
            names.append(parts[1] if parts[0].isdigit() and len(parts) == 2 else entry)
    return names


def schema_edit(path, base):
    """A valid changed config for the section whose config-values schema is at path: the first
    property whose type allows it gets a new value. None when no schema or nothing fits."""
    try:
        with open(path, encoding="utf-8") as f:
            schema = yaml.safe_load(f) or {}
    except OSError:
        return None
    for key, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        old = (base or {}).get(key, prop.get("default"))
        if prop.get("enum"):
            choices = [v for v in prop["enum"] if v != old]
            if choices:
                return {key: choices[0]}
        elif prop.get("type") == "string" and not prop.get("pattern") and not prop.get("format"):
            return {key: "vsgo-edit" if old != "vsgo-edit" else "vsgo-edit-2"}
        elif prop.get("type") == "boolean":
            return {key: not bool(old)}
        elif prop.get("type") == "integer":
            lo, hi = prop.get("minimum", 0), prop.get("maximum", 10**6)
            new = lo if old != lo else min(lo + 1, hi)
            if new != old:
                return {key: new}
    return None


def schema_violation(path):
    """A config section that breaks the schema at path: a string where it asks for a number, or
    a number where it asks for a string, or a key it does not allow."""
    try:
        with open(path, encoding="utf-8") as f:
            schema = yaml.safe_load(f) or {}
    except OSError:
        return None
    for key, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and prop.get("type") in ("integer", "number", "boolean"):
            return {key: "vsgo-not-a-number"}
        if isinstance(prop, dict) and prop.get("type") == "string":
            return {key: 12345}
    return {"vsgoUnknownKey": 1}


# ---------------------------------------------------------------------------------------------
# the scenario

class Run:
    def __init__(self, tree, out, kubeconfig):
        self.tree, self.out, self.kubeconfig = tree, out, kubeconfig
        self.kube = Kube(kubeconfig)
        go = os.environ["GO_ADDON_OPERATOR"]
        rs = os.environ.get("ADDON_OPERATOR_BIN", f"{ROOT}/target/debug/addon-operator")
        self.ops = [Operator("go", go, tree, out, self.kube, kubeconfig),
                    Operator("rs", rs, tree, out, self.kube, kubeconfig)]
        self.events = []
        self.stop = threading.Event()
        self.config = {}

    # config ConfigMap of each operator
    def cm_path(self, op):
        return f"/api/v1/namespaces/{op.ns}/configmaps/addon-operator"

    def write_config(self, changes):
        """Sets (or, for None, removes) keys of both config ConfigMaps."""
        for op in self.ops:
            patch = {"data": {k: v for k, v in changes.items()}}
            cm = self.kube.request("PATCH", self.cm_path(op), patch, "application/merge-patch+json")
            op.harness_rvs.append(cm["metadata"]["resourceVersion"])
        for k, v in changes.items():
            if v is None:
                self.config.pop(k, None)
            else:
                self.config[k] = v

    def section(self, key):
        text = self.config.get(key)
        try:
            value = yaml.safe_load(text) if text else None
        except yaml.YAMLError:
            value = None
        return value if isinstance(value, dict) else {}

    def setup_cluster(self):
        for ns in [SHARED_NS] + [o.ns for o in self.ops]:
            self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            self.kube.create({"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": "default", "namespace": ns}})
        for path in self.tree["manifests"]:
            self.kube.apply_file(path)
        self.config = dict(self.tree["config"])
        for op in self.ops:
            self.kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "addon-operator", "namespace": op.ns},
                              "data": dict(self.config)})
            cm = self.kube.request("GET", self.cm_path(op))
            rv = cm["metadata"]["resourceVersion"]
            op.cm_events.append({"t": time.time(), "type": "INITIAL", "rv": rv, "data": cm.get("data") or {}})
            op.harness_rvs.append(rv)
            path = f"/api/v1/namespaces/{op.ns}/configmaps?fieldSelector=metadata.name%3Daddon-operator"

            def sink(ev, op=op):
                meta = ev["object"].get("metadata", {})
                op.cm_events.append({"t": time.time(), "type": ev["type"], "rv": meta.get("resourceVersion"),
                                     "data": ev["object"].get("data") or {},
                                     "managers": sorted({m.get("manager", "") for m in meta.get("managedFields") or []})})
            threading.Thread(target=self.kube.watch, args=(path, rv, sink, self.stop), daemon=True).start()

    def event(self, name, action=None, settle=None):
        """Plays one scripted event on both operators, waits for both to settle, marks the logs."""
        t0 = time.time()
        if action:
            action()
        idle = wait_idle(self.ops) if settle is None else settle()
        for op in self.ops:
            op.mark(name)
        self.events.append({"name": name, "t0": t0, "t1": time.time(), "idle": idle})
        print(f"  {name}: {'idle' if idle else 'not idle'} after {time.time() - t0:.1f}s", flush=True)

    def play(self):
        go, rs = self.ops
        configs = hook_configs(go)
        objs = watched_objects(configs, known_crds([go.tree_dir] + list(self.tree["manifests"])))
        ready_timeout = float(os.environ.get("READY_TIMEOUT", 90))
        for op in self.ops:
            op.start()
        ready = wait_all(self.ops, Operator.ready, ready_timeout)
        for op in self.ops:
            op.ready_s = time.time() - op.started if op.alive() and op.ready() else None
        self.event("ready")
        if not ready:
            # a tree that never gets ready: give the retries a window, then stop
            self.event("not-ready-window", settle=lambda: (time.sleep(15), False)[1])
            return
        created = []
        for o in objs:
            try:
                self.kube.create(o)
                created.append(o)
            except RuntimeError as e:
                print(f"  cannot create {o['kind']} {o['metadata']['name']}: {e}", flush=True)
        objs = created
        if objs:
            self.event("objects-added", settle=lambda: wait_idle(self.ops))
            for o in objs:
                patch = {"metadata": {"labels": {"vsgo-rev": "2"}, "annotations": {"vsgo-rev": "2"}}}
                if o["kind"] in ("ConfigMap", "Secret"):
                    patch["data"] = {"vsgo": "Mg==" if o["kind"] == "Secret" else "2"}
                self.kube.request("PATCH", self.kube.collection(o) + "/" + o["metadata"]["name"], patch,
                                  "application/merge-patch+json")
            self.event("objects-modified")
            for o in objs:
                if o["kind"] == "Pod":  # no kubelet: a pod goes at once only with no grace period
                    self.kube.request("DELETE", self.kube.collection(o) + "/" + o["metadata"]["name"],
                                      {"gracePeriodSeconds": 0})
                else:
                    self.kube.request("DELETE", self.kube.collection(o) + "/" + o["metadata"]["name"])
            self.event("objects-deleted")
        # config edits
        gschema = os.path.join(go.global_dir, "openapi", "config-values.yaml")
        edit = schema_edit(gschema, self.section("global")) if os.path.exists(gschema) else {"vsgoEdit": 1}
        if edit:
            self.event("config-global", lambda: self.write_config(
                {"global": yaml.safe_dump({**self.section("global"), **edit})}))
        modules = module_names(go)
        target = self.pick_module(go, modules)
        if target:
            mdir = self.module_dir(go, target)
            key = camel(target)
            mschema = os.path.join(mdir, "openapi", "config-values.yaml")
            edit = schema_edit(mschema, self.section(key)) if os.path.exists(mschema) else {"vsgoEdit": 1}
            if edit:
                self.event("config-module", lambda: self.write_config(
                    {key: yaml.safe_dump({**self.section(key), **edit})}))
            self.event("module-disabled", lambda: self.write_config({f"{key}Enabled": "false"}))
            self.event("module-enabled", lambda: self.write_config({f"{key}Enabled": None}))
            # the same with an edit of the module's section in the same write
            section = self.config.get(key)
            edit2 = ((schema_edit(mschema, self.section(key)) if os.path.exists(mschema) else {"vsgoToggle": 1})
                     or {})
            self.event("module-disabled-with-section", lambda: self.write_config(
                {f"{key}Enabled": "false", key: yaml.safe_dump({**self.section(key), **edit2})}))
            self.event("module-enabled-with-section", lambda: self.write_config(
                {f"{key}Enabled": None, key: section}))
        before = dict(self.config)
        self.event("config-invalid-yaml", lambda: self.write_config({"global": "vsgo: [unclosed\n"}))
        self.event("config-restored", lambda: self.write_config({"global": before.get("global")}))
        if target and os.path.exists(os.path.join(self.module_dir(go, target), "openapi", "config-values.yaml")):
            bad = schema_violation(os.path.join(self.module_dir(go, target), "openapi", "config-values.yaml"))
            self.event("config-invalid-schema", lambda: self.write_config(
                {camel(target): yaml.safe_dump({**self.section(camel(target)), **bad})}))
            self.event("config-restored-module", lambda: self.write_config({camel(target): before.get(camel(target))}))
        if schedules(configs):
            self.event("schedule-tick", settle=lambda: self.wait_tick(schedules(configs)))
        if self.tree.get("errors"):
            self.play_errors(configs, target)

    def pick_module(self, op, modules):
        """The module the config events edit: the first one that ran a hook or has a chart."""
        ran = set()
        with open(op.runs, encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                parts = rec.get("hook", "").split("/")
                for m in modules:
                    if any(p == m or p.endswith("-" + m) for p in parts[:-1]):
                        ran.add(m)
        for m in modules:
            if m in ran or os.path.exists(os.path.join(self.module_dir(op, m), "Chart.yaml")):
                return m
        return modules[0] if modules else None

    def module_dir(self, op, name):
        for mdir in op.modules_dirs:
            for entry in os.listdir(mdir):
                if entry == name or (entry.endswith("-" + name) and entry.split("-", 1)[0].isdigit()):
                    return os.path.join(mdir, entry)
        return None

    def wait_tick(self, hooks):
        """Until each operator recorded a run of a scheduled hook after the last mark."""
        end = time.time() + float(os.environ.get("TICK_TIMEOUT", 70))
        start = time.time()
        while time.time() < end:
            if all(self.ran_since(op, hooks, start) for op in self.ops if op.alive()):
                return wait_idle(self.ops)
            time.sleep(0.5)
        return False

    def ran_since(self, op, hooks, t):
        with open(op.runs, encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                if rec.get("hook") in hooks and rec.get("t0", 0) >= t and any(
                        c.get("type") == "Schedule" for c in rec.get("context") or [] if isinstance(c, dict)):
                    return True
        return False

    def play_errors(self, configs, target):
        """A failing hook, then an invalid values patch, on the first module hook; each is
        triggered by a config edit of its module, given a window, then removed."""
        hook = next((h for h, c in configs if h.startswith("modules/") and
                     any(k in c for k in ("beforeHelm", "afterHelm"))), None)
        if not hook:
            return
        mod = hook.split("/")[1]
        mod = mod.split("-", 1)[1] if mod.split("-", 1)[0].isdigit() else mod
        key = camel(mod)
        window = float(os.environ.get("ERROR_WINDOW", 20))

        def inject(kind, content):
            for op in self.ops:
                path = os.path.join(op.ctl, "fail" if kind == "fail" else "patch." + hook.replace("/", "__"))
                if content is None:
                    if os.path.exists(path):
                        os.remove(path)
                else:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(content)
        section = self.section(key)
        n = [0]

        def poke():
            n[0] += 1
            self.write_config({key: yaml.safe_dump(dict(section, **self.edit_for(mod, n[0])))})
        self.event("hook-failing", lambda: (inject("fail", hook + "\n"), poke()),
                   settle=lambda: (time.sleep(window), False)[1])
        self.event("hook-recovered", lambda: inject("fail", None))
        bad = json.dumps([{"op": "add", "path": f"/{key}/vsgoNotInSchema", "value": {"x": 1}}])
        self.event("values-patch-invalid", lambda: (inject("patch", bad), poke()),
                   settle=lambda: (time.sleep(window), False)[1])
        self.event("values-patch-fixed", lambda: inject("patch", None))
        garbage = "this is not JSON\n"
        self.event("values-patch-garbage", lambda: (inject("patch", garbage), poke()),
                   settle=lambda: (time.sleep(window), False)[1])
        self.event("values-patch-garbage-fixed", lambda: inject("patch", None))

    def edit_for(self, mod, n):
        op = self.ops[0]
        mdir = self.module_dir(op, mod)
        schema = os.path.join(mdir, "openapi", "config-values.yaml") if mdir else ""
        if os.path.exists(schema):
            with open(schema, encoding="utf-8") as f:
                props = (yaml.safe_load(f) or {}).get("properties") or {}
            for k, p in props.items():
                if isinstance(p, dict) and p.get("type") == "string" and not p.get("enum"):
                    return {k: f"vsgo-poke-{n}"}
        return {"vsgoPoke": n}

    def collect(self):
        for op in self.ops:
            status, text = op.http("/metrics", timeout=5)
            with open(os.path.join(op.out, "metrics.txt"), "w") as f:
                f.write(text)
            with open(os.path.join(op.out, "queue.json"), "w") as f:
                json.dump(op.debug("/queue/list.json?showEmpty=true"), f)
            with open(os.path.join(op.out, "helm.json"), "w") as f:
                json.dump(self.helm_state(op), f, indent=1, sort_keys=True)

    def helm_state(self, op):
        env = dict(op.env)
        helm = f"{ROOT}/.tools/bin/helm"

        def run(*args):
            r = subprocess.run([helm, *args, "-n", op.ns, "--kubeconfig", self.kubeconfig],
                               capture_output=True, text=True, env=env, timeout=60)
            return r.stdout
        try:
            releases = json.loads(run("list", "-a", "-o", "json") or "[]")
        except ValueError:
            releases = []
        state = {}
        for r in releases:
            name = r["name"]
            try:
                values = json.loads(run("get", "values", name, "-a", "-o", "json") or "null")
            except ValueError:
                values = None
            state[name] = {"status": r.get("status"), "revision": int(r.get("revision", 0)),
                           "chart": r.get("chart"), "values": values,
                           "manifest": run("get", "manifest", name)}
        return state

    def finish(self):
        for op in self.ops:
            op.stop()
        self.stop.set()
        for op in self.ops:
            with open(os.path.join(op.out, "cm.jsonl"), "w") as f:
                for ev in op.cm_events:
                    ev["by"] = "harness" if ev["rv"] in op.harness_rvs else "operator"
                    f.write(json.dumps(ev, sort_keys=True) + "\n")
        meta = {"tree": self.tree, "events": self.events,
                "operators": {o.key: {"namespace": o.ns, "args": o.args, "ready_s": getattr(o, "ready_s", None),
                                      "exit": o.exit, "wrapped": o.wrapped, "tree": o.tree_dir}
                              for o in self.ops}}
        with open(os.path.join(self.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)


def main():
    tid, out, kubeconfig = sys.argv[1:4]
    tree = next((t for t in tree_catalog.catalog(ROOT) if t["id"] == tid), None)
    if tree is None:
        sys.exit(f"no tree {tid}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    run = Run(tree, out, kubeconfig)
    try:
        run.setup_cluster()
        run.play()
        run.collect()
    finally:
        run.finish()


if __name__ == "__main__":
    main()
