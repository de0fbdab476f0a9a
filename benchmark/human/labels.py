"""Human labels of a run folder: the append-only answers file, its replay, the items to label.

``RUN_DIR/human_labels/answers.jsonl`` holds one JSON event per line::

    {"event": "answer" | "skip" | "undo", "item_id", "probe_id", "suite", "question_type",
     "question_key", "question", "answer", "annotator", "time", "qualification", "session"}

Why an event log: every click is one append, so nothing already answered can be lost by a
crash, a closed browser or a killed server, and two annotators never rewrite each other's
lines. Each append is one ``os.write`` of the whole line on a file opened with
``O_APPEND``, under an exclusive lock (``filelock`` on ``answers.jsonl.lock``: an flock the
kernel releases when a process dies), then ``fsync``. A torn last line (power
loss mid-write) is ignored on read and the next append starts on a fresh line.

Reading never trusts the file: a line longer than ``MAX_LINE_BYTES`` is skipped before it
is parsed, JSON nested too deeply, duplicate keys, wrong fields, types or values are
skipped too, and every skipped line is counted by reason (``attrs["skipped_lines"]`` of
:func:`read_events` and :func:`read_answers`), so one bad line never stops a reader.

Replay (:func:`read_answers`), per annotator in file order: ``answer`` and ``skip`` push
onto that annotator's stack; ``undo`` pops the annotator's latest remaining answer or
skip. An item's effective state is its latest remaining event, so a later answer
replaces an earlier one and undoing it brings the earlier one back.

Qualification (GEP, App. B: "a specific qualification test containing six images.
Only workers that correctly classify all images ... can work on the annotation"): items
with known answers, shown first, judged on the **first** answer given to each (undo lets
an annotator change a label, not retake the test). The test in use is saved as
``human_labels/qualification.json`` so that the statistics can flag annotators without
the original file: :func:`flagged_annotators` lists every annotator whose status is not
``passed``; consumers exclude them by default.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from benchmark.contract.atomic import fsync_dir, write_bytes_atomic
from benchmark.contract.times import parse_iso_time
from benchmark.human import questions as q
from benchmark.probes.registry import default_config_path, load_config
from benchmark.contract.run_folder import IMAGES_DIR, MANIFEST_FILE, read_manifest
from benchmark.tasks import Task, list_tasks
from benchmark.tasks.of_run import tasks_of_run

LABELS_DIR = "human_labels"
ANSWERS_FILE = "answers.jsonl"
QUALIFICATION_FILE = "qualification.json"

EVENTS = ("answer", "skip", "undo")
QUESTION_TYPES = q.QUESTION_TYPES
#: Fields of every event, in the order they are written.
EVENT_FIELDS = ("event", "item_id", "probe_id", "suite", "question_type", "question_key", "question", "answer",
                "annotator", "time", "qualification", "session")
#: Columns of :func:`read_answers`.
ANSWER_COLUMNS = ["item_id", "probe_id", "suite", "question_type", "question_key", "answer", "annotator", "time",
                  "qualification"]
MAX_NAME_LENGTH = 100
#: Longest line read from (or written to) the answers file; an event is well under 8 KiB.
MAX_LINE_BYTES = 64 * 1024
#: Reasons a line of the answers file is skipped (keys of ``attrs["skipped_lines"]``).
SKIP_REASONS = ("too long", "not UTF-8", "not JSON", "nested too deeply", "duplicate keys", "not an event",
                "unknown item")

_STR_FIELDS = ("item_id", "probe_id", "suite", "question_type", "question_key", "question", "annotator", "time",
               "session")


def labels_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / LABELS_DIR


def answers_path(run_dir: str | Path) -> Path:
    return labels_dir(run_dir) / ANSWERS_FILE


def now_iso() -> str:
    """The current time, ISO 8601 UTC with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def check_annotator(name) -> str:
    """The annotator name stripped; a one-line ``ValueError`` if it is empty, too long or has control characters."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("the annotator name must be a non-empty string")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"the annotator name must be at most {MAX_NAME_LENGTH} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValueError("the annotator name must not contain control characters")
    return name


# ----------------------------------------------------------------------------- events


def validate_event(event: dict) -> dict:
    """The event with defaults filled (time, qualification, session); one-line ``ValueError`` if malformed."""
    if not isinstance(event, dict):
        raise ValueError(f"an event must be a dict, got {type(event).__name__}")
    unknown = set(event) - set(EVENT_FIELDS)
    if unknown:
        raise ValueError(f"unknown event fields {sorted(unknown)}; expected {list(EVENT_FIELDS)}")
    ev = {"time": now_iso(), "qualification": False, "session": "", "answer": None, **event}
    missing = [f for f in EVENT_FIELDS if f not in ev]
    if missing:
        raise ValueError(f"event lacks {missing}")
    if ev["event"] not in EVENTS:
        raise ValueError(f"event must be one of {list(EVENTS)}, got {ev['event']!r}")
    for f in _STR_FIELDS:
        if not isinstance(ev[f], str):
            raise ValueError(f"event field {f!r} must be a string, got {ev[f]!r}")
    if not ev["item_id"]:
        raise ValueError("event field 'item_id' must not be empty")
    ev["annotator"] = check_annotator(ev["annotator"])
    if ev["question_type"] not in QUESTION_TYPES:
        raise ValueError(f"question_type must be one of {list(QUESTION_TYPES)}, got {ev['question_type']!r}")
    if not isinstance(ev["qualification"], bool):
        raise ValueError(f"event field 'qualification' must be true or false, got {ev['qualification']!r}")
    if ev["event"] == "answer":
        allowed = q.OPTION_VALUES[ev["question_type"]]
        if ev["answer"] not in allowed:
            raise ValueError(f"answer {ev['answer']!r} is not valid for a {ev['question_type']} question; "
                             f"expected one of {list(allowed)}")
    elif ev["answer"] is not None:
        raise ValueError(f"a {ev['event']} event carries no answer, got {ev['answer']!r}")
    try:
        parse_iso_time(ev["time"])
    except ValueError:
        raise ValueError(f"event field 'time' must be an ISO 8601 time, got {ev['time']!r}") from None
    return {f: ev[f] for f in EVENT_FIELDS}


def _encode(event: dict) -> bytes:
    return (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def answers_lock(path: Path):
    """The lock writers and readers of an answers file take (``filelock``: an flock on a file
    beside it, released by the kernel when a process dies)."""
    from filelock import FileLock

    return FileLock(path.with_name(path.name + ".lock"))


def _open_for_append(run_dir: str | Path) -> int:
    """The answers file opened for appending (created with its folder if needed); hold
    :func:`answers_lock` while writing."""
    path = answers_path(run_dir)
    new_dir = not path.parent.is_dir()
    path.parent.mkdir(parents=True, exist_ok=True)
    if new_dir:
        fsync_dir(path.parent.parent)
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)  # read: to check the last byte


def _write_line(fd: int, data: bytes) -> None:
    """Append ``data`` (the lock is held) so that it starts on a line of its own, then fsync."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        data = b"\n" + data  # a torn line was left by a killed writer: keep it on its own (ignored) line
    written = os.write(fd, data)
    while written < len(data):  # only on an unusual file system; the lock keeps it contiguous
        written += os.write(fd, data[written:])
    os.fsync(fd)


