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
from pathlib import Path

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
        "bayesrank/model/__init__.py": "from bayesrank.simulation.env import Env\n",
        "bayesrank/simulation/env.py": "from bayesrank.decoding.dp import dp\n",
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


#: The layers, lowest first (docs/design-choices.md, DESIGN.md): a module may import its
#: own layer and those below it, never one above. ``bayesrank._validate`` and the other
#: private top-level modules sit under everything.
LAYERS = [
    ("bayesrank._validate", "bayesrank._version", "bayesrank._static", "bayesrank._cache",
     "bayesrank._progress"),
    # the theorems (bounds and Lemma 1's width, which the UCB policies call) beside
    # the model they are stated in
    ("bayesrank.model", "bayesrank.datasets", "bayesrank.theorems"),
    ("bayesrank.decoding",),
    ("bayesrank.posteriors",),
    # logs and estimators read a policy only through its methods (select_batch), so
    # they sit under the policies, whose fit(log) reads a log
    ("bayesrank.ope",),
    ("bayesrank.policies",),
    ("bayesrank.simulation",),
    ("bayesrank.studies",),
    ("bayesrank.cli", "bayesrank.__main__", "bayesrank"),
]

#: In-function imports of bayesrank modules: only the few that must wait (the CLI's
#: fast start, NumPyro or xarray kept out until used, x64 set before a study's modules
#: load), each with its reason in a ``# deferred: ...`` comment on the statement. The
#: cap is today's count; it may only go down.
MAX_DEFERRED = 16


def layer_of(module: str) -> int:
    best, depth = None, -1
    for i, group in enumerate(LAYERS):
        for root in group:
            if (module == root or module.startswith(root + ".")) and len(root) > depth:
                best, depth = i, len(root)
    if best is None:
        raise AssertionError(f"{module}: not in any layer of LAYERS")
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    return sorted(
        (a, b) for a, targets in graph.items() for b in targets
        if layer_of(b) > layer_of(a)
    )


