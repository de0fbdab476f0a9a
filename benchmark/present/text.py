"""Text for people: the one Markdown / HTML escaper of the project, and the one way a score
entry is shown ("0.12 [0.08, 0.16]", its direction, a short estimator name, which entry
stands for a score name), shared by the report, the leaderboard and the terminal.

Every string that comes from a run or a results file (model names, notes, annotator
names, reasons) is untrusted: it goes through :func:`html_escape` into HTML and through
:func:`md_escape` into Markdown, never in raw.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from markupsafe import escape as _markup_escape

from benchmark import papers
from benchmark.contract.withheld import REASONS as WITHHELD_REASONS

# Characters that start Markdown markup anywhere in a line (CommonMark + GFM tables,
# strikethrough and the $ of math renderers), and block markers that count only at the
# start of a line and before a space (a heading, a list item) or as a whole line (a rule).
_MD_INLINE = re.compile(r"([\\`*_\[\]|~$])")
_MD_BLOCK_START = re.compile(r"^(\s*)(#{1,6}|[-+]|\d{1,9}[.)])(?=\s|$)")
_MD_RULE = re.compile(r"^(\s*)-(\s*-){2,}\s*$")


def html_escape(value: Any) -> str:
    """``value`` as HTML text: ``& < > " '`` as entities (the escaper Jinja's autoescape uses too)."""
    return str(_markup_escape(_plain(value)))


def md_escape(value: Any) -> str:
    """``value`` as Markdown text that renders literally on one line: raw HTML neutralised
    (``& < >`` as entities), markup characters backslash-escaped, newlines as spaces (so it is
    also safe inside a table cell)."""
    text = _plain(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"\s*[\r\n]+\s*", " ", text)
    text = _MD_INLINE.sub(r"\\\1", text)
    text = _MD_RULE.sub(lambda m: m.group(1) + "\\" + m.group(0)[len(m.group(1)):], text)
    # the backslash goes before the punctuation ("1\\." not "\\1."): only punctuation can be escaped
    return _MD_BLOCK_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], text)


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str = "", pad: bool = False) -> str:
    """A GFM table of ``headers`` and ``rows`` of cell text (escaped by the caller, e.g. with
    :func:`md_escape`): the one Markdown table writer of the project. ``align``: a letter per
    column, ``r`` right-aligns it (``---:``), anything else (or none) leaves it left-aligned;
    ``pad``: cells padded to their column's width, for a table read as plain text (a terminal,
    a benchmark's log)."""
    rows = [list(row) for row in rows]
    right = [align[i:i + 1] == "r" for i in range(len(headers))]
    widths = ([max(3, len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)] if pad
              else [0] * len(headers))

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)) + " |"

    if pad:  # the rule fills each cell, spaces included, as the rows do
        rule = "|" + "|".join("-" * (w + 2 - r) + ":" * r for w, r in zip(widths, right)) + "|"
    else:
        rule = "| " + " | ".join("---" + ":" * r for r in right) + " |"
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def better_text(meta: Any) -> str:
    """Which way a score (its metadata) is better: ``lower``, ``higher``, ``near 0`` or ``-``."""
    return {True: "lower", False: "higher"}.get(meta.lower_is_better,
                                                f"near {meta.ideal:g}" if meta.ideal is not None else "-")


def range_text(meta: Any) -> str:
    """A score's range (its metadata), e.g. ``[0, 1]``, ``[0, inf]``."""
    return f"[{meta.min_value:g}, {meta.max_value:g}]"


def frame_table(frame: Any, columns: Sequence[str] | None = None, cell: Callable[[Any], str] = str) -> str:
    """:func:`markdown_table` of a DataFrame's ``columns`` (those it has; all by default), each
    value written by ``cell`` (which escapes it when the text is untrusted)."""
    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    return markdown_table(cols, ([cell(v) for v in row] for row in frame[cols].itertuples(index=False)))