def _read_lines(fd_path: Path) -> tuple[list[dict], dict[str, int]]:
    """Parsed valid events of the file and the number of lines skipped by reason (torn or malformed)."""
    if not fd_path.is_file():
        return [], {}
    with answers_lock(fd_path), open(fd_path, "rb") as fh:
        raw = fh.read()
    return _parse(raw)


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey("duplicate keys")
    return out


def parse_line(line: bytes) -> tuple[dict | None, str | None]:
    """One line of the answers file as ``(event, None)``, or ``(None, reason)`` if it is skipped."""
    if len(line) > MAX_LINE_BYTES:
        return None, "too long"  # checked before decoding: a huge line costs no parsing
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    try:
        raw_event = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey:
        return None, "duplicate keys"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError:  # JSONDecodeError, or an integer over Python's digit limit
        return None, "not JSON"
    try:
        if not isinstance(raw_event, dict) or set(raw_event) != set(EVENT_FIELDS):
            raise ValueError("not a complete event")
        return validate_event(raw_event), None
    except (ValueError, TypeError):
        return None, "not an event"


def _parse(raw: bytes) -> tuple[list[dict], dict[str, int]]:
    """The valid events of the file's bytes and the number of skipped lines by reason."""
    events, skipped = [], {}
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        event, reason = parse_line(line)
        if event is None:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            events.append(event)
    return events, skipped


