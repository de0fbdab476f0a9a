"""Leaderboard data: results files -> validated submissions -> one row per model.

Pure functions (no Gradio): the app in ``app.py`` only lays these tables out. Every
string here comes from results files written by others, so nothing is turned into
HTML here except by :func:`md_escape`, which makes text safe inside Markdown.

Rules (also in ``docs/leaderboard.md``):

- Files: every ``*.json`` under the folder, recursively; inside a run folder (one with
  ``run_config.json``) only its ``results.json``. Hidden folders (``.cache`` of a Hub
  download) are left out. Each file is read with the package's one results reader
  (:func:`benchmark.results.load_results_file`: size, depth, big-integer, duplicate-key
  and NaN limits) and checked like ``t2ibench validate``; a file that fails is skipped and
  listed with its first problem, never raised.
- Each file is parsed and checked once: the result is cached by (path, size, mtime_ns),
  so "Reload results" reads only new or changed files.
- One row per model id + revision + probe set (``probes`` of the results, when present).
  When several valid files share that key the first accepted one keeps the row (the
  earliest ``created``, ties by path) and the others are listed as conflicts in the
  warnings, never shown: a newer file does not take over a row. Replacing a row's file is a
  reviewed pull request on the results dataset that deletes the old file.
- A headline column per ``SCORE_METADATA`` entry with ``headline=True`` that some file
  has. When a name has several entries (estimators, encoders, subsets) the column shows
  one, chosen by :func:`entry_rank`; all of them are in the detail view.
- Default order: best first by the first headline column, by
  :meth:`ScoreMetadata.badness` (so "closest to 0" scores rank by distance to 0); undefined
  values after, demo rows (built-in tiny models) last.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from benchmark.results import MAX_RESULTS_BYTES, RESULTS_FILE, UnreadableResults, load_results_file
from benchmark.run_folder import CONFIG_FILE
from benchmark.scores.metadata import SCORE_METADATA
from submissions.validate import check_results, is_demo

#: files larger than this are refused from their size, unread (a results document is tens of kB)
MAX_FILE_BYTES = MAX_RESULTS_BYTES
HUB_DATASETS = "https://huggingface.co/datasets/"
# A Hub repo id: safe to put in a URL and a Markdown link as is.
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
DEMO_BADGE = "demo"

# Headline entry choice, best first: human labels, the GEP paper's classifier, VQA,
# anything else (e.g. MCAS averaged over encoders), then raw CLIP cosines (C / CC:
# another scale, comparable only within one estimator).
ESTIMATOR_RANK = {"human": 0, "CLS": 1, "vqa": 2, "C": 4, "CC": 5}
OTHER_ESTIMATOR_RANK = 3


# --------------------------------------------------------------------------- validation


def check_document(doc: Any) -> list[str]:
    """Problems of one results document (one line each; [] when it can be shown): the checks
    of ``t2ibench validate`` with built-in tiny models allowed (shown as demo)."""
    return list(check_results(doc, allow_demo=True))


# --------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class Submission:
    """One valid results file."""

    doc: dict
    source: str  # path relative to the folder read, for display
    path: Path
    run_dir: Path | None  # the run folder when the file is a run's results.json

    @property
    def model(self) -> Mapping:
        return self.doc["model"]

    @property
    def model_id(self) -> str:
        return str(self.model["id"])

    @property
    def revision(self) -> str | None:
        return self.model.get("revision")

    @property
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

    @property
    def key(self) -> str:
        """Row key: model id, revision and probe set ('@' and '#' are in no Hub id, so it is unambiguous)."""
        return f"{self.model_id}@{self.revision or ''}" + (f"#{self.probes}" if self.probes else "")

    @property
    def created(self) -> _dt.datetime:
        return parse_time(self.doc.get("created"))

    @property
    def submission(self) -> Mapping:
        sub = self.doc.get("submission")
        return sub if isinstance(sub, Mapping) else {}

    @property
    def demo(self) -> bool:
        """Built-in tiny random-weight model (or a submission marked demo): meaningless scores."""
        return is_demo(self.doc) or bool(self.submission.get("demo"))

    @property
    def family(self) -> str:
        settings = self.doc.get("settings") if isinstance(self.doc.get("settings"), Mapping) else {}
        return str(settings.get("family") or settings.get("kind") or "unknown")

    @property
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
        return repo if isinstance(repo, str) and REPO_ID.match(repo) else None


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
        t = _dt.datetime.fromisoformat(str(value))
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


def _read_and_check(path: Path, signature: tuple[int, int]) -> _Parsed:
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
        cached = _read_and_check(key, signature)
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


def download_results(repo: str, revision: str | None = None) -> Path:
    """A local copy of the JSON files of Hub results dataset ``repo``; ValueError (one line) when
    it cannot be had (offline, no connection, no such dataset)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled,
                                        RepositoryNotFoundError)

    if not REPO_ID.match(repo or ""):
        raise ValueError(f"--repo takes a Hub dataset id ORG/NAME, got {repo!r}")
    where = f"cannot read results dataset {repo}"
    try:
        return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=["*.json"]))
    except (OfflineModeIsEnabled, LocalEntryNotFoundError):
        raise ValueError(f"{where}: the Hub is offline (HF_HUB_OFFLINE) and no copy is cached; "
                         "use --results DIR with a local copy") from None
    except RepositoryNotFoundError:
        raise ValueError(f"{where}: no such dataset on the Hub (or it is private: run `hf auth login`)") from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise ValueError(f"{where}: the Hub answered HTTP {status}") from None
    except Exception as exc:
        from benchmark.hub import is_connection_error

        if is_connection_error(exc):
            raise ValueError(f"{where}: no connection to the Hugging Face Hub ({type(exc).__name__})") from None
        raise


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
    """Order of acceptance among files of one row key: earliest ``created``, then path."""
    return (sub.created, sub.source)


