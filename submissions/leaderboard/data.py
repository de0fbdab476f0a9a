"""Leaderboard data: results files -> validated submissions -> one row per model.

Pure functions (no Gradio): the app in ``app.py`` only lays these tables out. Every
string here comes from results files written by others: it reaches Markdown only through
:func:`benchmark.present.text.md_escape` and HTML (the Badge and Suites cells) only through
:func:`benchmark.present.text.html_escape`; the Model cell is plain text.

Rules (also in ``docs/leaderboard.md``):

- Files: every ``*.json`` under the folder, recursively; inside a run folder (one with
  ``run_config.json``) only its ``results.json``. Hidden folders (``.cache`` of a Hub
  download) are left out. Each file is read with the package's one results reader
  (:func:`benchmark.contract.results.load_results_file`: size, depth, big-integer, duplicate-key
  and NaN limits) and checked like ``t2ibench validate``; a file that fails is skipped and
  listed with its first problem, never raised.
- Each file is parsed and checked once: the result is cached by (path, size, mtime_ns),
  so "Reload results" reads only new or changed files.
- One row per model id + revision + probe set (``probes`` of the results, when present) +
  reference (the fingerprint of each entry of ``references``, e.g. ``references.mcas`` for
  ``--mcas-reference`` audits; none for the papers' protocol): a model audited both ways has
  two rows, the reference one marked by a badge and its Model cell, in the words of the task
  input that declares it (:mod:`benchmark.tasks.inputs`). Sorting by a score the reference
  changes ranks the papers'-protocol rows first, then each reference's rows among
  themselves, never mixed.
  When several valid files share that key the first accepted one keeps the row (the
  earliest ``created``, ties by path) and the others are listed as conflicts in the
  warnings, never shown: a newer file does not take over a row. Replacing a row's file is a
  reviewed pull request on the results dataset that deletes the old file.
- A "value [low, high]" column per ``SCORE_METADATA`` entry with ``headline=True`` that
  some file has, in views: the overview keeps one score per paper family (it fits 1280 px),
  a family view its scores, "all" every one. When a name has several entries (estimators,
  encoders, subsets) the cell shows one, chosen by :func:`benchmark.present.text.entry_rank`; all of
  them are in the detail view.
- Rank column: the rank range of each row by the ranking score, from the intervals
  (:mod:`submissions.leaderboard.ranks`); the table is made one page at a time
  (:mod:`submissions.leaderboard.paging`), the search, filters and order over every row.
- Default order: best first by the first headline column, by
  :meth:`ScoreMetadata.badness` (so "closest to 0" scores rank by distance to 0); undefined
  values after, demo rows (built-in tiny models) last.
"""

from __future__ import annotations

import datetime as _dt
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd
from huggingface_hub import snapshot_download

from benchmark.present import text
from benchmark.hub.access import NO_CONNECTION, hub_failures
from benchmark.contract.results import MAX_RESULTS_BYTES, RESULTS_FILE, UnreadableResults, load_results_file
from benchmark.contract.run_folder import CONFIG_FILE
from benchmark.scores.metadata import SCORE_METADATA, column_group
from benchmark.tasks import task_of_family
from benchmark.tasks.inputs import declared_inputs, input_of_results_key
from benchmark.present.text import ESTIMATOR_RANK, OTHER_ESTIMATOR_RANK, entry_rank, md_escape  # noqa: F401
from benchmark.contract.image_provenance import API, KINDS as IMAGE_SOURCES, SUPPLIED, provenance_kind
from submissions import provenance
from submissions.leaderboard.paging import Page, page_of
from submissions.leaderboard.ranks import RankRange, badness_interval, rank_ranges
from benchmark.contract.model_specs import hub_id_problem, is_builtin
from benchmark.contract.times import parse_iso_time
from submissions.validate import builtin_annotators, check_results, is_demo

#: a results.json ``references`` key as the schema allows it (it becomes a CSS class and a row key)
REFERENCE_KEY = re.compile(r"[a-z][a-z0-9_]*")

#: files larger than this are refused from their size, unread (a results document is tens of kB)
MAX_FILE_BYTES = MAX_RESULTS_BYTES
HUB_DATASETS = "https://huggingface.co/datasets/"


def is_dataset_id(repo: Any) -> bool:
    """``repo`` is a Hub dataset id ORG/NAME by huggingface_hub's own rule (letters, digits, '.',
    '_', '-'): safe to put in a URL and a Markdown link as is."""
    return isinstance(repo, str) and repo.count("/") == 1 and hub_id_problem(repo) is None


# --------------------------------------------------------------------------- validation


def check_document(doc: Any) -> list[str]:
    """Problems of one results document (one line each; [] when it can be shown): the checks
    of ``t2ibench validate`` with built-in tiny models allowed (shown as demo)."""
    return list(check_results(doc, allow_demo=True))


