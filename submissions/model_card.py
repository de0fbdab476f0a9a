"""The headline scores of an audit as ``model-index`` results on the audited model's card.

The Hub shows evaluation results from the ``model-index`` block of a model card's YAML
metadata. :func:`card_with_results` adds one result per headline score (the entry the
leaderboard shows: :func:`benchmark.present.text.entry_rank`) with
``huggingface_hub``'s card classes (``ModelCard``, ``EvalResult``): dataset = the probe
dataset (its Hub id, the suite as config, the ``test`` split, its revision); metric = the
score (name, display name, value, estimator as config); source = the results file on the
leaderboard's results dataset. A result already on the card for the same task, dataset,
metric and estimator from this benchmark gets the new value and source; every other result
and all the card's text stay.

Only real audits of Hub models on a published probe set qualify (:func:`card_problems`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard

from benchmark.hub.access import hub_errors
from benchmark.scores.metadata import SCORE_METADATA
from benchmark.present.text import entry_rank
from benchmark.contract.model_specs import hub_id_problem
from submissions.validate import is_demo, model_id_kind, one_line

TASK_TYPE = "text-to-image"
TASK_NAME = "Social bias audit (t2i-bias-benchmark)"
PROBE_SPLIT = "test"  # benchmark.probes.dataset.SPLIT: the probe datasets have one split
SOURCE_NAME = "t2i-bias-benchmark leaderboard"
CARD_FILE = "README.md"


def published_probes(doc: Mapping) -> tuple[str, str] | None:
    """(Hub dataset id, revision) of the results' probe set when it is a published one, else None."""
    probes = doc.get("probes")
    if not isinstance(probes, Mapping):
        return None
    source, revision = probes.get("source"), probes.get("revision")
    if not (isinstance(source, str) and "/" in source and hub_id_problem(source) is None):
        return None
    if not (isinstance(revision, str) and revision.strip()):
        return None
    return source, revision


def headline_entries(doc: Mapping) -> list[dict]:
    """The defined entry the leaderboard shows for each headline score, in metadata order."""
    scores = [e for e in doc.get("scores") or [] if isinstance(e, Mapping)]
    out = []
    for name, meta in SCORE_METADATA.items():
        if not meta.headline:
            continue
        cands = [(entry_rank(e, i), e) for i, e in enumerate(scores) if e.get("name") == name]
        if cands:
            best = min(cands, key=lambda c: c[0])[1]
            if best.get("defined") and best.get("value") is not None:
                out.append(dict(best))
    return out


def card_problems(doc: Mapping) -> list[str]:
    """Why ``doc``'s scores cannot go on a model card (one line each; empty: they can)."""
    problems = []
    if is_demo(doc):
        problems.append("model card: a demo run (built-in tiny random-weight model or annotators) has meaningless "
                        "scores: they never go on a model card")
    model = doc.get("model") if isinstance(doc.get("model"), Mapping) else {}
    model_id = str(model.get("id") or "")
    if not is_demo(doc) and model_id_kind(model_id) != "hub":
        problems.append(f"model card: {one_line(model_id)} is not a Hub model: it has no model card to update")
    if published_probes(doc) is None:
        problems.append("model card: not a published probe set: the results carry no `probes` block naming a Hub "
                        "probe dataset (ORG/NAME) and its revision")
    if not headline_entries(doc):
        problems.append("model card: no defined headline score to report")
    return problems


def eval_results(doc: Mapping, source_url: str) -> list[EvalResult]:
    """One ``EvalResult`` per headline score of ``doc`` (see the module docstring)."""
    dataset, revision = published_probes(doc) or (None, None)
    if dataset is None:
        raise ValueError("not a published probe set")
    return [
        EvalResult(
            task_type=TASK_TYPE, task_name=TASK_NAME,
            dataset_type=dataset, dataset_name=f"t2i-bias-benchmark probes: {entry['suite']}",
            dataset_config=str(entry["suite"]), dataset_split=PROBE_SPLIT, dataset_revision=revision,
            metric_type=str(entry["name"]), metric_name=SCORE_METADATA[entry["name"]].display_name,
            metric_value=float(entry["value"]), metric_config=entry.get("estimator") or None,
            source_name=SOURCE_NAME, source_url=source_url,
        )
        for entry in headline_entries(doc)
    ]


def _card(text: str) -> ModelCard:
    # A card without a YAML block is valid (huggingface_hub only logs that it has none).
    logger = logging.getLogger("huggingface_hub.repocard")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return ModelCard(text)
    finally:
        logger.setLevel(level)


def _measures(result: EvalResult) -> tuple:
    """What a result measures: the same task, probe set, score and estimator from this
    benchmark (value and source apart) is the same measurement, updated in place."""
    return (result.task_type, result.dataset_type, result.dataset_config, result.dataset_split,
            result.dataset_revision, result.metric_type, result.metric_config, result.source_name)


def card_with_results(before: str, doc: Mapping, source_url: str) -> str:
    """The text of the model card ``before`` (README.md, possibly empty) with ``doc``'s
    headline scores merged into its ``model-index``."""
    card = _card(before)
    new = eval_results(doc, source_url)
    results = list(card.data.eval_results or [])
    for result in new:
        same = [i for i, old in enumerate(results) if _measures(old) == _measures(result)]
        if same:
            for i in same:
                results[i] = result
        else:
            results.append(result)
    card.data.eval_results = results
    if not card.data.model_name:
        card.data.model_name = str(doc["model"]["id"])
    text = str(card)
    return text if text.endswith("\n") else text + "\n"


def load_card_text(model_id: str, *, card_file: str | Path | None = None, token: str | None = None) -> str:
    """The current README.md of ``model_id``, byte for byte: from ``card_file`` when given
    (offline), else downloaded from the Hub (``hf_hub_download``, as ``ModelCard.load``
    does, but without re-serialising the YAML, so that the diff shows every change); ""
    when the model has no card yet."""
    if card_file is not None:
        path = Path(card_file)
        if not path.is_file():
            raise ValueError(f"--card-file: no such file {path}")
        return path.read_text(encoding="utf-8")
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    with hub_errors(model_id, action="read the model card of"):
        try:
            path = hf_hub_download(model_id, CARD_FILE, repo_type="model", token=token)
        except EntryNotFoundError:
            return ""
    return Path(path).read_text(encoding="utf-8")


def card_diff(before: str, after: str) -> str:
    """The unified diff of README.md, before -> after."""
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{CARD_FILE}", tofile=f"b/{CARD_FILE}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