def deferred_imports(pkg_dir: Path, top: str = "bayesrank") -> list[str]:
    """``module:line`` of every import of a ``top`` module inside a function body."""
    out = []
    for path in sorted(pkg_dir.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                mod = (node.module if isinstance(node, ast.ImportFrom) and not node.level
                       else None)
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if (mod and (mod == top or mod.startswith(top + "."))) or any(
                    n == top or n.startswith(top + ".") for n in names
                ):
                    out.append(f"{module_name(path, pkg_dir.parent)}:{node.lineno}")
    return sorted(set(out))


def private_imports_across_packages(pkg_dir: Path, top: str = "bayesrank") -> list[str]:
    """``importer -> module.name`` where a module imports a private name (``_x``) of a
    module in another package (its own package's private names are its business)."""
    root = pkg_dir.parent
    out = []
    for path in sorted(pkg_dir.rglob("*.py")):
        me = module_name(path, root)
        my_pkg = me if path.name == "__init__.py" else me.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module and not node.level
                    and node.module.startswith(top + ".")):
                continue
            their_pkg = node.module.rpartition(".")[0]
            if my_pkg in (their_pkg, node.module) or node.module.split(".")[1].startswith("_"):
                continue  # the same package, or a private top-level helper module
            out += [f"{me} -> {node.module}.{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_module_imports_a_layer_above_its_own():
    assert upward_imports(import_graph(PKG)) == []


def test_no_two_core_packages_import_each_other():
    graph = import_graph(PKG)
    pkg = {n: ".".join(n.split(".")[:2]) for n in graph}
    edges = {(pkg[a], pkg[b]) for a, bs in graph.items() for b in bs if pkg[a] != pkg[b]}
    assert sorted((a, b) for a, b in edges if (b, a) in edges) == []


def test_no_private_name_is_imported_from_another_package():
    assert private_imports_across_packages(PKG) == []


def deferred_without_reason(pkg_dir: Path, top: str = "bayesrank") -> list[str]:
    """``module:line`` of the in-function imports whose statement carries no
    ``# deferred: <reason>`` comment."""
    root = pkg_dir.parent
    out = []
    for where in deferred_imports(pkg_dir, top):
        module, line = where.rsplit(":", 1)
        parts = module.split(".")
        path = root.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            path = root.joinpath(*parts, "__init__.py")
        lines = path.read_text().splitlines()
        start = int(line) - 1
        end = start
        while end < len(lines) and "(" in lines[start] and ")" not in lines[end]:
            end += 1
        if not any("# deferred: " in x for x in lines[start:end + 1]):
            out.append(where)
    return out


def test_in_function_imports_stay_under_the_cap_each_with_its_reason():
    found = deferred_imports(PKG)
    assert len(found) <= MAX_DEFERRED, found
    assert deferred_without_reason(PKG) == []


def test_the_layer_checks_catch_what_they_forbid(tmp_path):
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/model/__init__.py": "",
        "bayesrank/model/links.py": "from bayesrank.policies.ts import RankTS\n"
                                    "from bayesrank.decoding.x import _helper\n",
        "bayesrank/policies/__init__.py": "",
        "bayesrank/policies/ts.py": "def f():\n    from bayesrank.model import links\n"
                                    "def g():\n    from bayesrank.model import (  "
                                    "# deferred: a reason\n        links)\n",
        "bayesrank/decoding/__init__.py": "",
        "bayesrank/decoding/x.py": "",
    })
    graph = import_graph(pkg)
    assert set(upward_imports(graph)) == {
        ("bayesrank.model.links", "bayesrank.policies"),
        ("bayesrank.model.links", "bayesrank.policies.ts"),
        ("bayesrank.model.links", "bayesrank.decoding"),
        ("bayesrank.model.links", "bayesrank.decoding.x"),
    }
    assert private_imports_across_packages(pkg) == [
        "bayesrank.model.links -> bayesrank.decoding.x._helper"]
    assert deferred_imports(pkg) == ["bayesrank.policies.ts:2", "bayesrank.policies.ts:4"]
    assert deferred_without_reason(pkg) == ["bayesrank.policies.ts:2"]


def test_the_house_layout():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert not [n for n in top if n.startswith("decode")], top
    assert top == ["__init__.py", "__main__.py", "_cache.py", "_progress.py", "_static.py",
                   "_validate.py", "_version.py", "cli.py", "theorems.py"]
    for name in ("api", "backward", "bounded", "dense", "dispatch", "graph", "monotone",
                 "native", "prefix", "search", "separable", "window"):
        assert (PKG / "decoding" / f"{name}.py").is_file(), name
    for name in ("links", "noise", "feedback", "scores"):
        assert (PKG / "model" / f"{name}.py").is_file(), name
    for name in ("env", "play", "simulate"):
        assert (PKG / "simulation" / f"{name}.py").is_file(), name
    apps = sorted(p.name for p in (PKG / "studies").iterdir() if p.is_dir()
                  and p.name != "__pycache__")
    assert apps == ["calibration", "click_models", "obd", "ope", "paper", "sensitivity"]


def test_tests_mirror_the_package():
    subs = sorted(
        p.parent.relative_to(PKG).as_posix() for p in PKG.rglob("*.py")
        if p.parent != PKG and "_vendor" not in p.parts and "__pycache__" not in p.parts
        and any(q.name != "__init__.py" for q in p.parent.glob("*.py")))
    assert {"posteriors/conjugate", "posteriors/laplace", "posteriors/nuts",
            "posteriors/latent", "policies/parts", "policies/runtime",
            "policies/click"} <= set(subs)
    for sub in subs:
        assert list((ROOT / "tests" / sub).glob("test_*.py")), sub


def test_only_the_cli_imports_matplotlib_free_code_paths():
    """matplotlib is imported by the studies only (their plots), never by the core."""
    users = []
    for path in sorted(PKG.rglob("*.py")):
        text = path.read_text()
        if "import matplotlib" in text or "from matplotlib" in text:
            users.append(module_name(path, ROOT))
    assert users and all(u.startswith("bayesrank.studies.") for u in users), users


