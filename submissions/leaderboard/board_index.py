"""The board as columns: :class:`BoardIndex` holds every valid results file of a board as one
row of an arrow table (the contents table's columns, :mod:`contents_schema`) and the flat
columns as a pandas frame (what the filters, the orders and the ranks read:
:mod:`board_table`); a file's :class:`~submissions.leaderboard.board_model.Submission` is made
on demand, for the rows a page shows, a picker lists or the detail view opens. :class:`Board`
is what a folder or a table gave: the index, the files skipped, the folder's errors.

Made from the contents table, nothing is parsed at start-up: the table is read in one read and
its flat columns become the frame; made from results documents (a folder without a table, the
tests), each document's cells are the same columns (:func:`contents_schema.cells`), so both
boards are read by one implementation. Rows: one per key, held by the first accepted file
(:func:`board_model.accepted_first`, asked of the few files that share a key); the other files
of a key are its conflicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from benchmark.contract.model_specs import model_id_kind
from submissions import provenance
from submissions.leaderboard import contents_schema as cs
from submissions.leaderboard.board_model import ModelRow, Skipped, Submission, accepted_first

#: the flat columns the frame holds besides the score columns
FRAME_COLUMNS = ("source", "key", "model_id", "revision", "probes", "demo", "family", "images", "evaluated_by",
                 "request_id", "created", "run_folder", "package_version", "human_checked", "checkpoint_sha256",
                 "quantization")
#: how a row's model was reached, from its id's form (:func:`benchmark.contract.model_specs.model_id_kind`; a
#: single file on the Hub is on the Hub)
ACCESS = {"hub": "hub", "hub_file": "hub", "local": "local", "python": "local", "api": "api", "images": "supplied",
          "builtin": "builtin"}
#: per score NAME present: these columns of it
SCORE_FRAME_PARTS = ("", "_low", "_high", "_suite")
#: per score NAME some row has corrected with people's labels: these columns of it
PEOPLE_FRAME_PARTS = ("_people", "_people_low", "_people_high")


def table_of(records: Sequence[Mapping[str, Any]]) -> pa.Table:
    """The rows ``records`` (cells as :func:`contents_schema.cells` makes them) as a table without
    the columns of scores none of them has."""
    return cs.drop_unused_scores(pa.Table.from_pylist(list(records), schema=cs.schema()))


def concat(tables: Iterable[pa.Table]) -> pa.Table:
    """Tables of contents rows one after the other (a score column missing in one is null there)."""
    tables = [t for t in tables if t is not None]
    if not tables:
        return table_of([])
    return cs.drop_unused_scores(pa.concat_tables(tables, promote_options="default"))


class BoardIndex:
    """The valid files of a board: ``table`` (arrow, every column), ``frame`` (pandas, the flat
    columns, one row per file, same order), ``names`` (the scores some file has), and the rows:
    ``keys`` (one per row key, in the board's natural order: model id, then key) and the files
    that hold them.

    ``made`` gives the documents already read (position in ``table`` -> submission: a board read
    file by file holds whole documents); the others are made from their row on demand, slim
    (:func:`contents_schema.slim_document`). ``finished`` (the requests queue's FINISHED
    requests) decides which files the maintainers' workers evaluated
    (:func:`submissions.provenance.provenance`): they hold their key before self-reported ones.
    """

    def __init__(self, table: pa.Table, *, root: Path | None = None, made: Mapping[int, Submission] | None = None,
                 finished: Mapping | None = None) -> None:
        self.table, self.root, self.finished = table, root, finished
        self._made = dict(made or {})
        self._subs: dict[int, Submission] = {}
        self.names = cs.present_scores(table)
        self.frame = self._frame()
        self.frame["evaluated"] = self._evaluated()
        holder = ~self.frame["key"].duplicated(keep=False)
        self._older: dict[str, list[int]] = {}
        for key, group in self.frame.index[~holder].groupby(self.frame["key"][~holder]).items():
            subs = self.submissions(group)  # few: files that share a key are conflicts
            ranked = sorted(zip(group, subs), key=lambda ps: accepted_first(ps[1]))
            holder.iat[ranked[0][0]] = True
            self._older[key] = [int(i) for i, _ in ranked[1:]]
        rows = self.frame[holder]
        rows = rows.assign(lower=rows["model_id"].str.lower()).sort_values(["lower", "key"], kind="stable")
        #: the file (position in ``table``) holding each row, in the board's natural order
        #: (:func:`board_model.model_rows`: model id, case-insensitive, then key)
        self.holders = rows.index.to_numpy()
        self.keys: list[str] = rows["key"].tolist()
        self.position = dict(zip(self.keys, self.holders.tolist()))

    @classmethod
    def of_submissions(cls, subs: Sequence[Submission], finished: Mapping | None = None) -> BoardIndex:
        """The index of documents already read (their cells worked out once here); ``finished``
        defaults to the documents' own (:attr:`Submission.finished`)."""
        if finished is None:
            finished = next((s.finished for s in subs if s.finished is not None), None)
        return cls(table_of([{**cs.cells(s), "source": s.source, "run_folder": s.run_dir is not None} for s in subs]),
                   made=dict(enumerate(subs)), finished=finished)

    def with_finished(self, finished: Mapping | None) -> BoardIndex:
        """The same files, evaluated against the queue's FINISHED requests ``finished``."""
        return BoardIndex(self.table, root=self.root, made=self._made, finished=finished)

    def _frame(self) -> pd.DataFrame:
        cols = [*FRAME_COLUMNS, *(f"{n}{p}" for n in self.names for p in SCORE_FRAME_PARTS),
                *(f"{n}{p}" for n in cs.present_people(self.table) for p in PEOPLE_FRAME_PARTS)]
        frame = self.table.select(cols).to_pandas()
        refs = self.table.column("references")
        fingerprints = np.full(len(frame), None, dtype=object)
        with_refs = np.flatnonzero(pc.list_value_length(refs).fill_null(0).to_numpy(zero_copy_only=False))
        for i, items in zip(with_refs, refs.take(pa.array(with_refs, type=pa.int64())).to_pylist()):
            fingerprints[i] = "+".join(str(r["fingerprint"]) for r in items)  # Submission.reference_fingerprint
        frame["reference"] = fingerprints
        frame["images_dataset"] = pc.struct_field(self.table.column("submission"), "images_dataset").to_pandas() \
            if len(frame) else []
        degenerate = self.table.column("degenerate_images")
        frame["n_degenerate"] = pc.struct_field(degenerate, "n_degenerate").to_pandas() if len(frame) else []
        frame["n_checked"] = pc.struct_field(degenerate, "n_checked").to_pandas() if len(frame) else []
        frame["n_adapters"] = pc.list_value_length(self.table.column("adapters")).fill_null(0).to_numpy(
            zero_copy_only=False) if len(frame) else np.zeros(0, dtype=int)
        kinds = {m: ACCESS[model_id_kind(str(m))] for m in frame["model_id"].unique()}
        frame["access"] = frame["model_id"].map(kinds)
        return frame

    def _evaluated(self) -> np.ndarray:
        """Per file: evaluated by the maintainers' workers (checked against ``finished``)."""
        out = np.zeros(len(self.frame), dtype=bool)
        if self.finished is None:
            return out
        f = self.frame
        for i in np.flatnonzero(f["evaluated_by"].notna().to_numpy() & f["request_id"].notna().to_numpy()):
            item = SimpleNamespace(source=f["source"].iat[i], doc={
                "evaluated_by": f["evaluated_by"].iat[i], "request_id": f["request_id"].iat[i],
                "model": {"id": f["model_id"].iat[i]}})
            out[i] = provenance.provenance(item, self.finished) == provenance.PROVENANCE_WORKER
        return out

    # ------------------------------------------------------------------ documents, on demand

    def submissions(self, positions: Sequence[int]) -> list[Submission]:
        """The submissions of the files at ``positions`` (made once each; one read of the table for
        those not made yet)."""
        todo = [int(i) for i in dict.fromkeys(positions) if int(i) not in self._subs]
        made = [i for i in todo if i in self._made]
        for i in made:
            self._subs[i] = replace(self._made[i], finished=self.finished)
        rest = [i for i in todo if i not in self._made]
        if rest:
            for i, rec in zip(rest, self.table.take(pa.array(rest, type=pa.int64())).to_pylist()):
                path = (self.root or Path(".")) / rec["source"]
                self._subs[i] = Submission(doc=cs.slim_document(rec, self.names), source=rec["source"], path=path,
                                           run_dir=path.parent if rec["run_folder"] else None, finished=self.finished)
        return [self._subs[int(i)] for i in positions]

    def submission(self, position: int) -> Submission:
        return self.submissions([position])[0]

    def row(self, key: str) -> ModelRow:
        """Row ``key``: its holder and its conflicts."""
        subs = self.submissions([self.position[key], *self._older.get(key, [])])
        return ModelRow(subs[0], tuple(subs[1:]))

    def rows(self, keys: Sequence[str]) -> list[ModelRow]:
        self.submissions([i for k in keys for i in (self.position[k], *self._older.get(k, []))])
        return [self.row(k) for k in keys]

    def conflicts(self) -> list[tuple[Submission, Submission]]:
        """(file not shown, the row's file) for every valid file whose row another file holds."""
        return [(other, row.latest) for key in self._older for row in [self.row(key)] for other in row.older]

    def __len__(self) -> int:
        return len(self.keys)

    def row_frame(self) -> pd.DataFrame:
        """The frame of the rows' holders, in the natural order (index: positions in ``table``)."""
        return self.frame.loc[self.holders]


@dataclass
class Board:
    """Everything read from one folder or table: the valid files (``index``), the files skipped
    and why, errors of the folder itself."""

    source: str
    index: BoardIndex = field(default_factory=lambda: BoardIndex(table_of([])))
    skipped: list[Skipped] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the folder itself could not be read

    @property
    def submissions(self) -> list[Submission]:
        """Every valid file (all made: for a few files; the app asks the index for a page)."""
        return self.index.submissions(range(self.index.table.num_rows))

    def rows(self) -> list[ModelRow]:
        return self.index.rows(self.index.keys)

    @property
    def conflicts(self) -> list[tuple[Submission, Submission]]:
        return self.index.conflicts()

    @property
    def n_files(self) -> int:
        return self.index.table.num_rows
