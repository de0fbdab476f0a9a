"""Checks a results document must pass before it is submitted or shown on the leaderboard.

:func:`check_results` starts from the scoring stage's own checks
(:func:`benchmark.contract.results.validate_results`: JSON Schema, NaN / infinity, score
names with metadata) and adds what the schema cannot say:

- a supported schema version and at least one score, at least one of them defined;
- model ids that are Hub ids (or a ``builtin:`` / ``python:`` spec or a local folder),
  with no right-to-left override, invisible or look-alike (non-ASCII) character;
- provenance: no built-in tiny random-weight model as generator **or annotator**
  (allowed only as a demo);
- ``created`` (and ``submitted_at``) a real time, not in the future;
- counts that are whole numbers within bounds and agree with each other;
- every score and interval within the range of its metadata, intervals that contain their
  estimate, copied metadata equal to :mod:`benchmark.scores.metadata`, and no score entry
  twice;
- the ``pairing`` section, when present (:mod:`benchmark.contract.pairing`): decodable (the
  per-probe labels of each label file, their probe ids those the file scored), over the file's
  probe set, each label file a known one with its own columns. ``t2ibench compare`` goes further:
  it scores the labels again and refuses a file whose values are not theirs.

Each problem is one line starting with the JSON path it concerns (``scores/3/value: ...``).
Files are read with :func:`benchmark.contract.results.load_results_file` (re-exported here), which
refuses oversized, too deeply nested and otherwise hostile files before they are parsed.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from benchmark.contract.times import parse_iso_time, utc_now
from benchmark.contract.model_specs import (  # noqa: F401 (re-exported: the one naming rule)
    API_ID,
    BUILTIN_ID,
    IMAGES_ID,
    LOCAL_PATH_ID,
    MAX_OTHER_ID_CHARS,
    PYTHON_ID,
    REVISION,
    is_builtin,
    model_id_kind,
    model_id_problem,
    revision_problem,
    unsafe_char,
)
from benchmark.contract.results import (
    builtin_annotators,
    CI_EXCLUDES_ESTIMATE_MARK,
    SCHEMA_VERSION,
    UnreadableResults,
    expected_score_metadata,
    load_results_file,
    validate_results,
)
from benchmark.annotate.label_files import LABEL_FILES
from benchmark.contract.pairing import OLD_FORMATS, PROBE_COLUMN, read_pairing
from benchmark.scores.metadata import SCORE_METADATA, get_metadata
from submissions.image_provenance_checks import check_image_provenance
from benchmark.tasks import load_plugins

__all__ = ["DEMO_NOTE", "SUPPORTED_SCHEMA_VERSIONS", "UnreadableResults", "builtin_annotators", "check_results",
           "is_demo", "load_results_file", "model_id_kind", "model_id_problem", "one_line"]

SUPPORTED_SCHEMA_VERSIONS = (SCHEMA_VERSION,)
DEMO_NOTE = "demo: built-in tiny model, meaningless scores"

_TOLERANCE = 1e-9  # the same slack score_entry and ScoreMetadata.in_range allow

# --------------------------------------------------------------------------- model ids

# The rules themselves live in benchmark.contract.model_specs, which `t2ibench run`, `probes
# export`, `submit` and the queue use too: nothing they accept is refused here.


MAX_LINE_CHARS = 400


def one_line(text: Any, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` safe to print as one terminal line: line breaks become spaces, control,
    invisible and direction-changing characters become ``\\uXXXX`` escapes, and a line
    longer than ``limit`` characters is cut (ending in "...")."""
    text = str(text)
    if len(text) > 4 * limit:
        text = text[:4 * limit]
    out = []
    for ch in " ".join(str(text).splitlines()):
        bad = unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") or unicodedata.bidirectional(ch) in (
            "RLO", "LRO", "RLE", "LRE", "RLI", "LRI", "FSI", "PDF", "PDI")
        out.append(f"\\u{ord(ch):04x}" if bad else ch)
    line = "".join(out)
    return line if len(line) <= limit else line[:limit - 3] + "..."