def skipped_text(skipped: dict[str, int]) -> str:
    """``"3 lines skipped (2 not JSON, 1 too long)"``, or "" when none were."""
    total = sum(skipped.values())
    if not total:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} line{'s' if total != 1 else ''} of {ANSWERS_FILE} skipped ({why})"


def append_event(run_dir: str | Path, event: dict) -> dict:
    """Validate ``event`` and append it to RUN_DIR's answers file at once (locked, fsynced); returns it."""
    ev = validate_event(event)
    data = _encode(ev)
    if len(data) > MAX_LINE_BYTES:  # never write a line that readers would skip
        raise ValueError(f"an event must encode to at most {MAX_LINE_BYTES} bytes, got {len(data)}")
    with answers_lock(answers_path(run_dir)):
        fd = _open_for_append(run_dir)
        try:
            _write_line(fd, data)
        finally:
            os.close(fd)
    return ev


def undo_last(run_dir: str | Path, annotator: str, *, session: str = "") -> dict | None:
    """Append an ``undo`` for ``annotator``'s latest remaining answer or skip; returns the event it undoes.

    Reads and appends under one lock, so two tabs of the same annotator undoing at once
    undo two events, each named correctly. None (and nothing written) when there is nothing to undo.
    """
    annotator = check_annotator(annotator)
    with answers_lock(answers_path(run_dir)):
        fd = _open_for_append(run_dir)
        try:
            events, _ = _parse(answers_path(run_dir).read_bytes())
            stack = _stacks(events).get(annotator, [])
            if not stack:
                return None
            target = stack[-1]
            ev = validate_event({**{f: target[f] for f in EVENT_FIELDS}, "event": "undo", "answer": None,
                                 "time": now_iso(), "session": session})
            _write_line(fd, _encode(ev))
            return target
        finally:
            os.close(fd)


def read_events(run_dir: str | Path) -> pd.DataFrame:
    """Every valid event in file order (columns ``EVENT_FIELDS``).

    ``attrs["skipped_lines"]`` counts the other lines by reason (:data:`SKIP_REASONS`),
    ``attrs["ignored_lines"]`` is their total.
    """
    events, skipped = _read_lines(answers_path(run_dir))
    df = pd.DataFrame(events, columns=list(EVENT_FIELDS))
    df.attrs["skipped_lines"] = skipped
    df.attrs["ignored_lines"] = sum(skipped.values())
    return df


def _stacks(events: Iterable[dict]) -> dict[str, list[dict]]:
    """Per annotator, the answer / skip events that remain after undos, in order."""
    stacks: dict[str, list[dict]] = {}
    for ev in events:
        stack = stacks.setdefault(ev["annotator"], [])
        if ev["event"] == "undo":
            if stack:
                stack.pop()
        else:
            stack.append(ev)
    return stacks


def _effective(events: Iterable[dict]) -> dict[tuple[str, str], dict]:
    """(annotator, item_id) -> the latest remaining answer or skip."""
    out: dict[tuple[str, str], dict] = {}
    for annotator, stack in _stacks(events).items():
        for ev in stack:
            out[(annotator, ev["item_id"])] = ev
    return out


def _records(run_dir) -> list[dict]:
    return _read_lines(answers_path(run_dir))[0]


def read_answers(run_dir: str | Path, include_qualification: bool = False, *,
                 items: Iterable[str] | None = None) -> pd.DataFrame:
    """Effective answers after replay: one row per (annotator, item) answered (skips give no row).

    ``items``: the item ids that exist (e.g. :func:`run_item_ids`); events about any other
    item, qualification items aside, are skipped before the replay and counted as
    ``"unknown item"`` in ``attrs["skipped_lines"]`` with the malformed lines.
    """
    events, skipped = _read_lines(answers_path(run_dir))
    if items is not None:
        known = set(items)
        kept = [ev for ev in events if ev["qualification"] or ev["item_id"] in known]
        if len(kept) < len(events):
            skipped["unknown item"] = len(events) - len(kept)
        events = kept
    rows = [{c: ev[c] for c in ANSWER_COLUMNS} for ev in _effective(events).values()
            if ev["event"] == "answer" and (include_qualification or not ev["qualification"])]
    df = pd.DataFrame(rows, columns=ANSWER_COLUMNS)
    if len(df):
        df = df.sort_values(["annotator", "time", "item_id"], kind="stable").reset_index(drop=True)
    df.attrs["skipped_lines"] = skipped
    return df


