"""The architecture page's walk of one RankTS request names every file the request
passes through, and only those: a select and an update are traced (``sys.setprofile``
on freshly traced programs) and the files of bayesrank they enter are compared with
the paths that docs/background/architecture.md's "One request's path" names."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import bayesrank as br

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "background" / "architecture.md"
#: The private helpers under everything, which the walk leaves out by name.
UNNAMED = ("bayesrank/_validate.py", "bayesrank/_static.py")


def walk_paths(text: str) -> dict[str, set[str]]:
    """The ``bayesrank/...py`` paths the page's **Select.** and **Update.** parts name."""
    section = text.split("## One request's path", 1)[1].split("\n## ", 1)[0]
    select, update = section.split("**Update.**", 1)
    select = select.split("**Select.**", 1)[1]
    update = update.split("A simulation runs the same core", 1)[0]
    pat = re.compile(r"`(bayesrank/[\w/]+\.py)`")
    return {"select": set(pat.findall(select)), "update": set(pat.findall(update))}


def traced_files(fn) -> set[str]:
    """The files under bayesrank/ whose Python functions run during ``fn()``, with
    every jitted program traced afresh."""
    pkg = Path(br.__file__).resolve().parent
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call":
            f = frame.f_code.co_filename
            if f.startswith(str(pkg)):
                seen.add(Path(f).resolve().relative_to(pkg.parent).as_posix())

    jax.clear_caches()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return {f for f in seen if f not in UNNAMED}


def _request_walks():
    env = br.RankingEnv.paper(seed=0, K=8, L=3, d=4)
    policy = br.RankTS(items=env.items, w=env.w, seed=0)
    items = policy.select()
    rewards = np.asarray(env.sample(jax.random.key(1), items))
    policy.update(items, rewards)
    policy.flush()
    select = traced_files(policy.select)
    items = policy.select()
    rewards = np.asarray(env.sample(jax.random.key(2), items))
    update = traced_files(lambda: (policy.update(items, rewards), policy.flush()))
    return {"select": select, "update": update}


@pytest.fixture(scope="module")
def walks():
    return _request_walks()


@pytest.mark.parametrize("part", ["select", "update"])
def test_the_architecture_walk_names_the_files_a_request_passes(walks, part):
    named = walk_paths(PAGE.read_text())[part]
    assert sorted(named - walks[part]) == [], "named but not passed"
    assert sorted(walks[part] - named) == [], "passed but not named"


def test_the_walk_check_sees_a_stale_and_a_missing_file(walks):
    text = PAGE.read_text().replace(
        "`bayesrank/policies/parts/tables.py`", "`bayesrank/policies/tables.py`", 1)
    named = walk_paths(text)["select"]
    assert "bayesrank/policies/tables.py" in named - walks["select"]
    assert "bayesrank/policies/parts/tables.py" in walks["select"] - named
