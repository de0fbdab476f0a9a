"""The board at 10,000 models without a browser: every order over all rows (checked against an
order worked out here with pandas from the table's columns), the last page in one call, ranks
that tell the leaders apart, and a board read from its table with nothing parsed. The rows are
``lb_synthetic.synthetic_table`` (made in a second); nothing here is timed
(``bench/leaderboard_scale.py`` measures)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from lb_synthetic import synthetic_table
from submissions.leaderboard import board_index, board_table, contents, paging, ranks

N = 10_000
SCORE = "gep_score_neutral"  # the first overview column (lower is better): the default order's score


def expected_order(table, how: str, score: str = SCORE) -> list[str]:
    """Model ids in the order ``how`` (a key of board_view.ORDERS) by ``score`` (lower is better),
    from the columns alone: by value, the value then the interval's worse end (its high end);
    conservative, the worse end then the value; then the id; demo rows last (ordered the same way
    among themselves); worst first the reverse within each part."""
    f = table.select(["model_id", "demo", score, f"{score}_high"]).to_pandas()
    sign = -1 if how.endswith("worst") else 1
    f = f.assign(worse=sign * f[f"{score}_high"], point=sign * f[score])
    keys = ["point", "worse"] if how.startswith("value") else ["worse", "point"]
    return f.sort_values(["demo", *keys, "model_id"])["model_id"].tolist()


@pytest.fixture(scope="module")
def big():
    table, _ = synthetic_table(N)
    return table, board_index.BoardIndex(table)


@pytest.mark.parametrize("how", ["value", "value-worst", "conservative", "conservative-worst"])
def test_every_order_is_over_all_rows(big, how):
    table, index = big
    expected = expected_order(table, how)
    first = board_table.leaderboard_table(index, sort_by=SCORE, order=how, page=1, page_size=50)
    assert [k.removesuffix("@main") for k in first.order] == expected and first.page.total == N
    last = board_table.leaderboard_table(index, sort_by=SCORE, order=how, page=paging.LAST, page_size=50)
    assert last.page.number == 200 and [k.removesuffix("@main") for k in last.keys] == expected[-50:]
    assert last.shown()["Model"].tolist() == expected[-50:]
    by_name = board_table.leaderboard_table(index, sort_by=SCORE, order="name-za", page=1, page_size=50)
    assert by_name.shown()["Model"].tolist() == sorted(expected, key=str.lower, reverse=True)[:50]


def test_the_default_order_is_by_the_value_shown(big):
    """Page 1 reads in the order of its values (the issue: "best first" by the worse end read unsorted)."""
    _, index = big
    t = board_table.leaderboard_table(index, page=1, page_size=50)
    values = [row[t.first_score] for row in t.values]
    assert values == sorted(values) and t.ranked_by == SCORE and t.how == "value"
    assert t.shown()["Rank"].tolist() == [str(i) for i in range(1, 51)]


def test_ranks_and_tiers_read_at_10000(big):
    _, index = big
    t = board_table.leaderboard_table(index, sort_by=SCORE, page=1, page_size=50, columns=["tier", "range", "badge"])
    shown = t.shown()
    assert shown["Rank"].tolist()[:10] == [str(i) for i in range(1, 11)]
    # by overlap alone the leaders are "1–k ≈" with k in the hundreds; their tier says it in one word
    ranges = shown["Range"].tolist()[:10]
    assert all(r.startswith("1–") for r in ranges[:3]) and all(int(r.split("–")[1][:-2]) > 100 for r in ranges)
    assert set(shown["Tier"][:3]) == {"1"} and 50 < t.leaders < N and t.tiers > 10
    # tier 1 is exactly the rows whose range starts at 1 (both say "tied with the leader")
    whole = board_table.view_board(index, sort_by=SCORE)
    assert int((whole.ranked.tier == 1).sum()) == int((whole.ranked.range_best == 1).sum()) == t.leaders
    last = board_table.leaderboard_table(index, sort_by=SCORE, page=paging.LAST, page_size=50).shown()
    demo = last[last["Badge"].str.contains(">demo<")]
    assert len(demo) == N // 500 and set(demo["Rank"]) == {""} and set(demo["Tier"]) == {""}  # never ranked
    assert "" not in set(last[~last["Badge"].str.contains(">demo<")]["Rank"])


def test_intervals_clipped_at_a_limit_do_not_share_one_rank(big):
    """A closest-to-ideal score whose intervals reach the score's limit: by their worse end alone
    about 200 rows shared one rank (the issue: "about 200 models share rank 9556"); the conservative
    rank breaks those ties by the value, and the page says how many intervals reach the limit."""
    from benchmark.scores.metadata import SCORE_METADATA

    _, index = big
    name = next(n for n, m in SCORE_METADATA.items() if m.headline and m.lower_is_better is None
                and f"{n}_low" in index.frame and (index.frame[f"{n}_low"] <= m.min_value).sum() > 50)
    board = board_table.view_board(index, sort_by=name, order="conservative")
    ranked = board.ranked.conservative > 0
    _, sharing = np.unique(board.ranked.conservative[ranked], return_counts=True)
    value, low, high, _ = board_table.score_columns_of(board.rows, name)
    _, worse = ranks.badness_intervals(SCORE_METADATA[name], value, low, high)
    _, same_worse_end = np.unique(worse[ranked], return_counts=True)
    assert same_worse_end.max() > 50 and sharing.max() <= 2, (same_worse_end.max(), sharing.max())
    t = board_table.leaderboard_table(index, sort_by=name, order="conservative", page=1, page_size=50)
    assert t.clipped > 50


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