# --------------------------------------------------------------------------- provenance


def is_demo(doc: Mapping) -> bool:
    """True for a run of a built-in tiny model (``model.builtin`` or a ``builtin:`` spec / id)
    or one labelled by built-in tiny annotators: its scores are meaningless either way."""
    model = doc.get("model") if isinstance(doc, Mapping) else None
    return (isinstance(model, Mapping) and is_builtin(model)) or bool(builtin_annotators(doc))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _check_model(doc: Mapping, allow_demo: bool) -> list[tuple[str, str]]:
    model = doc.get("model")
    if not isinstance(model, Mapping):
        return []
    problems = []
    for key in ("id", "spec"):
        if key == "spec" and model.get("spec") == model.get("id"):
            continue  # one line for one id
        why = model_id_problem(model.get(key))
        if why:
            problems.append((f"model/{key}", f"{one_line(repr(model.get(key))[:120])} {why}"))
    revision = model.get("revision")
    if isinstance(revision, str) and revision_problem(revision):
        problems.append(("model/revision", f"{one_line(repr(revision)[:120])} {revision_problem(revision)}"))
    # an id with a problem is not repeated in the lines below
    name = "the model" if problems else model.get("spec") or model.get("id")
    builtin_named = any(is_builtin(model.get(k)) for k in ("spec", "id"))
    if builtin_named and model.get("builtin") is False:
        problems.append(("model/builtin", f"is false but the model is {name} (a built-in tiny model)"))
    if is_builtin(model) and not allow_demo:
        problems.append(("model", f"{name} is a built-in tiny random-weight model: its scores are meaningless; "
                                  "accepted only as a demo (--allow-demo / --demo)"))
    tiny = builtin_annotators(doc)
    if tiny and not allow_demo:
        problems.append(("annotators", f"labelled by built-in tiny random-weight model(s) {', '.join(tiny)}: the "
                                       "labels and every score are meaningless; accepted only as a demo "
                                       "(--allow-demo / --demo)"))
    submission = doc.get("submission")
    if isinstance(submission, Mapping) and isinstance(submission.get("demo"), bool) \
            and submission["demo"] != is_demo(doc):
        problems.append(("submission/demo", f"is {str(submission['demo']).lower()} but the run "
                                            f"{'uses' if is_demo(doc) else 'uses no'} built-in tiny model"))
    return problems


# --------------------------------------------------------------------------- times

#: how far ahead of this machine's clock a time may be (the submitter's clock may be off)
CLOCK_SKEW = _dt.timedelta(days=1)