def done_item_ids(run_dir: str | Path, annotator: str) -> set[str]:
    """Items ``annotator`` has answered or skipped (after undos)."""
    annotator = check_annotator(annotator)
    return {item for (who, item) in _effective(_records(run_dir)) if who == annotator}


def annotators(run_dir: str | Path) -> list[str]:
    """Everyone with at least one event, sorted."""
    return sorted({ev["annotator"] for ev in _records(run_dir)})


# ----------------------------------------------------------------------------- items


@dataclass(frozen=True)
class Item:
    """One question about one image."""

    item_id: str
    probe_id: str
    suite: str
    question_type: str
    question_key: str
    question: str
    image_path: str  # absolute path of the PNG
    options: tuple[str, ...]
    qualification: bool = False
    instructions: tuple[str, ...] = ()  # the paragraphs shown with the question (its task's)


def item_id_for(probe_id: str, question_type: str, question_key: str) -> str:
    return f"{probe_id}|{question_type}|{question_key}"


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and value != ""


def _row_items(row: dict, image: str, types: set[str], attributes: set[str] | None, task: Task | None,
               config: dict) -> list[Item]:
    """The questions the row's task asks about its image (none when no task asks any), of the
    chosen ``types``, attribute questions limited to ``attributes``."""
    if task is None or task.human_questions is None:
        return []
    suite, pid = row["suite"], row["probe_id"]
    return [Item(item_id_for(pid, hq.question_type, hq.key), pid, suite, hq.question_type, hq.key, hq.text, image,
                 q.options_for(hq.question_type, task), instructions=q.instructions_for(hq.question_type, task))
            for hq in task.human_questions(row, config)
            if hq.question_type in types and (hq.question_type != "attribute" or attributes is None
                                              or hq.key in attributes)]


def _check_types(question_types) -> set[str]:
    if question_types is None:
        return set(QUESTION_TYPES)
    types = [question_types] if isinstance(question_types, str) else list(question_types)
    unknown = [t for t in types if t not in QUESTION_TYPES]
    if unknown or not types:
        raise ValueError(f"unknown question types {unknown}; expected some of {list(QUESTION_TYPES)}")
    return set(types)


def read_run_manifest(run_dir: str | Path) -> pd.DataFrame:
    """The run's manifest; a one-line ``ValueError`` if RUN_DIR is not a run folder."""
    if not (Path(run_dir) / MANIFEST_FILE).is_file():
        raise ValueError(f"{run_dir} is not a run folder (no {MANIFEST_FILE}); run `t2ibench generate` first")
    return read_manifest(run_dir)


def build_items(run_dir: str | Path, question_types: Sequence[str] | None = None, *,
                attributes: Sequence[str] | None = None, suites: Sequence[str] | None = None) -> list[Item]:
    """The questions to ask about RUN_DIR's images, in probe order, each image's questions together.

    Each image's task says what is asked (``Task.human_questions``), with the answer options
    and instructions of its ``human_validation``: e.g. GEP asks "Do you see a person [a]?"
    for each attribute of the probe's ``annotated_attributes``, PST the single question or
    left and right of a pair, DALL-Eval gender, skin tone and its 15 attributes.
    ``attributes`` limits the attribute questions. Images flagged nsfw are never shown.
    """
    types = _check_types(question_types)
    manifest = read_run_manifest(run_dir)
    if suites is not None:
        unknown = set(suites) - set(manifest["suite"])
        if unknown:
            raise ValueError(f"suites {sorted(unknown)} are not in {run_dir}; it has {sorted(set(manifest['suite']))}")
        manifest = manifest[manifest["suite"].isin(list(suites))]
    attrs = None if attributes is None else set(attributes)
    task_of = {s: task for task, its in tasks_of_run(run_dir, list(dict.fromkeys(manifest["suite"]))) for s in its}
    families = dict.fromkeys(t.family for t in task_of.values())
    configs = {f: load_config(f) if default_config_path(f).is_file() else {} for f in families}
    root = Path(run_dir).resolve()
    items: list[Item] = []
    for row in manifest.to_dict("records"):
        if row.get("nsfw") is True:
            continue
        task = task_of.get(row["suite"])
        items.extend(_row_items(row, str(root / row["image_path"]), types, attrs, task,
                                configs.get(task.family, {}) if task else {}))
    return items