#: Methods that are part of a protocol (a posterior model's ``check_rewards`` and
#: ``check_positions``, a noise family's ``check_link``): other code calls them by name
#: (``getattr(model, "check_rewards")``), so user classes define them too.
PROTOCOL_CHECKS = frozenset({"check_rewards", "check_positions", "check_link"})
#: Public functions of the documented API (docs/api/*.rst) named before the rule; they
#: check a whole object of their module (a log Dataset, a study config) with
#: ``bayesrank._validate``'s primitives.
PUBLIC_CHECKS = frozenset({"bayesrank.ope.log.check_log",
                           "bayesrank.studies.ope.click.check_click_cfg"})
_BOOL_TYPES = {"bool", "bool_"}  # bool, np.bool_, numpy.bool_


def _is_bool_type(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
    return name in _BOOL_TYPES


def scattered_checks(pkg_dir: Path, top: str = "bayesrank") -> list[str]:
    """``module:line what`` for each argument check outside ``bayesrank._validate``:

    * an inline bool test, ``isinstance(x, bool)`` or ``isinstance(x, (bool,
      np.bool_))`` (the bool-or-int test ``isinstance(n, bool) or not isinstance(n,
      int)`` and the flag test alike: ``check_int``/``check_bool``/``is_integer``/
      ``is_bool`` say it once);
    * a function named ``check_*`` or ``_check*`` (module level or a method), except
      the protocol methods and the public functions named above.
    """
    out = []
    for path in sorted(pkg_dir.rglob("*.py")):
        me = module_name(path, pkg_dir.parent)
        if me == f"{top}._validate" or me.startswith(f"{top}._validate."):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                kinds = node.args[1]
                kinds = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
                if kinds and all(_is_bool_type(k) for k in kinds):
                    out.append(f"{me}:{node.lineno} inline bool test")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not (node.name.startswith("check_") or node.name.startswith("_check")):
                    continue
                is_method = any(node in getattr(c, "body", ()) for c in ast.walk(tree)
                                if isinstance(c, ast.ClassDef))
                if is_method and node.name in PROTOCOL_CHECKS:
                    continue
                if f"{me}.{node.name}" in PUBLIC_CHECKS:
                    continue
                out.append(f"{me}:{node.lineno} def {node.name}")
    return sorted(out, key=lambda s: (s.split(":")[0], int(s.split(":")[1].split()[0])))


def test_every_argument_check_goes_through_validate():
    """docs/design-choices.md: ``_validate`` is the one home of argument checks."""
    assert scattered_checks(PKG) == []


def test_the_check_rule_sees_what_it_forbids(tmp_path):
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/_validate.py": "def check_int(v, name):\n"
                                  "    return isinstance(v, bool)\n",
        "bayesrank/model/__init__.py": "",
        "bayesrank/model/a.py": (
            "import numpy as np\n"
            "def f(L):\n"
            "    if isinstance(L, bool) or not isinstance(L, int):\n"       # line 3
            "        raise ValueError('L')\n"
            "def g(x):\n"
            "    return isinstance(x, (bool, np.bool_))\n"                  # line 6
            "def check_L(L):\n"                                             # line 7
            "    pass\n"
            "class M:\n"
            "    def check_rewards(self, y):\n"                             # protocol: ok
            "        pass\n"
            "    def _check_state(self):\n"                                 # line 12
            "        pass\n"
            "def h(v):\n"
            "    return isinstance(v, (bool, int, float, str))\n"           # a type test
        ),
    })
    assert scattered_checks(pkg) == [
        "bayesrank.model.a:3 inline bool test",
        "bayesrank.model.a:6 inline bool test",
        "bayesrank.model.a:7 def check_L",
        "bayesrank.model.a:12 def _check_state",
    ]


