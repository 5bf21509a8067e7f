#!/usr/bin/env python3
"""The recording hook of the side-by-side harness (bench/vs-go).

prepare.py moves every hook and `enabled` script of a tree copy to a hidden sibling
(`.vsgo.<name>`, skipped by both operators' discovery) and puts a shim in its place that runs
this file. A `--config` call runs the original as is. Any other call records what the operator
handed over (binding context, values, config values, the contract's environment), runs the
original (or fails it or rewrites its values patch, as $VSGO_CTL says), records what it wrote,
and appends one JSON line to $VSGO_LOG.

Environment (set by the harness, passed through by both operators to hooks):
  VSGO_LOG   the per-operator log of runs
  VSGO_TREE  the root of this operator's tree copy (hook names are paths relative to it)
  VSGO_CTL   a directory of injections: `fail` (lines of hook names that exit 1 without
             running), `patch.<hook name with / as __>` (written over $VALUES_JSON_PATCH_PATH
             after the hook ran)
"""
import fcntl
import json
import os
import subprocess
import sys
import time

CONTRACT = [
    "BINDING_CONTEXT_PATH", "CONFIG_VALUES_PATH", "VALUES_PATH", "CONFIG_VALUES_JSON_PATCH_PATH",
    "VALUES_JSON_PATCH_PATH", "METRICS_PATH", "KUBERNETES_PATCH_PATH", "MODULE_ENABLED_RESULT",
    "WORKING_DIR",
]
INPUTS = {"context": "BINDING_CONTEXT_PATH", "values": "VALUES_PATH", "config": "CONFIG_VALUES_PATH"}
OUTPUTS = {
    "valuesPatch": "VALUES_JSON_PATCH_PATH", "configPatch": "CONFIG_VALUES_JSON_PATCH_PATH",
    "kubePatch": "KUBERNETES_PATCH_PATH", "metrics": "METRICS_PATH",
    "enabledResult": "MODULE_ENABLED_RESULT",
}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}


def main():
    shim = os.path.abspath(sys.argv[1])
    args = sys.argv[2:]
    orig = os.path.join(os.path.dirname(shim), ".vsgo." + os.path.basename(shim))
    cmd = ([sys.executable, orig] if orig.endswith(".py") else [orig]) + args
    # `--config`, and the `hook list` / `hook config` probes for batch hooks: not runs
    if args or "VSGO_LOG" not in os.environ:
        os.execv(cmd[0], cmd)
    tree = os.environ.get("VSGO_TREE", "/")
    name = os.path.relpath(shim, tree)
    kind = "enabled" if os.path.basename(shim) == "enabled" and "/hooks/" not in "/" + name else "hook"
    rec = {"hook": name, "kind": kind, "t0": time.time(), "args": args}
    rec["env"] = sorted(k for k in CONTRACT if k in os.environ)
    for key, var in INPUTS.items():
        if var in os.environ:
            rec[key] = read(os.environ[var])
    ctl = os.environ.get("VSGO_CTL", "")
    failing = set()
    try:
        with open(os.path.join(ctl, "fail"), encoding="utf-8") as f:
            failing = {line.strip() for line in f if line.strip()}
    except OSError:
        pass
    if name in failing:
        rec["injected"] = "fail"
        print(f"vsgo: injected failure of {name}", file=sys.stderr)
        rc = 1
    else:
        rc = subprocess.run(cmd).returncode
        patch = os.path.join(ctl, "patch." + name.replace("/", "__"))
        if os.path.exists(patch) and "VALUES_JSON_PATCH_PATH" in os.environ:
            rec["injected"] = "patch"
            with open(patch, encoding="utf-8") as src, open(os.environ["VALUES_JSON_PATCH_PATH"], "w") as dst:
                dst.write(src.read())
    for key, var in OUTPUTS.items():
        if var in os.environ:
            value = read(os.environ[var])
            if value not in (None, {"text": ""}):
                rec[key] = value
    rec["exit"] = rc
    rec["t1"] = time.time()
    line = json.dumps(rec, sort_keys=True) + "\n"
    with open(os.environ["VSGO_LOG"], "a", encoding="utf-8") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.write(line)
    sys.exit(rc)


main()