def _plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return fmt_number(value)
    return str(value)


# --------------------------------------------------------------------------- numbers and scores


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def fmt_number(value: Any, digits: int = 4) -> str:
    """``digits`` significant digits; "n/a" for None, NaN and infinity."""
    return f"{value:.{digits}g}" if is_number(value) else "n/a"


NO_INTERVAL = "no interval"
# low == high: every bootstrap resample gave the same value (few images, or all labelled alike).
ZERO_WIDTH = "no interval: resamples all equal"


def interval_text(entry: Mapping, digits: int = 4) -> str:
    """"[low, high]", or why there is no real interval: none computed, or a zero-width one
    (low == high: every bootstrap resample gave the same value, as with a handful of images)."""
    ci = entry.get("ci")
    if not isinstance(ci, Mapping) or not is_number(ci.get("low")) or not is_number(ci.get("high")):
        return NO_INTERVAL
    if ci["low"] == ci["high"]:
        return ZERO_WIDTH
    return f"[{fmt_number(ci['low'], digits)}, {fmt_number(ci['high'], digits)}]"


def has_interval(entry: Mapping) -> bool:
    return interval_text(entry).startswith("[")


def value_text(entry: Mapping | None, digits: int = 4) -> str:
    """One cell: "value [low, high]", "value (no interval ...)", "undefined", or "" (no entry)."""
    if entry is None:
        return ""
    if not entry.get("defined") or not is_number(entry.get("value")):
        return "undefined"
    ci = interval_text(entry, digits)
    value = fmt_number(entry["value"], digits)
    return f"{value} {ci}" if ci.startswith("[") else f"{value} ({ci})"


def short_value_text(entry: Mapping | None, digits: int = 3) -> str:
    """:func:`value_text` for narrow places (terminal): "0.12 [0.08, 0.16]", "0.12 (no CI)",
    "0.12 (zero-width CI)", "undefined"."""
    text = value_text(entry, digits)
    return text.replace(f"({ZERO_WIDTH})", "(zero-width CI)").replace(f"({NO_INTERVAL})", "(no CI)")


def direction_mark(entry: Mapping) -> str:
    """↓ lower is better, ↑ higher is better, →x closest to x is better (from the entry or metadata)."""
    if entry.get("lower_is_better") is True:
        return "↓"
    if entry.get("lower_is_better") is False:
        return "↑"
    return f"→{entry['ideal']:g}" if is_number(entry.get("ideal")) else ""


def direction_text(entry: Mapping) -> str:
    if entry.get("lower_is_better") is True:
        return "lower is better"
    if entry.get("lower_is_better") is False:
        return "higher is better"
    return f"closer to {entry['ideal']:g} is better" if is_number(entry.get("ideal")) else "no better direction"


def short_estimator(value: Any, width: int = 24) -> str:
    """An estimator or annotator name short enough for a table cell: "mean over 6 encoders: ..."
    becomes "mean over 6 encoders"; a Hub id keeps its last part; longer names are cut with "…"."""
    if not value:
        return ""
    text = str(value)
    if text.startswith("mean over"):
        text = text.split(":", 1)[0]
    elif "/" in text and " " not in text:
        text = text.rsplit("/", 1)[-1]
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- which entry stands for a score

# A score name can have several entries (estimators, encoders, subsets); one-line views (the
# report's summary, a leaderboard column) show one, best first: human labels, the GEP paper's
# classifier, VQA, anything else (e.g. MCAS averaged over encoders), then raw CLIP cosines
# (C / CC: another scale, comparable only within one estimator).
ESTIMATOR_RANK = {"human": 0, "CLS": 1, "vqa": 2, "C": 4, "CC": 5}
OTHER_ESTIMATOR_RANK = 3


