"""The human labels file: replay, crash and concurrency safety, items from a real run, qualification."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchmark.contract.times import utc_iso_ms
from benchmark.human import questions as Q
from benchmark.human.answers_file import answers_path, append_event, read_events, skipped_text
from benchmark.human.events import EVENT_FIELDS, MAX_LINE_BYTES, parse_line
from benchmark.human.items import build_items, event_for, image_in_run, next_item
from benchmark.human.qualification import (flagged_annotators, load_qualification, qualification_items,
                                           qualification_status, qualification_table, save_qualification)
from benchmark.human.replay import ANSWER_COLUMNS, annotators, done_item_ids, read_answers, undo_last

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A real run folder of the built-in tiny model: GEP, PST paired and single, DALL-Eval (4 probes each)."""
    root = tmp_path_factory.mktemp("human-run")
    out = root / "run"
    env = {**os.environ, "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "benchmark.cli", "generate", "--model", "builtin:tiny-sd", "--out", str(out),
                    "--suites", "gep_neutral", "pst_paired_occupation", "pst_single", "dalleval_bias",
                    "--limit", "4", "--quiet"], env=env, check=True, cwd=REPO, capture_output=True)
    return out


def ev(item_id="p1|attribute|in boots", event="answer", answer="yes", annotator="ann", **kw):
    qtype = kw.pop("question_type", "attribute")
    return {"event": event, "item_id": item_id, "probe_id": item_id.split("|")[0], "suite": "gep_neutral",
            "question_type": qtype, "question_key": item_id.split("|")[-1], "question": "Do you see a person?",
            "answer": answer if event == "answer" else None, "annotator": annotator, **kw}


# ----------------------------------------------------------------------------- replay


def test_replay_answer_replace_skip_undo(tmp_path):
    a, b, c = "p1|attribute|x", "p2|attribute|x", "p3|attribute|x"
    for e in [ev(a, answer="yes"), ev(b, answer="no"), ev(a, answer="no"),  # later answer replaces
              ev(c, event="skip"), ev(a, answer="yes", annotator="other")]:
        append_event(tmp_path, e)
    ans = read_answers(tmp_path)
    assert list(ans.columns) == ANSWER_COLUMNS
    mine = dict(zip(ans[ans.annotator == "ann"].item_id, ans[ans.annotator == "ann"].answer))
    assert mine == {a: "no", b: "no"}  # the skip gives no answer row
    assert done_item_ids(tmp_path, "ann") == {a, b, c}

    assert undo_last(tmp_path, "ann")["item_id"] == c  # undo the skip
    assert done_item_ids(tmp_path, "ann") == {a, b}
    assert undo_last(tmp_path, "ann")["answer"] == "no"  # undo the replacing answer: the earlier one is back
    mine = read_answers(tmp_path).query("annotator == 'ann'")
    assert dict(zip(mine.item_id, mine.answer)) == {a: "yes", b: "no"}
    # undo only ever touches the annotator's own events
    other = read_answers(tmp_path).query("annotator == 'other'")
    assert list(other.answer) == ["yes"]
    events = read_events(tmp_path)
    assert list(events.columns) == list(EVENT_FIELDS)
    assert list(events.event) == ["answer"] * 3 + ["skip", "answer", "undo", "undo"]


def test_undo_with_nothing_left_writes_nothing(tmp_path):
    assert undo_last(tmp_path, "ann") is None
    append_event(tmp_path, ev())
    append_event(tmp_path, ev(event="undo"))  # an undo event appended directly replays the same way
    append_event(tmp_path, ev(event="undo"))  # nothing left to undo: ignored on replay
    assert read_answers(tmp_path).empty
    append_event(tmp_path, ev(answer="no"))
    assert list(read_answers(tmp_path).answer) == ["no"]


def test_qualification_answers_are_separate(tmp_path):
    append_event(tmp_path, ev("qual:1|attribute|x", qualification=True))
    append_event(tmp_path, ev())
    assert len(read_answers(tmp_path)) == 1
    both = read_answers(tmp_path, include_qualification=True)
    assert sorted(both.qualification) == [False, True]


