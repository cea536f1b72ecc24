"""Sphinx configuration of bayesrank's documentation site.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

Warnings are errors: a broken cross-reference (``nitpicky``), a public object without
a docstring, a tutorial cell that raises. The tutorials are the notebooks in
``notebooks/`` (committed without outputs): each build copies them into
``docs/tutorials/`` with a cell ``QUICK = True`` after the cell tagged ``parameters``
(as ``tests/test_notebooks.py`` does; tagged ``remove-cell``, so the page does not show
it) and myst-nb executes them, caching the outputs
in ``docs/_build/.jupyter_cache`` so that a rebuild re-executes only notebooks whose
code changed. ``BAYESRANK_DOCS_EXECUTE=off`` builds without executing anything (the
notebook pages then have no outputs).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from pathlib import Path

import nbformat
from sphinx.util import logging

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import bayesrank

logger = logging.getLogger("bayesrank.docs")

# -- project ---------------------------------------------------------------------------
project = "bayesrank"
author = "the bayesrank developers"
copyright = "the bayesrank developers, MIT licence"
release = version = bayesrank.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx_copybutton",
]

templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    "**/*.nc",
]

# -- warnings: every broken reference is an error --------------------------------------
nitpicky = True
# Third-party and typing names in signatures and docstrings: no intersphinx (the CI
# machine reaches package registries only), so these stay unlinked instead of warning.
_EXTERNAL = (
    r"(jax|jaxlib|jnp|np|numpy|numpyro|xarray|xr|arviz|az|matplotlib|plt|networkx|nx"
    r"|dask|distributed|scipy|collections|typing|typing_extensions|pathlib|os"
    r"|concurrent|enum|types|argparse|dataclasses)(\..*)?"
)
nitpick_ignore_regex = [
    (r"py:.*", _EXTERNAL),
    # typing aliases and names that autodoc prints without a module
    (r"py:.*", (r"(Array|ArrayLike|DTypeLike|PRNGKeyArray|Key|KeyArray|Path|PathLike"
                r"|Sequence|Mapping|Callable|Iterable|Iterator|Any|Self|NamedTuple"
                r"|Figure|Axes|Dataset|DataArray|DataTree|Distribution|ndarray)")),
    (r"py:.*", r"(optional|callable|array|array-like|scalar|default.*)"),
]

# -- MyST and notebooks ----------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
#: ``BAYESRANK_DOCS_EXECUTE=off`` builds without executing the notebooks (no outputs)
nb_execution_mode = os.environ.get("BAYESRANK_DOCS_EXECUTE", "cache")
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 900
nb_merge_streams = True

# -- API reference ---------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autosummary_ignore_module_all = False
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
add_module_names = False
python_display_short_literal_types = True

# -- HTML ------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"bayesrank {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
}
html_static_path: list[str] = []
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# -- tutorials: the notebooks, copied with the quick-scale cell ------------------------
NOTEBOOKS = ROOT / "notebooks"
TUTORIALS = DOCS / "tutorials"
#: the cell inserted after the one tagged ``parameters``; hidden from the page (where a
#: quick run's figures differ from the text, the notebook shows the committed full run
#: beside them)
QUICK_CELL = "QUICK = True  # the documentation runs every tutorial at its quick scale"
#: the first cell: run from ``notebooks/`` as the notebooks expect (the test suite
#: does the same); hidden from the page
CHDIR_CELL = 'import os\n\nos.chdir("../../notebooks")'


def tutorial_notebook(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` as the documentation executes it."""
    nb = nbformat.read(path, as_version=4)
    tagged = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])
    ]
    if len(tagged) != 1:
        raise ValueError(f"{path.name}: expected one cell tagged 'parameters'")
    quick = nbformat.v4.new_code_cell(QUICK_CELL)
    quick.metadata["tags"] = ["remove-cell"]  # run, not shown
    nb.cells.insert(tagged[0] + 1, quick)
    chdir = nbformat.v4.new_code_cell(CHDIR_CELL)
    chdir.metadata["tags"] = ["remove-cell"]
    nb.cells.insert(0, chdir)
    for i, cell in enumerate(nb.cells):  # ids stable across builds (cache keys)
        cell["id"] = f"cell-{i}"
    return nb


def sync_tutorials() -> list[str]:
    """Write ``docs/tutorials/NN_*.ipynb`` from ``notebooks/``; return their names.

    A file is rewritten only when its content changes, so Sphinx's incremental build
    sees unchanged tutorials as up to date; copies of deleted notebooks are removed.
    """
    TUTORIALS.mkdir(exist_ok=True)
    names = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        text = nbformat.writes(tutorial_notebook(path)) + "\n"
        target = TUTORIALS / path.name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        names.append(path.name)
    for stale in TUTORIALS.glob("[0-9][0-9]_*.ipynb"):
        if stale.name not in names:
            stale.unlink()
    return names


def _prepare_tutorials(app):
    sync_tutorials()
    # The kernels draw inline: a MPLBACKEND=Agg inherited from the shell (the test
    # suite sets one) would hide every figure.
    os.environ.pop("MPLBACKEND", None)


