"""The command line answers fast and checks everything first: help without the heavy
libraries, every bad option value one line on stderr with exit 2 before anything is
written, later stages refusing what `t2ibench validate` refuses."""

import argparse
import json
import os
import shutil
import subprocess
import sys

import pytest
from cli_here import exit_status

from benchmark import cli
from benchmark.cli_types import AUTO
from benchmark.commands.stage_inputs import stage_batch_size

HEAVY = ("pandas", "scipy", "sklearn", "datasets", "torch")


def imported_modules(*args):
    """Top-level modules imported by ``python -X importtime -m benchmark.cli ARGS`` (and its exit status)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "benchmark.cli", *args], capture_output=True,
                          text=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    assert "argparse" in names  # the trace was read
    return names, proc


@pytest.mark.parametrize("args", [("--help",), ("run", "--help"), ("probes", "build", "--help"),
                                  ("run", "--model", "m", "--out", "o", "--n-resamples", "-5")])
def test_help_and_usage_errors_import_no_heavy_library(args):
    names, proc = imported_modules(*args)
    assert proc.returncode in (0, 2)
    assert not names & set(HEAVY), sorted(names & set(HEAVY))


def t2ibench(argv, capsys):
    """(exit status, stdout lines, stderr lines) of ``t2ibench ARGV`` run in this process."""
    code = exit_status(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def _bad_inputs(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    run = ["run", "--model", "builtin:tiny-sd", "--quiet"]
    out = ["--out", tmp_path / "run"]
    return [
        (run + out + ["--n-resamples", "-5"], "--n-resamples: expected a whole number from 1 to 100,000, got -5"),
        (run + out + ["--batch-size", "0"], "expected a whole number >= 1 or 'auto', got '0'"),
        (run + out + ["--limit", "0"], "--limit: expected a whole number >= 1, got 0"),
        (run + ["--out", a_file], "is a file, not a folder"),
        (run + ["--out", "/proc/nope"], "cannot create /proc/nope"),
        (run + ["--out", a_file / "sub"], "is a file, so no folder can be made under it"),
        (run + out + ["--model_args", "steps"], "expected key=value"),
        (["generate", "--model", "builtin:tiny-sd", "--batch_size", "-1"] + out, "'auto', got '-1'"),
        (["probes", "build", "--out", "/proc/nope"], "cannot create /proc/nope"),
        (["probes", "build", "--out", a_file], "is a file, not a folder"),
        (["score", tmp_path / "run", "--n-resamples", "0"], "expected a whole number from 1 to 100,000, got 0"),
        (["demo", "--out", a_file], "is a file, not a folder"),
        (run + out + ["--dtype", "float8"], "unknown dtype 'float8'"),
        (run + out + ["--device", "gpu0"], "unknown device 'gpu0'"),
        (["annotate", tmp_path / "run", "--device", "cuda:x"], "unknown device 'cuda:x'"),
    ]


def _a_run_folder(tmp_path):
    """A folder the output checks take for a run folder (it holds run_config.json), with a results.json."""
    run = tmp_path / "R"
    (run / "labels").mkdir(parents=True)
    (run / "run_config.json").write_text("{}")
    (run / "results.json").write_text("{}")
    return run


def _bad_numbers_and_outputs(tmp_path):
    """Issue 41: every numeric option bounded and every output outside the run folders, refused
    while parsing (each row was a traceback, a hang, a run or a lost file before)."""
    r = _a_run_folder(tmp_path)
    q = ["--requests-folder", tmp_path / "q"]
    res = ["--results-folder", tmp_path / "res"]
    run = ["run", "--model", "builtin:tiny-sd", "--quiet"]
    inside = f"is inside the run folder {r.resolve()}"
    return [
        (run + ["--out", tmp_path / "b", "--batch-size", "1" * 24], "at most 4,096 images per batch"),
        (run + ["--out", tmp_path / "b", "--batch-size", "1" * 20], "got a 20-digit number"),
        (run + ["--out", tmp_path / "b", "--batch-size", "4097"], "at most 4,096"),
        (run + ["--out", tmp_path / "b", "--pilot", tmp_path / "none.json"], "--pilot: no such file"),
        (run + ["--out", tmp_path / "b", "--pilot", tmp_path], "--pilot: " + f"{tmp_path} is not a file"),
        (["annotate", r, "--batch-size", "9" * 30], "at most 4,096"),
        (["score", r, "--n-resamples", "1000000000"], "from 1 to 100,000, got 1,000,000,000"),
        (run + ["--out", r / "images"], inside),
        (["demo", "--out", r / "labels" / "x"], inside),
        (["probes", "build", "--out", r], "is a run folder (it holds run_config.json)"),
        (["probes", "export", "--suites", "gep_neutral", "--out", r / "sheet.csv"], inside),
        (["submit", r, "--demo", "--to-folder", r], "is a run folder"),
        (["request", "builtin:tiny-sd", "--demo", "--to-folder", r / "labels"], inside),
        (["worker", *q, *res, "--poll", "1e300"], "--poll: expected a number of seconds from 0.1 to 86,400"),
        (["worker", *q, *res, "--poll", "nan"], "--poll: expected a number of seconds"),
        (["worker", *q, *res, "--heartbeat-timeout", "inf"], "--heartbeat-timeout: expected a number of seconds"),
        (["worker", *q, "--results-folder", "/proc/x"], "--results-folder: cannot create /proc/x"),
        (["worker", *q, "--results-folder", r / "results"], inside),
        (["worker", *q, *res, "--runs-dir", r], "is a run folder"),
        (["worker", *q, *res, "--max-attempts", "0"], "--max-attempts: expected a whole number from 1 to 100"),
        (["worker", *q, *res, "--n-resamples", "0"], "--n-resamples: expected a whole number from 1"),
        (["worker", *q, *res, "--device", "gpu"], "unknown device 'gpu'"),
        (["request", "builtin:tiny-sd", "--demo", "--to-folder", tmp_path / "q", "--max-open", "0"],
         "--max-open: expected a whole number >= 1"),
        (["new-task", "a" * 300], "longer than 40 characters"),
        (["new-task", "toy", "--out", "/proc/x"], "--out: cannot create /proc/x"),
        (["new-task", "toy", "--out", r], "is a run folder"),
        (["new-task", "gep_neutral", "--out", tmp_path / "tasks"], "the suite 'gep_neutral' exists already"),
        (["new-task", "mad_gender", "--out", tmp_path / "tasks"], "the score 'mad_gender' exists already"),
        (["agreement", r, "--out", r / "results.json"], inside),
        (["agreement", r, "--seed", "-1"], "--seed: expected a whole number from 0"),
        (["annotate-ui", r, "--port", "99999"], "expected a port between 1 and 65535"),
        (["annotate-user", r / "users.yaml", "ann"], inside),
        (["paintskills-samples", "--out", tmp_path], "is a folder, not a file"),
        (["paintskills-samples", "--out", r / "results.json"], inside),
        (["paintskills-samples", "--out", tmp_path / "s.png", "--n", "0"], "--n: expected a whole number from 1"),
        (["train-detector", "--data", tmp_path, "--out", r, "--tiny"], "is a run folder"),
        (["train-detector", "--data", tmp_path, "--out", tmp_path / "d", "--lr", "nan"], "expected a learning rate"),
        (["train-detector", "--data", tmp_path, "--out", tmp_path / "d", "--steps", "0"], "--steps: expected a whole"),
        (["paintskills-baselines", "--data", tmp_path, "--json", r / "b.json"], inside),
    ]


def _issue51_inputs(tmp_path):
    """Issue 51: names and numbers the queue stored or waited on as they were."""
    request = ["request", "builtin:tiny-sd", "--demo", "--to-folder", tmp_path / "q", "--submitter"]
    return [
        (request + ["<script>alert(1)</script>"], "submitter '<script>alert(1)</script>' holds '<'"),
        (request + ["ann\u202egro"], "holds U+202E RIGHT-TO-LEFT OVERRIDE"),
        (request + ["Zo\u00eb"], "holds the non-ASCII character U+00EB"),
        (request + ["a" * 97], "is 97 characters long (at most 96)"),
        (request + ["x-"], "must start and end with a letter or digit"),
    ]


@pytest.mark.parametrize("table", [_bad_inputs, _bad_numbers_and_outputs, _issue51_inputs])
def test_each_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, table):
    for argv, message in table(tmp_path):
        before = sorted(p.name for p in tmp_path.rglob("*"))
        code, out, err = t2ibench(argv, capsys)
        assert code == 2, argv
        assert len(err) == 1 and message in err[0] and err[0].startswith("t2ibench"), (argv, err)
        assert out == []
        assert sorted(p.name for p in tmp_path.rglob("*")) == before, argv


def test_lm_evaluation_harness_spellings_are_aliases(tmp_path):
    args = cli.build_parser().parse_args(["run", "--model", "m", "--output_path", str(tmp_path / "o"), "--tasks",
                                          "gep_neutral,pst_single", "--tasks", "mcas_targets", "--model_args",
                                          "num_inference_steps=2,guidance_scale=1", "--batch_size", "auto"])
    assert args.out == str(tmp_path / "o")
    assert args.suites == ["gep_neutral", "pst_single", "mcas_targets"]
    assert args.set == ["num_inference_steps=2", "guidance_scale=1"]
    assert args.batch_size == AUTO and stage_batch_size(args.batch_size, 4) == 4
    ours = cli.build_parser().parse_args(["run", "--model", "m", "--out", "o", "--suites", "a", "b", "--set", "x=1",
                                          "--batch-size", "3"])
    assert (ours.suites, ours.set, ours.batch_size) == (["a", "b"], ["x=1"], 3)


@pytest.mark.parametrize("argv", [["--tasks", "gep_neutral,pst_single", "--suites", "mcas_targets"],
                                  ["--suites", "mcas_targets", "--tasks", "gep_neutral,pst_single"],
                                  ["--suites", "gep_neutral", "--suites", "pst_single", "mcas_targets"]])
def test_tasks_and_suites_together_keep_both_in_either_order(argv):
    for command in ("run", "generate"):
        args = cli.build_parser().parse_args([command, "--model", "m", "--out", "o", *argv])
        assert sorted(args.suites) == ["gep_neutral", "mcas_targets", "pst_single"], (command, argv)


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                yield from ((f"{name} {n}", s) for n, s in _subparsers(sub))


def test_every_command_has_a_description_and_every_option_help():
    parser = cli.build_parser()
    commands = dict(_subparsers(parser))
    assert {"run", "score", "report", "probes build", "validate", "leaderboard"} <= set(commands)
    for name, sub in commands.items():
        assert sub.description, f"t2ibench {name} has no description"
        for action in sub._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                assert action.help, f"t2ibench {name} {action.option_strings or action.dest} has no help"
    help_text = commands["run"].format_help()
    assert "(default: 1000)" in help_text and "--output_path" in help_text


def test_dtype_spellings_match_the_models():
    from benchmark.cli_types import DTYPE_NAMES
    from benchmark.models.device import _DTYPE_NAMES

    assert set(DTYPE_NAMES) == set(_DTYPE_NAMES)


def test_the_run_folder_mark_is_the_run_config_file():
    from benchmark.cli_types import RUN_FOLDER_MARK
    from benchmark.contract.run_folder import CONFIG_FILE

    assert RUN_FOLDER_MARK == CONFIG_FILE


def test_a_symlink_into_a_run_folder_is_inside_it(tmp_path):
    from benchmark.cli_types import output_file, run_folder_around

    run = tmp_path / "run"
    (run / "labels").mkdir(parents=True)
    (run / "run_config.json").write_text("{}")
    (tmp_path / "link").symlink_to(run / "labels")
    assert run_folder_around(tmp_path / "link" / "x.parquet") == run.resolve()
    with pytest.raises(argparse.ArgumentTypeError, match="inside the run folder"):
        output_file(str(tmp_path / "link" / "gender.parquet"))
    assert run_folder_around(tmp_path / "elsewhere") is None


def test_paintskills_skills_spelled_for_help_match_the_scores():
    from benchmark.tasks.paintskills.cli import SKILLS
    from benchmark.tasks.paintskills.scores import SKILLS as SCORED

    assert SKILLS == SCORED


def test_a_task_folder_adds_its_commands_without_being_imported(tmp_path):
    """A task folder's cli.py (here one on $T2IBENCH_TASKS_PATH) adds its commands to `t2ibench`;
    it is read from its file, so `--help` never runs the folder's __init__.py."""
    folder = tmp_path / "tasks" / "toy_commands"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text('raise RuntimeError("the task folder was imported")\n')
    (folder / "cli.py").write_text(
        "def register(subparsers):\n"
        "    p = subparsers.add_parser('toy-hello', help='say hello from a task folder')\n"
        "    p.set_defaults(func=f'{__package__}.commands:hello')\n")
    env = {**os.environ, "T2IBENCH_TASKS_PATH": str(tmp_path / "tasks")}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "--help"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "toy-hello" in proc.stdout and "say hello from a task folder" in proc.stdout
    assert "paintskills-baselines" in proc.stdout  # the built-in folder's commands are still there
    args = cli.build_parser().parse_args(["paintskills-samples", "--out", str(tmp_path / "s.png")])
    assert args.func == "benchmark.tasks.paintskills.commands:samples"


