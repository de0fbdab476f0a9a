"""Count the project's internal imports (``benchmark.`` / ``submissions.`` / ``dataset_builders.``
and relative ones) and how many of them sit inside a function rather than at the top of a file.

Imports belong at the top of the file so that the module graph is visible to a reader;
function-level imports are kept for the heavy optional libraries (not internal, so never
counted here) and for the few internal ones that must wait (the top package's loader of the
task folders). Imports by string (``import_module("...")``) are not counted here: the graph
tests/test_layers.py builds sees them. Run ``python tests/import_census.py`` for the figures
and the files with the most function-level internal imports; tests/test_layers.py may
import :func:`census` to hold the share under a limit.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTERNAL = ("benchmark", "submissions", "dataset_builders")
FOLDERS = ("benchmark", "submissions", "dataset_builders", "metrics", "bench", "tests")


def _is_internal(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] in INTERNAL
    return any(a.name.split(".")[0] in INTERNAL for a in node.names)


def _inside_function(tree: ast.AST) -> set[int]:
    """ids of the import nodes that sit in the body of a function (at any depth)."""
    inner: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner |= {id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return inner


def census(folders=FOLDERS) -> tuple[int, int, Counter]:
    """(internal imports, of them inside functions, per-file count of those inside functions)."""
    total, inside, per_file = 0, 0, Counter()
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            inner = _inside_function(tree)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _is_internal(node):
                    total += 1
                    if id(node) in inner:
                        inside += 1
                        per_file[str(path.relative_to(ROOT))] += 1
    return total, inside, per_file


def main(argv: list[str]) -> int:
    folders = tuple(argv) or FOLDERS
    total, inside, per_file = census(folders)
    share = inside / total if total else 0.0
    print(f"internal imports in {', '.join(folders)}: {total}; inside functions: {inside} ({share:.1%})")
    for name, n in per_file.most_common(15):
        print(f"  {n:4d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