# --------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class Submission:
    """One valid results file (its derived facts are worked out once: the ranking asks them of
    every row at every search)."""

    doc: dict
    source: str  # path relative to the folder read, for display
    path: Path
    run_dir: Path | None  # the run folder when the file is a run's results.json
    # the requests queue's FINISHED requests, when the app has a queue: a row counts as
    # evaluated by the maintainers' workers only when its request is there (submissions.provenance)
    finished: Mapping | None = None

    @property
    def model(self) -> Mapping:
        return self.doc["model"]

    @property
    def model_id(self) -> str:
        return str(self.model["id"])

    @property
    def revision(self) -> str | None:
        return self.model.get("revision")

    @cached_property
    def probes(self) -> str | None:
        """The probe set of the results (``probes``: fingerprint, else source@revision), or None."""
        probes = self.doc.get("probes")
        if not isinstance(probes, Mapping):
            return None
        if probes.get("fingerprint"):
            return str(probes["fingerprint"])
        if probes.get("source"):
            return f"{probes['source']}@{probes.get('revision') or ''}"
        return None

    @cached_property
    def references(self) -> dict[str, dict]:
        """The reference datasets the scores were made against (results.json ``references``: key ->
        {source, revision, fingerprint}, by key), empty for the papers' protocol (the model's own
        images)."""
        refs = self.doc.get("references")
        if not isinstance(refs, Mapping):
            return {}
        return {str(k): dict(v) for k, v in sorted(refs.items(), key=lambda kv: str(kv[0]))
                if REFERENCE_KEY.fullmatch(str(k)) and isinstance(v, Mapping) and v.get("fingerprint")}

    @cached_property
    def reference_fingerprint(self) -> str | None:
        """The fingerprints of the references, joined (None for the papers' protocol)."""
        return "+".join(str(r["fingerprint"]) for r in self.references.values()) or None

    @cached_property
    def key(self) -> str:
        """Row key: model id, revision, probe set and references ('@', '#' and '|' are in no Hub
        id, so it is unambiguous)."""
        return (f"{self.model_id}@{self.revision or ''}" + (f"#{self.probes}" if self.probes else "")
                + "".join(f"|{k}-reference={r['fingerprint']}" for k, r in self.references.items()))

    @property
    def created(self) -> _dt.datetime:
        return parse_time(self.doc.get("created"))

    @property
    def submission(self) -> Mapping:
        sub = self.doc.get("submission")
        return sub if isinstance(sub, Mapping) else {}

    @cached_property
    def demo(self) -> bool:
        """Built-in tiny random-weight model (or a submission marked demo): meaningless scores."""
        return is_demo(self.doc) or bool(self.submission.get("demo"))

    @cached_property
    def family(self) -> str:
        settings = self.doc.get("settings") if isinstance(self.doc.get("settings"), Mapping) else {}
        return str(settings.get("family") or settings.get("kind") or "unknown")

    @cached_property
    def suites(self) -> list[str]:
        """Suites with scores (status ``scored``)."""
        return [str(s["name"]) for s in self.doc.get("suites", []) if s.get("status") == "scored"]

    @property
    def scores(self) -> list[dict]:
        return list(self.doc.get("scores", []))

    @property
    def images_dataset(self) -> str | None:
        """The submitted images' Hub dataset id, when present and a well-formed repo id."""
        repo = self.submission.get("images_dataset")
        return repo if is_dataset_id(repo) else None


@dataclass(frozen=True)
class Skipped:
    source: str
    problem: str  # the first one
    n_problems: int


@dataclass
class Board:
    """Everything read from one folder."""

    source: str
    submissions: list[Submission] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the folder itself could not be read

    def rows(self) -> list[ModelRow]:
        return model_rows(self.submissions)

    @property
    def conflicts(self) -> list[tuple[Submission, Submission]]:
        """(file not shown, the row's file) for every valid file whose row another file holds."""
        return [(other, row.latest) for row in self.rows() for other in row.older]


def parse_time(value: Any) -> _dt.datetime:
    """An ISO 8601 time as an aware datetime; unparsable times sort first."""
    try:
        t = parse_iso_time(value)
    except ValueError:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)


def candidate_files(root: Path) -> list[Path]:
    """The results files to read under ``root`` (see the module docstring)."""
    files = sorted(p for p in root.rglob("*.json") if p.is_file())
    run_dirs = {p.parent for p in files if p.name == CONFIG_FILE}
    out = []
    for p in files:
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts[:-1]):
            continue
        inside = [d for d in run_dirs if d == p.parent or d in p.parents]
        if inside and not (p.name == RESULTS_FILE and p.parent in run_dirs):
            continue  # a run folder's own files (run_config, timings, ...), not results
        out.append(p)
    return out


@dataclass(frozen=True)
class _Parsed:
    """One file as read and checked: the document (None when it could not be read) and its problems."""

    signature: tuple[int, int]  # (size, mtime_ns) when it was read
    doc: dict | None
    problems: tuple[str, ...]


# Parsed files by resolved path, shared by every Board (the app builds a new Board per reload).
_PARSED: dict[Path, _Parsed] = {}
_PARSED_LOCK = threading.Lock()
_FUTURE = "is in the future"


def read_and_check(path: Path, signature: tuple[int, int]) -> _Parsed:
    """``path`` read with the package's one results reader and checked (never cached, never raises)."""
    try:
        doc = load_results_file(path, max_bytes=MAX_FILE_BYTES)
    except UnreadableResults as exc:
        return _Parsed(signature, None, (exc.reason,))
    except Exception as exc:  # one broken file never stops the board
        return _Parsed(signature, None, (f"cannot be read ({type(exc).__name__})",))
    try:
        problems = tuple(check_document(doc))
    except Exception as exc:
        problems = (f"cannot be checked ({type(exc).__name__})",)
    return _Parsed(signature, doc, problems)


