"""The package's layers point down (the layer order is the numbered list of
``benchmark/__init__.py``'s docstring, read here), checked on the source with the ast module:

* ``benchmark`` never imports ``submissions`` or ``dataset_builders``;
* a subpackage imports only its own layer or layers below it (``models`` never imports a
  feature package, the runner never imports ``human``), counting the modules named by a string
  to ``import_module(...)`` / ``__import__(...)`` (an f-string: its text before the first
  placeholder) as imports too;
* no import cycle between the subpackages of one layer, nor between any two modules
  (imports inside functions and by string included);
* no private name (``_x``) is imported from another module;
* no function of ``benchmark`` is longer than 80 lines;
* fewer than 10% of the internal imports of ``benchmark`` sit inside a function (the rest
  at the top of their file, so the module graph is visible to a reader);
* outside ``benchmark/tasks/`` (one folder per paper, its formulas in ``scores.py``) and the
  ``metrics/`` generated from them, no source file of ``benchmark/``, ``submissions/``,
  ``dataset_builders/`` or ``bench/`` names a paper, task folder, suite or score (the names the
  registries hold, any case, whole words) in its code or strings; docstrings and comments are
  left out, as they cite the paper a method comes from.
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


def _layers() -> list[set[str]]:
    """Bottom to top, from the numbered list of ``benchmark/__init__.py``'s docstring (one order,
    written once). A unit is a top-level module or subpackage of `benchmark`."""
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))) or ""
    # a layer's line: "N. ``unit``, ``unit`` (a remark, not read)"
    return [set(re.findall(r"``(\w+)``", line.split(" (", 1)[0])) for line in doc.splitlines()
            if re.match(r"\d+\. ", line)]


LAYERS = _layers()
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}
SOURCES = sorted(p for d in ("benchmark", "submissions", "dataset_builders", "metrics", "bench")
                 for p in (ROOT / d).rglob("*.py"))


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(package: str, level: int, module: str) -> str:
    """The absolute name of a relative import ``level`` dots up from ``package``."""
    if not level:
        return module
    pkg = package.split(".")
    return ".".join(pkg[:len(pkg) - (level - 1)] + ([module] if module else []))


def _string_import(node: ast.Call, package: str) -> str | None:
    """The module ``import_module("x")``, ``importlib.import_module(...)`` or ``__import__("x")``
    names; for an f-string, its text before the first placeholder (``f"benchmark.tasks.{n}"``:
    ``benchmark.tasks``), a relative one resolved against the module's package (the
    ``__package__`` it passes); None for a name held in a variable (not knowable from the source)."""
    func = node.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if called not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.JoinedStr):
        arg = arg.values[0] if arg.values else None
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return None
    text = arg.value.rstrip(".") if arg.value.strip(".") else arg.value  # "benchmark.tasks." of an f-string
    dots = len(text) - len(text.lstrip("."))
    return _resolve(package, dots, text[dots:]) or None


def _imports(path: Path, me: str | None = None) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every import in ``path`` (module ``me``, by default
    its name under ROOT), relative ones resolved, imports by string included."""
    me = me or _module(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, _resolve(package, node.level, node.module or ""), [a.name for a in node.names]))
        elif isinstance(node, ast.Call) and (named := _string_import(node, package)):
            out.append((node.lineno, named, []))
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


def _imports_up(path: Path, module: str | None = None) -> list[str]:
    """The imports of ``path`` (module ``module``) that point up the layers, or across a layer
    at or above the runner; the package's ``__init__`` stands above every layer."""
    me = _unit(module or _module(path)) or "__init__"
    bad = []
    for line, mod, _ in _imports(path, module):
        other = _unit(mod)
        if other is None or other == me or me == "__init__":
            continue
        if RANK[other] > RANK[me] or (RANK[other] == RANK[me] and RANK[me] >= RANK["runner"]):
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            bad.append(f"{where}:{line} {me} -> {other} ({mod})")
    return bad


def test_the_layers_are_read_from_the_package_docstring():
    assert len(LAYERS) >= 8 and {"registries", "contract"} <= LAYERS[0] and LAYERS[-1] == {"cli", "__main__"}


def test_imports_point_down():
    bad = [b for path in PACKAGE.rglob("*.py") for b in _imports_up(path)]
    assert not bad, "\n".join(bad)