def parse_utc(value: Any) -> _dt.datetime | None:
    """An ISO 8601 time with a UTC offset as an aware datetime, or None."""
    try:
        when = parse_iso_time(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _check_times(doc: Mapping, now: _dt.datetime) -> list[tuple[str, str]]:
    problems = []
    sub = doc.get("submission") if isinstance(doc.get("submission"), Mapping) else {}
    for where, value in (("created", doc.get("created")), ("submission/submitted_at", sub.get("submitted_at"))):
        if not isinstance(value, str):
            continue  # missing / wrong type: the schema says so
        when = parse_utc(value)
        if when is None:
            problems.append((where, f"{one_line(repr(value)[:60])} is not an ISO 8601 time with a UTC offset"))
        elif when > now + CLOCK_SKEW:
            problems.append((where, f"{value} is in the future"))
    return problems


# --------------------------------------------------------------------------- counts

#: no count of a results file reaches a billion (images, rows, resamples)
MAX_COUNT = 10**9


def _count(problems: list, where: str, value: Any) -> int | None:
    """``value`` as a count, or None after noting why it is not one (None also for non-numbers:
    the schema reports those)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        problems.append((where, f"{value!r} is not a whole number written without a decimal point or exponent"))
        return None
    if value > MAX_COUNT:
        problems.append((where, f"{value} is over {MAX_COUNT:.0e}: not a count of this benchmark"))
        return None
    return value if value >= 0 else None  # negative: the schema's minimum says so


def _check_counts(doc: Mapping) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    n_run = _count(problems, "run/n_images", run.get("n_images"))
    for key in ("n_nsfw_excluded", "limit_per_suite", "batch_size"):
        n = _count(problems, f"run/{key}", run.get(key))
        if key == "n_nsfw_excluded" and n is not None and n_run is not None and n > n_run:
            problems.append((f"run/{key}", f"{n} is more than the run's {n_run} images"))
    scoring = doc.get("scoring") if isinstance(doc.get("scoring"), Mapping) else {}
    _count(problems, "scoring/n_resamples", scoring.get("n_resamples"))

    suite_images: dict[str, int] = {}
    suites = doc.get("suites") if isinstance(doc.get("suites"), list) else []
    for i, st in enumerate(suites):
        if not isinstance(st, Mapping):
            continue
        n_img = _count(problems, f"suites/{i}/n_images", st.get("n_images"))
        n_scored = _count(problems, f"suites/{i}/n_scored_images", st.get("n_scored_images"))
        name = st.get("name")
        if isinstance(name, str):
            if name in suite_images:
                problems.append((f"suites/{i}/name", f"{one_line(name)} is listed twice"))
            elif n_img is not None:
                suite_images[name] = n_img
        if n_img is not None and n_scored is not None and n_scored > n_img:
            problems.append((f"suites/{i}/n_scored_images", f"{n_scored} is more than the suite's {n_img} images"))
        excluded = st.get("excluded") if isinstance(st.get("excluded"), Mapping) else {}
        for cause, n in excluded.items():
            _count(problems, f"suites/{i}/excluded/{one_line(cause)}", n)
    if n_run is not None and sum(suite_images.values()) > n_run:
        problems.append(("run/n_images", f"{n_run} is fewer than the {sum(suite_images.values())} images of the "
                                         "suites"))

    annotators = doc.get("annotators") if isinstance(doc.get("annotators"), list) else []
    for i, a in enumerate(annotators):
        if isinstance(a, Mapping):
            _count(problems, f"annotators/{i}/n_rows", a.get("n_rows"))

    scores = doc.get("scores") if isinstance(doc.get("scores"), list) else []
    for i, entry in enumerate(scores):
        if not isinstance(entry, Mapping):
            continue
        if isinstance(entry.get("ci"), Mapping):
            _count(problems, f"scores/{i}/ci/n_resamples", entry["ci"].get("n_resamples"))
        n = _count(problems, f"scores/{i}/n", entry.get("n"))
        suite = entry.get("suite")
        if not isinstance(suite, str) or not suites:
            continue
        if suite not in suite_images and not any(isinstance(s, Mapping) and s.get("name") == suite for s in suites):
            problems.append((f"scores/{i}/suite", f"{one_line(suite)!r} is not one of the run's suites"))
            continue
        if n is None:
            continue
        meta = SCORE_METADATA.get(str(entry.get("name")))
        spanned = meta.spans if meta else ()  # scores whose n counts the images of several suites
        bound = sum(suite_images.get(s, 0) for s in {suite, *spanned})
        if n > bound:
            what = " + ".join(sorted({suite, *spanned} & set(suite_images))) or suite
            problems.append((f"scores/{i}/n", f"{n} is more than the {bound} images of {what}"))
    return problems


# --------------------------------------------------------------------------- scores


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: 1 and 1.0 are the same number, true and 1 are not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _check_score(i: int, entry: Mapping) -> list[tuple[str, str]]:
    where = f"scores/{i}"
    name = entry.get("name")
    if name not in SCORE_METADATA:
        return []  # validate_results already says the name has no metadata
    meta = get_metadata(name)
    problems = []

    # The copied metadata must be the package's, or the leaderboard would name, sort, bound
    # and attribute the score differently from every other submission.
    for key, want in expected_score_metadata(name).items():
        if key in entry and not _same(entry[key], want):
            problems.append((f"{where}/{key}", f"{one_line(repr(entry[key])[:80])} disagrees with the metadata of "
                                               f"{name} ({want!r})"))

    value = entry.get("value")
    if value is None:
        if not (isinstance(entry.get("reason"), str) and entry["reason"].strip()):
            problems.append((f"{where}/reason", f"{name} is undefined (value null) but no reason says why"))
        return problems
    if not _is_number(value):
        return problems  # wrong type or NaN: the schema / NaN checks report it
    bounds = f"[{_fmt(meta.min_value)}, {_fmt(meta.max_value)}]"
    if not meta.in_range(value):
        problems.append((f"{where}/value", f"{name} = {_fmt(value)} is outside its range {bounds}"))

    ci = entry.get("ci")
    if not isinstance(ci, Mapping) or not (_is_number(ci.get("low")) and _is_number(ci.get("high"))):
        return problems
    low, high = ci["low"], ci["high"]
    if low > high + _TOLERANCE:
        problems.append((f"{where}/ci", f"low {_fmt(low)} is above high {_fmt(high)}"))
        return problems
    for key, bound in (("low", low), ("high", high)):
        if not meta.in_range(bound):
            problems.append((f"{where}/ci/{key}", f"{_fmt(bound)} is outside the range of {name} {bounds}"))
    if not (low - _TOLERANCE <= value <= high + _TOLERANCE):
        note = entry.get("ci_note") or ""
        # score_entry joins the task's own interval note and this one with "; " (GEP's C / CC note first)
        excused = meta.absolute_value and any(part.startswith(CI_EXCLUDES_ESTIMATE_MARK) for part in note.split("; "))
        if not excused:
            why = ("without the ci_note that explains it" if meta.absolute_value
                   else "(allowed only for absolute-value scores with a ci_note)")
            problems.append((f"{where}/ci", f"[{_fmt(low)}, {_fmt(high)}] does not contain the estimate "
                                            f"{_fmt(value)} {why}"))
    return problems


def _check_corrected(i: int, entry: Mapping) -> list[tuple[str, str]]:
    """An entry's ``human_corrected`` (people's labels, docs/human_correction.md): in the score's
    range, an interval holding it, no more people-labelled images than the score's images, and a
    reason where there is no value."""
    hc, name = entry.get("human_corrected"), entry.get("name")
    if not isinstance(hc, Mapping) or name not in SCORE_METADATA:
        return []  # absent, or the schema says what is wrong
    where, meta = f"scores/{i}/human_corrected", get_metadata(name)
    problems = []
    n_h, n_pop = hc.get("n_human"), hc.get("n_population")
    value = hc.get("value")
    if value is None:
        if not (isinstance(hc.get("reason"), str) and hc["reason"].strip()):
            problems.append((f"{where}/reason", f"no corrected {name} and no reason says why"))
        return problems
    if not _is_number(value):
        return problems
    if isinstance(n_h, int) and isinstance(n_pop, int) and not 1 <= n_h <= max(n_pop, 1):
        problems.append((f"{where}/n_human", f"{n_h} people-labelled images of {n_pop}: a corrected score rests on "
                                             "at least one and at most all"))
    bounds = f"[{_fmt(meta.min_value)}, {_fmt(meta.max_value)}]"
    if not meta.in_range(value):
        problems.append((f"{where}/value", f"corrected {name} = {_fmt(value)} is outside its range {bounds}"))
    ci = hc.get("ci")
    if isinstance(ci, Mapping) and _is_number(ci.get("low")) and _is_number(ci.get("high")):
        if not (ci["low"] - _TOLERANCE <= value <= ci["high"] + _TOLERANCE):
            problems.append((f"{where}/ci", f"[{_fmt(ci['low'])}, {_fmt(ci['high'])}] does not contain the corrected "
                                            f"value {_fmt(value)}"))
        for key in ("low", "high"):
            if not meta.in_range(ci[key]):
                problems.append((f"{where}/ci/{key}", f"{_fmt(ci[key])} is outside the range of {name} {bounds}"))
    return problems


SCORE_IDENTITY = ("name", "suite", "subset", "estimator", "annotator")


def _check_score_list(scores: Any) -> list[tuple[str, str]]:
    """At least one score, and no two entries with the same name, suite, subset, estimator, annotator."""
    if not isinstance(scores, list):
        return []  # the schema says so
    if not scores:
        return [("scores", "no score entry: a results file holds at least one")]
    if all(isinstance(e, Mapping) and e.get("value") is None for e in scores):
        # what scoring an unannotated run folder gives: every entry says why it is missing
        return [("scores", f"none of the {len(scores)} score entries is defined: nothing to compare "
                           "(was the run annotated?)")]
    first: dict[tuple, list[int]] = {}
    for i, entry in enumerate(scores):
        if isinstance(entry, Mapping):
            key = tuple(repr(entry.get(k)) for k in SCORE_IDENTITY)
            first.setdefault(key, []).append(i)
    problems = []
    for indices in first.values():
        if len(indices) > 1:
            entry = scores[indices[0]]
            shown = ", ".join(str(i) for i in indices[1:6]) + (", ..." if len(indices) > 6 else "")
            problems.append((f"scores/{indices[1]}", f"{len(indices) - 1} entr{'y' if len(indices) == 2 else 'ies'} "
                                                     f"({shown}) repeat scores/{indices[0]} "
                                                     f"({one_line(str(entry.get('name'))[:60])} on "
                                                     f"{one_line(str(entry.get('suite'))[:60])}: same name, suite, "
                                                     "subset, estimator and annotator)"))
    return problems


def _check_pairing(doc: Mapping) -> list[tuple[str, str]]:
    """The ``pairing`` section (benchmark.contract.pairing), when present: readable, over the
    file's probe set and images, each label file a known one with its own columns."""
    if "pairing" not in doc or (isinstance(doc["pairing"], Mapping) and doc["pairing"].get("format") in OLD_FORMATS):
        return []  # an earlier version's paired resamples: valid (compare says it cannot test with them)
    try:
        section = read_pairing(doc)
    except ValueError as exc:
        return [("pairing", one_line(str(exc)))]
    problems = []
    fingerprint = (doc.get("probes") or {}).get("fingerprint") if isinstance(doc.get("probes"), Mapping) else None
    if fingerprint and section.fingerprint not in (None, fingerprint):
        problems.append(("pairing/probe_fingerprint", "is not the fingerprint of the file's probes"))
    n_images = (doc.get("run") or {}).get("n_images") if isinstance(doc.get("run"), Mapping) else None
    if isinstance(n_images, int) and n_images != len(section.probe_ids):
        problems.append(("pairing/probe_ids", f"names {len(section.probe_ids)} probes, the file scored {n_images} "
                                              "images"))
    for kind, frame in section.labels.items():
        spec = LABEL_FILES.get(kind)
        extra = [] if spec is None else [c for c in frame.columns if c not in spec.columns and c != PROBE_COLUMN]
        if spec is None or extra:
            problems.append((f"pairing/labels/{one_line(kind[:60])}", "is not a label file" if spec is None else
                             f"has columns {one_line(str(extra)[:120])} that label file does not"))
    return problems


