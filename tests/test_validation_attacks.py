"""Faults and attacks on validation, submission and the leaderboard's data: one test per case.

Every hostile file must give one line naming the file (never a traceback), cost little
time and memory, and leave the other files of a batch checked. Valid documents come from
the scoring stage's own builders (``hub_doc`` of test_validate.py); each attack changes one
thing in one of them.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import pickle
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from benchmark.contract.results import MAX_RESULTS_BYTES, UnreadableResults, load_results_file, score_entry
from submissions import submit as submit_module
from submissions.leaderboard import board_table, results_files, score_columns, wording
from submissions.submit import model_folder_name, plan_submission
from submissions.validate import check_results
from test_validate import hub_doc


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *map(str, args)], capture_output=True, text=True,
                          env=env or {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}, timeout=300)


def _write(path: Path, doc) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1), encoding="utf-8")
    return path


def _refused(path: Path) -> UnreadableResults:
    with pytest.raises(UnreadableResults) as info:
        load_results_file(path)
    exc = info.value
    assert str(exc).startswith(f"{path}: ") and "\n" not in str(exc)
    return exc


# --------------------------------------------------------------------------- the reader


def test_deep_nesting_is_refused_before_parsing(tmp_path):
    path = _write(tmp_path / "nested.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    exc = _refused(path)
    assert exc.refused and exc.reason == "nested 100001 levels deep (at most 32)"
    # brackets inside strings do not nest
    doc = hub_doc()
    doc["notes"] = ["[" * 1000 + '\\"' + "{" * 1000]
    assert load_results_file(_write(tmp_path / "strings.json", doc)) == doc


def test_five_thousand_digit_integer_is_refused_with_its_path(tmp_path):
    text = json.dumps(hub_doc()).replace('"n_images": 4000', '"n_images": ' + "9" * 5000, 1)
    exc = _refused(_write(tmp_path / "bigint.json", text))
    assert exc.refused and exc.reason == "run/n_images: an integer of 5000 digits (at most 20)"


def test_200_mb_array_is_refused_from_its_size_without_reading_it(tmp_path):
    path = tmp_path / "array.json"
    chunk = b",0" * (4 << 20)  # 8 MiB
    with path.open("wb") as fh:
        fh.write(b"[0")
        for _ in range(25):
            fh.write(chunk)
        fh.write(b"]")
    assert path.stat().st_size > 200e6
    tracemalloc.start()
    start = time.perf_counter()
    try:
        exc = _refused(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - start
    path.unlink()
    assert exc.refused and exc.reason == f"200.0 MB, over the size limit of {MAX_RESULTS_BYTES / 2**20:g} MB"
    assert peak < 1 << 20, f"the reader allocated {peak} bytes: it read the file"
    assert elapsed < 5.0


def test_a_device_is_not_read(tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero on this system")
    exc = _refused(Path("/dev/zero"))
    assert not exc.refused and exc.reason == "not a regular file"


@pytest.mark.parametrize("text,reason", [
    ('{"model": {"id": "a/b", "id": "c/d"}}', "model: the key 'id' appears twice in one object"),
    ('{"scores": [], "scores": []}', "(top level): the key 'scores' appears twice in one object"),
    ('{"a": [1, 2e999]}', "a/1: 2e999 overflows to infinity"),
    ('{"a": {"b": -Infinity}}', "a/b: -Infinity is not valid JSON (use null)"),
])
def test_duplicate_keys_and_non_finite_numbers_are_refused(tmp_path, text, reason):
    exc = _refused(_write(tmp_path / "x.json", text))
    assert exc.refused and exc.reason == reason


# --------------------------------------------------------------------------- consistency rules


def _problems(mutate, **kw):
    doc = hub_doc()
    mutate(doc)
    return check_results(doc, **kw)


def test_year_9999_created_is_in_the_future():
    assert _problems(lambda d: d.update(created="9999-12-31T23:59:59+00:00")) == [
        "created: 9999-12-31T23:59:59+00:00 is in the future"]
    # a few hours of clock skew pass
    soon = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=3)).replace(microsecond=0).isoformat()
    assert _problems(lambda d: d.update(created=soon)) == []


@pytest.mark.parametrize("model_id,why", [
    ("stаbilityai/sd-turbo", "holds the non-ASCII character U+0430 CYRILLIC SMALL LETTER A"),  # Cyrillic a
    ("evil/\u202egnp.ledom", "holds U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("org/mo\u200bdel", "holds U+200B ZERO WIDTH SPACE"),
    ("org/cafe\u0301", "is not NFC-normalised Unicode"),
    ("org/caf\u00e9", "holds the non-ASCII character U+00E9 LATIN SMALL LETTER E WITH ACUTE"),
    ("org/a--b", "is not a Hub model id"),
    ("org/../b", "is not a Hub model id"),
    ("org/b/c", "is not a Hub model id"),
    ("org/<b>x</b>", "is not a Hub model id"),
])
def test_look_alike_and_right_to_left_model_ids_are_refused(model_id, why):
    problems = _problems(lambda d: d["model"].update(id=model_id, spec=model_id))
    assert len(problems) == 1 and problems[0].startswith("model/id: ") and why in problems[0], problems
    assert "\u202e" not in problems[0] and "\u200b" not in problems[0]  # shown escaped, never applied


def test_count_of_1e308_is_not_a_count():
    assert _problems(lambda d: d["scores"][0].update(n=1e308)) == [
        "scores/0/n: 1e+308 is not a whole number written without a decimal point or exponent"]
    assert _problems(lambda d: d["scores"][0].update(n=10**12)) == [
        "scores/0/n: 1000000000000 is over 1e+09: not a count of this benchmark"]
    assert _problems(lambda d: d["scores"][0].update(n=1001)) == [
        "scores/0/n: 1001 is more than the 1000 images of gep_neutral"]


def test_more_scored_images_than_images():
    assert _problems(lambda d: d["suites"][1].update(n_scored_images=1001)) == [
        "suites/1/n_scored_images: 1001 is more than the suite's 1000 images"]
    assert _problems(lambda d: d["run"].update(n_images=3999)) == [
        "run/n_images: 3999 is fewer than the 4000 images of the suites"]


@pytest.mark.parametrize("key,value", [
    ("display_name", "Fairness (higher is better)"), ("headline", False), ("paper", "dalleval"),
    ("unit", "%"), ("ideal", 1.0), ("lower_is_better", None), ("min", -1.0),
])
def test_relabelled_score_metadata_is_refused(key, value):
    problems = _problems(lambda d: d["scores"][0].update({key: value}))
    assert len(problems) == 1 and problems[0].startswith(f"scores/0/{key}: ") \
        and "disagrees with the metadata of gep_score_neutral" in problems[0], problems


def test_headline_true_and_1_are_not_the_same():
    assert _problems(lambda d: d["scores"][0].update(headline=1)) == [
        "scores/0/headline: 1 disagrees with the metadata of gep_score_neutral (True)"]


def test_empty_scores_are_refused():
    assert _problems(lambda d: d.update(scores=[])) == ["scores: no score entry: a results file holds at least one"]


def test_fifty_duplicate_score_entries_are_one_line():
    problems = _problems(lambda d: d["scores"].extend(copy.deepcopy(d["scores"][1]) for _ in range(50)))
    assert problems == ["scores/4: 50 entries (4, 5, 6, 7, 8, ...) repeat scores/1 (mad_gender on dalleval_bias: "
                        "same name, suite, subset, estimator and annotator)"]


def test_a_bloated_file_is_refused_before_the_slow_checks():
    doc = hub_doc()
    entry = doc["scores"][2]
    doc["scores"] = [dict(entry, subset=f"identity {i}") for i in range(20_000)]
    start = time.perf_counter()
    assert check_results(doc) == ["scores: 20,000 entries, at most 2,000 in a results file"]
    assert time.perf_counter() - start < 2.0


def test_builtin_annotators_are_refused_outside_demo_mode():
    def tiny_annotators(d):
        d["annotators"][0]["annotator"] = "builtin:tiny-clip"
        d["scores"][0]["annotator"] = "builtin:tiny-clip"
    problems = _problems(tiny_annotators)
    assert problems == ["annotators: labelled by built-in tiny random-weight model(s) builtin:tiny-clip: the labels "
                        "and every score are meaningless; accepted only as a demo (--allow-demo / --demo)"]
    assert _problems(tiny_annotators, allow_demo=True) == []
    detr = hub_doc([score_entry("paintskills_object", "gep_neutral", 40.0, n=10, annotator="builtin:tiny-detr")])
    assert "builtin:tiny-detr" in check_results(detr)[0]


# --------------------------------------------------------------------------- the validate command


def test_validate_batch_checks_every_file_one_line_each(tmp_path):
    good = _write(tmp_path / "good.json", hub_doc())
    nested = _write(tmp_path / "nested.json", '{"a": ' + "[" * 50_000 + "]" * 50_000 + "}")
    bigint = _write(tmp_path / "bigint.json",
                    json.dumps(hub_doc()).replace('"n_images": 4000', '"n_images": ' + "7" * 5000, 1))
    future = hub_doc()
    future["created"] = "9999-12-31T00:00:00Z"
    year9999 = _write(tmp_path / "year9999.json", future)
    good2 = _write(tmp_path / "good2.json", hub_doc())
    proc = _cli("validate", good, nested, bigint, year9999, good2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.splitlines() == [
        f"{good}: ok",
        f"{nested}: nested 50001 levels deep (at most 32)",
        f"{bigint}: run/n_images: an integer of 5000 digits (at most 20)",
        f"{year9999}: created: 9999-12-31T00:00:00Z is in the future",
        f"{good2}: ok",
    ]


def test_validate_exit_2_only_for_files_that_are_not_json_objects(tmp_path):
    good = _write(tmp_path / "good.json", hub_doc())
    proc = _cli("validate", good, tmp_path / "missing.json")
    assert proc.returncode == 2
    assert proc.stdout.splitlines() == [f"{good}: ok"]
    assert proc.stderr.splitlines() == [f"{tmp_path / 'missing.json'}: no such file"]


def test_terminal_control_characters_in_a_file_are_not_printed_raw(tmp_path):
    doc = hub_doc()
    doc["model"]["id"] = doc["model"]["spec"] = "org/\x1b[2Jmodel\u202e"
    path = _write(tmp_path / "esc.json", doc)
    proc = _cli("validate", path)
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    assert "org/\\x1b[2Jmodel\\u202e' holds U+001B (a control character)" in proc.stdout
    assert len(proc.stdout.splitlines()) == 1


# --------------------------------------------------------------------------- submitting


def _plan(tmp_path, doc, **kw):
    src = _write(tmp_path / "src" / f"{len(list(tmp_path.glob('src/*')))}.json", doc)
    return plan_submission(src, submitted_at="2026-01-01T00:00:00Z", **kw)


def test_model_ids_are_escaped_in_the_pull_request(tmp_path):
    evil = "/models/<img src=x onerror=alert(1)>|*x*`y`[z](javascript:alert(1))_"
    doc = hub_doc()
    doc["model"].update(id=evil, spec=evil, revision="v1")
    plan = _plan(tmp_path, doc, results_repo="org/results")
    title, description = plan.pr_title, plan.pr_description
    unescaped = re.compile(r"(?<!\\)[<>\[\]()*`|_&]")
    assert not unescaped.search(title.removeprefix("Add results: "))
    assert title == ("Add results: /models/\\<img src=x onerror=alert\\(1\\)\\>\\|\\*x\\*\\`y\\`\\[z\\]\\(javascript:"
                     "alert\\(1\\)\\)\\_ @ v1")
    model_row = next(line for line in description.splitlines() if line.startswith("| model |"))
    # a code span: literal text; its pipe escaped so the table keeps two cells
    assert model_row == "| model | `` /models/<img src=x onerror=alert(1)>\\|*x*`y`[z](javascript:alert(1))_ `` |"
    assert model_row.replace("\\|", "").count("|") == 3
    rest = description.replace(model_row, "")
    assert "<img" not in rest and "](" not in rest  # the file name holds only a slug of the id


def test_distinct_ids_never_share_a_folder():
    ids = ["org/we__ird", "org/we_ird", "org--we/ird", "org/we-ird", "a-/b", "a/-b", "a/b", "a-b", "ab",
           "builtin/tiny-sd", "builtin:tiny-sd", "_builtin/tiny-sd", "python:m:f", "python:m.f:g", "python:m:f.g",
           "/models/a b", "/models/a-b", "/models/a_b", "/other/a b", "C:\\models\\a b", "Org/Model", "org/model"]
    folders = [model_folder_name(i) for i in ids]
    assert len(set(folders)) == len(ids)
    assert all(len(f) <= 96 and "/" not in f and "\\" not in f and ":" not in f for f in folders)


def test_to_folder_never_overwrites(tmp_path):
    out = tmp_path / "results"
    first = hub_doc()
    first["model"].update(id="org/we__ird", spec="org/we__ird")
    second = hub_doc()
    second["model"].update(id="org/we_ird", spec="org/we_ird")  # one folder under the old naming
    for doc in (first, second):
        plan = _plan(tmp_path, doc, to_folder=out)
        submit_module.send_submission(plan)
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json"))
    assert written == ["org--we__ird/20251123T134501Z.json", "org--we_ird/20251123T134501Z.json"]
    before = (out / written[0]).read_bytes()
    with pytest.raises(ValueError, match=r"exists already: a results file is never overwritten"):
        _plan(tmp_path, first, to_folder=out)
    # through the command: one line, exit 2, the file unchanged
    src = _write(tmp_path / "again.json", first)
    proc = _cli("submit", src, "--to-folder", out)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith(f"t2ibench: error: {out / written[0]} exists already")
    assert (out / written[0]).read_bytes() == before
    # and the last step refuses too, should the file appear after planning
    plan = _plan(tmp_path, second, to_folder=tmp_path / "late")
    _write(plan.local_path, "{}")
    with pytest.raises(ValueError, match="never overwritten"):
        submit_module.write_new_file(plan.local_path, b"{}")


def test_300_character_id_is_one_line_not_a_traceback(tmp_path):
    long_id = "org/" + "m" * 296
    doc = hub_doc()
    doc["model"].update(id=long_id, spec=long_id)
    src = _write(tmp_path / "long.json", doc)
    proc = _cli("submit", src, "--to-folder", tmp_path / "out")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"{src}: model/id: ") and lines[0].endswith(
        "is 300 characters long: a Hub id has at most 96")
    assert lines[1].startswith("t2ibench submit: refused, 1 problem(s)") and len(lines) == 2
    proc = _cli("validate", src)
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == 1
    # a long local folder path is a valid id; its folder name stays short
    path_id = "/data/" + "d" * 300 + "/model"
    doc["model"].update(id=path_id, spec=path_id)
    plan = _plan(tmp_path, doc, to_folder=tmp_path / "out")
    assert len(plan.relpath.split("/")[0]) < 80


# --------------------------------------------------------------------------- the leaderboard


def test_a_file_cannot_take_over_another_models_row(tmp_path):
    results_files.clear_cache()
    root = tmp_path / "lb"
    original = hub_doc()
    _write(root / "results/someorg--some-model/20251123T134501Z.json", original)
    board = results_files.load_folder(root)
    (row,) = board.rows()
    assert not board.conflicts and wording.warnings_markdown(board) == ""
    # a newer file claiming the same model and revision, with a better score
    claim = hub_doc()
    claim["created"] = "2026-01-01T00:00:00+00:00"
    claim["scores"][0].update(value=0.0, ci=None)
    _write(root / "results/someorg--some-model/20260101T000000Z.json", claim)
    board = results_files.load_folder(root)
    (row,) = board.rows()
    assert row.latest.source == "results/someorg--some-model/20251123T134501Z.json"
    assert [s.source for s in row.conflicts] == ["results/someorg--some-model/20260101T000000Z.json"]
    warning = wording.warnings_markdown(board)
    assert warning.startswith("**Warning: 1 conflicting file(s) not shown**")
    assert "20260101T000000Z.json** not shown" in warning and "reviewed pull request" in warning
    frame = board_table.leaderboard_table(board.rows()).frame()
    assert frame[score_columns.value_column("gep_score_neutral")].tolist() == [0.08]


def test_reload_reads_only_changed_files(tmp_path, monkeypatch):
    results_files.clear_cache()
    root = tmp_path / "lb"
    for i in range(3):
        doc = hub_doc()
        doc["model"].update(id=f"org/model-{i}", spec=f"org/model-{i}")
        _write(root / f"r{i}.json", doc)
    reads = []
    real = results_files.load_results_file
    monkeypatch.setattr(results_files, "load_results_file", lambda p, **kw: reads.append(Path(p).name) or real(p, **kw))
    assert len(results_files.load_folder(root).submissions) == 3 and sorted(reads) == ["r0.json", "r1.json", "r2.json"]
    reads.clear()
    assert len(results_files.load_folder(root).submissions) == 3 and reads == []
    changed = json.loads((root / "r1.json").read_text())
    changed["scores"][0]["value"] = 0.09
    _write(root / "r1.json", changed)
    os.utime(root / "r1.json", ns=(time.time_ns(), time.time_ns() + 10**9))
    board = results_files.load_folder(root)
    assert reads == ["r1.json"]
    assert {s.model_id: s.scores[0]["value"] for s in board.submissions}["org/model-1"] == 0.09
    (root / "r2.json").unlink()
    assert len(results_files.load_folder(root).submissions) == 2 and reads == ["r1.json"]


# --------------------------------------------------------------------------- train-detector checkpoints


class _Payload:
    """Pickled, it would create a file when unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_train_detector_checkpoint_cannot_run_code(tmp_path):
    torch = pytest.importorskip("torch")
    from benchmark.tasks.paintskills.detector.training import load_training_state

    marker = tmp_path / "pwned"
    crafted = tmp_path / "trainer_state.pt"
    torch.save({"step": 2, "optimizer": {}, "config": {}, "x": _Payload(marker)}, crafted, pickle_module=pickle)
    with pytest.raises(ValueError, match=r"cannot be resumed: not a train-detector checkpoint of tensors"):
        load_training_state(crafted)
    assert not marker.exists()
    plain = tmp_path / "plain.pt"
    torch.save({"step": 3, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-4, "betas": (0.9, 0.999)}]},
                "config": {"skills": ["object"]}}, plain)
    assert load_training_state(plain)["step"] == 3


def test_results_whose_every_score_is_undefined_are_refused():
    def undefine(doc):
        for e in doc["scores"]:
            e.update(value=None, ci=None, defined=False, reason="missing labels")
    problems = _problems(undefine)
    assert any("score entries is defined" in p for p in problems), problems