def test_the_layer_check_sees_an_import_by_string(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("import importlib\nfrom importlib import import_module\n\n\ndef f(name):\n"
                       "    import_module('benchmark.tasks.discovery')\n    importlib.import_module(f'benchmark.runner.{name}')\n"
                       "    __import__('benchmark.human')\n    import_module(name)\n    import_module('.kinds', __package__)\n")
    assert [b.split(" ", 1)[1] for b in _imports_up(planted, "benchmark.probes.planted")] == [
        "probes -> tasks (benchmark.tasks.discovery)", "probes -> runner (benchmark.runner)", "probes -> human (benchmark.human)"]
    assert _imports(planted, "benchmark.annotate.planted")[-1][1] == "benchmark.annotate.kinds"


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

#: Where the check looks: every source file but the paper folders (``benchmark/tasks/``) and the
#: evaluate modules generated from them (``metrics/``).
NAMING_ROOTS = ("benchmark", "submissions", "dataset_builders", "bench")
#: Score names that are also ordinary abbreviations, left out of the names looked for: the MCAS
#: components II, ITA, ITP, TT (ITA is also the skin-tone Individual Typology Angle of the shared
#: ``benchmark/scores/skin_tone.py``; ">II" is a struct format).
SHORT_SCORE_NAMES = 3
def paper_names_pattern(names: set[str]) -> re.Pattern:
    """Any of ``names`` as a whole word, any case; ``_``, ``-`` and a space separate words and
    match one another ("Diffusion Bias" finds ``diffusion_bias``, ``gep`` finds ``gep_rows``)."""
    def one(name: str) -> str:
        return r"[ _-]".join(re.escape(part) for part in re.split(r"[ _-]", name))

    alternatives = "|".join(sorted({one(n) for n in names}, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", re.IGNORECASE)


@pytest.fixture(scope="module")
def paper_name():
    """The names of the papers (keys and short names), task folders, tasks, suites and scores the
    registries hold once the task folders are loaded."""
    import benchmark
    from benchmark.papers import PAPERS
    from benchmark.probes import list_suites
    from benchmark.scores.metadata import SCORE_METADATA
    from benchmark.tasks import list_tasks

    benchmark.load_tasks()
    folders = {p.name for p in (PACKAGE / "tasks").iterdir() if (p / "__init__.py").is_file()}
    names = (set(PAPERS) | {p.label for p in PAPERS.values() if p.label} | folders | {t.name for t in list_tasks()}
             | set(list_suites()) | {k for k in SCORE_METADATA if len(k) > SHORT_SCORE_NAMES})
    return paper_names_pattern(names)


def _paper_names_in_code(path: Path, pattern: re.Pattern) -> list[tuple[int, str]]:
    """(line, name) of every name of a paper, suite or score in the code and strings of ``path``.
    Docstrings and comments are left out: they cite the paper a method comes from, by its short
    name (a project rule)."""
    src = path.read_text(encoding="utf-8")
    docs = set()
    for n in ast.walk(ast.parse(src)):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docs.update(range(first.lineno, first.end_lineno + 1))
    return [(tok.start[0], m.group(0)) for tok in tokenize.generate_tokens(io.StringIO(src).readline)
            if tok.type in (tokenize.NAME, tokenize.STRING) and tok.start[0] not in docs
            for m in pattern.finditer(tok.string)]


#: the templates the code renders (report pages): their text is read as the code's strings are
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2")


def _paper_names_in_template(path: Path, pattern: re.Pattern) -> list[tuple[int, str]]:
    """(line, name) of every name of a paper, suite or score in a template's text; its comments
    (``{# ... #}``) may cite a paper, as a docstring may."""
    src = re.sub(r"\{#.*?#\}", lambda m: "\n" * m.group(0).count("\n"), path.read_text(encoding="utf-8"), flags=re.S)
    return [(i, m.group(0)) for i, line in enumerate(src.splitlines(), 1) for m in pattern.finditer(line)]


def papers_named_outside_their_folders(root: Path, pattern: re.Pattern) -> list[str]:
    """One line per source file (or template) of ``root`` outside ``benchmark/tasks/`` and
    ``metrics/`` that names a paper, suite or score in its code, strings or template text."""
    bad = []
    for path in sorted(p for d in NAMING_ROOTS for p in (root / d).rglob("*")
                       if p.suffix == ".py" or p.suffix in TEMPLATE_SUFFIXES):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("benchmark/tasks/"):
            continue
        found = (_paper_names_in_code if path.suffix == ".py" else _paper_names_in_template)(path, pattern)
        if found:
            bad.append(f"{rel} names papers, suites or scores {len(found)} times, e.g. line {found[0][0]}: "
                       f"{found[0][1]} -- read the wording from the task (benchmark.tasks) instead")
    return bad


def test_no_paper_is_named_outside_its_folder(paper_name):
    bad = papers_named_outside_their_folders(ROOT, paper_name)
    assert not bad, "\n".join(bad)


def test_the_name_check_finds_a_paper_named_in_code(tmp_path, paper_name):
    probe = tmp_path / "benchmark" / "annotate" / "probe.py"
    probe.parent.mkdir(parents=True)
    (tmp_path / "benchmark" / "tasks" / "gep").mkdir(parents=True)
    (tmp_path / "benchmark" / "tasks" / "gep" / "task.py").write_text('SUITES = ("gep_neutral",)\n')
    probe.write_text('"""Cites GEP Fig. 2 and gep_neutral in a docstring."""\n# gep_neutral in a comment\n'
                     'SUITES = ("GEP_Neutral",)\nmcas_reference = None\nHELP = "encoder for Diffusion Bias"\n'
                     'LABEL = "DALL-Eval"\nSCORE = "paintskills_count"\nII = ">II"\ngeppetto = "pasta"\n')
    assert [t for _, t in _paper_names_in_code(probe, paper_name)] == [
        "GEP_Neutral", "mcas", "Diffusion Bias", "DALL-Eval", "paintskills_count"]
    assert papers_named_outside_their_folders(tmp_path, paper_name) == [
        "benchmark/annotate/probe.py names papers, suites or scores 5 times, e.g. line 3: GEP_Neutral -- read the "
        "wording from the task (benchmark.tasks) instead"]
    probe.write_text('"""Cites GEP Fig. 2."""\nSUITES = ()\n')
    assert papers_named_outside_their_folders(tmp_path, paper_name) == []
    # a template's text counts as code; its comments may cite
    page = tmp_path / "benchmark" / "runner" / "templates" / "page.md.j2"
    page.parent.mkdir(parents=True)
    page.write_text("{# GEP Fig. 2,\nas DALL-Eval #}\n{{ legend }}\nNo face: DALL-Eval skin tone needs a face.\n")
    assert papers_named_outside_their_folders(tmp_path, paper_name) == [
        "benchmark/runner/templates/page.md.j2 names papers, suites or scores 1 times, e.g. line 4: DALL-Eval -- read "
        "the wording from the task (benchmark.tasks) instead"]


def test_no_module_outside_the_tasks_imports_a_paper_folder_except_the_listed():
    folders = {p.name for p in (PACKAGE / "tasks").iterdir() if (p / "__init__.py").is_file()}
    bad = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("benchmark/tasks/"):
            continue
        bad += [f"{rel}:{line} imports {mod}" for line, mod, _ in _imports(path)
                if mod.startswith("benchmark.tasks.") and mod.split(".")[2] in folders]
    assert not bad, bad


def _module_edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules among ``modules`` it imports (by statement or string)."""
    edges: dict[str, set[str]] = {}
    for me, path in modules.items():
        for _, mod, names in _imports(path, me):
            for other in [mod] + [f"{mod}.{n}" for n in names]:
                # a submodule importing its own package's __init__ is the package loading, no cycle
                if other in modules and other != me and not me.startswith(other + "."):
                    edges.setdefault(me, set()).add(other)
    return edges


def _loops(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
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

    return sorted({tuple(sorted(loop)) for m in edges if (loop := loop_from(m))})


def test_no_import_cycle_between_modules():
    """No two modules import each other, directly or round a loop, counting the imports inside
    functions and by string too (neither may hide a cycle)."""
    modules = {_module(p): p for d in ("benchmark", "submissions", "dataset_builders") for p in (ROOT / d).rglob("*.py")}
    loops = _loops(_module_edges(modules))
    assert not loops, loops


def test_the_cycle_check_finds_a_loop_closed_by_a_string(tmp_path):
    (tmp_path / "a.py").write_text("from benchmark.scores import b\n")
    (tmp_path / "b.py").write_text("from importlib import import_module\n\n\ndef f():\n"
                                   "    return import_module('benchmark.scores.a')\n")
    modules = {"benchmark.scores.a": tmp_path / "a.py", "benchmark.scores.b": tmp_path / "b.py"}
    assert _loops(_module_edges(modules)) == [("benchmark.scores.a", "benchmark.scores.b")]


def test_task_folders_depend_one_way():
    """Two task folders may share code (MCAS imports Generated Bias's checks), in one direction only."""
    tasks = PACKAGE / "tasks"
    folders = {p.name for p in tasks.iterdir() if (p / "__init__.py").is_file()}
    edges: dict[str, set[str]] = {}
    for path in tasks.rglob("*.py"):
        me = path.relative_to(tasks).parts[0]
        for _, mod, _names in _imports(path):
            other = mod.split(".")[2] if mod.startswith("benchmark.tasks.") else None
            if me in folders and other in folders and other != me:
                edges.setdefault(me, set()).add(other)
    assert not _loops(edges), edges