def model_rows(submissions: Iterable[Submission]) -> list[ModelRow]:
    """One row per model id + revision + probe set, held by its first accepted file
    (:func:`accepted_first`); the other files of that key are the row's conflicts."""
    groups: dict[str, list[Submission]] = {}
    for s in submissions:
        groups.setdefault(s.key, []).append(s)
    rows = []
    for subs in groups.values():
        subs = sorted(subs, key=accepted_first)
        rows.append(ModelRow(subs[0], tuple(subs[1:])))
    return sorted(rows, key=lambda r: (r.latest.model_id.lower(), r.key))


def entry_rank(entry: Mapping, index: int = 0) -> tuple:
    """Sort key of the entries of one score name: the first is the headline value.

    Main aggregation before per-encoder extras (subset "one encoder"), then estimator
    (:data:`ESTIMATOR_RANK`), then entries without a subset, defined before undefined,
    more images first, file order.
    """
    est = entry.get("estimator")
    return (entry.get("subset") == "one encoder", ESTIMATOR_RANK.get(est, OTHER_ESTIMATOR_RANK),
            entry.get("subset") is not None, not entry.get("defined"), -int(entry.get("n") or 0), index)


def headline_entry(sub: Submission, name: str, suites: Sequence[str] = ()) -> dict | None:
    """The entry shown in ``name``'s column for ``sub`` (None: no entry of that name)."""
    cands = [(entry_rank(e, i), e) for i, e in enumerate(sub.scores)
             if e.get("name") == name and (not suites or e.get("suite") in suites)]
    return min(cands, key=lambda c: c[0])[1] if cands else None


def headline_names(submissions: Iterable[Submission], suites: Sequence[str] = ()) -> list[str]:
    """Headline score names present in some submission (metadata order), within ``suites`` if given."""
    present = {e.get("name") for s in submissions for e in s.scores if not suites or e.get("suite") in suites}
    return [n for n, m in SCORE_METADATA.items() if m.headline and n in present]


def direction_mark(name: str) -> str:
    m = SCORE_METADATA[name]
    if m.lower_is_better is True:
        return "↓"
    if m.lower_is_better is False:
        return "↑"
    return f"→{m.ideal:g}" if m.ideal is not None else ""


def value_column(name: str) -> str:
    return f"{SCORE_METADATA[name].display_name} {direction_mark(name)}".strip()


def ci_column(name: str) -> str:
    return f"{SCORE_METADATA[name].display_name} CI"


def fmt(value: Any, digits: int = 4) -> str:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return f"{value:.{digits}g}"