# --------------------------------------------------------------------------- the check

#: a real audit has tens of score entries and suites: these bounds refuse a bloated file
#: before the slower checks (the JSON Schema takes a minute on 70,000 score entries)
MAX_ITEMS = {"scores": 2000, "suites": 200, "annotators": 500, "notes": 2000}


def _check_sizes(doc: Mapping) -> list[str]:
    return [f"{key}: {len(doc[key]):,} entries, at most {limit:,} in a results file"
            for key, limit in MAX_ITEMS.items() if isinstance(doc.get(key), list) and len(doc[key]) > limit]


def _check_text_encoding(doc: Any) -> list[str]:
    """Every string (key or value) that is not valid UTF-8: a lone surrogate such as "\\ud800"
    parses from JSON but cannot be written out again (it broke the leaderboard's detail view).
    Paths are shown with JSON escapes, so the line itself can be printed."""
    problems = []
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, node = stack.pop()
        items = node.items() if isinstance(node, Mapping) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            shown = json.dumps(key)[1:-1] if isinstance(key, str) else str(key)
            path = f"{where}/{shown}" if where else shown
            for text, what in ((key, "key"), (value, "text")):
                if isinstance(text, str) and not _encodes(text):
                    bad = next(ch for ch in text if not _encodes(ch))
                    problems.append(f"{path}: {what} is not valid UTF-8 (a lone surrogate U+{ord(bad):04X})")
            stack.append((path, value))
    return sorted(set(problems))


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_REQUIRED = re.compile(r"^'([^']+)' is a required property$")