def run_item_ids(run_dir: str | Path) -> set[str]:
    """Every item id the app can ask about RUN_DIR's images (all question types, suites and attributes)."""
    return {it.item_id for it in build_items(run_dir)}


def image_in_run(run_dir: str | Path, image_path: str | Path) -> Path | None:
    """``image_path`` resolved (symlinks and ``..``) if it is a file inside ``RUN_DIR/images/``, else None."""
    root = (Path(run_dir) / IMAGES_DIR).resolve()
    try:
        path = (Path(run_dir) / image_path).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return None
    return path if path.is_relative_to(root) and path != root and path.is_file() else None


def next_item(run_dir: str | Path, annotator: str, items: Sequence[Item]) -> Item | None:
    """The first of ``items`` that ``annotator`` has neither answered nor skipped (None when all are done)."""
    done = done_item_ids(run_dir, annotator)
    return next((it for it in items if it.item_id not in done), None)


def event_for(item: Item, event: str, annotator: str, answer: str | None = None, *, session: str = "") -> dict:
    """The event recording ``annotator``'s ``event`` on ``item`` (pass it to :func:`append_event`)."""
    return {"event": event, "item_id": item.item_id, "probe_id": item.probe_id, "suite": item.suite,
            "question_type": item.question_type, "question_key": item.question_key, "question": item.question,
            "answer": answer, "annotator": annotator, "time": now_iso(), "qualification": item.qualification,
            "session": session}


# ----------------------------------------------------------------------------- qualification


@dataclass(frozen=True)
class QualItem:
    """A qualification question with a known answer, about an image file or an image of the run."""

    qual_id: str
    question_type: str
    question_key: str
    expected: str
    image: str | None = None      # absolute path of an image file
    probe_id: str | None = None   # or an image of the run folder
    identity: str | None = None   # gender questions: the identity named ("nurse"); from the run if probe_id
    suite: str | None = None      # whose wording and options (its task's); from the run if probe_id
    phrase: str | None = None     # attribute phrase if it differs from the key ("with glasses")

    @property
    def item_id(self) -> str:
        return f"qual:{self.qual_id}|{self.question_type}|{self.question_key}"


class QualificationItems(list):
    """A list of :class:`QualItem` with the number of correct answers needed to pass."""

    def __init__(self, items: Iterable[QualItem] = (), min_correct: int | None = None):
        super().__init__(items)
        self.min_correct = len(self) if min_correct is None else int(min_correct)
        if not 1 <= self.min_correct <= max(len(self), 1):
            raise ValueError(f"min_correct must be between 1 and {len(self)}, got {min_correct}")


_QUAL_KEYS = {"id", "image", "probe_id", "question_type", "question_key", "expected", "identity", "suite", "phrase"}


def _qual_item(raw, index: int, base: Path) -> QualItem:
    where = f"qualification item {index + 1}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a mapping, got {raw!r}")
    unknown = set(raw) - _QUAL_KEYS
    if unknown:
        raise ValueError(f"{where} has unknown keys {sorted(unknown)}; expected some of {sorted(_QUAL_KEYS)}")
    qtype = raw.get("question_type")
    if qtype not in QUESTION_TYPES:
        raise ValueError(f"{where}: question_type must be one of {list(QUESTION_TYPES)}, got {qtype!r}")
    if bool(raw.get("image")) == bool(raw.get("probe_id")):
        raise ValueError(f"{where} needs exactly one of `image` (a file) or `probe_id` (an image of the run)")
    key = str(raw.get("question_key", "") or "")
    if qtype == "attribute" and not key:
        raise ValueError(f"{where}: an attribute question needs question_key (the attribute, e.g. 'in a dress')")
    if qtype == "gender_paired" and key not in ("left", "right"):
        raise ValueError(f"{where}: a gender_paired question needs question_key 'left' or 'right', got {key!r}")
    if qtype in ("gender_single", "skin_tone") and key:
        raise ValueError(f"{where}: a {qtype} question has no question_key, got {key!r}")
    expected = raw.get("expected", "")
    if isinstance(expected, bool):  # YAML 1.1 reads an unquoted yes / no as a boolean
        expected = q.YES if expected else q.NO
    expected = str(expected).strip().lower()
    if expected not in q.OPTION_VALUES[qtype]:
        raise ValueError(f"{where}: expected {raw.get('expected')!r} is not one of {list(q.OPTION_VALUES[qtype])}")
    image = None
    if raw.get("image"):
        path = Path(str(raw["image"]))
        image = str((path if path.is_absolute() else base / path).resolve())
        if not Path(image).is_file():
            raise ValueError(f"{where}: image {image} does not exist")
        if qtype in ("gender_paired", "gender_single") and not raw.get("identity") and not q.words_without_identity(
                qtype, _task_of_suite(str(raw.get("suite") or ""))):
            raise ValueError(f"{where}: a {qtype} question about an image file needs `identity` (the person "
                             "its question names)")
    return QualItem(qual_id=str(raw.get("id") or index + 1), question_type=qtype, question_key=key, expected=expected,
                    image=image, probe_id=str(raw["probe_id"]) if raw.get("probe_id") else None,
                    identity=str(raw["identity"]) if raw.get("identity") else None,
                    suite=str(raw["suite"]) if raw.get("suite") else None,
                    phrase=str(raw["phrase"]) if raw.get("phrase") else None)


