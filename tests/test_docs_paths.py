"""The docs name only code that exists: every source path (``benchmark/annotate/registry.py``,
``benchmark/tasks/<paper>/scores.py``) and every dotted module or name
(``benchmark.annotate.cross_modal.SGD_PARAMS``) in README.md and docs/**/*.md is in the tree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("benchmark", "submissions", "dataset_builders", "metrics", "bench")
PATH = re.compile(rf"(?<![\w/.-])((?:{'|'.join(PACKAGES)})/[A-Za-z0-9_/.<>-]*?\.py)\b")
DOTTED = re.compile(rf"(?<![\w/.-])((?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _path_exists(root: Path, path: str) -> bool:
    """``path`` exists under ``root``; a placeholder part (``<paper>``, ``NAME``) matches any name."""
    return any(root.glob(re.sub(r"<[^>/]+>|(?<=/)[A-Z][A-Z0-9_]*(?=[/.])", "*", path)))


def _dotted_exists(root: Path, name: str) -> bool:
    """``name`` is a module under ``root``, or a module and a name its text defines or imports."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:i])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file():
            rest = parts[i:]
            return not rest or rest[0] == "py" or bool(re.search(rf"\b{re.escape(rest[0])}\b", module.read_text()))
    return False


def missing_code(root: Path) -> list[str]:
    """``file:line: name`` of every path or dotted name in ``root``'s README.md and docs/*.md that
    is not in its tree."""
    bad = []
    for doc in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for pattern, exists in ((PATH, _path_exists), (DOTTED, _dotted_exists)):
            for m in pattern.finditer(text):
                if not exists(root, m.group(1)):
                    bad.append(f"{doc.relative_to(root).as_posix()}:{text[:m.start()].count(chr(10)) + 1}: {m.group(1)}")
    return bad


def test_every_module_the_docs_name_exists():
    bad = missing_code(ROOT)
    assert not bad, "the docs name code that is not there (moved?):\n" + "\n".join(bad)


def test_the_check_finds_a_moved_module(tmp_path):
    (tmp_path / "benchmark" / "annotate").mkdir(parents=True)
    (tmp_path / "benchmark" / "tasks" / "mcas").mkdir(parents=True)
    (tmp_path / "benchmark" / "annotate" / "skin_tone.py").write_text("MST_ITA = ()\n")
    (tmp_path / "benchmark" / "tasks" / "mcas" / "embeddings.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("See `benchmark/tasks/<paper>/embeddings.py` and benchmark.annotate.skin_tone.MST_ITA.\n")
    (tmp_path / "docs" / "annotate.md").write_text("Intro.\n`benchmark/annotate/mcas_embeddings.py`, "
                                                   "`benchmark.annotate.skin_tone.ITA_X` and benchmark.models.gone.\n")
    assert missing_code(tmp_path) == ["docs/annotate.md:2: benchmark/annotate/mcas_embeddings.py",
                                      "docs/annotate.md:2: benchmark.annotate.skin_tone.ITA_X",
                                      "docs/annotate.md:2: benchmark.models.gone"]
