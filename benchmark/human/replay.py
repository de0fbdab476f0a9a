"""The answers of a run folder after replay: undo, the effective answers, who answered what.

Replay (:func:`read_answers`), per annotator in file order: ``answer`` and ``skip`` push
onto that annotator's stack; ``undo`` pops the annotator's latest remaining answer or
skip. An item's effective state is its latest remaining event, so a later answer
replaces an earlier one and undoing it brings the earlier one back.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from benchmark.contract.times import utc_iso_ms
from benchmark.human.answers_file import answers_path, event_records, locked_for_append, read_lines, write_line
from benchmark.human.events import EVENT_FIELDS, check_annotator, encode_event, parse_lines, validate_event

#: Columns of :func:`read_answers`.
ANSWER_COLUMNS = ["item_id", "probe_id", "suite", "question_type", "question_key", "answer", "annotator", "time",
                  "qualification"]


def replay_stacks(events: Iterable[dict]) -> dict[str, list[dict]]:
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


def effective_events(events: Iterable[dict]) -> dict[tuple[str, str], dict]:
    """(annotator, item_id) -> the latest remaining answer or skip."""
    out: dict[tuple[str, str], dict] = {}
    for annotator, stack in replay_stacks(events).items():
        for ev in stack:
            out[(annotator, ev["item_id"])] = ev
    return out


def undo_last(run_dir: str | Path, annotator: str, *, session: str = "") -> dict | None:
    """Append an ``undo`` for ``annotator``'s latest remaining answer or skip; returns the event it undoes.

    Reads and appends under one lock, so two tabs of the same annotator undoing at once
    undo two events, each named correctly. None (and nothing written) when there is nothing to undo.
    """
    annotator = check_annotator(annotator)
    with locked_for_append(run_dir) as fd:
        events, _ = parse_lines(answers_path(run_dir).read_bytes())
        stack = replay_stacks(events).get(annotator, [])
        if not stack:
            return None
        target = stack[-1]
        ev = validate_event({**{f: target[f] for f in EVENT_FIELDS}, "event": "undo", "answer": None,
                             "time": utc_iso_ms(), "session": session})
        write_line(fd, encode_event(ev))
        return target


def read_answers(run_dir: str | Path, include_qualification: bool = False, *,
                 items: Iterable[str] | None = None) -> pd.DataFrame:
    """Effective answers after replay: one row per (annotator, item) answered (skips give no row).

    ``items``: the item ids that exist (e.g. :func:`benchmark.human.items.run_item_ids`); events about any other
    item, qualification items aside, are skipped before the replay and counted as
    ``"unknown item"`` in ``attrs["skipped_lines"]`` with the malformed lines.
    """
    events, skipped = read_lines(answers_path(run_dir))
    if items is not None:
        known = set(items)
        kept = [ev for ev in events if ev["qualification"] or ev["item_id"] in known]
        if len(kept) < len(events):
            skipped["unknown item"] = len(events) - len(kept)
        events = kept
    rows = [{c: ev[c] for c in ANSWER_COLUMNS} for ev in effective_events(events).values()
            if ev["event"] == "answer" and (include_qualification or not ev["qualification"])]
    df = pd.DataFrame(rows, columns=ANSWER_COLUMNS)
    if len(df):
        df = df.sort_values(["annotator", "time", "item_id"], kind="stable").reset_index(drop=True)
    df.attrs["skipped_lines"] = skipped
    return df


def done_item_ids(run_dir: str | Path, annotator: str) -> set[str]:
    """Items ``annotator`` has answered or skipped (after undos)."""
    annotator = check_annotator(annotator)
    return {item for (who, item) in effective_events(event_records(run_dir)) if who == annotator}


def annotators(run_dir: str | Path) -> list[str]:
    """Everyone with at least one event, sorted."""
    return sorted({ev["annotator"] for ev in event_records(run_dir)})