# ------------------------------------------------------------ file size (issue 47)
#: The most lines a module may have without a reason written at its top.
MAX_LINES = 450
#: The reason line: within a module's first three lines, followed by the reason.
REASON = "# Over 450 lines because:"


def over_the_cap(pkg_dir: Path, max_lines: int = MAX_LINES) -> list[str]:
    """``path (n lines)`` of every module over ``max_lines`` without a reason line
    (:data:`REASON` and some text after it) among its first three lines."""
    out = []
    for path in sorted(pkg_dir.rglob("*.py")):
        lines = path.read_text().splitlines()
        if len(lines) <= max_lines:
            continue
        head = [line.strip() for line in lines[:3]]
        if any(h.startswith(REASON) and h[len(REASON):].strip() for h in head):
            continue
        out.append(f"{path.relative_to(pkg_dir.parent).as_posix()} ({len(lines)} lines)")
    return out


def test_no_module_is_over_the_line_cap_without_a_reason():
    assert over_the_cap(PKG) == []


def test_the_line_cap_check_sees_a_long_module(tmp_path):
    long = "x = 1\n" * 12
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/short.py": "x = 1\n" * 10,
        "bayesrank/long.py": long,
        "bayesrank/why.py": "# Over 450 lines because: one table of constants\n" + long,
        "bayesrank/empty.py": "# Over 450 lines because:\n" + long,
        "bayesrank/late.py": '"""Doc."""\n\n\n# Over 450 lines because: late\n' + long,
    })
    assert over_the_cap(pkg, max_lines=10) == [
        "bayesrank/empty.py (13 lines)", "bayesrank/late.py (16 lines)",
        "bayesrank/long.py (12 lines)"]


# ----------------------------------------- decoders read arrays, not policy objects
def class_attributes(dirs) -> set[str]:
    """Names that classes in the modules under ``dirs`` define: methods, class-level
    names and fields, and ``self.<name> = ...`` targets in their methods."""
    out: set[str] = set()
    for d in dirs:
        for path in sorted(Path(d).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if not isinstance(node, ast.ClassDef):
                    continue
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        out.add(item.name)
                        out.update(
                            sub.attr for sub in ast.walk(item)
                            if isinstance(sub, ast.Attribute)
                            and isinstance(sub.ctx, ast.Store)
                            and isinstance(sub.value, ast.Name) and sub.value.id == "self")
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target,
                                                                        ast.Name):
                        out.add(item.target.id)
                    elif isinstance(item, ast.Assign):
                        out.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return out


def policy_only_attributes(pkg_dir: Path) -> set[str]:
    """Attribute names defined by classes of ``policies`` and by no class of another
    bayesrank package, nor by Python's containers or NumPy arrays."""
    import numpy as np

    others = [p for p in pkg_dir.iterdir() if p.is_dir() and p.name != "policies"]
    common: set[str] = set()
    for t in (dict, list, tuple, str, set, object, np.ndarray):
        common |= set(dir(t))
    return class_attributes([pkg_dir / "policies"]) - class_attributes(others) - common


def policy_attribute_reads(pkg_dir: Path, sub: str = "decoding") -> list[str]:
    """``module:line .name`` where a module under ``sub`` reads an attribute that only
    a policy object has (attributes of imported modules, ``jax.random``, are not
    reads of an object)."""
    only = policy_only_attributes(pkg_dir)
    out = []
    for path in sorted((pkg_dir / sub).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        modules = {(a.asname or a.name).split(".")[0]
                   for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr in only):
                continue
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                continue
            out.append(f"{module_name(path, pkg_dir.parent)}:{node.lineno} .{node.attr}")
    return sorted(out)


def test_decoders_read_no_attribute_of_a_policy_object():
    """The decoders take a DecodeSpec and NamedTuples of arrays
    (``bayesrank.decoding.spec``), never a tables part of the policies."""
    assert policy_attribute_reads(PKG) == []


def test_the_policy_attribute_check_sees_a_leak(tmp_path):
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/policies/__init__.py": "",
        "bayesrank/policies/parts/tables.py": (
            "class Tables:\n    kind = 'monotone'\n    def __init__(self):\n"
            "        self.link = 1\n    def factors(self, rest):\n        return rest\n"),
        "bayesrank/decoding/__init__.py": "",
        "bayesrank/decoding/spec.py": "class Spec:\n    link: int\n",
        "bayesrank/decoding/dispatch.py": (
            "import jax\n"
            "def decode(part, spec, rest):\n"
            "    k = jax.random.key(0)\n"  # a module's attribute: no read
            "    return part.factors(rest), part.kind, spec.link, rest.shape\n"),
    })
    assert policy_attribute_reads(pkg) == [
        "bayesrank.decoding.dispatch:4 .factors", "bayesrank.decoding.dispatch:4 .kind"]