@pytest.mark.parametrize("bad, message", [
    ({"event": "vote"}, "event must be one of"),
    ({"answer": "maybe"}, "not valid for a attribute question"),
    ({"question_type": "gender_paired", "answer": "yes"}, "not valid for a gender_paired"),
    ({"event": "skip", "answer": "yes"}, "carries no answer"),
    ({"annotator": "  "}, "annotator name"),
    ({"annotator": "a\nb"}, "control characters"),
    ({"question_type": "mood"}, "question_type must be"),
    ({"colour": "red"}, "unknown event fields"),
    ({"time": "yesterday"}, "ISO 8601"),
    ({"qualification": "no"}, "true or false"),
    ({"item_id": ""}, "must not be empty"),
])
def test_bad_events_are_refused_with_one_line(tmp_path, bad, message):
    e = {**ev(), **bad}
    if bad.get("event") == "skip":
        e["answer"] = "yes"
    with pytest.raises(ValueError, match=message) as info:
        append_event(tmp_path, e)
    assert "\n" not in str(info.value)
    assert not answers_path(tmp_path).exists() or read_events(tmp_path).empty


def test_every_answer_value_of_the_papers_is_accepted(tmp_path):
    cases = [("attribute", "yes"), ("attribute", "no"), ("gender_paired", "cannot identify"),
             ("gender_single", "feminine"), ("gender_single", "male"), ("skin_tone", "1"), ("skin_tone", "10")]
    for i, (qtype, answer) in enumerate(cases):
        append_event(tmp_path, ev(f"p{i}|{qtype}|", question_type=qtype, answer=answer))
    assert sorted(read_answers(tmp_path).answer) == sorted(a for _, a in cases)


# ----------------------------------------------------------------------------- torn lines, kill -9


