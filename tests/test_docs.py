"""The documentation site's fast checks (the Sphinx build itself runs in .ci/run).

* Every public name (the ``__all__`` of ``bayesrank`` and of its public modules) is
  listed in an autosummary table with ``:toctree:`` on an API page, so it gets a page
  of its own; every listed entry exists.
* Every public function and class has a docstring with an ``Example``/``Examples``
  section holding a doctest (``pytest --doctest-modules`` runs them).
* The tutorials are the notebooks: the copy the build executes is the notebook plus a
  ``QUICK = True`` cell right after the cell tagged ``parameters`` (needs Sphinx).

Only files are read and modules imported; nothing is built.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import re
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"

#: Modules whose ``__all__`` is public API. Modules that are themselves public names
#: (``bayesrank.ope``, ``bayesrank.posteriors.linalg``, ...) are added by
#: :func:`public_modules`.
PUBLIC_MODULES = [
    "bayesrank",
    "bayesrank.simulation.env",
    "bayesrank.model.feedback",
    "bayesrank.decoding",
    "bayesrank.posteriors",
    "bayesrank.policies",
    "bayesrank.ope",
    "bayesrank.simulation",
    "bayesrank.studies.plots",
    "bayesrank.studies.sensitivity",
    "bayesrank.studies.calibration",
    "bayesrank.studies.obd.study",
    "bayesrank.studies.ope.study",
    "bayesrank.cli",
]


def public_modules() -> list[str]:
    """PUBLIC_MODULES and every module listed in their ``__all__``, recursively."""
    out, todo = [], list(PUBLIC_MODULES)
    while todo:
        name = todo.pop(0)
        if name in out:
            continue
        out.append(name)
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            value = getattr(module, attr)
            if isinstance(value, types.ModuleType) and value.__name__.startswith(
                "bayesrank"
            ):
                todo.append(value.__name__)
    return out


def public_objects() -> dict[str, object]:
    """``{"module.name": object}`` for every name in a public module's ``__all__``."""
    found = {}
    for modname in public_modules():
        module = importlib.import_module(modname)
        assert hasattr(module, "__all__"), f"{modname}: a public module needs __all__"
        for attr in module.__all__:
            found[f"{modname}.{attr}"] = getattr(module, attr)
    return found


_DIRECTIVE = re.compile(r"^(\s*)\.\. autosummary::\s*$")


def autosummary_entries(text: str) -> list[tuple[str, bool]]:
    """``(entry, has_toctree)`` for every entry of every autosummary directive."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = _DIRECTIVE.match(lines[i])
        i += 1
        if not m:
            continue
        indent = len(m.group(1))
        toctree = False
        while i < len(lines) and (not lines[i].strip() or
                                  len(lines[i]) - len(lines[i].lstrip()) > indent):
            body = lines[i].strip()
            if body.startswith(":toctree:"):
                toctree = True
            elif body and not body.startswith(":"):
                out.append((body.lstrip("~"), toctree))
            i += 1
    return out


def api_entries() -> list[tuple[str, bool, str]]:
    """``(entry, has_toctree, page)`` over every API page."""
    pages = sorted(API.glob("*.rst"))
    assert len(pages) >= 8, "the API reference pages were not found"
    return [
        (e, t, p.name) for p in pages for e, t in autosummary_entries(p.read_text())
    ]


def resolve(dotted: str):
    """Import ``dotted`` (a module, or an attribute path below one)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_autosummary_parser_reads_options_and_entries():
    text = """
Title
=====

.. autosummary::
   :toctree: generated
   :nosignatures:

   bayesrank.RankTS
   ~bayesrank.best_list

Some text.

.. autosummary::

   bayesrank.simulate
"""
    assert autosummary_entries(text) == [
        ("bayesrank.RankTS", True),
        ("bayesrank.best_list", True),
        ("bayesrank.simulate", False),
    ]


