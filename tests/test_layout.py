"""The package's layout: no import circle, no module importing the package face, the
decoders in one package, and old import paths that warn and still work.

The import graph is read from the source with ``ast`` (nothing is imported): every
``import``/``from ... import`` statement anywhere in a module, nested ones included
(a deferred import is still a dependency), except those under ``if TYPE_CHECKING``.
Importing ``a.b.c`` also runs the ``__init__`` of ``a.b``, so the edge goes to each
package on the way that the importing module is not itself inside.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "bayesrank"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_block(node) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def imported_names(tree: ast.AST, current: str, is_pkg: bool) -> set[str]:
    """Absolute names of the modules a module's import statements name."""
    out: set[str] = set()

    def visit(node):
        if _type_checking_block(node):
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = current.split(".")
                base = base if is_pkg else base[:-1]
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # may name submodules
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def import_graph(pkg_dir: Path, top: str = "bayesrank") -> dict[str, set[str]]:
    """Module -> the package's modules it imports (packages on the way included)."""
    root = pkg_dir.parent
    files = {module_name(p, root): p for p in pkg_dir.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        edges = set()
        for target in imported_names(tree, name, is_pkg):
            if target != top and not target.startswith(top + "."):
                continue
            parts = target.split(".")
            for k in range(1, len(parts) + 1):
                prefix = ".".join(parts[:k])
                if prefix not in files:
                    continue
                # the packages that contain the importer are already being imported
                if name == prefix or name.startswith(prefix + "."):
                    continue
                edges.add(prefix)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of nodes, or None (iterative DFS)."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {n: WHITE for n in graph}
    for start in sorted(graph):
        if color[start] != WHITE:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        color[start] = GREY
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = BLACK
                stack.pop()
                path.pop()
                continue
            if color.get(nxt, BLACK) == GREY:
                return path[path.index(nxt):] + [nxt]
            if color.get(nxt) == WHITE:
                color[nxt] = GREY
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
    return None


def face_importers(pkg_dir: Path, top: str = "bayesrank") -> list[str]:
    """Modules that import the package face: ``import bayesrank`` (any alias) or
    ``from bayesrank import NAME`` where NAME is not a submodule."""
    root = pkg_dir.parent
    files = {module_name(p, root): p for p in pkg_dir.rglob("*.py")}
    out = []
    for name, path in files.items():
        if name == top:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import) and any(a.name == top for a in node.names):
                out.append(name)
            elif (isinstance(node, ast.ImportFrom) and node.module == top
                  and not node.level
                  and any(f"{top}.{a.name}" not in files for a in node.names)):
                out.append(name)
    return sorted(set(out))


def test_the_package_has_no_import_circle():
    assert find_cycle(import_graph(PKG)) is None


def test_no_module_imports_the_package_face():
    assert face_importers(PKG) == []


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root / "bayesrank"


def test_the_checks_see_a_circle_and_a_face_import(tmp_path):
    # the old studies/obd.py <-> obd_report.py circle, through a deferred import
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "from bayesrank.a import f\n",
        "bayesrank/a.py": "def f():\n    from bayesrank import b\n",
        "bayesrank/b.py": "from bayesrank.a import f\n",
        "bayesrank/studies/__init__.py": "",
        "bayesrank/studies/c.py": "import bayesrank as br\n",
        "bayesrank/studies/d.py": "def g():\n    from bayesrank import __version__\n",
        "bayesrank/studies/e.py": "from bayesrank import a, studies\n",
    })
    graph = import_graph(pkg)
    assert find_cycle(graph) in (["bayesrank.a", "bayesrank.b", "bayesrank.a"],
                                 ["bayesrank.b", "bayesrank.a", "bayesrank.b"])
    assert face_importers(pkg) == ["bayesrank.studies.c", "bayesrank.studies.d"]


def test_a_circle_through_a_package_init_is_seen(tmp_path):
    # importing model.links runs model/__init__, which imports env, which imports links'
    # importer: a circle although no two modules import each other
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/model/__init__.py": "from bayesrank.model.env import Env\n",
        "bayesrank/model/env.py": "from bayesrank.decoding.dp import dp\n",
        "bayesrank/model/links.py": "",
        "bayesrank/decoding/__init__.py": "",
        "bayesrank/decoding/dp.py": "from bayesrank.model.links import Link\n",
    })
    cycle = find_cycle(import_graph(pkg))
    assert cycle is not None and "bayesrank.model" in cycle


def test_type_checking_imports_are_not_edges(tmp_path):
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                          "    from bayesrank.b import B\n",
        "bayesrank/b.py": "from bayesrank.a import A\n",
    })
    assert find_cycle(import_graph(pkg)) is None