def parsed_file(path: Path) -> _Parsed:
    """``path`` read and checked, from the cache when its size and mtime are those it was read with."""
    key = path.resolve()
    try:
        st = key.stat()
        signature = (st.st_size, st.st_mtime_ns)
    except OSError:
        signature = (-1, -1)
    with _PARSED_LOCK:
        cached = _PARSED.get(key)
    if cached is not None and cached.signature == signature:
        if cached.doc is None or not any(_FUTURE in p for p in cached.problems):
            return cached
        # "not in the future" is the one check that time can change: check that file again
        cached = _Parsed(signature, cached.doc, tuple(check_document(cached.doc)))
    else:
        cached = read_and_check(key, signature)
    with _PARSED_LOCK:
        _PARSED[key] = cached
    return cached


def clear_cache() -> None:
    """Forget every parsed file (the next load reads everything again)."""
    with _PARSED_LOCK:
        _PARSED.clear()


def _forget_missing(root: Path, seen: set[Path]) -> None:
    """Drop cached files under ``root`` that the last listing no longer has."""
    with _PARSED_LOCK:
        for key in [k for k in _PARSED if k not in seen and root in k.parents]:
            del _PARSED[key]


def load_folder(root: str | Path, source: str | None = None) -> Board:
    """Read every results file under ``root``; invalid ones go to ``Board.skipped``.

    Files unchanged since an earlier call (same size and mtime) are not read again.
    """
    root = Path(root)
    board = Board(source=source or str(root))
    if not root.is_dir():
        board.errors.append(f"{board.source} is not a folder")
        return board
    seen: set[Path] = set()
    for path in candidate_files(root):
        rel = path.relative_to(root).as_posix()
        parsed = parsed_file(path)
        seen.add(path.resolve())
        if parsed.problems or parsed.doc is None:
            problems = parsed.problems or ("not read",)
            board.skipped.append(Skipped(rel, problems[0], len(problems)))
            continue
        run_dir = path.parent if path.name == RESULTS_FILE and (path.parent / CONFIG_FILE).is_file() else None
        board.submissions.append(Submission(doc=parsed.doc, source=rel, path=path, run_dir=run_dir))
    _forget_missing(root.resolve(), seen)
    return board


OFFLINE_NOT_CACHED = ("{where}: the Hub is offline (HF_HUB_OFFLINE) and no copy is cached; "
                      "use --results DIR with a local copy")
#: why a results dataset cannot be read (:func:`benchmark.hub.access.hub_failures`)
DOWNLOAD_MESSAGES = {
    "offline": OFFLINE_NOT_CACHED,
    "not_cached": OFFLINE_NOT_CACHED,
    "not_found": "{where}: no such dataset on the Hub (or it is private: run `hf auth login`)",
    "http": "{where}: the Hub answered HTTP {status}",
    "connection": NO_CONNECTION,
}


def download_results(repo: str, revision: str | None = None) -> Path:
    """A local copy of the JSON files of Hub results dataset ``repo``; ValueError (one line) when
    it cannot be had (offline, no connection, no such dataset)."""
    if not is_dataset_id(repo):
        raise ValueError(f"--repo takes a Hub dataset id ORG/NAME, got {repo!r}")
    with hub_failures(DOWNLOAD_MESSAGES, error=ValueError, where=f"cannot read results dataset {repo}"):
        return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=["*.json"]))


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class ModelRow:
    """One leaderboard row: ``latest`` is the submission shown (the first accepted file of the
    row's key); ``older`` are the other valid files with the same key, conflicts never shown."""

    latest: Submission
    older: tuple[Submission, ...] = ()

    @property
    def key(self) -> str:
        return self.latest.key

    @property
    def conflicts(self) -> tuple[Submission, ...]:
        return self.older


def accepted_first(sub: Submission) -> tuple:
    """Order of acceptance among files of one row key: a file the maintainers' workers evaluated
    (checked against the queue's FINISHED requests, :func:`evaluated_by`) before a self-reported
    one, then the earliest ``created``, then path."""
    return (evaluated_by(sub) is None, sub.created, sub.source)


def hidden_because(hidden: Submission, shown: Submission) -> str:
    """Why ``hidden`` is not shown although it has the row key of ``shown`` (the row's file)."""
    if evaluated_by(shown) is not None and evaluated_by(hidden) is None:
        return "a file the maintainers' workers evaluated holds the row before any self-reported file"
    return "the first accepted file (earliest created) holds the row"


def model_rows(submissions: Iterable[Submission]) -> list[ModelRow]:
    """One row per model id + revision + probe set, held by its first accepted file
    (:func:`accepted_first`: a worker-evaluated file first); the other files of that key are the
    row's conflicts."""
    groups: dict[str, list[Submission]] = {}
    for s in submissions:
        groups.setdefault(s.key, []).append(s)
    rows = []
    for subs in groups.values():
        subs = sorted(subs, key=accepted_first)
        rows.append(ModelRow(subs[0], tuple(subs[1:])))
    return sorted(rows, key=lambda r: (r.latest.model_id.lower(), r.key))


def headline_entry(sub: Submission, name: str, suites: Sequence[str] = ()) -> dict | None:
    """The entry shown in ``name``'s column for ``sub`` (None: no entry of that name); the
    choice is :func:`benchmark.present.text.entry_rank`'s, the same as the report's summary."""
    cands = [(entry_rank(e, i), e) for i, e in enumerate(sub.scores)
             if e.get("name") == name and (not suites or e.get("suite") in suites)]
    return min(cands, key=lambda c: c[0])[1] if cands else None