def test_every_api_entry_exists():
    missing = []
    for entry, _, page in api_entries():
        try:
            resolve(entry)
        except (ImportError, AttributeError):
            missing.append(f"{page}: {entry}")
    assert not missing, f"API pages list names that do not exist: {missing}"


def test_every_api_entry_has_one_page():
    paged = [e for e, toctree, _ in api_entries() if toctree]
    dupes = sorted({e for e in paged if paged.count(e) > 1})
    assert not dupes, f"listed with :toctree: more than once: {dupes}"


@pytest.mark.parametrize("modname", public_modules())
def test_every_public_name_has_an_api_page(modname):
    """Each name of the module's __all__ is (by identity) an entry with a page."""
    documented = {}
    for entry, toctree, _ in api_entries():
        if toctree:
            documented.setdefault(id(resolve(entry)), entry)
    module = importlib.import_module(modname)
    missing = [
        name for name in module.__all__ if id(getattr(module, name)) not in documented
    ]
    assert not missing, (
        f"{modname}: public names with no API page (add them to an autosummary "
        f":toctree: list in docs/api/*.rst): {missing}"
    )


def _routines_and_classes() -> dict[str, object]:
    seen, out = set(), {}
    for name, obj in public_objects().items():
        if not (inspect.isclass(obj) or inspect.isroutine(obj)) or id(obj) in seen:
            continue
        seen.add(id(obj))
        out[name] = obj
    return out


_EXAMPLE = re.compile(r"^\s*Examples?:?\s*$\n(?:.*\n)*?\s*>>> ", re.MULTILINE)


def has_example(doc: str | None) -> bool:
    """An ``Example:``/``Examples:`` header followed (later) by a ``>>>`` line."""
    return bool(doc) and bool(_EXAMPLE.search(doc + "\n"))


@pytest.mark.parametrize(
    "doc, expected",
    [
        ("Summary.\n\nExample:\n    >>> 1 + 1\n    2\n", True),
        ("Summary.\n\nExamples\n--------\n>>> f()\n", True),  # numpy style
        ("Summary.\n\nExamples:\n    Some words first.\n\n    >>> f()\n", True),
        ("Summary.\n\n    >>> f()  # a doctest without the section\n", False),
        ("Summary.\n\nExample:\n    f()  # no doctest\n", False),
        ("", False),
        (None, False),
    ],
)
def test_has_example_detects_the_section(doc, expected):
    assert has_example(doc) is expected


@pytest.mark.parametrize("name", sorted(_routines_and_classes()))
def test_public_object_has_an_example(name):
    obj = _routines_and_classes()[name]
    doc = obj.__doc__ or ""
    assert doc.strip(), f"{name}: no docstring"
    assert has_example(inspect.cleandoc(doc)), (
        f"{name}: the docstring needs an 'Example:' section with a doctest (>>>)"
    )


# ------------------------------------------------------------------- tutorials
def _conf():
    pytest.importorskip("sphinx")
    path = ROOT / "docs" / "conf.py"
    spec = importlib.util.spec_from_file_location("docs_conf", path)
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_tutorial_is_the_notebook_at_quick_scale(path):
    conf = _conf()
    raw = json.loads(path.read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in raw["cells"]]
    tagged = [
        i
        for i, c in enumerate(raw["cells"])
        if "parameters" in c.get("metadata", {}).get("tags", [])
    ]
    assert len(tagged) == 1
    nb = conf.tutorial_notebook(path)
    sources = [c.source for c in nb.cells]
    # a hidden chdir cell first, then the notebook with a hidden QUICK = True after
    # the parameters cell; nothing else changed
    assert nb.cells[0].metadata["tags"] == ["remove-cell"]
    assert "notebooks" in sources[0]
    at = tagged[0] + 2
    assert re.match(r"QUICK = True\b", sources[at])
    assert nb.cells[at].metadata["tags"] == ["remove-cell"]  # run, not shown
    assert sources[1:at] + sources[at + 1:] == code
    assert all(c.get("outputs", []) == [] for c in nb.cells if c.cell_type == "code")
