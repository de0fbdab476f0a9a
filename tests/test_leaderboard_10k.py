"""The board at 10,000 models without a browser: every order over all rows (checked against an
order worked out here with pandas from the table's columns), the last page in one call, ranks
that tell the leaders apart, and a board read from its table with nothing parsed. The rows are
``lb_synthetic.synthetic_table`` (made in a second); nothing here is timed
(``bench/leaderboard_scale.py`` measures)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from lb_synthetic import synthetic_table
from submissions.leaderboard import board_index, board_table, contents, paging

N = 10_000
SCORE = "gep_score_neutral"  # the first overview column (lower is better): the default order's score


def expected_order(table, how: str) -> list[str]:
    """Model ids in the order ``how`` by :data:`SCORE`, from the columns alone: best first by the
    interval's worse end (its high end: lower is better), then the value, then the id; demo rows
    last (ordered the same way among themselves); worst first the reverse within each part."""
    f = table.select(["model_id", "demo", SCORE, f"{SCORE}_high"]).to_pandas()
    sign = -1 if how == "worst first" else 1
    f = f.assign(worse=sign * f[f"{SCORE}_high"], point=sign * f[SCORE])
    return f.sort_values(["demo", "worse", "point", "model_id"])["model_id"].tolist()


@pytest.fixture(scope="module")
def big():
    table, _ = synthetic_table(N)
    return table, board_index.BoardIndex(table)


@pytest.mark.parametrize("how", ["best first", "worst first"])
def test_every_order_is_over_all_rows(big, how):
    table, index = big
    expected = expected_order(table, how)
    first = board_table.leaderboard_table(index, sort_by=SCORE, order=how, page=1, page_size=50)
    assert [k.removesuffix("@main") for k in first.order] == expected and first.page.total == N
    last = board_table.leaderboard_table(index, sort_by=SCORE, order=how, page=paging.LAST, page_size=50)
    assert last.page.number == 200 and [k.removesuffix("@main") for k in last.keys] == expected[-50:]
    assert last.shown()["Model"].tolist() == expected[-50:]
    by_name = board_table.leaderboard_table(index, sort_by=SCORE, order="model Z–A", page=1, page_size=50)
    assert by_name.shown()["Model"].tolist() == sorted(expected, key=str.lower, reverse=True)[:50]


def test_ranks_tell_the_leaders_apart_at_10000(big):
    _, index = big
    t = board_table.leaderboard_table(index, sort_by=SCORE, page=1, page_size=50)
    shown = t.shown()
    assert shown["Rank"].tolist()[:10] == [str(i) for i in range(1, 11)]
    # by overlap alone the leaders are "1–k ≈" with k in the hundreds: hundreds tied with the leader
    ranges = shown["Range"].tolist()[:10]
    assert all(r.startswith("1–") for r in ranges[:3]) and all(int(r.split("–")[1][:-2]) > 100 for r in ranges)
    assert 50 < t.leaders < N
    last = board_table.leaderboard_table(index, sort_by=SCORE, page=paging.LAST, page_size=50).shown()
    demo = last[last["Badge"].str.contains(">demo<")]
    assert len(demo) == N // 500 and set(demo["Rank"]) == {""} and set(demo["Range"]) == {""}  # never ranked
    assert "" not in set(last[~last["Badge"].str.contains(">demo<")]["Rank"])


def test_the_board_is_read_from_its_table_with_nothing_parsed(big, tmp_path, monkeypatch):
    table, _ = big
    (tmp_path / "contents").mkdir()
    pq.write_table(table, tmp_path / contents.CONTENTS_FILE)
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda *a, **k: parsed.append(1) or real(*a, **k))
    board = contents.load_board(tmp_path, files_present=False)
    assert len(board.index) == N and board.n_files == N and parsed == []
    page = board_table.leaderboard_table(board.index, page=3, page_size=50)
    assert len(page.keys) == 50 and parsed == []  # the page's documents are made from the columns