# -- cross-references to re-exported names ----------------------------------------
# Each public object is documented once, under the name users type
# (``bayesrank.RankTS``, ``bayesrank.posteriors.GaussianState``); signatures and
# docstrings may name it by the module that defines it
# (``bayesrank.policies.ts.RankTS``). A reference that does not resolve is imported,
# and if it is a documented object, linked to its page.
_documented: dict[int, str] = {}


_MISSING = object()


def _import(name: str):
    """The object at the dotted path ``name``, or ``_MISSING``."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return _MISSING
        return obj
    return _MISSING


def _index_documented(env) -> None:
    for name in sorted(env.get_domain("py").objects, key=len):
        if not name.startswith("bayesrank"):
            continue
        obj = _import(name)
        if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
            _documented.setdefault(id(obj), name)


def _resolve_alias(app, env, node, contnode):
    """Resolve a reference to a re-exported name; leave one to an existing
    undocumented bayesrank object (a private helper, an internal module) unlinked.

    A reference to nothing that exists is left alone, so Sphinx reports it.
    """
    if node.get("refdomain") != "py":
        return None
    if not _documented:
        _index_documented(env)
    target = node.get("reftarget", "").lstrip("~.")
    # where the name may live: the page's class and module, then every scope around
    # the object whose docstring holds the reference (relative names are relative
    # to the module the docstring is written in), then the name as given
    scopes = []
    module, cls = node.get("py:module"), node.get("py:class")
    if module and cls:
        scopes.append(f"{module}.{cls}")
    if module:
        scopes.append(module)
    m = re.search(r"docstring of ([\w.]+)", node.source or "")
    if m:
        parts = m.group(1).split(".")
        scopes += [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    candidates = [f"{scope}.{target}" for scope in scopes] + [target]
    py = env.get_domain("py")
    for cand in candidates:
        if not cand.startswith("bayesrank"):
            continue
        obj = _import(cand)
        if obj is _MISSING:
            continue
        name = _documented.get(id(obj))
        if name is not None:
            found = py.resolve_any_xref(env, node["refdoc"], app.builder, name, node,
                                        contnode)
            if found:
                return found[0][1]
        return contnode  # exists, but is not part of the documented API
    if "." not in target:  # a bare name from a signature: one documented match
        matches = {name for name in py.objects
                   if name.startswith("bayesrank.") and name.endswith("." + target)}
        objs = {id(_import(name)) for name in matches}
        if len(objs) == 1:
            name = min(matches, key=len)
            found = py.resolve_any_xref(env, node["refdoc"], app.builder, name, node,
                                        contnode)
            if found:
                return found[0][1]
    return None


# -- Markdown pages: links that leave the site ----------------------------------------
# The pages in docs/ are also read on the repository host, where they link to
# ../README.md and ../notebooks/*.ipynb. On the site those links go to the home page
# and to the executed tutorial; the files on disk are not changed.
_MD_LINK = re.compile(r"(\]\(\s*<?)([^)\s>]+)")
#: pages written by the CLI without a title of their own
UNTITLED = {"reproduction/timing": "Time per round against the paper's timing table"}


def _site_source(app, docname, source):
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md":
        return
    here = path.parent

    def fix(m):
        target = m.group(2)
        if target.startswith("#") or re.match(r"^[a-zA-Z][a-zA-Z+.-]*:", target):
            return m.group(0)
        file, sep, anchor = target.partition("#")
        full = (here / file).resolve()
        if full == ROOT / "README.md":
            new = DOCS / "index.md"
        elif full.parent == NOTEBOOKS and (TUTORIALS / full.name).exists():
            new = TUTORIALS / full.name
        else:
            return m.group(0)
        return m.group(1) + os.path.relpath(new, here) + sep + anchor

    text = _MD_LINK.sub(fix, source[0])
    if docname in UNTITLED and not re.search(r"^# ", text, re.MULTILINE):
        text = f"# {UNTITLED[docname]}\n\n{text}"
    source[0] = text


# -- public objects must have docstrings -----------------------------------------------
_CHECKED = {"module", "class", "exception", "function", "method", "property"}


def _require_docstring(app, what, name, obj, options, lines):
    if what in ("data", "attribute") and lines:
        # autodoc falls back on the type's docstring (dict, float): not this object's
        own = type(obj).__doc__
        if isinstance(own, str) and [ln for ln in lines if ln.strip()] == [
            ln for ln in inspect.cleandoc(own).splitlines() if ln.strip()
        ]:
            lines.clear()
        return
    if what in _CHECKED and not any(line.strip() for line in lines):
        logger.warning(f"{name}: public {what} without a docstring", type="bayesrank",
                       subtype="docstring")


def setup(app):
    app.connect("autodoc-process-docstring", _require_docstring)
    app.connect("missing-reference", _resolve_alias)
    app.connect("source-read", _site_source)
    app.connect("builder-inited", _prepare_tutorials)
    return {"parallel_read_safe": False}