def ci_text(entry: Mapping | None) -> str:
    """'[low, high] estimator', 'undefined', 'no CI' or '' (no entry)."""
    if entry is None:
        return ""
    if not entry.get("defined"):
        return "undefined"
    ci = entry.get("ci")
    est = short_estimator(entry.get("estimator"))
    text = f"[{fmt(ci.get('low'))}, {fmt(ci.get('high'))}]" if isinstance(ci, Mapping) else "no CI"
    return f"{text} {est}".strip()


def short_estimator(est: Any) -> str:
    if not est:
        return ""
    est = str(est)
    return est.split(":", 1)[0] if est.startswith("mean over") else est[:32]


def rounded(value: Any) -> float | None:
    """The numeric cell: 4 significant digits (display), None when undefined."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(f"{value:.4g}")


BASE_COLUMNS = ["Model", "Revision", "Badge", "Family", "Suites"]
TAIL_COLUMNS = ["Images", "Created"]


def column_widths(datatype: Sequence[str]) -> list[str]:
    """Pixel widths in the leaderboard's column order (model name wide, numbers narrow)."""
    base = ["240px", "100px", "70px", "80px", "200px"]
    widths = {"number": "110px", "str": "170px", "markdown": "200px"}
    tail = ["200px", "210px"]
    return base + [widths[t] for t in datatype[len(base):len(datatype) - len(tail)]] + tail