# ------------------------------------------------------------ families and homes
#: bayesrank.posteriors' sub-layers, lowest first: the maths the families share; the
#: conjugate and NUTS families, which never import each other; the Laplace family,
#: whose identity link is the conjugate model (it imports that family's face); the
#: latent-w forms of all three. Shared modules may import each other; a family only
#: its own modules and lower layers. The face (``bayesrank.posteriors``) sits on top.
POSTERIOR_LAYERS = [
    ("base", "buffers", "datatree", "host_sampler", "hyperprior", "linalg",
     "positive_quantiles", "prior_checks", "w_prior"),
    ("conjugate", "nuts"),
    ("laplace",),
    ("latent",),
]
#: Sub-packages whose modules code outside them reaches only through their face.
FAMILIES = ("bayesrank.posteriors.conjugate", "bayesrank.posteriors.laplace",
            "bayesrank.posteriors.latent", "bayesrank.posteriors.nuts")
#: Modules per folder (``__init__`` not counted): "about 15"; the decoders (16) are
#: one family of peers.
MAX_MODULES = 16


def posterior_layer_violations(graph, root="bayesrank.posteriors",
                               layers=POSTERIOR_LAYERS) -> list[str]:
    """``a -> b`` edges inside ``root`` that go sideways between families or up."""
    level = {unit: i for i, group in enumerate(layers) for unit in group}
    out = []
    for a, targets in graph.items():
        if not a.startswith(root + "."):
            continue  # the face imports everything
        ua = a[len(root) + 1:].split(".")[0]
        for b in targets:
            if not b.startswith(root + "."):
                continue
            ub = b[len(root) + 1:].split(".")[0]
            if ua == ub:
                continue
            la, lb = level.get(ua), level.get(ub)
            if la is None or lb is None:
                out.append(f"{a} -> {b} (not in a sub-layer)")
            elif lb > la or (lb == la and la > 0):
                out.append(f"{a} -> {b}")
    return sorted(out)


def family_internals_imported(graph, families=FAMILIES) -> list[str]:
    """``a -> b`` where b is a module inside a family and a is outside it."""
    return sorted(
        f"{a} -> {b}" for a, targets in graph.items() for b in targets
        for fam in families
        if b.startswith(fam + ".") and not (a == fam or a.startswith(fam + "."))
    )


