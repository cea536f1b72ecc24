"""Every reference to the package's code in the docs and the docstrings resolves.

Read from the Markdown pages under ``docs/`` and from every docstring of the package
(module, class, function and method docstrings, and the ``#:`` comments Sphinx reads
as docstrings):

* dotted names ``bayesrank.x.y`` (a module, or an attribute path below one) import;
* Sphinx roles (``:mod:``, ``:func:``, ``:class:``, ``:meth:``, ``:data:``,
  ``:attr:``, ``:exc:``) whose target is in the package resolve: an absolute
  ``bayesrank.x.y``; a relative ``.name`` (also ``~.name``) against the docstring's
  package and the packages above it (``.scores`` in ``bayesrank.decoding`` means
  ``bayesrank.decoding.scores``, else ``bayesrank.scores``);
* repository paths (``bayesrank/.../x.py``, ``docs/x.md``, ``tests/...``,
  ``benchmarks/...``) and the top-level Markdown files named (``README.md``,
  ``DESIGN.md``) exist.

Bare role targets (``:class:`Estimate```) resolve through Sphinx's own search, which
the docs build checks with ``-W``; they are not read here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "bayesrank"

#: ``bayesrank.x.y`` not inside a longer identifier or a path
_DOTTED = re.compile(r"(?<![\w./-])(bayesrank(?:\.\w+)+)")
#: a Sphinx role and its target (the text between backticks, title form allowed)
_ROLE = re.compile(r":(?:py:)?(mod|func|class|meth|data|attr|exc|obj):`([^`]+)`")
#: a path in the repository
_PATH = re.compile(
    r"(?<![\w./-])((?:bayesrank|docs|tests|benchmarks|scripts|notebooks|examples)"
    r"/[\w./-]*\w\.(?:py|md|rst|toml|ipynb|c|h|txt|csv))\b")
#: a top-level Markdown file named on its own (README.md, DESIGN.md)
_TOP_MD = re.compile(r"(?<![\w./-])([A-Z][A-Z_-]*\.md)\b")


def resolve(dotted: str):
    """The object ``dotted`` names (a module, or attributes below one), or raise."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name is not None and not name.startswith(err.name):
                raise  # the module exists but imports something missing
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` resolves; a C extension of the package (built at install,
    absent from a checkout without a compiler) counts when its source is there."""
    try:
        resolve(dotted)
    except (ImportError, AttributeError):
        return (ROOT / (dotted.replace(".", "/") + ".c")).is_file()
    return True


def role_target(text: str) -> str:
    """The target of a role's text: ``title <target>`` -> target, ``~`` dropped."""
    m = re.search(r"<([^>]+)>$", text)
    target = (m.group(1) if m else text).strip().lstrip("~!")
    return target.removesuffix("()")


def relative_candidates(target: str, module: str, is_pkg: bool) -> list[str]:
    """Absolute names a relative ``.name`` may mean: in the module's package, then in
    each package above it."""
    pkg = module if is_pkg else module.rpartition(".")[0]
    parts = pkg.split(".")
    rel = target.lstrip(".")
    return [".".join(parts[:k] + [rel]) for k in range(len(parts), 0, -1)]


def bad_references(text: str, module: str | None = None, is_pkg: bool = False,
                   here: Path | None = None) -> list[str]:
    """The references of ``text`` that do not resolve (module: the docstring's
    module, for relative role targets; here: the Markdown file, for relative paths)."""
    bad = []
    for m in _DOTTED.finditer(text):
        name = m.group(1)
        if not resolves(name):
            bad.append(name)
    for m in _ROLE.finditer(text):
        target = role_target(m.group(2))
        if target.startswith(".") and module is not None:
            if not any(resolves(c) for c in relative_candidates(target, module, is_pkg)):
                bad.append(m.group(0))
        elif target.startswith("bayesrank.") and not resolves(target):
            bad.append(m.group(0))
    for m in _PATH.finditer(text):
        if Path(m.group(1)).stem.isupper():  # a placeholder: benchmarks/NAME.py
            continue
        if not (ROOT / m.group(1)).exists():
            bad.append(m.group(1))
    for m in _TOP_MD.finditer(text):
        name = m.group(1)
        near = [ROOT / name] + ([here.parent / name] if here is not None else [])
        if not any(p.exists() for p in near):
            bad.append(name)
    return bad


def docstrings(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of a module's docstrings and ``#:`` comment blocks."""
    source = path.read_text()
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                line = node.body[0].lineno if node.body else 1
                out.append((line, doc))
    block, start = [], 0
    for i, line in enumerate(source.splitlines() + [""], 1):
        s = line.strip()
        if s.startswith("#:"):
            if not block:
                start = i
            block.append(s[2:])
        elif block:
            out.append((start, "\n".join(block)))
            block = []
    return out


def module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _markdown_pages() -> list[Path]:
    skip = {"_build", "_templates", "jupyter_execute", "generated"}
    return sorted(p for p in (ROOT / "docs").rglob("*.md")
                  if not skip & set(p.relative_to(ROOT).parts))


def test_the_checks_catch_stale_references(tmp_path):
    # each of these was once in the package or its docs
    assert bad_references("see :mod:`~.scores`", "bayesrank.decoding", True) == [
        ":mod:`~.scores`"]
    assert bad_references("``bayesrank.simulation.env.RankingEnv`` and "
                          "``bayesrank.model.env``") == ["bayesrank.model.env"]
    assert bad_references("the default of evaluate (DESIGN.md)") == ["DESIGN.md"]
    assert bad_references("in `bayesrank/posteriors/decode.py`") == [
        "bayesrank/posteriors/decode.py"]
    assert bad_references("(:func:`bayesrank.datasets.\nobd_log_summary`)") == [
        ":func:`bayesrank.datasets.\nobd_log_summary`"]
    assert bad_references("``bayesrank.decoding._prefix_scan``, ``bayesrank.decoding._nope``"
                          ) == ["bayesrank.decoding._nope"]
    assert bad_references(":func:`bayesrank.ope.evaluate` and :class:`bayesrank.ope.Nope`"
                          ) == ["bayesrank.ope.Nope", ":class:`bayesrank.ope.Nope`"]
    # and these resolve
    assert bad_references(
        ":mod:`.kernel`, :func:`~bayesrank.posteriors.nuts.kernel.advance`, "
        ":class:`the model <bayesrank.posteriors.NumPyroModel>`, "
        "``bayesrank.RankTS.select()``, `bayesrank/posteriors/nuts/model.py`, README.md, "
        ":mod:`.model_link`", "bayesrank.posteriors.nuts", True) == []


@pytest.mark.parametrize(
    "path", sorted(PKG.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_docstring_references_resolve(path):
    module, is_pkg = module_name(path)
    found = [f"{path.relative_to(ROOT)}:{line}: {ref}"
             for line, doc in docstrings(path)
             for ref in bad_references(doc, module, is_pkg)]
    assert found == []


def test_markdown_references_resolve():
    pages = _markdown_pages()
    assert len(pages) > 10, "the docs' Markdown pages were not found"
    found = [f"{p.relative_to(ROOT)}: {ref}" for p in pages
             for ref in bad_references(p.read_text(), here=p)]
    assert found == []