def _readable(line: str) -> tuple[str, str]:
    """(path, message) of one validate_results line, with "required property" made plain."""
    path, _, message = line.partition(": ")
    missing = _REQUIRED.match(message)
    if missing:
        path = missing.group(1) if path == "(top level)" else f"{path}/{missing.group(1)}"
        message = "required field is missing"
    return path, message


def already_accepted(name: str, *, allow_demo: bool) -> str | None:
    """What ``t2ibench validate`` says of a file it need not check again, or None: a folder above
    it has a leaderboard contents table whose row for it has its sha256, this package version's
    checks and no problems (a demo row only with ``allow_demo``)."""
    from submissions.leaderboard.accepted import accepted_row

    try:
        found = accepted_row(name)
    except Exception:  # a path that cannot be resolved or read: the checks say what is wrong with it
        return None
    if found is None or (found[1] and not allow_demo):
        return None
    table, demo = found
    return (f"ok, unchanged since {table} accepted it (not checked again)"
            + (f" ({DEMO_NOTE})" if demo else ""))


def check_results(doc: Mapping, *, allow_demo: bool = False, now: _dt.datetime | None = None) -> list[str]:
    """Every problem of a results document, one ``path: message`` line each; empty = valid.

    With ``allow_demo`` a run of (or labelled by) built-in tiny models is valid (mark it with
    :func:`is_demo`). ``now`` (default: this machine's UTC time) bounds ``created``.
    """
    if not isinstance(doc, Mapping):
        return [f"(top level): a results document is a JSON object, not {type(doc).__name__}"]
    load_plugins()  # the scores of every task folder and installed plugin are known
    oversized = _check_sizes(doc)
    if oversized:
        return oversized  # refused whatever else holds; checking it all would take minutes
    unencodable = _check_text_encoding(doc)
    if unencodable:
        return unencodable  # refused first: the other checks' lines would quote the bad text
    now = now or utc_now()
    ours: list[tuple[str, str]] = []
    version = doc.get("schema_version")
    if "schema_version" in doc and version not in SUPPORTED_SCHEMA_VERSIONS:
        ours.append(("schema_version", f"{one_line(repr(version)[:40])} is not supported (this t2ibench reads "
                                       f"{', '.join(SUPPORTED_SCHEMA_VERSIONS)})"))
    ours += _check_model(doc, allow_demo)
    ours += _check_times(doc, now)
    ours += _check_counts(doc)
    ours += check_image_provenance(doc)
    scores = doc.get("scores")
    ours += _check_score_list(scores)
    ours += _check_pairing(doc)
    for i, entry in enumerate(scores if isinstance(scores, list) else []):
        if isinstance(entry, Mapping):
            ours += _check_score(i, entry)
            ours += _check_corrected(i, entry)

    # Where one of our lines explains a path, the schema's terser line about it is dropped.
    explained = {p for p, _ in ours}
    explained |= {p.rsplit("/", 1)[0] + "/value" for p in explained if p.endswith("/reason")}
    base = [_readable(line) for line in validate_results(doc)]
    lines = [f"{p}: {m}" for p, m in base if p not in explained]
    return [one_line(line) for line in lines + [f"{p}: {m}" for p, m in ours]]