def parse_qualification(data, base: str | Path = ".") -> QualificationItems:
    """Qualification items from a parsed YAML / JSON document (``{"min_correct": n, "items": [...]}``)."""
    if isinstance(data, list):
        data = {"items": data}
    if not isinstance(data, dict) or not isinstance(data.get("items"), list) or not data["items"]:
        raise ValueError("a qualification file needs a non-empty `items` list")
    unknown = set(data) - {"items", "min_correct"}
    if unknown:
        raise ValueError(f"a qualification file has unknown keys {sorted(unknown)}; expected items, min_correct")
    items = [_qual_item(raw, i, Path(base)) for i, raw in enumerate(data["items"])]
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        raise ValueError("qualification items must have unique ids")
    return QualificationItems(items, data.get("min_correct"))


def load_qualification(path: str | Path) -> QualificationItems:
    """Qualification items from a YAML or JSON file; image paths are relative to the file.

    ::

        min_correct: 6        # optional; default every item (GEP App. B: all six)
        items:
          - id: dress-1       # optional; default the position
            image: qual/dress1.png           # an image file, or
            # probe_id: gep_neutral/woman/sitting-at-a-table/00   # an image of the run
            question_type: attribute
            question_key: in a dress
            expected: yes
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"qualification file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # YAML reads JSON too
    except yaml.YAMLError as exc:
        raise ValueError(f"qualification file {path} is not valid YAML/JSON: {str(exc).splitlines()[0]}") from None
    try:
        return parse_qualification(data, base=path.parent)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _task_of_suite(suite: str, run_dir: str | Path | None = None) -> Task | None:
    """The task of ``suite`` (as RUN_DIR's probes record it, else as it is registered), or None."""
    if not suite:
        return None
    found = tasks_of_run(run_dir or "", [suite], run_config=None if run_dir else {})
    return found[0][0] if found else None


def qualification_items(run_dir: str | Path, qual_items: Sequence[QualItem]) -> list[Item]:
    """The qualification questions as :class:`Item` (shown before the run's items): worded by
    the task of the item's suite, else by the first task that asks such a question; the
    options are those of the suite's task."""
    manifest = None
    out = []
    tasks = list_tasks()
    for qi in qual_items:
        suite, identity, image = qi.suite or "", qi.identity, qi.image
        if qi.probe_id:
            if manifest is None:
                manifest = read_run_manifest(run_dir).set_index("probe_id", drop=False)
            if qi.probe_id not in manifest.index:
                raise ValueError(f"qualification item {qi.qual_id}: probe {qi.probe_id!r} is not in {run_dir}")
            row = manifest.loc[qi.probe_id].to_dict()
            image = str(Path(run_dir).resolve() / row["image_path"])
            suite = suite or row["suite"]
            if identity is None:
                key = f"identity_{qi.question_key}" if qi.question_type == "gender_paired" else "identity"
                identity = row.get(key) if _present(row.get(key)) else None
        own = _task_of_suite(suite, run_dir)
        try:
            question, wording = q.qualification_wording(qi.question_type, qi.question_key, identity, qi.phrase,
                                                        own, tasks)
        except ValueError as exc:
            raise ValueError(f"qualification item {qi.qual_id}: {exc}") from None
        options = q.options_for(qi.question_type, own)
        if qi.expected not in options:
            raise ValueError(f"qualification item {qi.qual_id}: expected {qi.expected!r} is not offered "
                             f"(options {list(options)})")
        out.append(Item(qi.item_id, qi.probe_id or "", suite or "qualification", qi.question_type, qi.question_key,
                        question, image, options, qualification=True,
                        instructions=q.instructions_for(qi.question_type, own, wording)))
    return out


@dataclass(frozen=True)
class QualificationResult:
    status: str  # "passed", "failed" or "incomplete"
    n_correct: int
    n_answered: int
    n_items: int
    min_correct: int
    wrong: tuple[str, ...] = field(default_factory=tuple)  # item ids answered wrongly (or skipped)


def _status_from(first: dict[str, dict], qual_items: Sequence[QualItem], min_correct: int) -> QualificationResult:
    correct, wrong = 0, []
    for qi in qual_items:
        ev = first.get(qi.item_id)
        if ev is None:
            continue
        if ev["event"] == "answer" and ev["answer"] == qi.expected:
            correct += 1
        else:
            wrong.append(qi.item_id)
    n = len(qual_items)
    if correct >= min_correct:
        status = "passed"
    elif len(wrong) > n - min_correct:
        status = "failed"
    else:
        status = "incomplete"
    return QualificationResult(status, correct, correct + len(wrong), n, min_correct, tuple(wrong))


def _first_qual_events(events: Iterable[dict]) -> dict[str, dict[str, dict]]:
    """annotator -> item_id -> the annotator's first answer or skip of that qualification item."""
    out: dict[str, dict[str, dict]] = {}
    for ev in events:
        if ev["qualification"] and ev["event"] != "undo":
            out.setdefault(ev["annotator"], {}).setdefault(ev["item_id"], ev)
    return out


def qualification_status(run_dir: str | Path, annotator: str, qual_items: Sequence[QualItem],
                         min_correct: int | None = None) -> QualificationResult:
    """``annotator``'s result on the qualification test, judged on the first answer to each item.

    ``passed`` once ``min_correct`` (default the file's, else every item) are right;
    ``failed`` once that can no longer happen; ``incomplete`` otherwise. A skipped item counts as wrong.
    """
    annotator = check_annotator(annotator)
    if min_correct is None:
        min_correct = getattr(qual_items, "min_correct", len(qual_items))
    first = _first_qual_events(_records(run_dir)).get(annotator, {})
    return _status_from(first, qual_items, int(min_correct))


def save_qualification(run_dir: str | Path, qual_items: QualificationItems) -> Path:
    """Record the qualification test in use as ``human_labels/qualification.json`` (atomically)."""
    doc = {"min_correct": getattr(qual_items, "min_correct", len(qual_items)),
           "items": [{k: v for k, v in asdict(qi).items() if v is not None} for qi in qual_items]}
    path = labels_dir(run_dir) / QUALIFICATION_FILE
    write_bytes_atomic(path, (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    return path


def saved_qualification(run_dir: str | Path) -> QualificationItems | None:
    """The qualification test recorded in RUN_DIR, or None when the labels were collected without one."""
    path = labels_dir(run_dir) / QUALIFICATION_FILE
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    items = [QualItem(**{**raw, "qual_id": str(raw["qual_id"])}) for raw in doc["items"]]
    return QualificationItems(items, doc.get("min_correct"))


def qualification_table(run_dir: str | Path) -> pd.DataFrame:
    """One row per annotator: status, n_correct, n_answered, n_items, min_correct (empty without a test)."""
    cols = ["annotator", "status", "n_correct", "n_answered", "n_items", "min_correct"]
    qual = saved_qualification(run_dir)
    events = _records(run_dir)
    if qual is None:
        return pd.DataFrame(columns=cols)
    first = _first_qual_events(events)
    rows = []
    for who in sorted({ev["annotator"] for ev in events}):
        r = _status_from(first.get(who, {}), qual, qual.min_correct)
        rows.append({"annotator": who, "status": r.status, "n_correct": r.n_correct, "n_answered": r.n_answered,
                     "n_items": r.n_items, "min_correct": r.min_correct})
    return pd.DataFrame(rows, columns=cols)


def flagged_annotators(run_dir: str | Path) -> set[str]:
    """Annotators to exclude from statistics by default: with a qualification test recorded in
    RUN_DIR, everyone whose status is not ``passed`` (failed, or never finished it); none without one."""
    table = qualification_table(run_dir)
    return set(table.loc[table["status"] != "passed", "annotator"])
