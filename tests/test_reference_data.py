"""The authors' release files the comparison tests read live in tests/data/ (with their
sources and licences), nothing reads a folder outside the repository, and no comparison
test can be skipped."""

import ast
import importlib.util
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
REF_NAMES = {"REF", "REFERENCE"}


def _modules_with_reference() -> dict[Path, ast.Module]:
    """Test modules with a module-level REF / REFERENCE (the release files they compare with)."""
    found = {}
    for path in sorted(TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in REF_NAMES
                                                    for t in node.targets):
                found[path] = tree
    return found


def _skips(node: ast.AST) -> list[str]:
    """Every skip in ``node``: skip / skipif / importorskip / xfail calls or decorators."""
    out = []
    for sub in ast.walk(node):
        name = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else ""
        if name in ("skip", "skipif", "importorskip", "xfail"):
            out.append(name)
    return out


def test_listed_files_are_exactly_the_files_here():
    readme = (DATA / "README.md").read_text()
    listed = set()
    for cell in re.findall(r"^\| `([^`]+)` \|", readme, re.M):
        braces = re.fullmatch(r"(.*)\{(.*)\}(.*)", cell)  # paintskills/{object,count}.json
        listed |= {braces[1] + name + braces[3] for name in braces[2].split(",")} if braces else {cell}
    present = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file() and p.name != "README.md"}
    assert listed == present
    for licence in ("MIT", "Apache-2.0"):
        assert licence in readme
    assert readme.count("Permission is hereby granted") == 2  # the two MIT notices, quoted in full


def test_comparison_tests_read_tests_data_and_cannot_skip():
    modules = _modules_with_reference()
    names = {p.name for p in modules}
    assert {"test_dalleval.py", "test_gep_probes.py", "test_paintskills_data.py"} <= names
    for path, tree in modules.items():
        spec = importlib.util.spec_from_file_location(f"_ref_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr in REF_NAMES & set(vars(module)):
            ref = Path(getattr(module, attr)).resolve()
            assert ref.is_relative_to(DATA) and ref.exists(), f"{path.name}: {attr} = {ref}"
        users = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")
                 and any(isinstance(n, ast.Name) and n.id in REF_NAMES for n in ast.walk(f))]
        assert users, f"{path.name} defines a reference path but no test reads it"
        for f in users:
            assert not _skips(f), f"{path.name}::{f.name} can skip: {_skips(f)}"
        marks = [n for n in tree.body if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)]
        assert not any(_skips(n) for n in marks), f"{path.name} skips the whole module"


def test_nothing_reads_a_folder_outside_the_repository():
    root = TESTS.parent
    pattern = re.compile(r"shared/reference|\"shared\"\s*/\s*\"reference\"|/work/")
    offenders = [f"{p.relative_to(root)}:{i}" for folder in ("tests", "benchmark", "submissions", "dataset_builders")
                 for p in (root / folder).rglob("*.py") if p != Path(__file__).resolve()
                 for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not offenders