def headline_names(submissions: Iterable[Submission], suites: Sequence[str] = ()) -> list[str]:
    """Headline score names present in some submission (metadata order), within ``suites`` if given."""
    present = {e.get("name") for s in submissions for e in s.scores if not suites or e.get("suite") in suites}
    return [n for n, m in SCORE_METADATA.items() if m.headline and n in present]


def _meta_entry(name: str) -> dict:
    m = SCORE_METADATA[name]
    return {"lower_is_better": m.lower_is_better, "ideal": m.ideal}


def direction_mark(name: str) -> str:
    """↓ lower is better, ↑ higher is better, →x closest to x is better."""
    return text.direction_mark(_meta_entry(name))


def direction_text(name: str) -> str:
    return text.direction_text(_meta_entry(name)) if name in SCORE_METADATA else ""


def value_column(name: str) -> str:
    return f"{SCORE_METADATA[name].display_name} {direction_mark(name)}".strip()


fmt = text.fmt_number


def cell_text(entry: Mapping | None) -> str:
    """A score cell: "value [low, high]" (3 significant digits), "value (no CI)", "value
    (zero-width CI)", "undefined", or "" (no entry)."""
    return text.short_value_text(entry, digits=3)


def rounded(value: Any) -> float | None:
    """The numeric value behind a cell (it sorts the column), None when undefined."""
    return float(value) if text.is_number(value) else None


# --------------------------------------------------------------------------- score families and views


OVERVIEW = "Overview: one score per paper"
ALL_SCORES = "All headline scores"


def score_family(name: str) -> str:
    """The column group a score belongs to (its metadata's ``column_group``, else its paper's short name)."""
    return column_group(name)


def views(names: Sequence[str]) -> list[str]:
    """The column sets the table offers: an overview, one per family present, all."""
    families = list(dict.fromkeys(score_family(n) for n in names))
    return [OVERVIEW, *families, ALL_SCORES] if len(families) > 1 else [ALL_SCORES]


def view_names(names: Sequence[str], view: str | None) -> list[str]:
    """The headline columns of ``view``: the overview keeps each family's first score (metadata
    order), so the table fits a 1280 px screen without scrolling sideways."""
    if view in (None, "", ALL_SCORES):
        return list(names)
    if view == OVERVIEW:
        seen, out = set(), []
        for n in names:
            if score_family(n) not in seen:
                seen.add(score_family(n))
                out.append(n)
        return out
    return [n for n in names if score_family(n) == view]


# --------------------------------------------------------------------------- badges


DEMO_BADGE = "demo"
EVALUATED_BADGE = "evaluated"


class ReferencedPapers:
    """The papers whose scores a run input changes (``paper in REFERENCED_PAPERS``): those of the
    task of each declared input's probe family (a reference's attribute images change MCAS and
    Generated Bias), asked of the registries when first tested, so that importing this module
    imports no task. Worked out once: the ranking asks it for every score of every row, and the
    declared inputs are read from the task folders on disk."""

    def __init__(self) -> None:
        self._papers: frozenset[str] | None = None

    def __contains__(self, paper: object) -> bool:
        if self._papers is None:
            tasks = (task_of_family(i.family) for i in declared_inputs() if i.family)
            self._papers = frozenset(p for task in tasks if task is not None for p in task.papers)
        return paper in self._papers


REFERENCED_PAPERS = ReferencedPapers()


def reference_label(sub: Submission) -> str:
    """What the Model cell adds for a row scored against references ("" for the papers' protocol)."""
    return "".join(f" [{input_of_results_key(k).short_label} {str(r['fingerprint'])[:8]}]"
                   for k, r in sub.references.items())


def evaluated_by(sub: Submission) -> str | None:
    """The maintainers' worker that ran the audit (``evaluated_by``), when the results come from
    a request of the queue (:func:`submissions.provenance.provenance`, checked against the
    queue's FINISHED requests when the app has a queue); None for a self-reported row."""
    if provenance.provenance(sub, sub.finished) != provenance.PROVENANCE_WORKER:
        return None
    return str(sub.doc["evaluated_by"])


#: the Images filter: who made a row's images (benchmark.contract.image_provenance)
IMAGES_CHOICES = ("all", "generated", *IMAGE_SOURCES)
IMAGES_BADGES = {SUPPLIED: "supplied", API: "api"}


def images_text(sub: Submission) -> str:
    """Where a row's images came from, in words (its results' ``provenance`` block)."""
    block = sub.doc.get("provenance") if isinstance(sub.doc.get("provenance"), Mapping) else {}
    kind = provenance_kind(sub.doc)
    if kind == SUPPLIED:
        sheet = block.get("sheet") if isinstance(block.get("sheet"), Mapping) else {}
        return (f"images supplied by {block.get('supplied_by')}, made elsewhere from the probe sheet with "
                f"fingerprint {str(sheet.get('probes_fingerprint'))[:12]} (of its rows' probe id, prompt and seed; "
                f"{block.get('n_missing', 0)} missing); "
                f"seeds {block.get('seeds')}")
    if kind == API:
        return (f"images from the {block.get('api_model')} image API at {block.get('api_base')}; "
                f"seeds {block.get('seeds')}")
    return "generated by the benchmark from the model it loaded, seeded per probe"


def demo_text(sub: Submission) -> str:
    """What makes a demo row's scores meaningless, saying what is built in: the model that made
    the images (a ``builtin:`` generator), the annotators that labelled them, or both; a row
    whose images were supplied or came from an API has only built-in annotators."""
    model = sub.doc.get("model") if isinstance(sub.doc.get("model"), Mapping) else {}
    parts = []
    if is_builtin(model):
        parts.append("images generated by a built-in tiny random-weight model")
    annotators = builtin_annotators(sub.doc)
    if annotators:
        parts.append(f"labels from built-in tiny random-weight annotators ({', '.join(annotators)})")
    if not parts:
        parts.append("submission marked demo")
    return "; ".join(parts) + ": meaningless scores"


