"""Task inputs and task-folder annotator options: declared in a folder's light ``inputs.py``,
turned into command-line options by the parser, planned and recorded by the runner without
the runner naming them (benchmark.tasks.inputs)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmark.tasks.inputs import TaskInput, declared_inputs, input_of_results_key, plan_inputs, results_references

ROOT = Path(__file__).resolve().parents[1]

INPUTS_PY = '''
"""A toy paper's run inputs (a test fixture)."""
from benchmark.annotate.kinds import AnnotatorKind
from benchmark.tasks.inputs import TaskInput

ANNOTATORS = (AnnotatorKind("toyref_kind", "toyref_missing:Annotator", option="toyref_models",
                            default=lambda builtin: [], many=True, help="toy models"),)
INPUTS = (TaskInput(name="toyref_reference", results_key="toyref", plan="benchmark.tasks.toyref.inputs:plan",
                    help="score the toy paper against a reference", revision_help="its revision",
                    label="Toy reference", what="toy images", scored="Toy", compare="Toy"),)


def plan(run_dir, probe_set, suites, source, revision):
    return suites, (None if source is None else {"source": source, "revision": revision, "fingerprint": "f" * 64})
'''


def _parser_help(tmp_path: Path, *args: str) -> str:
    folder = tmp_path / "tasks" / "toyref"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text('"""A toy paper with only run inputs."""\n')
    (folder / "inputs.py").write_text(textwrap.dedent(INPUTS_PY))
    env = {**os.environ, "T2IBENCH_TASKS_PATH": str(tmp_path / "tasks"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_folders_inputs_py_adds_its_options(tmp_path):
    run_help = _parser_help(tmp_path, "run", "--help")
    for option in ("--toyref-reference SOURCE", "--toyref-reference-revision REV", "--toyref-models",
                   "--mcas-reference SOURCE", "--mcas-reference-revision REV", "--mcas-encoders"):
        assert option in run_help, option


def test_the_built_in_inputs_and_their_words():
    (ref,) = [i for i in declared_inputs() if i.results_key == "mcas"]
    assert ref.option == "--mcas-reference" and ref.names == ("mcas_reference", "mcas_reference_revision")
    assert input_of_results_key("mcas") is ref and ref.badge == "mcas-ref" and ref.short_label == "MCAS ref"
    identity = {"source": "org/ref", "revision": None, "fingerprint": "a" * 64}
    assert ref.detail_text(identity) == ("attribute images from org/ref (fingerprint aaaaaaaaaaaa); ranked only "
                                         "with rows of the same reference")
    # a key no installed folder declares still reads, in words made from the key
    other = input_of_results_key("other")
    assert isinstance(other, TaskInput) and other.title == "OTHER reference" and other.badge == "other-ref"


def test_results_references_and_a_malformed_entry():
    identity = {"source": "refs/ref", "revision": None, "fingerprint": "b" * 64}
    assert results_references({"mcas_reference": identity}) == {"mcas": identity}
    assert results_references({}) is None
    with pytest.raises(ValueError, match="malformed mcas_reference"):
        results_references({"mcas_reference": {"source": "x"}})


def test_an_input_no_task_declares_is_refused():
    with pytest.raises(TypeError, match="no_such_reference"):
        plan_inputs(None, None, ["gep_neutral"], {"no_such_reference": "x"})
