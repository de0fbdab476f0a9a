"""The package's layers point down (DESIGN.md "Where the architecture goes next"), checked on
the source with the ast module:

* ``benchmark`` never imports ``submissions`` or ``dataset_builders``;
* a subpackage imports only its own layer or layers below it (``models`` never imports a
  feature package, the runner never imports ``human``);
* no import cycle between the subpackages of one layer, nor between any two modules
  (imports inside functions included);
* no private name (``_x``) is imported from another module;
* no function of ``benchmark`` is longer than 80 lines;
* fewer than 10% of the internal imports of ``benchmark`` sit inside a function (the rest
  at the top of their file, so the module graph is visible to a reader);
* outside ``benchmark/tasks/`` (one folder per paper), ``tests/``, ``docs/``, the formula
  modules of ``benchmark/scores/``, ``metrics/`` and ``dataset_builders/``, no source file
  names a suite or a paper in its code (docstrings and comments may cite them);
  ``STILL_NAMING_PAPERS``, the files that still did with their count, is empty.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
from import_census import census

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "benchmark"

# Bottom to top. A unit is a top-level module or subpackage of `benchmark`.
LAYERS = [
    {"contract", "papers", "scores", "present", "extras", "cli_types"},
    {"probes", "probe_build_args", "models", "hub"},
    {"reference_attributes"},
    {"annotate"},
    {"tasks"},
    {"runner"},
    {"human", "commands"},
    {"cli", "__main__"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}
SOURCES = sorted(p for d in ("benchmark", "submissions", "dataset_builders", "metrics", "bench")
                 for p in (ROOT / d).rglob("*.py"))


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every import in ``path``, relative ones resolved."""
    me = _module(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[:len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            out.append((node.lineno, base, [a.name for a in node.names]))
    return out


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "benchmark" and len(parts) > 1 else None


def test_every_benchmark_unit_has_a_layer():
    units = {p.stem if p.parent == PACKAGE else p.relative_to(PACKAGE).parts[0]
             for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE}
    assert units - set(RANK) == set(), "add the new module to LAYERS"


def test_core_never_imports_submissions_or_builders():
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p in PACKAGE.rglob("*.py")
           for line, mod, _ in _imports(p) if mod.split(".")[0] in ("submissions", "dataset_builders")]
    assert not bad, bad


def test_imports_point_down():
    bad = []
    for path in PACKAGE.rglob("*.py"):
        me = _unit(_module(path)) or "__init__"
        for line, mod, _ in _imports(path):
            other = _unit(mod)
            if other is None or other == me or me == "__init__":
                continue
            if RANK[other] > RANK[me] or (RANK[other] == RANK[me] and RANK[me] >= RANK["runner"]):
                bad.append(f"{path.relative_to(ROOT)}:{line} {me} -> {other} ({mod})")
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_units():
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        me = _unit(_module(path))
        for _, mod, _names in _imports(path):
            other = _unit(mod)
            if me and other and other != me:
                edges.setdefault(me, set()).add(other)

    def reaches(a: str, b: str, seen: set) -> bool:
        return any(n == b or (n not in seen and reaches(n, b, seen | {n})) for n in edges.get(a, ()))

    cycles = sorted({tuple(sorted((a, b))) for a, outs in edges.items() for b in outs if reaches(b, a, {b})})
    assert not cycles, cycles


def test_no_private_name_crosses_a_module():
    bad = []
    for path in SOURCES:
        for line, mod, names in _imports(path):
            bad += [f"{path.relative_to(ROOT)}:{line} from {mod} import {n}" for n in names
                    if n.startswith("_") and not n.startswith("__")]
    assert not bad, bad


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_functions_are_short(path):
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80]
    assert not long, long


def test_few_internal_imports_inside_functions():
    total, inside, per_file = census(("benchmark",))
    assert inside < 0.10 * total, (f"{inside} of {total} internal imports of benchmark/ are inside functions "
                                   f"({inside / total:.1%}); hoist them to the top: {per_file.most_common(5)}")


# --------------------------------------------------------------------------- no paper named outside its folder

PAPER_NAME = re.compile(r"gep_|dalleval|paintskills|pst_|mcas|diffusion_bias|generated_bias")
#: Files that still name a paper or suite in their code, with how many names or strings do: none
#: is left (issue 21, the last was the reference-attributes reader). No file joins.
STILL_NAMING_PAPERS: dict[str, int] = {}


def _may_name_papers(rel: str) -> bool:
    # the paper folders, and the formula modules of scores/ (the public API, named after their scores)
    return rel.startswith("benchmark/tasks/") or (rel.startswith("benchmark/scores/") and not rel.endswith("/metadata.py"))


def _paper_names_in_code(path: Path) -> list[tuple[int, str]]:
    """(line, token) of every name or string of ``path`` naming a paper or suite, docstrings left out."""
    src = path.read_text(encoding="utf-8")
    docs = set()
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docs.update(range(first.lineno, first.end_lineno + 1))
    return [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(src).readline)
            if tok.type in (tokenize.NAME, tokenize.STRING) and tok.start[0] not in docs and PAPER_NAME.search(tok.string)]


def test_no_paper_is_named_outside_its_folder():
    bad, stale = [], []
    for path in sorted(p for d in ("benchmark", "submissions") for p in (ROOT / d).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if _may_name_papers(rel):
            continue
        found = _paper_names_in_code(path)
        allowed = STILL_NAMING_PAPERS.get(rel, 0)
        if len(found) > allowed:
            bad.append(f"{rel} names papers {len(found)} times (allowed {allowed}), e.g. line {found[0][0]}: "
                       f"{found[0][1][:60]} -- ask the task registry (benchmark.tasks) instead")
        elif allowed and not found:
            stale.append(rel)
    assert not bad, "\n".join(bad)
    assert not stale, f"remove from STILL_NAMING_PAPERS: {stale}"


def test_the_name_check_finds_a_paper_named_in_code(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""Cites GEP Fig. 2 and gep_neutral in a docstring."""\n# gep_neutral in a comment\n'
                     'SUITES = ("gep_neutral",)\nmcas_reference = None\n')
    assert [t for _, t in _paper_names_in_code(probe)] == ['"gep_neutral"', "mcas_reference"]


def test_no_module_outside_the_tasks_imports_a_paper_folder_except_the_listed():
    folders = {p.name for p in (PACKAGE / "tasks").iterdir() if (p / "__init__.py").is_file()}
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("benchmark/tasks/") or rel in STILL_NAMING_PAPERS:
            continue
        bad += [f"{rel}:{line} imports {mod}" for line, mod, _ in _imports(path)
                if mod.startswith("benchmark.tasks.") and mod.split(".")[2] in folders]
    assert not bad, bad


def test_no_import_cycle_between_modules():
    """No two modules import each other, directly or round a loop, counting the imports inside
    functions too (a function-level import must not hide a cycle)."""
    modules = {_module(p): p for d in ("benchmark", "submissions", "dataset_builders") for p in (ROOT / d).rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for me, path in modules.items():
        for _, mod, names in _imports(path):
            for other in [mod] + [f"{mod}.{n}" for n in names]:
                # a submodule importing its own package's __init__ is the package loading, no cycle
                if other in modules and other != me and not me.startswith(other + "."):
                    edges.setdefault(me, set()).add(other)

    def loop_from(start: str) -> list[str] | None:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for n in edges.get(node, ()):
                if n == start:
                    return path
                if n not in seen:
                    seen.add(n)
                    stack.append((n, path + [n]))
        return None

    loops = {tuple(sorted(loop)) for m in modules if (loop := loop_from(m))}
    assert not loops, sorted(loops)
