"""The README is the front door: short, its commands are the real ones, its links
resolve, and its public-API table lists exactly ``bayesrank.__all__``.

Only files are read (and ``import bayesrank`` for ``__all__``); nothing is run.
"""

from __future__ import annotations

import re
from pathlib import Path

import bayesrank

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

DEMO_COMMAND = (
    "python -m venv .venv && .venv/bin/pip install -e . && .venv/bin/bayesrank demo"
)
TEST_COMMAND = (
    'python -m venv .venv && .venv/bin/pip install -e ".[test,dask]" '
    "&& .venv/bin/python -m pytest -q"
)
MAX_README_LINES = 130

# [text](target) and ![alt](target); the target ends at whitespace or ")" (an
# optional "title" after it is ignored). Text may hold backticks and one level of
# nested brackets.
_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # [text] or ![alt]
    r"\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"  # (target "title")
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_EXTERNAL = re.compile(r"^(https?:|mailto:)", re.IGNORECASE)


def _without_code(text: str) -> str:
    """The text with fenced code blocks and inline code spans blanked out."""
    out, fence = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fence = not fence
            out.append("")
            continue
        out.append("" if fence else line)
    # inline code: `...` (links inside a code span are not links); a link whose text is
    # a code span, [`x`](y), keeps its target because only the span itself is blanked
    return re.sub(r"`[^`\n]*`", "``", "\n".join(out))


def link_targets(text: str) -> list[str]:
    """Every Markdown link and image target in ``text``, outside code."""
    return _LINK.findall(_without_code(text))


def broken_links(path: Path) -> list[str]:
    """Relative link targets in the Markdown file ``path`` that do not exist."""
    bad = []
    for target in link_targets(path.read_text(encoding="utf-8")):
        if target.startswith("#") or _EXTERNAL.match(target):
            continue
        file_part = target.split("#", 1)[0]
        if not file_part:
            continue
        if not (path.parent / file_part).exists():
            bad.append(f"{path}: {target}")
    return bad


def markdown_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").rglob("*.md"))]


def public_api_names(text: str) -> list[str]:
    """First-column names of the table between the public-api markers, in order."""
    lines = text.splitlines()
    start = lines.index("<!-- public-api -->")
    end = lines.index("<!-- /public-api -->")
    rows = [ln.strip() for ln in lines[start + 1 : end] if ln.strip().startswith("|")]
    names = []
    for row in rows[2:]:  # header and separator first
        cell = row.strip("|").split("|")[0].strip()
        names.append(cell.strip("`").strip())
    return names


def api_table_problems(names: list[str], expected) -> list[str]:
    """What is wrong with a public-API table's names against ``expected``."""
    problems = []
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append(f"listed twice: {dup}")
    missing = sorted(set(expected) - set(names))
    if missing:
        problems.append(f"missing from the table: {missing}")
    extra = sorted(set(names) - set(expected))
    if extra:
        problems.append(f"not in bayesrank.__all__: {extra}")
    return problems


def test_every_relative_link_resolves():
    files = markdown_files()
    assert len(files) > 5  # the README and its docs pages were found
    bad = [b for f in files for b in broken_links(f)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_link_checker_reports_a_broken_link(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "there.md").write_text("# there\n")
    page = tmp_path / "page.md"
    page.write_text(
        "ok [a](sub/there.md#part), [web](https://example.org/x), [top](#top),\n"
        "![img](missing.png) and [`code`](sub/gone.md)\n"
        "```\n[in a fence](nowhere.md)\n```\n"
        "and `[in a span](nowhere2.md)`\n"
    )
    assert link_targets(page.read_text()) == [
        "sub/there.md#part",
        "https://example.org/x",
        "#top",
        "missing.png",
        "sub/gone.md",
    ]
    bad = broken_links(page)
    assert len(bad) == 2
    assert any("missing.png" in b for b in bad) and any("sub/gone.md" in b for b in bad)


def test_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    n = len(text.splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines, at most {MAX_README_LINES}"
    assert DEMO_COMMAND in text
    assert TEST_COMMAND in text
    # exactly the two set-up commands: no other venv line in the README
    venv_lines = [ln.strip() for ln in text.splitlines() if "python -m venv" in ln]
    assert venv_lines == [DEMO_COMMAND, TEST_COMMAND]
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_public_api_table_matches_all():
    names = public_api_names(README.read_text(encoding="utf-8"))
    assert not api_table_problems(names, bayesrank.__all__), api_table_problems(
        names, bayesrank.__all__
    )
    assert len(names) == len(set(names))
    assert set(names) == set(bayesrank.__all__)


def test_table_parser_sees_a_missing_name():
    table = (
        "intro\n<!-- public-api -->\n| name | kind | what |\n|---|---|---|\n"
        "| `RankTS` | class | x |\n| `best_list` | function | y |\n"
        "| `RankTS` | class | again |\n<!-- /public-api -->\nafter\n"
    )
    names = public_api_names(table)
    assert names == ["RankTS", "best_list", "RankTS"]
    problems = api_table_problems(names, ["RankTS", "best_list", "simulate"])
    assert any("simulate" in p and "missing" in p for p in problems)
    assert any("listed twice" in p and "RankTS" in p for p in problems)
    assert api_table_problems(["RankTS", "best_list"], ["RankTS", "best_list"]) == []
