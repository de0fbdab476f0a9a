"""The qualification test of the annotation app.

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
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.human import questions as q
from benchmark.human.answers_file import event_records, labels_dir
from benchmark.human.events import check_annotator
from benchmark.human.items import Item, build_items, item_id_for, read_run_manifest
from benchmark.human.question_types import QUESTION_TYPES
from benchmark.tasks import Task, list_tasks
from benchmark.tasks.of_run import tasks_of_run

QUALIFICATION_FILE = "qualification.json"


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


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and value != ""


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


def _own_question(run_dir: str | Path, qi: QualItem, suite: str) -> str | None:
    """The question the app asks about the run image of ``qi`` (its task's wording of that image, e.g.
    a question naming the image's own objects), or None for an image file or a question it is not asked."""
    if not qi.probe_id:
        return None
    wanted = item_id_for(qi.probe_id, qi.question_type, qi.question_key)
    return next((it.question for it in build_items(run_dir, [qi.question_type], suites=[suite])
                 if it.item_id == wanted), None)


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
            question, wording = _own_question(run_dir, qi, suite), own
            if question is None:
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
    first = _first_qual_events(event_records(run_dir)).get(annotator, {})
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
    events = event_records(run_dir)
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