def _top_level_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names a module defines, names it imports from outside ``bayesrank``)."""
    defined, foreign = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.If, ast.Try, ast.With)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    defined.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                    defined.add(sub.name)
        elif isinstance(node, ast.ImportFrom) and not node.level and not (
                node.module or "").startswith("bayesrank"):
            foreign.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            foreign.update((a.asname or a.name).split(".")[0] for a in node.names)
    return defined, foreign


def names_imported_away_from_home(pkg_dir: Path, top: str = "bayesrank") -> list[str]:
    """``importer:line module.name`` for every ``from <module> import name`` (anywhere
    in a module, a package face excepted as the source) where ``module`` neither
    defines ``name`` nor takes it from outside the package (a compatibility shim of a
    third-party name), and ``name`` is not a submodule."""
    root = pkg_dir.parent
    files = {module_name(p, root): p for p in pkg_dir.rglob("*.py")}
    names = {m: _top_level_names(ast.parse(p.read_text())) for m, p in files.items()}
    out = []
    for me, path in sorted(files.items()):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.ImportFrom) and not node.level
                    and node.module in files and files[node.module].name != "__init__.py"):
                continue
            defined, foreign = names[node.module]
            out += [f"{me}:{node.lineno} {node.module}.{a.name}" for a in node.names
                    if a.name not in defined and a.name not in foreign
                    and f"{node.module}.{a.name}" not in files]
    return out


def crowded_folders(pkg_dir: Path, limit: int = MAX_MODULES) -> list[str]:
    """Folders holding more than ``limit`` modules (``__init__.py`` not counted)."""
    root = pkg_dir.parent
    out = []
    for folder in sorted({p.parent for p in pkg_dir.rglob("*.py")}):
        n = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        if n > limit:
            out.append(f"{folder.relative_to(root)} ({n} modules)")
    return out


def test_posterior_families_import_only_their_own_modules_and_lower_layers():
    assert posterior_layer_violations(import_graph(PKG)) == []


def test_code_outside_a_family_imports_only_its_face():
    assert family_internals_imported(import_graph(PKG)) == []


def test_every_name_is_imported_from_its_home_or_a_face():
    assert names_imported_away_from_home(PKG) == []


def test_no_folder_holds_more_than_about_15_modules():
    assert crowded_folders(PKG) == []


def test_the_family_and_home_rules_see_what_they_forbid(tmp_path):
    pkg = _write(tmp_path, {
        "bayesrank/__init__.py": "",
        "bayesrank/posteriors/__init__.py": "from bayesrank.posteriors.conjugate import G\n",
        "bayesrank/posteriors/linalg.py": "from numpy import eye\n\ndef solve():\n    pass\n",
        "bayesrank/posteriors/w_prior.py": "from bayesrank.posteriors.linalg import solve\n",
        "bayesrank/posteriors/conjugate/__init__.py":
            "from bayesrank.posteriors.conjugate.gaussian import G\n",
        "bayesrank/posteriors/conjugate/gaussian.py":
            "from bayesrank.posteriors.linalg import solve\n"
            "from bayesrank.posteriors.nuts.kernel import K\n"
            "from bayesrank.posteriors.latent import L\n\nclass G:\n    pass\n",
        "bayesrank/posteriors/nuts/__init__.py": "",
        "bayesrank/posteriors/nuts/kernel.py": "K = 1\n",
        "bayesrank/posteriors/latent/__init__.py": "L = 1\n",
        "bayesrank/posteriors/laplace/__init__.py":
            "from bayesrank.posteriors.conjugate import G\n",
        "bayesrank/policies/__init__.py": "",
        "bayesrank/policies/ts.py":
            "from bayesrank.posteriors.conjugate.gaussian import G\n"
            "from bayesrank.posteriors.w_prior import solve\n"
            "from bayesrank.posteriors.linalg import eye, solve\n",
        **{f"bayesrank/policies/m{i}.py": "" for i in range(3)},
    })
    graph = import_graph(pkg)
    assert posterior_layer_violations(graph) == [
        "bayesrank.posteriors.conjugate.gaussian -> bayesrank.posteriors.latent",
        "bayesrank.posteriors.conjugate.gaussian -> bayesrank.posteriors.nuts",
        "bayesrank.posteriors.conjugate.gaussian -> bayesrank.posteriors.nuts.kernel"]
    assert family_internals_imported(graph) == [
        "bayesrank.policies.ts -> bayesrank.posteriors.conjugate.gaussian",
        "bayesrank.posteriors.conjugate.gaussian -> bayesrank.posteriors.nuts.kernel"]
    # w_prior re-exports solve (not its home); linalg's eye is numpy's (a shim: allowed)
    assert names_imported_away_from_home(pkg) == [
        "bayesrank.policies.ts:2 bayesrank.posteriors.w_prior.solve"]
    assert crowded_folders(pkg, limit=3) == ["bayesrank/policies (4 modules)"]