# ---------------------------------------------------------------- later stages refuse what validate refuses


@pytest.fixture()
def run_copy(tiny_audit, tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(tiny_audit, dst, ignore=shutil.ignore_patterns("report"))
    return dst


def _edit_json(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(schema_version="2.0"), "schema_version"),
    (lambda d: d.update(schema_version="0.9"), "schema_version"),
    (lambda d: d["scores"][0].pop("ci"), "'ci' is a required property"),
])
def test_report_refuses_results_that_validate_refuses(run_copy, capsys, change, message):
    _edit_json(run_copy / "results.json", change)
    code, _, err = t2ibench(["report", run_copy], capsys)
    assert code == 2 and len(err) == 1 and message in err[0], err
    assert not (run_copy / "report").exists()
    code, _, err = t2ibench(["validate", "--allow-demo", run_copy / "results.json"], capsys)
    assert code == 1  # the same document, refused by validate too


@pytest.mark.parametrize("command", ["report", "score", "annotate", "verify"])
def test_stages_refuse_a_run_config_format_they_do_not_read(run_copy, capsys, command):
    _edit_json(run_copy / "run_config.json", lambda d: d.update(format=0))
    before = (run_copy / "results.json").read_bytes()
    code, _, err = t2ibench([command, run_copy], capsys)
    assert code == 2 and len(err) == 1 and "format 0 is not supported" in err[0], err
    assert (run_copy / "results.json").read_bytes() == before and not (run_copy / "report").exists()


def test_score_exits_non_zero_when_it_scores_nothing(run_copy, capsys):
    shutil.rmtree(run_copy / "labels")  # deleted: refused, naming the command that writes them again
    code, _, err = t2ibench(["score", run_copy, "--n-resamples", "20"], capsys)
    assert code == 2 and len(err) == 1 and "labels/attributes.parquet: missing" in err[0], err
    assert f"`t2ibench annotate {run_copy}` repairs it" in err[0]
    # every annotator turned off on purpose: the folder verifies, and nothing can be scored
    code, _, err = t2ibench(["annotate", run_copy, "--encoder", "none", "--vqa", "none", "--quiet"], capsys)
    assert code == 0, err
    code, _, err = t2ibench(["score", run_copy, "--n-resamples", "20"], capsys)
    assert code == 1 and len(err) == 1 and err[0].startswith("t2ibench: error: nothing scored"), err