def row_tags(sub: Submission) -> str:
    """What the compare picker and table add to a Model label: who made the images (``[api]``,
    ``[supplied]``) and ``[demo]`` (the badges of those kinds, in the same words)."""
    kind = provenance_kind(sub.doc)
    return ((f" [{IMAGES_BADGES[kind]}]" if kind in IMAGES_BADGES else "")
            + (f" [{DEMO_BADGE}]" if sub.demo else ""))


def badges(sub: Submission) -> list[tuple[str, str]]:
    """(badge, hover text) of a row: demo (meaningless scores), evaluated (not self-reported),
    supplied / api (images the benchmark did not generate)."""
    out = []
    kind = provenance_kind(sub.doc)
    if kind in IMAGES_BADGES:
        out.append((IMAGES_BADGES[kind], images_text(sub)))
    if sub.demo:
        out.append((DEMO_BADGE, demo_text(sub)))
    who = evaluated_by(sub)
    if who:
        out.append((EVALUATED_BADGE, f"evaluated by {who}, not self-reported"))
    for key, ref in sub.references.items():
        task_input = input_of_results_key(key)
        out.append((task_input.badge, task_input.badge_text(ref)))
    return out


def badges_html(sub: Submission) -> str:
    """The Badge cell (an HTML column): only fixed badge names or a reference key (``[a-z][a-z0-9_]*``);
    hover text escaped."""
    return " ".join(f'<span class="lb-badge lb-badge-{name}" title="{text.html_escape(hover)}">{name}</span>'
                    for name, hover in badges(sub))


def suites_html(sub: Submission) -> str:
    """The Suites cell: the count, the names on hover (escaped)."""
    names = ", ".join(sub.suites) or "none"
    return f'<span class="lb-suites" title="{text.html_escape(names)}">{len(sub.suites)}</span>'


# --------------------------------------------------------------------------- the table


MODEL_COLUMN, RANK_COLUMN, BADGE_COLUMN, SUITES_COLUMN = "Model", "Rank", "Badge", "Suites"
#: the index of the first score column (Model, Rank, Badge, Suites come first)
FIRST_SCORE = 4
BASE_WIDTHS = {MODEL_COLUMN: "210px", RANK_COLUMN: "70px", BADGE_COLUMN: "84px", SUITES_COLUMN: "62px"}
SCORE_WIDTH = "136px"


def badge_width(subs: Iterable[Submission]) -> str:
    """The Badge column's width: room for the widest set of badges a row has (12 px bold
    letters about 7.5 px wide, 16 px padding and 3 px margin per badge), never less than 84 px."""
    widest = max((sum(len(name) * 7.5 + 24 for name, _ in badges(s)) for s in subs), default=0)
    return f"{max(84, int(widest) + 12)}px"


def filter_rows(rows: Iterable[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                search: str = "", show_demo: bool = True, provenance_filter: str = "all",
                images: str = "all") -> list[ModelRow]:
    """Rows that scored every suite in ``suites``, of a family in ``families`` (empty: any),
    whose model id contains ``search`` (case-insensitive), evaluated as ``provenance_filter``
    says (``all``, the maintainers' worker, self-reported)."""
    needle = (search or "").strip().lower()
    rows = list(rows)
    if provenance_filter and provenance_filter != "all":
        rows = [r for r in rows if provenance.provenance(r.latest, r.latest.finished) == provenance_filter]
    if images and images != "all":  # generated / images supplied / api
        rows = [r for r in rows if provenance_kind(r.latest.doc) == images]
    out = []
    for r in rows:
        s = r.latest
        if (suites and not set(suites) <= set(s.suites)) or (families and s.family not in families):
            continue
        if (needle and needle not in s.model_id.lower()) or (s.demo and not show_demo):
            continue
        out.append(r)
    return out


def sort_rows(rows: Iterable[ModelRow], name: str | None, suites: Sequence[str] = ()) -> list[ModelRow]:
    """Best first by score ``name`` (metadata direction); rows without a defined value after,
    demo rows (meaningless scores) last."""
    rows = list(rows)
    if not name:
        return sorted(rows, key=lambda r: r.latest.demo)
    meta = SCORE_METADATA[name]
    # scores made against different references are never ranked together: the papers'
    # protocol first, then each reference's rows (by fingerprint) among themselves
    by_reference = meta.paper in REFERENCED_PAPERS

    def key(r: ModelRow):
        e = headline_entry(r.latest, name, suites)
        v = e.get("value") if e else None
        ok = text.is_number(v)
        group = (r.latest.reference_fingerprint is not None, r.latest.reference_fingerprint or "") \
            if by_reference else (False, "")
        return (r.latest.demo, *group, 0, meta.badness(float(v))) if ok else (r.latest.demo, *group, 1, 0.0)

    return sorted(rows, key=key)


def model_labels(rows: Sequence[ModelRow]) -> dict[str, str]:
    """Row key -> the Model cell: the id, with "@ revision" only where one id has several rows,
    then the probe set where that still leaves two rows alike, then a number: no two rows
    share a label (clicks and the compare picker find rows by it)."""
    count: dict[str, int] = {}
    for r in rows:
        count[r.latest.model_id] = count.get(r.latest.model_id, 0) + 1
    labels = {r.key: (r.latest.model_id if count[r.latest.model_id] == 1
                      else f"{r.latest.model_id} @ {r.latest.revision or 'no revision'}") + reference_label(r.latest)
              for r in rows}
    same: dict[str, list[ModelRow]] = {}
    for r in rows:
        same.setdefault(labels[r.key], []).append(r)
    for label, group in same.items():
        if len(group) == 1:
            continue
        for r in group:
            labels[r.key] = f"{label} [probes {str(r.latest.probes or 'built-in')[:12]}]"
    taken: dict[str, int] = {}
    for r in rows:  # still alike (probe sets equal in their first 12 characters): numbered
        n = taken[labels[r.key]] = taken.get(labels[r.key], 0) + 1
        if n > 1:
            labels[r.key] = f"{labels[r.key]} ({n})"
    return labels


@dataclass
class Table:
    """The leaderboard table (one page of it): numbers behind the score cells (they sort), the text shown."""

    headers: list[str]
    values: list[list[Any]]
    display: list[list[str]]
    datatype: list[str]
    widths: list[str]
    keys: list[str]  # row keys of the page, in row order
    page: Page | None = None  # which page of how many matching rows
    order: list[str] = field(default_factory=list)  # the keys of every matching row, in order

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.values, columns=self.headers)

    def shown(self) -> pd.DataFrame:
        """What the page shows, as text."""
        return pd.DataFrame(self.display, columns=self.headers)

    def gradio_value(self) -> dict:
        """The ``gr.Dataframe`` value: numbers as data (header menus sort them as numbers), the
        "value [low, high]" text as display values."""
        return {"headers": self.headers, "data": self.values,
                "metadata": {"display_value": self.display, "styling": [[""] * len(self.headers)
                                                                          for _ in self.display]}}


