"""`python -m dataset_builders`: the builders the task folders (and the package) register, listed
with `--list` and run by name; an unknown name is one error line; a task folder on
$T2IBENCH_TASKS_PATH publishes a dataset of its own without a file of dataset_builders/ edited."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmark.registries import DATASET_BUILDERS, register_dataset_builder
from dataset_builders import registered_builders

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "data" / "task_folder" / "lightness"
SHELLS = sorted(p.stem for p in (ROOT / "dataset_builders").glob("*.py") if not p.stem.startswith("__"))


def _call(*args: str, tasks: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "100",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if tasks is not None:
        env["T2IBENCH_TASKS_PATH"] = str(tasks)
    return subprocess.run([sys.executable, "-m", "dataset_builders", *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=ROOT)


def test_every_module_of_dataset_builders_runs_a_registered_builder():
    builders = registered_builders()
    assert {"probes", "human_labels", "reference_attributes", "paintskills"} <= set(builders)
    assert set(SHELLS) <= set(builders), SHELLS
    for name in SHELLS:
        spec = builders[name]
        assert spec.name == name and spec.description and "\n" not in spec.description
        assert importlib.util.find_spec(spec.module) is not None, spec.module


def test_a_builder_is_registered_once():
    spec = DATASET_BUILDERS["probes"]
    assert register_dataset_builder(spec.name, spec.description, spec.module) == spec  # the same: a no-op
    with pytest.raises(ValueError, match="dataset builder 'probes' is registered twice"):
        register_dataset_builder("probes", "something else", spec.module)


def test_list_names_each_builder_on_one_line():
    proc = _call("--list")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == list(registered_builders())
    assert {"probes", "human_labels", "reference_attributes", "paintskills"} <= set(names)
    assert all(len(line.split(None, 1)) == 2 for line in lines)  # name, then its description
    # each fits the terminal (COLUMNS=100): a long description is cut at a word, marked " ..."
    assert all(len(line) <= 100 for line in lines), lines
    human = next(line for line in lines if line.startswith("human_labels"))
    assert human.endswith(" ...") and "Publish a run's human labels as a Hub dataset" in human


def test_an_unknown_builder_is_one_line_naming_the_known_ones():
    proc = _call("nope", "--out", "x")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("t2ibench: error: unknown dataset builder 'nope'; the builders are: ")
    assert all(name in line for name in ("probes", "human_labels", "reference_attributes", "paintskills"))
    proc = _call()
    assert proc.returncode == 2 and proc.stderr.startswith("t2ibench: error: name a dataset builder")


#: a toy builder of the outside task folder: writes one file per --n
TOY_BUILDER = '''\
"""A toy dataset builder of an outside task folder."""
from pathlib import Path


def add_arguments(parser):
    parser.add_argument("--out", required=True)
    parser.add_argument("--n", type=int, default=2)


def run(args):
    out = Path(args.out)
    out.mkdir(parents=True)
    for i in range(args.n):
        (out / f"row{i}.txt").write_text(str(i))
    print(f"wrote {args.n} rows to {out}")
    return 0
'''


def test_an_outside_task_folder_publishes_its_own_dataset(tmp_path):
    folder = tmp_path / "tasks" / "lightness"
    shutil.copytree(FOLDER, folder)
    (folder / "dataset.py").write_text(TOY_BUILDER)
    with (folder / "__init__.py").open("a") as f:
        f.write(textwrap.dedent('''
            from benchmark.registries import register_dataset_builder

            register_dataset_builder("lightness_rows", "Toy rows of the lightness folder.", f"{__name__}.dataset")
        '''))
    listed = _call("--list", tasks=tmp_path / "tasks")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[-1].split() == ["lightness_rows", "Toy", "rows", "of", "the", "lightness",
                                                      "folder."]
    proc = _call("lightness_rows", "--out", str(tmp_path / "out"), "--n", "3", tasks=tmp_path / "tasks")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote 3 rows to {tmp_path / 'out'}"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["row0.txt", "row1.txt", "row2.txt"]
    usage = _call("lightness_rows", "--help", tasks=tmp_path / "tasks")
    assert usage.returncode == 0 and usage.stdout.startswith("usage: python -m dataset_builders lightness_rows")
    assert "Toy rows of the lightness folder." in usage.stdout
    assert "lightness_rows" not in _call("--list").stdout  # only where the folder is on the path


@pytest.mark.parametrize("argv", [["probes", "--out", "{run}"], ["probes", "--out", "{run}/labels"],
                                  ["paintskills", "--out", "{run}"], ["reference_attributes", "--out", "{run}"],
                                  ["human_labels", "{run}", "--out", "{run}/labels"]])
def test_a_builder_never_writes_into_a_run_folder(tmp_path, capsys, argv):
    """Issue 41: `python -m dataset_builders probes --out RUN` deleted the run (its dataset card
    made it look like an earlier build); every builder's --out is refused while parsing."""
    from dataset_builders import run_builder

    run = tmp_path / "run"
    (run / "labels").mkdir(parents=True)
    (run / "run_config.json").write_text("{}")
    (run / "results.json").write_text("{}")
    (run / "README.md").write_text("---\nconfigs: []\n---\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as done:
        run_builder(argv[0], [a.format(run=run) for a in argv[1:]])
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run folder" in err[0] and "choose a path outside it" in err[0], err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_clearing_a_dataset_folder_never_clears_a_run(tmp_path):
    from benchmark.hub.dataset_layout import clear_folder

    run = tmp_path / "run"
    run.mkdir()
    (run / "run_config.json").write_text("{}")
    (run / "README.md").write_text("---\n---\n")
    with pytest.raises(ValueError, match="is a run folder"):
        clear_folder(run)
    assert (run / "run_config.json").is_file()