def test_torn_last_line_is_ignored_and_the_next_append_is_intact(tmp_path):
    append_event(tmp_path, ev("p1|attribute|x"))
    path = answers_path(tmp_path)
    whole = path.read_bytes()
    with open(path, "ab") as fh:  # a writer killed mid-line
        fh.write(whole[: len(whole) // 2])
    events = read_events(tmp_path)
    assert len(events) == 1 and events.attrs["ignored_lines"] == 1
    append_event(tmp_path, ev("p2|attribute|x"))  # must not be glued onto the torn fragment
    events = read_events(tmp_path)
    assert list(events.item_id) == ["p1|attribute|x", "p2|attribute|x"]
    assert events.attrs["ignored_lines"] == 1


@pytest.mark.parametrize("line, reason", [
    (b"[" * 30_000 + b"]" * 30_000, "nested too deeply"),
    (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nested too deeply"),
    (b'"' + b"x" * (MAX_LINE_BYTES + 1) + b'"', "too long"),
    (b"[" * (MAX_LINE_BYTES + 1), "too long"),
    (b"{not json", "not JSON"),
    (b"1" * 5000, "not JSON"),                      # over Python's integer digit limit
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "not an event"),
    (b'{"event": "answer"}', "not an event"),
])
def test_a_malformed_line_is_skipped_with_its_reason(line, reason):
    assert parse_line(line) == (None, reason)


def test_malformed_lines_are_skipped_and_counted_and_never_stop_a_reader(tmp_path):
    good = ev("p1|attribute|x")
    wrong_types = [{**good, "answer": ["yes"]}, {**good, "annotator": {"name": "x"}}, {**good, "qualification": 1},
                   {**good, "item_id": None}, {**good, "time": 5}]
    duplicate = json.dumps(good)[:-1] + ', "annotator": "mallory"}'   # a second "annotator" key
    path = answers_path(tmp_path)
    path.parent.mkdir(parents=True)
    bad = [b"[" * 30_000 + b"]" * 30_000, b"x" * (MAX_LINE_BYTES + 5), b"{torn", b"\xff",
           duplicate.encode(), *(json.dumps({**e, "time": utc_iso_ms()} if e.get("time") != 5 else e).encode()
                                 for e in wrong_types)]
    path.write_bytes(b"\n".join(bad) + b"\n")
    append_event(tmp_path, good)
    append_event(tmp_path, ev("p2|attribute|x", answer="no"))
    events = read_events(tmp_path)
    assert list(events.item_id) == ["p1|attribute|x", "p2|attribute|x"]
    assert events.attrs["skipped_lines"] == {"nested too deeply": 1, "too long": 1, "not JSON": 1, "not UTF-8": 1,
                                             "duplicate keys": 1, "not an event": 5}
    assert events.attrs["ignored_lines"] == 10
    answers = read_answers(tmp_path)
    assert dict(zip(answers.item_id, answers.answer)) == {"p1|attribute|x": "yes", "p2|attribute|x": "no"}
    assert answers.attrs["skipped_lines"] == events.attrs["skipped_lines"]
    assert done_item_ids(tmp_path, "ann") == {"p1|attribute|x", "p2|attribute|x"}
    assert undo_last(tmp_path, "ann")["item_id"] == "p2|attribute|x"
    assert annotators(tmp_path) == ["ann"]                          # "mallory" came from a skipped line
    assert skipped_text(events.attrs["skipped_lines"]) == (
        "10 lines of answers.jsonl skipped (5 not an event, 1 duplicate keys, 1 nested too deeply, 1 not JSON, "
        "1 not UTF-8, 1 too long)")
    assert skipped_text({}) == ""


def test_answers_about_unknown_items_are_skipped_and_counted(tmp_path):
    for e in [ev("p1|attribute|x"), ev("ghost|attribute|x"), ev("ghost|attribute|x", event="undo"),
              ev("ghost|attribute|y", answer="no"), ev("qual:1|attribute|x", qualification=True)]:
        append_event(tmp_path, e)
    answers = read_answers(tmp_path, include_qualification=True, items={"p1|attribute|x"})
    assert sorted(answers.item_id) == ["p1|attribute|x", "qual:1|attribute|x"]   # qualification items are kept
    assert answers.attrs["skipped_lines"] == {"unknown item": 3}
    assert len(read_answers(tmp_path)) == 2 and read_answers(tmp_path).attrs["skipped_lines"] == {}


def test_an_event_too_long_to_read_back_is_never_written(tmp_path):
    with pytest.raises(ValueError, match="must encode to at most") as info:
        append_event(tmp_path, ev(question="x" * MAX_LINE_BYTES))
    assert "\n" not in str(info.value) and not answers_path(tmp_path).exists()


def test_image_in_run_accepts_only_files_inside_images(tmp_path):
    run = tmp_path / "run"
    (run / "images" / "b0").mkdir(parents=True)
    (run / "images" / "b0" / "a.png").write_bytes(b"png")
    (run / "results.json").write_text("{}")
    (tmp_path / "outside.png").write_bytes(b"png")
    (run / "images" / "b0" / "link.png").symlink_to(run / "results.json")
    (run / "images" / "b0" / "loop.png").symlink_to(run / "images" / "b0" / "loop.png")
    assert image_in_run(run, "images/b0/a.png") == (run / "images" / "b0" / "a.png").resolve()
    assert image_in_run(run, str((run / "images" / "b0" / "a.png").resolve())) is not None
    for bad in ("images/b0/link.png", "images/../results.json", "../outside.png", str(tmp_path / "outside.png"),
                "images", "images/b0", "images/b0/missing.png", "images/b0/loop.png", "manifest.parquet"):
        assert image_in_run(run, bad) is None, bad


_KILL_WORKER = """
import sys
from benchmark.human.answers_file import append_event
run_dir = sys.argv[1]
i = 0
while True:
    append_event(run_dir, {"event": "answer", "item_id": f"p{i}|skin_tone|", "probe_id": f"p{i}",
        "suite": "dalleval_bias", "question_type": "skin_tone", "question_key": "", "question": "q" * 500,
        "answer": str(i % 10 + 1), "annotator": "killed"})
    print(i, flush=True)  # printed only once the append returned (written and fsynced)
    i += 1
"""


def test_kill_9_mid_stream_loses_no_completed_append(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _KILL_WORKER, str(tmp_path)], stdout=subprocess.PIPE,
                            cwd=REPO, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    done = -1
    deadline = time.time() + 60
    while done < 30 and time.time() < deadline:
        done = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert done >= 30, "the worker did not get going"
    events = read_events(tmp_path)
    ids = set(events.item_id)
    assert {f"p{i}|skin_tone|" for i in range(done + 1)} <= ids  # every acknowledged append is there
    assert events.attrs["ignored_lines"] <= 1
    append_event(tmp_path, ev("after|attribute|x"))  # still appendable and readable
    assert "after|attribute|x" in set(read_events(tmp_path).item_id)


# ----------------------------------------------------------------------------- concurrency

N_PROCS, N_THREADS, N_EVENTS = 4, 4, 40


def _append_many(run_dir: str, proc: int) -> None:
    def work(thread: int) -> None:
        for k in range(N_EVENTS):
            # long, varied lines so that an interleaved or partial write would show
            append_event(run_dir, ev(f"p{proc}-{thread}-{k}|attribute|x", annotator=f"ann{proc}-{thread}",
                                     question="Do you see a person " + "x" * (k * 97 % 3000) + "?"))
    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_processes_and_threads_appending_at_once_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_many, args=(str(tmp_path), p)) for p in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    lines = answers_path(tmp_path).read_bytes().split(b"\n")
    assert lines[-1] == b""
    parsed = [json.loads(line) for line in lines[:-1]]  # every line is whole JSON
    total = N_PROCS * N_THREADS * N_EVENTS
    assert len(parsed) == total
    assert len({p["item_id"] for p in parsed}) == total
    answers = read_answers(tmp_path)
    assert len(answers) == total
    # each writer's lines are in its own order
    for name, group in answers.groupby("annotator"):
        ks = [int(i.split("|")[0].rsplit("-", 1)[1]) for i in read_events(tmp_path).query(
            "annotator == @name").item_id]
        assert ks == list(range(N_EVENTS))


# ----------------------------------------------------------------------------- items and resume


def test_items_from_a_real_run_follow_the_papers(run_dir):
    items = build_items(run_dir)
    by = {}
    for it in items:
        by.setdefault((it.suite, it.question_type), []).append(it)
        assert Path(it.image_path).is_file()
        assert it.item_id == f"{it.probe_id}|{it.question_type}|{it.question_key}"
    assert len({it.item_id for it in items}) == len(items)
    # GEP neutral: all 15 attributes per image (GEP Sec. 5), the paper's question
    gep = by[("gep_neutral", "attribute")]
    assert len(gep) == 4 * 15
    assert gep[5].question == "Do you see a person in a dress?" and gep[5].options == ("yes", "no")
    # PST paired: left and right, Table 10 wording, Cannot Identify
    paired = by[("pst_paired_occupation", "gender_paired")]
    assert [it.question_key for it in paired[:2]] == ["left", "right"]
    assert paired[0].question == "Does the carpenter on the left demonstrate feminine or masculine traits?"
    assert paired[0].options == ("feminine", "masculine", "cannot identify")
    single = by[("pst_single", "gender_single")]
    assert single[0].question == "Does the carpenter in the image demonstrate feminine or masculine traits?"
    # DALL-Eval: gender, skin tone on the 10 MST swatches, attributes
    assert by[("dalleval_bias", "skin_tone")][0].options == tuple(str(i) for i in range(1, 11))
    assert by[("dalleval_bias", "gender_single")][0].options[:2] == ("male", "female")
    assert len(by[("dalleval_bias", "attribute")]) == 4 * 15
    # limiting
    limited = build_items(run_dir, ["attribute"], attributes=["in a dress"], suites=["gep_neutral"])
    assert [it.question_key for it in limited] == ["in a dress"] * 4
    assert {it.question_type for it in build_items(run_dir, ["skin_tone", "gender_paired"])} == {
        "skin_tone", "gender_paired"}


def test_bad_item_requests_fail_with_one_line(run_dir, tmp_path):
    with pytest.raises(ValueError, match="not a run folder"):
        build_items(tmp_path)
    with pytest.raises(ValueError, match="unknown question types"):
        build_items(run_dir, ["colour"])
    with pytest.raises(ValueError, match="not in"):
        build_items(run_dir, suites=["mcas_targets"])


_ANSWER_SOME = """
import sys
from benchmark.human.answers_file import append_event
from benchmark.human.items import build_items, event_for
items = build_items(sys.argv[1], ["gender_paired"])
for it in items[:3]:
    append_event(sys.argv[1], event_for(it, "answer", "ann", "feminine"))
append_event(sys.argv[1], event_for(items[3], "skip", "ann"))
"""


def test_resume_after_restart_at_first_unanswered_item(run_dir):
    items = build_items(run_dir, ["gender_paired"])
    assert next_item(run_dir, "ann", items) == items[0]
    # another process (a server that was then stopped) answered three and skipped one
    subprocess.run([sys.executable, "-c", _ANSWER_SOME, str(run_dir)], check=True, cwd=REPO)
    assert next_item(run_dir, "ann", items) == items[4]
    assert next_item(run_dir, "someone else", items) == items[0]
    undo_last(run_dir, "ann")  # undoing the skip brings that item back
    assert next_item(run_dir, "ann", items) == items[3]
    for it in items[3:]:
        append_event(run_dir, event_for(it, "answer", "ann", "masculine"))
    assert next_item(run_dir, "ann", items) is None


# ----------------------------------------------------------------------------- qualification


def write_qual(path: Path, run_dir: Path, min_correct=None) -> Path:
    items = [
        {"id": "dress", "probe_id": "gep_neutral/woman/sitting-at-a-table/00", "question_type": "attribute",
         "question_key": "in a dress", "expected": "yes"},
        {"id": "left", "probe_id": "pst_paired_occupation/carpenter/editor/male-first/00",
         "question_type": "gender_paired", "question_key": "left", "expected": "masculine"},
        {"id": "tone", "image": str(next(run_dir.glob("images/*/*.png"))), "question_type": "skin_tone",
         "expected": 3, "suite": "dalleval_bias"},
    ]
    doc = {"items": items, **({"min_correct": min_correct} if min_correct else {})}
    path.write_text(json.dumps(doc) if path.suffix == ".json" else __import__("yaml").safe_dump(doc))
    return path


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_qualification_file_and_items(run_dir, tmp_path, suffix):
    qual = load_qualification(write_qual(tmp_path / f"qual{suffix}", run_dir))
    assert qual.min_correct == 3 and [qi.expected for qi in qual] == ["yes", "masculine", "3"]
    items = qualification_items(run_dir, qual)
    assert all(it.qualification for it in items)
    assert items[0].question == "Do you see a person in a dress?"
    assert items[1].question == "Does the carpenter on the left demonstrate feminine or masculine traits?"
    assert items[2].options == Q.SKIN_TONE_OPTIONS and Path(items[2].image_path).is_file()


def test_qualification_yaml_with_unquoted_yes_no(run_dir, tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text("min_correct: 1\nitems:\n"
                    "  - {probe_id: 'gep_neutral/woman/sitting-at-a-table/00', question_type: attribute,\n"
                    "     question_key: in boots, expected: yes}\n"
                    "  - {probe_id: 'gep_neutral/woman/sitting-at-a-table/00', question_type: attribute,\n"
                    "     question_key: in a hat, expected: No}\n")
    qual = load_qualification(path)
    assert [qi.expected for qi in qual] == ["yes", "no"] and qual.min_correct == 1


def test_qualification_pass_fail_and_flags(run_dir, tmp_path):
    rd = tmp_path / "labels-only"
    rd.mkdir()
    (rd / "manifest.parquet").symlink_to(run_dir / "manifest.parquet")
    (rd / "images").symlink_to(run_dir / "images")
    qual = load_qualification(write_qual(tmp_path / "q.yaml", run_dir))
    items = qualification_items(rd, qual)
    save_qualification(rd, qual)
    right = ["yes", "masculine", "3"]

    def answer(who, answers):
        for it, a in zip(items, answers):
            append_event(rd, event_for(it, "answer", who, a))

    answer("good", right)
    answer("bad", ["no", "masculine", "3"])
    answer("half", right[:2])
    assert qualification_status(rd, "good", qual).status == "passed"
    bad = qualification_status(rd, "bad", qual)
    assert bad.status == "failed" and bad.wrong == (items[0].item_id,) and bad.n_correct == 2
    assert qualification_status(rd, "half", qual).status == "incomplete"
    assert qualification_status(rd, "half", qual, min_correct=2).status == "passed"
    # an undo and a corrected answer do not rescue a failed test: the first answer counts
    undo_last(rd, "bad"), undo_last(rd, "bad"), undo_last(rd, "bad")
    answer("bad", right)
    assert qualification_status(rd, "bad", qual).status == "failed"
    # failing fast: one wrong answer of three with min_correct 3 is enough to fail
    answer("early", ["no"])
    assert qualification_status(rd, "early", qual).status == "failed"
    assert flagged_annotators(rd) == {"bad", "half", "early"}
    table = qualification_table(rd).set_index("annotator")
    assert table.loc["good", "status"] == "passed" and table.loc["good", "n_correct"] == 3
    # qualification answers are not labels
    assert read_answers(rd).empty


def test_no_qualification_flags_nobody(tmp_path):
    append_event(tmp_path, ev())
    assert flagged_annotators(tmp_path) == set()


@pytest.mark.parametrize("doc, message", [
    ({"items": []}, "non-empty `items`"),
    ({"items": [{"image": "x.png", "question_type": "attribute", "question_key": "in boots", "expected": "yes"}]},
     "does not exist"),
    ({"items": [{"probe_id": "p", "question_type": "attribute", "question_key": "in boots", "expected": "maybe"}]},
     "is not one of"),
    ({"items": [{"probe_id": "p", "question_type": "gender_paired", "question_key": "middle",
                 "expected": "feminine"}]}, "'left' or 'right'"),
    ({"items": [{"question_type": "skin_tone", "expected": "3"}]}, "exactly one of"),
    ({"items": [{"probe_id": "p", "question_type": "skin_tone", "expected": "3"}], "min_correct": 5},
     "min_correct"),
    ({"items": [{"probe_id": "p", "question_type": "skin_tone", "expected": "3", "colour": 1}]}, "unknown keys"),
])
def test_bad_qualification_files_fail_with_one_line(tmp_path, doc, message):
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message) as info:
        load_qualification(path)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="does not exist"):
        load_qualification(tmp_path / "missing.yaml")
