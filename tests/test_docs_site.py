"""The documentation site builds with ``mkdocs build --strict`` (mkdocs.yml): a broken link or
anchor, a page left out of the navigation or a reference the API pages cannot resolve fails it.
About 3 s."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=300, cwd=config.parent,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_pages(v)]
    return [p for item in nav for p in _nav_pages(item)]


def with_sections(config: Path, **replaced: str) -> str:
    """The text of ``config`` with some top-level sections replaced (the real strictness settings
    on a small site: no API pages)."""
    sections, key = {}, None
    for line in config.read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            key = line.split(":")[0]
        sections.setdefault(key, []).append(line)
    return "\n".join(replaced.get(k, "\n".join(lines)) for k, lines in sections.items() if k) + "\n"


def test_the_site_builds_strict_with_search_and_the_api_reference(tmp_path):
    proc = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "WARNING" not in proc.stderr, proc.stderr[-4000:]
    index = json.loads((tmp_path / "site" / "search" / "search_index.json").read_text())
    assert any("Getting started" in d["title"] for d in index["docs"])
    api = (tmp_path / "site" / "api" / "runner" / "index.html").read_text()
    assert "run_audit" in api and "One audit: into" in api  # a docstring, rendered
    assert ":class:" not in api and ":func:" not in api  # the docstrings' Sphinx roles, dropped by the hook
    # nothing is fetched from elsewhere: no script, style sheet, font or image from another host
    for page in (tmp_path / "site").rglob("*.html"):
        text = page.read_text()
        assert not re.findall(r'<(?:script|img)[^>]+src="https?:|<link[^>]+href="https?:[^"]*"[^>]*stylesheet', text), page
        assert "fonts.googleapis" not in text, page
        assert 'class="md-source"' not in text, page  # a repo_url: the theme's script would ask GitHub's API
    reference = (tmp_path / "site" / "scores" / "index.html").read_text()
    assert 'id="gep_score_neutral"' in reference  # scores.md#gep_score_neutral links to it


def test_every_page_is_in_the_navigation():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # no !!python tags run
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts}
    assert sorted(pages - set(_nav_pages(config["nav"]))) == []


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copytree(ROOT / "docs" / "_hooks", docs / "_hooks")
    (docs / "index.md").write_text("# Home\n\n## A section\n\nSee [the other page](other.md#a-section).\n")
    (docs / "other.md").write_text("# Other\n\n## A section\n\nBack [home](index.md#a-section), "
                                   "[the code](../benchmark/cli.py).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(with_sections(ROOT / "mkdocs.yml", plugins="plugins: [search]", nav="nav: [index.md, other.md]"))
    (tmp_path / "benchmark").mkdir()
    (tmp_path / "benchmark" / "cli.py").write_text("")
    ok = build(config, tmp_path / "site")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert "/blob/main/benchmark/cli.py" in (tmp_path / "site" / "other" / "index.html").read_text()
    for broken in ("other.md#no-such-section", "gone.md", "../benchmark/gone.py"):
        (docs / "index.md").write_text(f"# Home\n\nSee [there]({broken}).\n")
        proc = build(config, tmp_path / "site")
        assert proc.returncode != 0, broken
