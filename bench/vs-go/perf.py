#!/usr/bin/env python3
"""Performance of the Go operator and this one on the same API server, one after the other
(bench/vs-go/perf.sh starts the server and calls this).

  perf.py OUT_DIR KUBECONFIG

Rows (each operator in turn, with the same flags; ORDER=go,rs by default):
- the production-shaped tree (bench/watch-memory/tree.sh's: MODULES hooks-only modules watching
  SHARDS shards of N ConfigMaps, full objects kept; CHARTS chart modules in 4 orders; a global
  hook watching all N, lean; plus a latency hook): start to ready, RSS after ready (the operator
  and its helper processes, e.g. the jq sandbox; no hook is running then), RSS after 3,000
  updates and after UPDATES_TOTAL updates of `data.ts` (each reaches MODULES/SHARDS modules'
  hooks: one watch event per binding), the operator's CPU seconds (its own and its helper
  processes', not the hooks') per 1,000 hook runs over those updates;
- event-to-hook latency: LAT_WRITES writes (LAT_RATE a second) of a ConfigMap whose `data.ts` is
  the write's time; a global hook notes, first thing, its start time minus each event's `ts`;
- Helm converge: start to ready of a tree of 20 and of 50 chart modules (one ConfigMap each,
  one to an ORDER by default, HELM_GROUP: the modules of one ORDER run side by side in both operators).

Env: GO_ADDON_OPERATOR, ADDON_OPERATOR_BIN, N (10000), MODULES (60), SHARDS (10), SIZE (1024),
CHARTS (20), UPDATES_ROUND (3000), UPDATES_TOTAL (51000), LAT_WRITES (300), LAT_RATE (20),
HELM_SIZES (20,50), HELM_ROUNDS (1), HELM_GROUP (modules an ORDER, 1; 0: all unnumbered), ORDER (go,rs), ROWS (tree,latency,helm).
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from vsgo import Kube, free_port  # noqa: E402

ENV = os.environ
N = int(ENV.get("N", 10000))
MODULES = int(ENV.get("MODULES", 60))
SHARDS = int(ENV.get("SHARDS", 10))
SIZE = int(ENV.get("SIZE", 1024))
CHARTS = int(ENV.get("CHARTS", 20))
ROUND = int(ENV.get("UPDATES_ROUND", 3000))
TOTAL = int(ENV.get("UPDATES_TOTAL", 51000))
LAT_WRITES = int(ENV.get("LAT_WRITES", 300))
LAT_RATE = float(ENV.get("LAT_RATE", 20))
HELM_SIZES = [int(x) for x in ENV.get("HELM_SIZES", "20,50").split(",") if x]
HELM_ROUNDS = int(ENV.get("HELM_ROUNDS", 1))
HELM_GROUP = int(ENV.get("HELM_GROUP", 1))
ORDER = ENV.get("ORDER", "go,rs").split(",")
ROWS = ENV.get("ROWS", "tree,latency,helm").split(",")
BINS = {"go": ENV["GO_ADDON_OPERATOR"],
        "rs": ENV.get("ADDON_OPERATOR_BIN", f"{ROOT}/target/release/addon-operator")}
TICKS = os.sysconf("SC_CLK_TCK")


def hook(path, config, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\nif [ \"$1\" = --config ]; then echo '%s'; exit 0; fi\n%s\n" % (json.dumps(config), body))
    os.chmod(path, 0o755)


def production_tree(d):
    os.makedirs(f"{d}/global-hooks", exist_ok=True)
    os.makedirs(f"{d}/modules", exist_ok=True)
    only_read = 'exec wc -c "$BINDING_CONTEXT_PATH" > /dev/null'
    hook(f"{d}/global-hooks/all", {"configVersion": "v1", "kubernetes": [{
        "name": "all", "kind": "ConfigMap", "namespace": {"nameSelector": {"matchNames": ["bench"]}},
        "jqFilter": ".metadata.name", "keepFullObjectsInMemory": False}]}, only_read)
    hook(f"{d}/global-hooks/latency", {"configVersion": "v1", "kubernetes": [{
        "name": "lat", "kind": "ConfigMap", "namespace": {"nameSelector": {"matchNames": ["lat"]}},
        "executeHookOnSynchronization": False, "jqFilter": ".data.ts"}]},
        't=$(date +%s%N)\njq -r \'.[] | select(.type == "Event") | .object.data.ts\' "$BINDING_CONTEXT_PATH" |\n'
        '  while read -r ts; do [ "$ts" = null ] || echo $((t - ts)); done >> "$VSGO_LAT"')
    lines = []
    for m in range(MODULES):
        md = f"{d}/modules/{100 + m:03d}-watch{m}"
        os.makedirs(f"{md}/hooks")
        hook(f"{md}/hooks/h", {"configVersion": "v1", "kubernetes": [{
            "name": "shard", "kind": "ConfigMap", "namespace": {"nameSelector": {"matchNames": ["bench"]}},
            "labelSelector": {"matchLabels": {"shard": str(m % SHARDS)}},
            "jqFilter": "{name: .metadata.name, ts: .data.ts}"}]}, only_read)
        lines.append(f"watch{m}Enabled: true")
    for c in range(CHARTS):
        chart_module(f"{d}/modules/{200 + (c % 4) * 10:03d}-chart{c}", f"chart{c}")
        lines.append(f"chart{c}Enabled: true")
    with open(f"{d}/modules/values.yaml", "w") as f:
        f.write("\n".join(lines) + "\n")


def chart_module(md, name):
    os.makedirs(f"{md}/templates")
    with open(f"{md}/Chart.yaml", "w") as f:
        f.write(f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    with open(f"{md}/templates/cm.yaml", "w") as f:
        f.write('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  a: "1"\n')


def helm_tree(d, n):
    """n chart modules, HELM_GROUP of them in each ORDER (they run side by side within it). One by
    one by default: the Go operator v1.24.6 did not finish a converge of 20 unnumbered modules (16
    of 20 done, then its ParallelModuleRun waited until the 600 s limit), nor of 50 in ORDERs of 5
    (2 done after 3.5 minutes); it did of 20 in ORDERs of 5 once."""
    os.makedirs(f"{d}/global-hooks", exist_ok=True)
    os.makedirs(f"{d}/modules", exist_ok=True)
    for i in range(n):
        order = 100 + 10 * (i // HELM_GROUP) if HELM_GROUP else None
        dir_name = f"{order:03d}-mod{i:02d}" if order else f"mod{i:02d}"
        chart_module(f"{d}/modules/{dir_name}", f"mod{i:02d}")
    with open(f"{d}/modules/values.yaml", "w") as f:
        f.write("".join(f"mod{i:02d}Enabled: true\n" for i in range(n)))


# --- process accounting

def descendants(pid):
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            kids.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def rss_kb(pid):
    total = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_s(pid, children=False):
    """utime + stime of the operator and its live helper processes (not the reaped hooks'); with
    children, also what the processes they reaped used (hooks, helm)."""
    total = 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            if children:
                total += int(fields[13]) + int(fields[14])
        except OSError:
            pass
    return total / TICKS


class Op:
    def __init__(self, key, tree, kubeconfig, out, ns):
        self.key, self.tree, self.ns = key, tree, ns
        self.port = free_port()
        self.dir = out
        os.makedirs(out, exist_ok=True)
        self.lat = f"{out}/latency.txt"
        open(self.lat, "w").close()
        self.socket = os.path.join(tempfile.mkdtemp(prefix="vsgo-perf-"), "debug.socket")
        args = [BINS[key], "start", "--modules-dir", f"{tree}/modules", "--global-hooks-dir", f"{tree}/global-hooks",
                "--namespace", ns, "--config-map", "addon-operator", "--kube-config", kubeconfig,
                "--tmp-dir", f"{out}/tmp", "--prometheus-listen-address", "127.0.0.1",
                "--prometheus-listen-port", str(self.port), "--debug-unix-socket", self.socket,
                "--log-level", "error", "--log-type", "json"]
        env = dict(ENV, VSGO_LAT=self.lat, PATH=f"{ROOT}/.tools/bin:{ENV['PATH']}", KUBECONFIG=kubeconfig)
        self.log = open(f"{out}/log", "w")
        self.t0 = time.time()
        self.proc = subprocess.Popen(args, cwd=tree, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except Exception:  # noqa: BLE001
            return None, ""

    def wait_ready(self, limit=float(ENV.get("READY_LIMIT", 600))):
        end = time.time() + limit
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.key} exited {self.proc.returncode}; see {self.dir}/log")
            if self.get("/readyz")[0] == 200:
                return time.time() - self.t0
            time.sleep(0.02)
        raise RuntimeError(f"{self.key} not ready in {limit}s")

    def hook_runs(self):
        text = self.get("/metrics")[1]
        total = 0.0
        for line in text.splitlines():
            name = line.split("{", 1)[0].split(" ", 1)[0]
            if name in ("addon_operator_module_hook_run_seconds_count", "addon_operator_global_hook_run_seconds_count"):
                total += float(line.rsplit(" ", 1)[1])
        return int(total)

    def queued(self):
        try:
            out = subprocess.run(["curl", "-sf", "--max-time", "10", "--unix-socket", self.socket,
                                  "http://unix/queue/list.json?showEmpty=true"], capture_output=True, timeout=15)
            return json.loads(out.stdout)["summary"]["totalTasks"]
        except Exception:  # noqa: BLE001
            return None

    def wait_idle(self, need=2, limit=3600):
        """Until no hook run ended for `need` one-second samples and every queue is empty."""
        end = time.time() + limit
        last, still = self.hook_runs(), 0
        while still < need and time.time() < end:
            time.sleep(1)
            now = self.hook_runs()
            still = still + 1 if now == last and self.queued() == 0 else 0
            last = now
        return last

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def shards(cmd, *args):
    url = KUBE.url
    out = subprocess.run(["python3", f"{ROOT}/bench/watch-memory/shards.py", cmd, url, *map(str, args)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"shards.py {cmd} failed: {out.stderr.strip()[-2000:]}")
    return out.stdout.strip()


def namespace(name, config_map=False):
    KUBE.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    if config_map:
        KUBE.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "addon-operator", "namespace": name},
                     "data": {"global": "{}"}})


def tree_row(key, out, kubeconfig, result):
    ns = f"ops-{key}"
    namespace(ns, True)
    op = Op(key, f"{out}/prod-tree", kubeconfig, f"{out}/{key}-tree", ns)
    r = result.setdefault(key, {})
    try:
        r["ready_s"] = op.wait_ready()
        op.wait_idle()
        r["rss_ready_kb"] = rss_kb(op.proc.pid)
        runs0, cpu0, all0 = op.hook_runs(), cpu_s(op.proc.pid), cpu_s(op.proc.pid, True)
        t_updates = time.time()
        done, rnd = 0, 0
        while done < TOTAL:
            rnd += 1
            t = time.time()
            shards("update", "bench", N, ROUND, rnd + (1000 if key == "rs" else 0))
            done += ROUND
            runs = op.wait_idle()
            print(f"  {key}: {done} updates, {runs - runs0} hook runs, RSS {rss_kb(op.proc.pid)} kB, "
                  f"round {time.time() - t:.1f}s", flush=True)
            if done == ROUND:
                r["rss_3k_kb"] = rss_kb(op.proc.pid)
        r["rss_total_kb"] = rss_kb(op.proc.pid)
        r["updates"] = done
        r["hook_runs"] = op.hook_runs() - runs0
        r["cpu_s"] = cpu_s(op.proc.pid) - cpu0
        r["cpu_all_s"] = cpu_s(op.proc.pid, True) - all0
        r["updates_wall_s"] = time.time() - t_updates
        r["events"] = done * (MODULES // SHARDS)
        r["cpu_per_1000_runs"] = r["cpu_s"] / max(r["hook_runs"], 1) * 1000
        r["cpu_per_1000_events"] = r["cpu_s"] / max(r["events"], 1) * 1000
        if "latency" in ROWS:
            latency(op, r)
    finally:
        op.stop()


def latency(op, r):
    KUBE.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"lat-{op.key}", "namespace": "lat"},
                 "data": {"ts": "null"}})
    op.wait_idle()
    path = f"/api/v1/namespaces/lat/configmaps/lat-{op.key}"
    gap = 1 / LAT_RATE
    nxt = time.time()
    for _ in range(LAT_WRITES):
        KUBE.request("PATCH", path, {"data": {"ts": str(time.time_ns())}}, "application/merge-patch+json")
        nxt += gap
        time.sleep(max(0, nxt - time.time()))
    op.wait_idle()
    with open(op.lat) as f:
        lat = sorted(int(x) / 1e6 for x in f if x.strip())
    r["latency_n"] = len(lat)
    if lat:
        r["latency_p50_ms"] = lat[len(lat) // 2]
        r["latency_p99_ms"] = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        r["latency_mean_ms"] = statistics.mean(lat)
    print(f"  {op.key}: latency of {len(lat)} events: p50 {r.get('latency_p50_ms', 0):.1f} ms, "
          f"p99 {r.get('latency_p99_ms', 0):.1f} ms", flush=True)


def helm_row(key, out, kubeconfig, result, n, rnd):
    ns = f"helm{n}-{rnd}-{key}"
    namespace(ns, True)
    op = Op(key, f"{out}/helm-tree-{n}", kubeconfig, f"{out}/{key}-helm{n}-{rnd}", ns)
    try:
        s = op.wait_ready()
        result.setdefault(key, {}).setdefault(f"helm{n}_s", []).append(s)
        print(f"  {key}: {n} chart modules ready in {s:.2f}s", flush=True)
    except RuntimeError as e:
        result.setdefault(key, {}).setdefault("failures", []).append(f"helm{n} round {rnd}: {e}")
        print(f"  {key}: {n} chart modules: {e}", flush=True)
    finally:
        op.stop()


def main():
    global KUBE
    out, kubeconfig = sys.argv[1:3]
    KUBE = Kube(kubeconfig)
    result = {}
    if "tree" in ROWS:
        shutil.rmtree(f"{out}/prod-tree", ignore_errors=True)
        production_tree(f"{out}/prod-tree")
        namespace("bench")
        namespace("lat")
        listing = shards("create", "bench", N, SIZE, SHARDS)
        print(f"{N} ConfigMaps of ~{SIZE} B ({listing} B listing), {MODULES} modules on {SHARDS} shards, "
              f"{CHARTS} charts", flush=True)
        for key in ORDER:
            try:
                tree_row(key, out, kubeconfig, result)
            except RuntimeError as e:
                result.setdefault(key, {}).setdefault("failures", []).append(f"tree: {e}")
                print(f"  {key}: {e}", flush=True)
            save(out, result)
    if "helm" in ROWS:
        for n in HELM_SIZES:
            shutil.rmtree(f"{out}/helm-tree-{n}", ignore_errors=True)
            helm_tree(f"{out}/helm-tree-{n}", n)
        for rnd in range(HELM_ROUNDS):
            for n in HELM_SIZES:
                for key in ORDER:
                    helm_row(key, out, kubeconfig, result, n, rnd)
                    save(out, result)
    save(out, result)
    report(result)


def save(out, result):
    with open(f"{out}/perf.json", "w") as f:
        json.dump(result, f, indent=1)


def report(result):
    def fmt(v, unit=""):
        if v is None:
            return "–"
        if isinstance(v, list):
            v = statistics.median(v)
        return f"{v:.2f}{unit}" if isinstance(v, float) else f"{v}{unit}"
    rows = [("start to ready, production-shaped tree (s)", "ready_s", 1),
            ("RSS after ready (MB)", "rss_ready_kb", 1 / 1024),
            (f"RSS after {ROUND:,} updates (MB)", "rss_3k_kb", 1 / 1024),
            (f"RSS after {TOTAL:,} updates (MB)", "rss_total_kb", 1 / 1024),
            ("hook runs for the updates' events", "hook_runs", 1),
            ("CPU s per 1,000 hook runs (the operator's own)", "cpu_per_1000_runs", 1),
            ("CPU s per 1,000 watch events (the operator's own)", "cpu_per_1000_events", 1),
            ("CPU s for all the updates, the operator's own", "cpu_s", 1),
            ("CPU s for all the updates, with hooks and helm", "cpu_all_s", 1),
            ("wall s for all the updates (writes and until idle)", "updates_wall_s", 1),
            ("event-to-hook latency p50 (ms)", "latency_p50_ms", 1),
            ("event-to-hook latency p99 (ms)", "latency_p99_ms", 1)]
    rows += [(f"Helm converge, {n} chart modules (s)", f"helm{n}_s", 1) for n in HELM_SIZES]
    go, rs = result.get("go", {}), result.get("rs", {})
    print()
    print("| row | Go operator | this | this / Go |")
    print("|---|---:|---:|---:|")
    for label, key, scale in rows:
        a, b = go.get(key), rs.get(key)
        if isinstance(a, list):
            a = statistics.median(a)
        if isinstance(b, list):
            b = statistics.median(b)
        a = a * scale if a is not None else None
        b = b * scale if b is not None else None
        ratio = f"{b / a:.2f}" if a and b is not None else "–"
        if key == "hook_runs":
            a, b = (int(a) if a is not None else None), (int(b) if b is not None else None)
        print(f"| {label} | {fmt(a)} | {fmt(b)} | {ratio} |")
    for key, name in (("go", "Go operator"), ("rs", "this")):
        for failure in result.get(key, {}).get("failures", []):
            print(f"{name}: {failure}")


if __name__ == "__main__":
    main()