def rank_group(sub: Submission, name: str) -> tuple | None:
    """Which rows are ranked together by score ``name``: None for demo rows (never ranked), else
    the reference group for a score a reference changes (never ranked across references)."""
    if sub.demo:
        return None
    return (sub.reference_fingerprint or "",) if SCORE_METADATA[name].paper in REFERENCED_PAPERS else ()


def score_ranks(rows: Iterable[ModelRow], name: str | None, suites: Sequence[str] = ()) -> dict[str, RankRange]:
    """Row key -> its rank range by score ``name`` (:mod:`submissions.leaderboard.ranks`) among
    ``rows`` with a defined value, in its :func:`rank_group`."""
    if not name:
        return {}
    meta = SCORE_METADATA[name]
    groups: dict[tuple, list] = {}
    for r in rows:
        group = rank_group(r.latest, name)
        e = headline_entry(r.latest, name, suites) if group is not None else None
        if e is None or not e.get("defined") or not text.is_number(e.get("value")):
            continue
        ci = e.get("ci") if isinstance(e.get("ci"), Mapping) else {}
        groups.setdefault(group, []).append(
            (r.key, badness_interval(meta, float(e["value"]), ci.get("low"), ci.get("high"))))
    out: dict[str, RankRange] = {}
    for items in groups.values():
        out.update(rank_ranges(items))
    return out


