"""The module trees the side-by-side harness runs (bench/vs-go): this repository's examples/, and
the upstream trees found in checkouts given by path (never copied into this repository).

A tree is a dict:
  id        a short name (`repo/examples/demo`, `ao/examples/101-module-sysctl-tuner`, ...)
  root      the directory copied for each operator
  modules   the modules directories, relative to root (joined with `:`)
  global    the global hooks directory, relative to root
  config    the initial data of the config ConfigMap (key -> YAML text)
  manifests files applied to the API server before the operators start (CRDs the tree needs)
  errors    true: the error scenario runs on this tree too
  variant   a change made to both copies before they start (see prepare.py)
"""
import glob
import os

import yaml


def _config_map_data(path):
    """The `data` of a ConfigMap manifest (or of a local config file, `key: text` at top level)."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f.read()) or {}
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        doc = doc.get("data") or {}
    return {k: (v if isinstance(v, str) else yaml.safe_dump(v)) for k, v in doc.items()}


def _tree(tid, root, modules="modules", global_="global-hooks", config=None, **extra):
    t = {"id": tid, "root": root, "modules": modules, "global": global_, "config": config or {},
         "manifests": [], "errors": False, "variant": None}
    t.update(extra)
    return t


def repo_trees(repo):
    ex = os.path.join(repo, "examples")
    trees = [
        _tree("repo/examples/demo", f"{ex}/demo", config=_config_map_data(f"{ex}/demo/config.yaml"),
              errors=True),
        _tree("repo/examples/crds", f"{ex}/crds"),
        _tree("repo/examples/guarded", f"{ex}/guarded",
              config=_config_map_data(f"{ex}/guarded/config.yaml")),
        _tree("repo/examples/webhooks", f"{ex}/webhooks",
              manifests=[f"{ex}/webhooks/crontab/crd.yaml"]),
    ]
    # the error cases that need a tree change before start
    trees.append(_tree("repo/examples/demo+broken-hook-config", f"{ex}/demo",
                       config=_config_map_data(f"{ex}/demo/config.yaml"),
                       variant={"broken-config": "modules/010-echo-server/hooks/prepare-greeting"}))
    return trees


def addon_operator_trees(src):
    """flant/addon-operator: examples/ and the testdata trees its Go tests start."""
    trees = []
    ex = os.path.join(src, "examples")
    for d in sorted(glob.glob(f"{ex}/*/")):
        name = os.path.basename(d.rstrip("/"))
        cm = (glob.glob(f"{d}addon-operator-cm.yaml") + glob.glob(f"{d}deploy/cm.yaml") + [""])[0]
        if name.startswith("700-"):
            trees.append(_tree(f"ao/examples/{name}", d, skip="Go hooks compiled into the Go binary"))
        elif name == "202-module-symlinks":
            trees.append(_tree(f"ao/examples/{name}", d, modules="module_dir_1:module_dir_2",
                               config=_config_map_data(cm)))
        else:
            trees.append(_tree(f"ao/examples/{name}", d, config=_config_map_data(cm)))
    for base in ("pkg/addon-operator/testdata", "pkg/module_manager/testdata"):
        for d in sorted(glob.glob(f"{src}/{base}/*/")):
            name = os.path.basename(d.rstrip("/"))
            global_ = "global" if os.path.isdir(f"{d}global") else "global-hooks"
            if name == "loader":
                trees.append(_tree(f"ao/{base}/{name}", d, modules=".", global_="."))
                continue
            trees.append(_tree(f"ao/{base}/{name}", d, global_=global_,
                               config=_config_map_data(f"{d}config_map.yaml")))
    for base in ("pkg/module_manager/scheduler/testdata",
                 "pkg/module_manager/scheduler/extenders/script_enabled/testdata",
                 "pkg/module_manager/loader/fs/testdata/module_loader/modules"):
        if os.path.isdir(f"{src}/{base}"):
            trees.append(_tree(f"ao/{base}", f"{src}/{base}", modules=".", global_="global-hooks"))
    return trees


def shell_operator_trees(src):
    """flant/shell-operator: each example's hooks/ as the global hooks of a tree with no modules."""
    trees = []
    for d in sorted(glob.glob(f"{src}/examples/*/")):
        name = os.path.basename(d.rstrip("/"))
        if not os.path.isdir(f"{d}hooks"):
            continue
        crds = [p for p in sorted(glob.glob(f"{d}*.yaml")) if "CustomResourceDefinition" in open(p).read()]
        trees.append(_tree(f"so/examples/{name}", d, modules="modules", global_=".", manifests=crds))
    return trees


def catalog(repo):
    trees = repo_trees(repo)
    if os.environ.get("GO_ADDON_OPERATOR_SRC"):
        trees += addon_operator_trees(os.environ["GO_ADDON_OPERATOR_SRC"])
    if os.environ.get("SHELL_OPERATOR_SRC"):
        trees += shell_operator_trees(os.environ["SHELL_OPERATOR_SRC"])
    return trees
