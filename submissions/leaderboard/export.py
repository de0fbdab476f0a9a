"""The board as a file: every row a view keeps (not just the page shown), in its order, with every
column of the contents table, the ranks, tiers and win rates the page shows, and the contents
revision it came from (:func:`board_export`), written as CSV or parquet (:func:`write_export`).

In the CSV the nested columns (adapters, references, suites, ...) are JSON text; the parquet
file keeps their types and holds the revision and the view in its schema's metadata too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmark.contract.digest import sha256_hex
from submissions.leaderboard.board_index import BoardIndex
from submissions.leaderboard.board_table import Board

#: the view's columns, first in the file (then every column of the contents table)
VIEW_COLUMNS = ("position", "model", "rank_by_value", "rank_conservative", "tier", "rank_range_best",
                "rank_range_worst", "mean_win_rate", "ranked_by", "order", "contents_revision")
FORMATS = ("csv", "parquet")


def board_export(index: BoardIndex, board: Board, labels: dict[str, str], revision: str) -> pa.Table:
    """The rows of ``board`` (a view of ``index``) in order: the view's columns
    (:data:`VIEW_COLUMNS`), then every column of the contents table."""
    positions = board.rows.index.to_numpy()
    rows = index.table.take(pa.array(positions, type=pa.int64()))
    ranked, n = board.ranked, len(positions)

    def ints(values) -> pa.Array:
        values = np.asarray(values)
        return pa.array(values.astype("int64"), mask=values == 0)

    view = {
        "position": pa.array(np.arange(1, n + 1, dtype="int64")),
        "model": pa.array([labels.get(k, k) for k in board.rows["key"]], type=pa.string()),
        "rank_by_value": ints(ranked.value), "rank_conservative": ints(ranked.conservative), "tier": ints(ranked.tier),
        "rank_range_best": ints(ranked.range_best), "rank_range_worst": ints(ranked.range_worst),
        "mean_win_rate": pa.array(board.win_rate, mask=~np.isfinite(board.win_rate), type=pa.float64()),
        "ranked_by": pa.array([board.sort_by] * n, type=pa.string()),
        "order": pa.array([board.how] * n, type=pa.string()),
        "contents_revision": pa.array([revision] * n, type=pa.string()),
    }
    table = pa.table({**view, **{name: rows.column(name) for name in rows.schema.names}})
    return table.replace_schema_metadata({"contents_revision": revision, "ranked_by": str(board.sort_by),
                                          "order": board.how})


def _flat(table: pa.Table) -> pa.Table:
    """``table`` with its nested columns (lists, structs) as JSON text (null stays null): a CSV cell each."""
    for i, f in enumerate(table.schema):
        if pa.types.is_nested(f.type):
            text = [None if v is None else json.dumps(v, default=str, sort_keys=True)
                    for v in table.column(i).to_pylist()]
            table = table.set_column(i, f.name, pa.array(text, type=pa.string()))
    return table


def write_export(table: pa.Table, fmt: str, folder: Path, view_query: str = "") -> Path:
    """``table`` written to ``folder`` as ``fmt`` (csv or parquet): ``leaderboard-<digest>.<fmt>``,
    the digest of the revision and the view (the same view gives the same name)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    meta = table.schema.metadata or {}
    revision = (meta.get(b"contents_revision") or b"").decode()
    digest = sha256_hex(f"{revision}\n{view_query}".encode())[:12]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"leaderboard-{digest}.{fmt}"
    if fmt == "parquet":
        pq.write_table(table.replace_schema_metadata({**meta, b"view": view_query.encode()}), path)
        return path
    _flat(table).to_pandas().to_csv(path, index=False)
    return path