def leaderboard_table(rows: Sequence[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                      search: str = "", show_demo: bool = True, sort_by: str | None = None,
                      names: Sequence[str] | None = None, view: str | None = OVERVIEW,
                      evaluated: str = "all", images: str = "all", page: int = 1, page_size: int | None = None,
                      labels: Mapping[str, str] | None = None, present: Sequence[str] | None = None) -> Table:
    """The leaderboard: one row per model, a Rank column (the rank range by ``sort_by``, ties
    marked), one "value [low, high]" column per headline score of ``view`` (``names`` overrides
    it), best first by ``sort_by`` (default: the first column); with ``page_size`` only page
    ``page`` of the matching rows is made (:mod:`submissions.leaderboard.paging`).

    Ranks count the rows the filters keep, the search apart (searching does not re-rank).
    Score cells hold the value as a number (None when undefined, so it sorts) and show
    :func:`cell_text`; the Badge and Suites cells are HTML made here from fixed names and
    escaped text; the Model cell is plain text (the page shows it as text). ``labels`` and
    ``present`` (the headline names the rows have) may be given, worked out once.
    """
    present = headline_names([r.latest for r in rows], suites) if present is None else present
    names = list(names) if names is not None else view_names(present, view)
    if sort_by not in present:
        sort_by = names[0] if names else None
    filtered = filter_rows(rows, suites=suites, families=families, show_demo=show_demo,
                           provenance_filter=evaluated, images=images)
    ranks = score_ranks(filtered, sort_by, suites)
    ordered = sort_rows(filter_rows(filtered, search=search), sort_by, suites)
    shown = page_of(len(ordered), page, page_size or max(1, len(ordered)))
    kept = ordered[shown.start:shown.stop]
    labels = labels if labels is not None else model_labels(rows)
    headers = [MODEL_COLUMN, RANK_COLUMN, BADGE_COLUMN, SUITES_COLUMN] + [value_column(n) for n in names]
    values, display = [], []
    for r in kept:
        s = r.latest
        rank = ranks.get(r.key)
        base = [labels[r.key], rank.best if rank else None, badges_html(s), suites_html(s)]
        entries = [headline_entry(s, n, suites) for n in names]
        values.append(base + [rounded(e.get("value")) if e and e.get("defined") else None for e in entries])
        display.append([base[0], rank.text() if rank else "", *base[2:]] + [cell_text(e) for e in entries])
    return Table(headers, values, display, datatype=["str", "number", "html", "html"] + ["number"] * len(names),
                 widths=[BASE_WIDTHS[MODEL_COLUMN], BASE_WIDTHS[RANK_COLUMN], badge_width(r.latest for r in kept),
                         BASE_WIDTHS[SUITES_COLUMN]] + [SCORE_WIDTH] * len(names),
                 keys=[r.key for r in kept], page=shown, order=[r.key for r in ordered])


def all_suites(rows: Iterable[ModelRow]) -> list[str]:
    return sorted({s for r in rows for s in r.latest.suites})


def all_families(rows: Iterable[ModelRow]) -> list[str]:
    return sorted({r.latest.family for r in rows})


def row_label(row: ModelRow) -> str:
    s = row.latest
    return f"{s.model_id} @ {s.revision or 'no revision'}" + reference_label(s) + row_tags(s)


# --------------------------------------------------------------------------- forest plots and comparison


def forest_panels(rows: Sequence[ModelRow], names: Sequence[str], suites: Sequence[str] = ()) -> list[dict]:
    """One forest-plot panel per score (:func:`benchmark.present.plotting.forest_figure`):
    every model's value and interval, best first, undefined values last, demo rows grey."""
    labels = model_labels(rows)
    panels = []
    for n in names:
        meta = SCORE_METADATA[n]
        ranked = sort_rows(rows, n, suites)
        panel_rows = []
        for r in ranked:
            e = headline_entry(r.latest, n, suites)
            if e is None:
                continue
            ci = e.get("ci") if isinstance(e.get("ci"), Mapping) else {}
            label = labels[r.key] + (" (demo)" if r.latest.demo else "")
            panel_rows.append({"label": label, "value": rounded(e.get("value")) if e.get("defined") else None,
                               "low": ci.get("low"), "high": ci.get("high"), "muted": r.latest.demo})
        if panel_rows:
            panels.append({"title": f"{value_column(n)}  ({direction_text(n)})", "ideal": meta.ideal,
                           "bounds": (meta.min_value, meta.max_value), "rows": panel_rows})
    return panels


def compare_table(rows: Sequence[ModelRow], names: Sequence[str]) -> pd.DataFrame:
    """Scores side by side: one row per headline score, one column per model."""
    labels = model_labels(rows)
    labels = {r.key: labels[r.key] + row_tags(r.latest) for r in rows}  # who made the images, demo
    records = []
    for n in names:
        rec = {"Score": value_column(n)}
        for r in rows:
            e = headline_entry(r.latest, n)
            # the plots' words: "no interval" where there is none, or a zero-width one
            rec[labels[r.key]] = text.value_text(e, digits=3) if e else "not scored"
        records.append(rec)
    return pd.DataFrame(records, columns=["Score"] + [labels[r.key] for r in rows])


# --------------------------------------------------------------------------- detail view


DETAIL_COLUMNS = ["Suite", "Score", "Subset", "Estimator", "Value [CI]", "n", "Better", "Notes"]
DETAIL_WIDTHS = ["150px", "170px", "150px", "120px", "200px", "56px", "64px", "70px"]


def scores_table(sub: Submission) -> tuple[pd.DataFrame, list[str]]:
    """Every score entry of ``sub`` in one table (suites in file order) and its notes: each
    distinct reason / interval note / long subset once, referred to as [n] in the Notes column."""
    shown = {id(headline_entry(sub, n)) for n in headline_names([sub])}
    notes: list[str] = []

    def ref(note: str) -> str:
        if note not in notes:
            notes.append(note)
        return f"[{notes.index(note) + 1}]"

    order = [str(s.get("name")) for s in sub.doc.get("suites", [])]
    entries = sorted(enumerate(sub.scores), key=lambda ie: (order.index(str(ie[1].get("suite")))
                                                          if str(ie[1].get("suite")) in order else len(order), ie[0]))
    records = []
    for _, e in entries:
        marks = []
        if not e.get("defined") and e.get("reason"):
            marks.append(ref(f"undefined: {e['reason']}"))
        if e.get("ci_note"):
            marks.append(ref(f"interval: {e['ci_note']}"))
        subset = str(e.get("subset") or "")
        if len(subset) > 40:
            marks.append(ref(f"subset: {subset}"))
            subset = subset[:39] + "…"
        est = e.get("estimator") or e.get("annotator") or ""
        records.append({
            "Suite": str(e.get("suite")), "Score": str(e.get("display_name") or e.get("name")) +
            (" *" if id(e) in shown else ""), "Subset": subset, "Estimator": text.short_estimator(est, 20),
            "Value [CI]": text.value_text(e), "n": int(e.get("n") or 0), "Better": direction_mark(str(e.get("name")))
            if e.get("name") in SCORE_METADATA else "", "Notes": " ".join(marks)})
    return pd.DataFrame(records, columns=DETAIL_COLUMNS), notes


def suites_status_table(sub: Submission) -> pd.DataFrame:
    rows = []
    for st in sub.doc.get("suites", []):
        excluded = ", ".join(f"{k}: {v}" for k, v in (st.get("excluded") or {}).items())
        rows.append({"Suite": str(st.get("name")), "Status": str(st.get("status")),
                     "Reason": str(st.get("reason") or ""), "Images": int(st.get("n_images") or 0),
                     "Scored images": int(st.get("n_scored_images") or 0), "Excluded": excluded})
    return pd.DataFrame(rows, columns=["Suite", "Status", "Reason", "Images", "Scored images", "Excluded"])


def notes_markdown(notes: Sequence[str]) -> str:
    """The detail table's notes as a numbered list (results text: escaped)."""
    return "\n".join(f"{i}. {md_escape(n)}" for i, n in enumerate(notes, 1))


def detail_markdown(row: ModelRow) -> str:
    """The detail page's header: provenance, settings, notes (all results text escaped)."""
    s = row.latest
    doc = s.doc
    lines = []
    if s.demo:
        lines.append(f"> **DEMO**: {md_escape(doc.get('warning') or 'submission marked demo')}")
        lines.append("")
    lines.append(f"### {md_escape(s.model_id)}")
    pkg = doc.get("package") or {}
    hw = doc.get("hardware") or {}
    who = evaluated_by(s)
    facts = [
        ("Revision", s.revision or "not recorded"), ("Spec", s.model.get("spec") or ""), ("Family", s.family),
        ("Created", doc.get("created")), ("Package", f"{pkg.get('name')} {pkg.get('version')}"),
        ("Hardware", " / ".join(str(x) for x in (hw.get("device"), hw.get("gpu"), hw.get("torch")) if x)),
        ("Evaluated by", who or "the submitter (self-reported)"), ("Images", images_text(s)),
        *([("Left out of every score", left_out)]
          if (left_out := text.excluded_text(text.excluded_counts(doc.get("run")))) else []),
        (f"Suites scored ({len(s.suites)})", ", ".join(s.suites) or "none"), ("File", s.source),
    ]
    for key, ref in s.references.items():
        task_input = input_of_results_key(key)
        facts.append((task_input.title, task_input.detail_text(ref)))
    if not s.references and any(SCORE_METADATA[e["name"]].paper in REFERENCED_PAPERS for e in s.scores
                                if e.get("name") in SCORE_METADATA):
        facts += [(task_input.title, task_input.detail_text(None)) for task_input in declared_inputs()]
    sub = s.submission
    if sub.get("submitted_at"):
        facts.append(("Submitted", sub["submitted_at"]))
    lines += [f"- **{k}**: {md_escape(v)}" for k, v in facts]
    if s.images_dataset:
        lines.append(f"- **Images**: [{s.images_dataset}]({HUB_DATASETS}{s.images_dataset})")
    elif sub.get("images_dataset"):
        lines.append(f"- **Images**: {md_escape(sub['images_dataset'])} (not a valid dataset id, no link)")
    settings = doc.get("settings") if isinstance(doc.get("settings"), Mapping) else {}
    keys = ("pipeline", "num_inference_steps", "guidance_scale", "height", "width", "dtype", "scheduler")
    shown = [f"{k}={settings[k]}" for k in keys if k in settings]
    if shown:
        lines.append(f"- **Settings**: {md_escape(', '.join(shown))}")
    if row.older:
        lines.append("- **Conflicting files** (same model, revision, probes and references; not shown): "
                     + md_escape(", ".join(f"{o.doc.get('created')} ({o.source}: {hidden_because(o, row.latest)})"
                                           for o in row.older)))
    notes = [n for n in doc.get("notes", []) if n != doc.get("warning")]
    if notes:
        lines += ["", "**Notes**", ""] + [f"- {md_escape(n)}" for n in notes]
    return "\n".join(lines)


def warnings_markdown(board: Board) -> str:
    """The visible warning block: folder errors, then each skipped file and its first problem."""
    lines = [f"- {md_escape(e)}" for e in board.errors]
    for sk in board.skipped:
        more = f" (and {sk.n_problems - 1} more)" if sk.n_problems > 1 else ""
        lines.append(f"- **{md_escape(sk.source)}** skipped: {md_escape(sk.problem)}{more}")
    conflicts = board.conflicts
    for other, shown in conflicts:
        lines.append(f"- **{md_escape(other.source)}** not shown: {md_escape(shown.source)} holds the row of "
                     f"{md_escape(row_label(model_rows([shown])[0]))} (same model, revision, probes and "
                     "references): "
                     f"{hidden_because(other, shown)}. "
                     "A replacement goes through a reviewed pull request that deletes the old file.")
    if not lines:
        return ""
    parts = [f"{len(board.skipped)} invalid results file(s) skipped"] if board.skipped else []
    parts += [f"{len(conflicts)} conflicting file(s) not shown"] if conflicts else []
    head = f"**Warning: {' and '.join(parts)}**" if parts else "**Warning**"
    return head + "\n\n" + "\n".join(lines)


def legend_markdown(names: Sequence[str]) -> str:
    """What the columns mean (from the metadata: trusted text)."""
    parts = [f"{md_escape(value_column(n))}: {direction_text(n)}" for n in names]
    return ("Each cell: value \\[95 % bootstrap interval\\]; *undefined*: the score cannot be computed (the reason "
            "is in the model's details); *no CI*: none computed; *zero-width CI*: every resample gave the same "
            "value (too few images, or all labelled alike). ↓ lower is better, ↑ higher is better, →x closest to x "
            "is better; a column's ⋮ menu sorts by the values. When a score has several entries (estimators, "
            "encoders) the cell shows one: human labels, then CLS, then VQA, then others, raw CLIP cosines (C, CC) "
            "last; all are in the details. Hover the suite count for the list. "
            + "; ".join(parts) + ".")