def entry_rank(entry: Mapping, index: int = 0) -> tuple:
    """Sort key of the entries of one score name: the first is the headline entry. Main
    aggregation before per-encoder extras (subset "one encoder"), then estimator
    (:data:`ESTIMATOR_RANK`), then entries without a subset, defined before undefined, more
    images first, file order (``index``)."""
    est = entry.get("estimator")
    return (entry.get("subset") == "one encoder", ESTIMATOR_RANK.get(est, OTHER_ESTIMATOR_RANK),
            entry.get("subset") is not None, not entry.get("defined"), -int(entry.get("n") or 0), index)


def headline_entries(scores: Sequence[Mapping]) -> list[Mapping]:
    """One entry per headline score name (``headline`` true), in the order names first appear."""
    best: dict[str, tuple] = {}
    for i, e in enumerate(scores):
        if not e.get("headline"):
            continue
        name = str(e.get("name"))
        rank = entry_rank(e, i)
        if name not in best or rank < best[name][0]:
            best[name] = (rank, e)
    return [e for _, e in best.values()]


def paper_label(key: Any) -> str:
    """The short name the project cites a paper by (``benchmark.papers`` key -> ``"GEP"``)."""
    return papers.paper_label(str(key))


__all__ = ["html_escape", "md_escape", "fmt_number", "is_number", "interval_text", "has_interval", "value_text",
           "short_value_text", "direction_mark", "direction_text", "short_estimator", "paper_label",
           "NO_INTERVAL", "ZERO_WIDTH", "ESTIMATOR_RANK", "OTHER_ESTIMATOR_RANK", "entry_rank", "headline_entries",
           "EXCLUDED_WHY", "excluded_why", "excluded_counts", "excluded_text", "markdown_table", "frame_table",
           "better_text", "range_text"]


# --------------------------------------------------------------------------- images left out

#: Why an image of a run was left out of every score, in the one wording the terminal, the
#: report, the results' notes and the leaderboard share. ``refused``: an image API's
#: content-policy refusal (benchmark.contract.withheld); ``missing``: no file for the probe in a
#: folder of ``--images --allow-missing``; ``too large`` / ``tiny`` / ``transparent`` / ``not
#: colour``: an image the API returned that the benchmark withholds itself (its rule for images
#: from elsewhere, benchmark.contract.image_provenance); ``nsfw``: flagged by a loaded pipeline's
#: safety checker.
EXCLUDED_WHY = {
    "refused": "refused by the image API (content policy)",
    "missing": "not supplied (--allow-missing)",
    "too large": "withheld by the benchmark (larger than the size asked, not decoded)",
    "tiny": "withheld by the benchmark (under 32 pixels a side)",
    "transparent": "withheld by the benchmark (transparent)",
    "not colour": "withheld by the benchmark (not a colour image)",
    "nsfw": "flagged by the safety checker",
}


def count_text(n: int, one: str, many: str | None = None) -> str:
    """``1 row``, ``2 rows``, ``1,204 batches`` (``many``: the plural when it is not ``one`` + s)."""
    return f"{int(n):,} {one if int(n) == 1 else (many or one + 's')}"


def excluded_why(reason: Any) -> str:
    """Why an image was left out (``refused`` / ``missing`` / ``nsfw``), in words."""
    return EXCLUDED_WHY.get(str(reason), str(reason))


def excluded_counts(run: Mapping | None) -> dict[str, int]:
    """reason -> images left out of every score, from results.json ``run``: its ``n_withheld``
    (refused / missing / withheld by the benchmark, by reason) and ``n_nsfw_excluded``
    (safety-checker flags only)."""
    run = run if isinstance(run, Mapping) else {}
    withheld = run.get("n_withheld") if isinstance(run.get("n_withheld"), Mapping) else {}
    counts = {r: int(withheld.get(r) or 0) for r in WITHHELD_REASONS}
    counts["nsfw"] = int(run.get("n_nsfw_excluded") or 0)
    return {r: n for r, n in counts.items() if n}