def filter_rows(rows: Iterable[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                search: str = "", show_demo: bool = True) -> list[ModelRow]:
    """Rows that scored every suite in ``suites``, of a family in ``families`` (empty: any),
    whose model id contains ``search`` (case-insensitive)."""
    needle = (search or "").strip().lower()
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

    def key(r: ModelRow):
        e = headline_entry(r.latest, name, suites)
        v = e.get("value") if e else None
        ok = isinstance(v, (int, float)) and math.isfinite(v)
        return (r.latest.demo, 0, meta.badness(float(v))) if ok else (r.latest.demo, 1, 0.0)

    return sorted(rows, key=key)


def leaderboard_table(rows: Sequence[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                      search: str = "", show_demo: bool = True, sort_by: str | None = None,
                      names: Sequence[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """The leaderboard frame and its Gradio datatypes (one per column).

    ``names`` are the headline columns (default: those present in ``rows``). Numeric
    columns hold the value (None when undefined); the CI column beside says "undefined".
    """
    names = list(names) if names is not None else headline_names([r.latest for r in rows], suites)
    if sort_by not in names:
        sort_by = names[0] if names else None
    kept = sort_rows(filter_rows(rows, suites=suites, families=families, search=search, show_demo=show_demo),
                     sort_by, suites)
    columns = BASE_COLUMNS + [c for n in names for c in (value_column(n), ci_column(n))] + TAIL_COLUMNS
    datatype = ["str"] * len(BASE_COLUMNS) + ["number", "str"] * len(names) + ["markdown", "str"]
    records = []
    for r in kept:
        s = r.latest
        rec: dict[str, Any] = {"Model": s.model_id, "Revision": s.revision or "", "Badge": DEMO_BADGE if s.demo else "",
                               "Family": s.family, "Suites": ", ".join(s.suites)}
        for n in names:
            e = headline_entry(s, n, suites)
            rec[value_column(n)] = rounded(e.get("value")) if e else None
            rec[ci_column(n)] = ci_text(e)
        # Only a validated repo id goes into the one Markdown column.
        rec["Images"] = f"[{s.images_dataset}]({HUB_DATASETS}{s.images_dataset})" if s.images_dataset else ""
        rec["Created"] = str(s.doc.get("created", ""))
        records.append(rec)
    frame = pd.DataFrame(records, columns=columns)
    for n in names:  # a column of all-None would otherwise be object-typed
        frame[value_column(n)] = pd.to_numeric(frame[value_column(n)], errors="coerce")
    return frame, datatype


def all_suites(rows: Iterable[ModelRow]) -> list[str]:
    return sorted({s for r in rows for s in r.latest.suites})


def all_families(rows: Iterable[ModelRow]) -> list[str]:
    return sorted({r.latest.family for r in rows})


def row_label(row: ModelRow) -> str:
    s = row.latest
    return f"{s.model_id} @ {s.revision or 'no revision'}" + (f" [{DEMO_BADGE}]" if s.demo else "")


# --------------------------------------------------------------------------- detail view


DETAIL_COLUMNS = ["Score", "Subset", "Estimator", "Annotator", "Value", "CI", "n", "Direction", "In table", "Notes"]
DETAIL_WIDTHS = ["160px", "140px", "100px", "170px", "90px", "140px", "60px", "150px", "80px", "320px"]


def direction_text(name: str) -> str:
    m = SCORE_METADATA.get(name)
    if m is None:
        return ""
    if m.lower_is_better is True:
        return "lower is better"
    if m.lower_is_better is False:
        return "higher is better"
    return f"closer to {m.ideal:g} is better" if m.ideal is not None else "no better direction"


def suite_tables(sub: Submission) -> dict[str, pd.DataFrame]:
    """Every score entry of ``sub``, one table per suite (file order of the suites)."""
    shown = {id(headline_entry(sub, n)) for n in headline_names([sub])}
    by_suite: dict[str, list[dict]] = {}
    for e in sub.scores:
        notes = "; ".join(str(x) for x in (e.get("reason"), e.get("ci_note")) if x)
        ci = e.get("ci")
        by_suite.setdefault(str(e.get("suite")), []).append({
            "Score": str(e.get("display_name") or e.get("name")), "Subset": str(e.get("subset") or ""),
            "Estimator": str(e.get("estimator") or ""), "Annotator": str(e.get("annotator") or ""),
            "Value": fmt(e.get("value")) if e.get("defined") else "undefined",
            "CI": f"[{fmt(ci.get('low'))}, {fmt(ci.get('high'))}]" if isinstance(ci, Mapping) else "",
            "n": int(e.get("n") or 0), "Direction": direction_text(str(e.get("name"))),
            "In table": "yes" if id(e) in shown else "", "Notes": notes,
        })
    order = [str(s.get("name")) for s in sub.doc.get("suites", [])]
    order += [s for s in by_suite if s not in order]
    return {s: pd.DataFrame(by_suite[s], columns=DETAIL_COLUMNS) for s in order if s in by_suite}


def suites_status_table(sub: Submission) -> pd.DataFrame:
    rows = []
    for st in sub.doc.get("suites", []):
        excluded = ", ".join(f"{k}: {v}" for k, v in (st.get("excluded") or {}).items())
        rows.append({"Suite": str(st.get("name")), "Status": str(st.get("status")),
                     "Reason": str(st.get("reason") or ""), "Images": int(st.get("n_images") or 0),
                     "Scored images": int(st.get("n_scored_images") or 0), "Excluded": excluded})
    return pd.DataFrame(rows, columns=["Suite", "Status", "Reason", "Images", "Scored images", "Excluded"])


def md_escape(value: Any) -> str:
    """Text that renders literally inside Markdown (HTML and markup characters escaped)."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")
    return re.sub(r"([\\`*_\[\]{}()#+\-.!|~])", r"\\\1", text)


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
    facts = [
        ("Revision", s.revision or "not recorded"), ("Spec", s.model.get("spec") or ""), ("Family", s.family),
        ("Created", doc.get("created")), ("Package", f"{pkg.get('name')} {pkg.get('version')}"),
        ("Hardware", " / ".join(str(x) for x in (hw.get("device"), hw.get("gpu"), hw.get("torch")) if x)),
        ("Suites scored", ", ".join(s.suites) or "none"), ("File", s.source),
    ]
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
        lines.append("- **Conflicting files** (same model, revision and probes; not shown): "
                     + md_escape(", ".join(f"{o.doc.get('created')} ({o.source})" for o in row.older)))
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
                     f"{md_escape(row_label(model_rows([shown])[0]))} (same model, revision and probes). "
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
    return ("↓ lower is better, ↑ higher is better, →x closest to x is better. "
            "The numeric column holds the value (blank when undefined), the CI column its bootstrap interval and "
            "estimator. When a score has several entries (estimators, encoders), the column shows one: "
            "human labels, then CLS, then VQA, then others, raw CLIP cosines (C, CC) last; all are in the "
            "model's detail view. Rows are ordered best first by the chosen score, demo rows last. "
            + "; ".join(parts))
