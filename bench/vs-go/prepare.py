"""Copies a module tree for one operator and puts the recording shim (record.py) in front of every
hook and `enabled` script (bench/vs-go)."""
import os
import shutil
import stat

SKIP_EXT = (".yaml", ".yml", ".json", ".md", ".txt")
SH_SHIM = '#!/bin/sh\nexec python3 "$VSGO_RECORDER" "$0" "$@"\n'
PY_SHIM = ('#!/usr/bin/env python3\nimport os, sys\n'
           'os.execvp("python3", ["python3", os.environ["VSGO_RECORDER"], os.path.abspath(__file__)] + sys.argv[1:])\n')
BROKEN_CONFIG = '#!/bin/sh\nif [ "$1" = --config ]; then echo \'{"configVersion": "v9", "beforeHelm": "first"}\'; fi\n'


def _executable(path):
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_mode & 0o111


def _wrap(path, dest):
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(dest) + os.sep):
        return None  # a link out of the copy: never change what it points at
    d, name = os.path.split(real)
    os.rename(real, os.path.join(d, ".vsgo." + name))
    with open(real, "w", encoding="utf-8") as f:
        f.write(PY_SHIM if name.endswith(".py") else SH_SHIM)
    os.chmod(real, 0o755)
    return real


def _hooks_under(top, excluded):
    found = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
        dirnames[:] = sorted(n for n in dirnames if not n.startswith(".") and n not in excluded)
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            if n.startswith(".") or n.endswith(SKIP_EXT) or not _executable(p):
                continue
            found.append(p)
    return found


def prepare(tree, dest):
    """Copies tree["root"] to dest, wraps its hooks; returns (modules dirs, global dir), absolute."""
    shutil.copytree(tree["root"], dest, symlinks=True)
    global_dir = os.path.normpath(os.path.join(dest, tree["global"]))
    modules_dirs = [os.path.normpath(os.path.join(dest, m)) for m in tree["modules"].split(":")]
    for d in [global_dir] + modules_dirs:
        os.makedirs(d, exist_ok=True)
    # The Go operator (v1.24.6) never gets ready on a tree without modules ("graph is empty");
    # such trees get an empty module in both copies so that the rest can be compared.
    if not any(e for d in modules_dirs for e in os.listdir(d)
               if not e.startswith(".") and os.path.isdir(os.path.join(d, e)) and d != global_dir):
        os.makedirs(os.path.join(modules_dirs[0], "vsgo-placeholder"))
    search = os.path.join(global_dir, "hooks") if os.path.isdir(os.path.join(global_dir, "hooks")) else global_dir
    wrapped = set()
    hooks = _hooks_under(search, {"lib"}) if global_dir not in modules_dirs else []
    for mdir in modules_dirs:
        for entry in sorted(os.listdir(mdir)):
            mpath = os.path.join(mdir, entry)
            if entry.startswith(".") or not os.path.isdir(mpath):
                continue
            if _executable(os.path.join(mpath, "enabled")):
                hooks.append(os.path.join(mpath, "enabled"))
            if os.path.isdir(os.path.join(mpath, "hooks")):
                hooks += _hooks_under(os.path.join(mpath, "hooks"), {"lib", "venv"})
    for h in hooks:
        if os.path.realpath(h) not in wrapped:
            w = _wrap(h, dest)
            if w:
                wrapped.add(w)
    variant = tree.get("variant") or {}
    if "broken-config" in variant:
        target = os.path.join(dest, variant["broken-config"])
        orig = os.path.join(os.path.dirname(target), ".vsgo." + os.path.basename(target))
        with open(orig, "w", encoding="utf-8") as f:
            f.write(BROKEN_CONFIG)
        os.chmod(orig, 0o755)
    return modules_dirs, global_dir, len(wrapped)
