"""The registry is explicit: a task folder's ``task.py`` declares everything the folder adds
(``REGISTRATIONS``), the loader registers the package's declarations, then the folders' in
folder order, then plugins'; importing a module registers nothing, so the order is the declared
one whoever imports what first; each ``register_*`` function has one import path."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import benchmark
from benchmark import registries
from benchmark.tasks.discovery import BUILTIN_ORDER, task_folders

ROOT = Path(__file__).resolve().parents[1]
REGISTER_FUNCTIONS = {name for name in registries.__all__ if name.startswith("register_")}


def _fresh(script: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_every_built_in_folder_declares_its_registrations_in_its_task_module():
    benchmark.load_tasks()
    for name in BUILTIN_ORDER:
        declared = getattr(__import__(f"benchmark.tasks.{name}.task", fromlist=["REGISTRATIONS"]), "REGISTRATIONS")
        assert isinstance(declared, registries.Registrations), name
        for kind, registry in (("papers", registries.PAPERS), ("scores", registries.SCORE_METADATA),
                               ("suites", registries.SUITES), ("tasks", registries.TASKS)):
            for entry in getattr(declared, kind):
                key = getattr(entry, "key", None) or entry.name
                assert registry[key] is entry, (name, kind, key)


def test_importing_a_folder_registers_nothing():
    """Every module of every built-in folder imported, the registries never read: all empty."""
    modules = [f"benchmark.tasks.{folder}.{p.stem}" for folder in BUILTIN_ORDER
               for p in sorted((ROOT / "benchmark" / "tasks" / folder).glob("*.py"))
               if p.stem not in ("__init__",) and not p.stem.startswith("_")]
    script = ("import importlib\nfrom benchmark import registries as r\n"
              f"for m in {[m for m in modules if not m.endswith(('scene_dataset', 'cli', 'commands', 'sample_sheet'))]!r}:\n"
              "    importlib.import_module(m)\n"
              "print(sorted(n for n in r.__all__ if n.isupper() and isinstance(getattr(r, n), r.Registry)"
              " and getattr(r, n).so_far()))\n")
    assert _fresh(script) == "[]"


def test_the_order_is_the_declared_one_whoever_comes_first():
    """A plugin imported before anything else is still listed after the folders; a folder's
    module imported first changes nothing."""
    script = ("import sys\nsys.path.insert(0, 'tests/plugins')\n"
              "import gep_short_suite\nimport benchmark.tasks.paintskills.task\n"
              "from benchmark.registries import SUITES\nprint(list(SUITES))\n")
    suites = eval(_fresh(script))  # noqa: S307 (our own subprocess's print of a list of names)
    benchmark.load_tasks()
    assert suites == [*registries.SUITES, "gep_neutral_short"]
    folders_of = [s.family for s in registries.SUITES.values()]
    assert folders_of == sorted(folders_of, key=lambda f: task_folders().index(f))  # folder order


def test_the_registries_do_not_read_the_call_stack():
    src = (ROOT / "benchmark" / "registries.py").read_text()
    assert "_getframe" not in src and "inspect" not in src


def test_each_register_function_has_one_import_path():
    """No module but benchmark.registries defines, re-exports or imports a register_* function
    from elsewhere."""
    assert REGISTER_FUNCTIONS >= {"register_annotator", "register_score", "register_suite", "register_task"}
    bad = []
    for path in sorted(p for d in ("benchmark", "submissions", "dataset_builders", "bench", "tests")
                       for p in (ROOT / d).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "benchmark.registries":
                bad += [f"{rel}:{node.lineno} imports {a.name} from {node.module}" for a in node.names
                        if a.name in REGISTER_FUNCTIONS]
            elif isinstance(node, ast.FunctionDef) and node.name in REGISTER_FUNCTIONS and rel != "benchmark/registries.py":
                bad.append(f"{rel}:{node.lineno} defines {node.name}")
            elif (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                  and rel != "benchmark/registries.py" and isinstance(node.value, (ast.List, ast.Tuple))):
                bad += [f"{rel}:{node.lineno} exports {e.value}" for e in node.value.elts
                        if isinstance(e, ast.Constant) and e.value in REGISTER_FUNCTIONS]
    assert not bad, "\n".join(bad)


def test_no_side_effect_import_in_a_task_folder():
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "benchmark" / "tasks").rglob("*.py"))
           for i, line in enumerate(p.read_text().splitlines(), 1) if "noqa: F401" in line]
    assert not bad, bad


def test_register_all_keeps_each_registrys_checks():
    """The same entry twice is a no-op; another entry under a taken name, a second task for a
    family, a label file keyed by a column it lacks and a score whose range is upside down are
    refused in one line, and nothing of a refused declaration is listed."""
    from dataclasses import replace

    import pytest

    from benchmark.annotate.label_files import LabelFile

    benchmark.load_tasks()
    mcas = registries.SCORE_METADATA["mcas"]
    assert registries.register_all(registries.Registrations(scores=(mcas,))) and list(registries.SCORE_METADATA)[15] == "mcas"
    cases = [(registries.Registrations(scores=(replace(mcas, display_name="other"),)), "already has other metadata"),
             (registries.Registrations(scores=(replace(mcas, name="upside_down", min_value=2.0, max_value=1.0),)),
              "min 2.0 > max 1.0"),
             (registries.Registrations(tasks=(replace(registries.TASKS["gep"], name="gep_again"),)),
              "probe family 'gep' is already scored by task 'gep'"),
             (registries.Registrations(label_files=(LabelFile("odd", {"a": "string"}, ("b",), "x"),)),
              r"key columns \['b'\] are not among its columns"),
             (registries.Registrations(suites=(replace(registries.SUITES["gep_neutral"], summary="other"),)),
              "suite 'gep_neutral' is registered twice")]
    for declared, message in cases:
        with pytest.raises(ValueError, match=message):
            registries.register_all(declared)
    assert "upside_down" not in registries.SCORE_METADATA and "gep_again" not in registries.TASKS
    assert "odd" not in registries.LABEL_FILES