def excluded_text(counts: Mapping[str, int]) -> str:
    """``1 image refused by the image API (content policy), 2 images flagged by the safety
    checker`` ("" when none)."""
    return ", ".join(f"{int(n):,} image{'' if int(n) == 1 else 's'} {excluded_why(r)}"
                     for r, n in counts.items() if int(n))


#: settings shown after the call settings that have a source (what ran them, and how)
SETTINGS_AFTER_SOURCED = ("pipeline", "scheduler", "dtype")


def settings_items(settings: Mapping | None, sources: Mapping | None = None) -> list[str]:
    """A run's generation settings as people read them, one ``key=value (source)`` item each:
    the call settings with the source they came from (``--set``, a model card row, a base
    model's card, the pipeline's default; results.json ``setting_sources``) first, then
    classifier-free guidance as it ran, then the pipeline, scheduler and dtype. The report, the
    leaderboard's model details and the plan show the same items."""
    settings = settings if isinstance(settings, Mapping) else {}
    sources = sources if isinstance(sources, Mapping) else {}
    out = [f"{k}={_plain(settings[k]) if k in settings else 'pipeline default'} ({sources[k]})" for k in sources]
    guidance = settings.get("guidance")
    if isinstance(guidance, Mapping) and "classifier_free" in guidance:
        why = f": {guidance['off_because']}" if guidance.get("off_because") else ""
        out.append(f"classifier-free guidance {'on' if guidance['classifier_free'] else 'off'}{why}")
    out += [f"{k}={_plain(settings[k])}" for k in SETTINGS_AFTER_SOURCED if k in settings and k not in sources]
    return out


def adapter_label(record: Mapping) -> str:
    """What an adapter record (results.json ``model.adapters[i]``) is called: the name its card or
    Hub repo gives it (``name``, benchmark.models.lora_card), else its id or path."""
    return str(record.get("name") or record.get("id") or record.get("path") or "?")


def adapters_text(adapters: Sequence[Mapping] | None) -> str:
    """The LoRAs and component checkpoints of a model, one phrase each: what, its name, scale and
    sha256 (short), and the text-encoder layers a LoRA applied without (``--lora-unet-only``); ""
    for a base model."""
    out = []
    for a in adapters or ():
        what = "LoRA" if a.get("kind") == "lora" else f"{a.get('component') or a.get('kind')} checkpoint"
        scale = f" at scale {a['scale']:g}" if isinstance(a.get("scale"), (int, float)) else ""
        skipped = a.get("skipped") if isinstance(a.get("skipped"), Mapping) else {}
        left = (", UNet / transformer layers only: skipped " + ", ".join(f"{n} {c} layers" for c, n in skipped.items())
                if skipped else "")
        out.append(f"{what} {adapter_label(a)}{scale} (sha256 {str(a.get('sha256'))[:12]}{left})")
    return "; ".join(out)


def checkpoint_text(record: Mapping | None) -> str:
    """A single-file checkpoint in one phrase: format, layout, sha256 (short) and the base whose
    configs read it; "" when the model is not one."""
    if not isinstance(record, Mapping):
        return ""
    layout = {"pipeline": "a whole pipeline", "denoiser": f"the {record.get('component') or 'denoiser'} alone"}
    return (f"single {record.get('format')} file, {layout.get(str(record.get('layout')), record.get('layout'))} "
            f"(sha256 {str(record.get('sha256'))[:12]}), read with the configs of {record.get('base')} "
            f"({record.get('base_from') or 'base'})")


def quantization_text(record: Mapping | None) -> str:
    """Quantized weights in one phrase: backend and scheme, what it is, the components; "" for none."""
    if not isinstance(record, Mapping):
        return ""
    components = ", ".join(str(c) for c in record.get("components") or ())
    version = f" {record['library_version']}" if record.get("library_version") else ""
    what = f": {record['what']}" if record.get("what") else ""
    return f"{record.get('backend')}{version} {record.get('scheme')} on {components or 'the model'}{what}"