def test_decoders_live_in_one_package():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert not [n for n in top if n.startswith("decode")], top
    assert top == ["__init__.py", "__main__.py", "_cache.py", "_moved.py", "_static.py",
                   "_validate.py", "_version.py", "cli.py", "plots.py"]
    for name in ("api", "backward", "bounded", "dense", "dispatch", "graph", "monotone",
                 "native", "prefix", "scores", "search", "separable", "window"):
        assert (PKG / "decoding" / f"{name}.py").is_file(), name
    for name in ("env", "links", "noise", "feedback", "bounds"):
        assert (PKG / "model" / f"{name}.py").is_file(), name


def test_tests_mirror_the_package():
    for sub in ("decoding", "model", "policies", "posteriors", "calibration",
                "experiments", "studies", "datasets", "sensitivity", "ope"):
        assert (PKG / sub).is_dir(), sub
        assert list((ROOT / "tests" / sub).glob("test_*.py")), sub


# ------------------------------------------------------------------ old import paths
OLD_PATHS = [
    ("bayesrank.decode", "best_list", "bayesrank.decoding.api"),
    ("bayesrank.decode", "window_decode", "bayesrank.decoding.window"),
    ("bayesrank.decode", "_max_argmax", "bayesrank.decoding.dense"),
    ("bayesrank.scores", "pair_scores", "bayesrank.decoding.scores"),
    ("bayesrank.decode_monotone", "monotone_decode", "bayesrank.decoding.monotone"),
    ("bayesrank.decode_bound", "ucb_decode", "bayesrank.decoding.bounded"),
    ("bayesrank.decode_prefix", "ucb_backward_prefix", "bayesrank.decoding.prefix"),
    ("bayesrank.decode_native", "available", "bayesrank.decoding.native"),
    ("bayesrank.backward", "pick", "bayesrank.decoding.backward"),
    ("bayesrank.graph", "longest_path", "bayesrank.decoding.graph"),
    ("bayesrank.policies.decoder", "decode_tables", "bayesrank.decoding.dispatch"),
    ("bayesrank.env", "RankingEnv", "bayesrank.model.env"),
    ("bayesrank.links", "get_link", "bayesrank.model.links"),
    ("bayesrank.noise", "Gaussian", "bayesrank.model.noise"),
    ("bayesrank.feedback", "cascade_rewards", "bayesrank.model.feedback"),
    ("bayesrank.bounds", "lemma1_width", "bayesrank.model.bounds"),
]


_PROBE = """
import importlib, json, sys, warnings
out = {}
for old, name, new in json.loads(sys.argv[1]):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        exec(f"from {old} import {name} as obj")
    real_name = name.lstrip("_") if name == "_max_argmax" else name
    real = getattr(importlib.import_module(new), real_name)
    out[f"{old}:{name}"] = {
        "categories": [x.category.__name__ for x in w],
        "messages": [str(x.message) for x in w],
        "files": [x.filename for x in w],
        "same": obj is real,
    }
for attr in ("decode", "scores"):
    import bayesrank as br
    sys.modules.pop(f"bayesrank.{attr}", None)
    br.__dict__.pop(attr, None)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mod = getattr(br, attr)
    out[f"br.{attr}"] = {"categories": [x.category.__name__ for x in w],
                         "messages": [str(x.message) for x in w],
                         "files": [x.filename for x in w],
                         "same": callable(mod.__dir__)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probe():
    """One fresh interpreter imports every old path once (the first import warns)."""
    import json

    res = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(OLD_PATHS)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("old, name, new", OLD_PATHS)
def test_old_import_path_warns_and_gives_the_same_object(probe, old, name, new):
    got = probe[f"{old}:{name}"]
    if old == "bayesrank.decode" and name != "best_list":
        # the module is imported once: only its first import warns
        assert got["categories"] in ([], ["DeprecationWarning"])
    else:
        assert got["categories"] == ["DeprecationWarning"], got
        assert f"{old} is deprecated" in got["messages"][0]
        assert got["files"] == ["<string>"]  # the warning points at the importer
    assert got["same"]


@pytest.mark.parametrize("attr", ["decode", "scores"])
def test_old_attribute_of_the_face_warns(probe, attr):
    got = probe[f"br.{attr}"]
    assert got["categories"] == ["DeprecationWarning"], got
    assert f"bayesrank.{attr} is deprecated" in got["messages"][0]
    assert got["files"] == ["<string>"] and got["same"]


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                          capture_output=True, text=True, timeout=120)


def test_new_paths_import_without_warnings():
    res = _fresh("import bayesrank, bayesrank.decoding, bayesrank.model.env, "
                 "bayesrank.model.noise, bayesrank.decoding.graph, bayesrank.studies.obd")
    assert res.returncode == 0, res.stderr


def test_an_unknown_old_name_is_still_an_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mod = importlib.import_module("bayesrank.decode")
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        mod.not_a_name
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("bayesrank.decode_nothing")
