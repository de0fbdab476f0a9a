"""The leaderboard with many models: the contents table rebuilt incrementally (the tests count
reads and hashes), its flat typed columns and their card, rank ranges from the intervals,
server-side paging and search, an app whose page does not grow with the number of models, and
``t2ibench validate`` skipping files a table already accepted. Nothing here is timed
(bench/leaderboard_scale.py measures)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_here import exit_status

from benchmark.scores.metadata import SCORE_METADATA
from submissions.leaderboard import board_table, contents, contents_schema, paging, ranks, results_files
from test_leaderboard import _ci, _write, make_doc
from test_leaderboard_contents import counter

N_RESULTS = 1000
ROOT = Path(__file__).resolve().parents[1]


class Counts:
    """Counts results files parsed (the package's one reader) and files hashed."""

    def __init__(self, monkeypatch):
        self._parsed = counter(monkeypatch, results_files, "load_results_file")
        self._hashed = counter(monkeypatch, contents, "file_sha256")

    parsed = property(lambda self: self._parsed[0])
    hashed = property(lambda self: self._hashed[0])


def _model_file(root: Path, i: int) -> Path:
    return root / f"results/org{i:04d}--model/2025-01-01T00-00-00.json"


@pytest.fixture(scope="module")
def thousand(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb_scale")
    for i in range(N_RESULTS):
        _write(root, _model_file(root, i).relative_to(root).as_posix(), make_doc(f"org{i:04d}/model", (i % 97) / 100))
    contents.build_contents(root)
    return root


def test_a_rebuild_reads_only_new_and_changed_files(thousand, monkeypatch):
    new = _write(thousand, "results/zz-new--model/1.json", make_doc("zz-new/model", 0.5))
    try:
        counts, stats = Counts(monkeypatch), contents.BuildStats()
        _, n = contents.build_contents(thousand, stats)
        assert (counts.parsed, counts.hashed, n) == (1, 1, N_RESULTS + 1)  # the new file, once
        assert (stats.kept, stats.read) == (N_RESULTS, 1)
        # touched, same bytes: hashed, not parsed
        os.utime(new, ns=(1, 1))
        counts = Counts(monkeypatch)
        contents.build_contents(thousand)
        assert (counts.parsed, counts.hashed) == (0, 1)
        # changed: parsed again, its row follows
        _write(thousand, "results/zz-new--model/1.json", make_doc("zz-new/model", 0.25))
        counts = Counts(monkeypatch)
        contents.build_contents(thousand)
        assert (counts.parsed, counts.hashed) == (1, 1)
        table = pq.read_table(contents.contents_path(thousand), columns=["model_id", "gep_score_neutral"]).to_pydict()
        assert dict(zip(table["model_id"], table["gep_score_neutral"]))["zz-new/model"] == 0.25
    finally:
        new.unlink()
    stats = contents.BuildStats()
    contents.build_contents(thousand, stats)
    assert (stats.dropped, stats.read) == (1, 0)


def test_the_table_has_typed_columns_and_a_card(thousand):
    table = pq.read_table(contents.contents_path(thousand))
    types = {f.name: f.type for f in table.schema}
    assert types["model_id"] == pa.string() and types["created"] == pa.timestamp("us", tz="UTC")
    assert types["demo"] == pa.bool_() and types["suites"] == pa.list_(pa.string())
    assert types["references"] == pa.list_(contents_schema.REFERENCE) and pa.types.is_struct(types["submission"])
    assert "board" not in types  # no JSON text column: every column is typed
    # one typed column per score value, bound, count, estimator and suite, for the scores some row has
    present = {n for n in SCORE_METADATA if f"{n}_suite" in types}
    assert present == {"gep_score_neutral"}  # the thousand files have GEP (neutral) only: no all-null columns
    for name in present:
        assert (types[name], types[f"{name}_low"], types[f"{name}_high"]) == (pa.float64(),) * 3
        assert (types[f"{name}_n"], types[f"{name}_estimator"], types[f"{name}_suite"]) == (pa.int64(), pa.string(),
                                                                                           pa.string())
    assert not [c for c in table.schema.names if table.column(c).null_count == len(table) and c.startswith(
        tuple(SCORE_METADATA))]
    row = {r["model_id"]: r for r in table.select(["model_id", "gep_score_neutral", "gep_score_neutral_low",
                                                    "gep_score_neutral_n", "gep_score_neutral_estimator",
                                                    "revision", "images", "evaluation", "probes"]).to_pylist()}
    # the entry the leaderboard shows (CLS), not the second estimator's (C, 0.9)
    assert row["org0005/model"] == {"model_id": "org0005/model", "gep_score_neutral": 0.05,
                                    "gep_score_neutral_low": _ci(0.05)["low"], "gep_score_neutral_n": 40,
                                    "gep_score_neutral_estimator": "CLS", "revision": "main", "images": "generated",
                                    "evaluation": "self-reported", "probes": None}
    card = (thousand / contents.CARD_FILE).read_text()
    docs = (ROOT / "docs" / "leaderboard.md").read_text()
    for name in table.schema.names:
        assert f"| `{name}` |" in card, name
    assert "Filter out the demo rows" in card and 'ds.filter(lambda r: not r["demo"]' in card
    for name, _, _ in (*contents_schema.FILE_FIELDS, *contents_schema.ROW_FIELDS):
        assert f"`{name}`" in docs, name
    for suffix, _, _ in contents_schema.SCORE_PARTS[1:]:
        assert f"`NAME{suffix}`" in docs, suffix


def test_datasets_sorts_and_filters_the_table(thousand, monkeypatch):
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("parquet", data_files=str(contents.contents_path(thousand)), split="train")
    best = ds.filter(lambda r: r["gep_score_neutral"] is not None).sort("gep_score_neutral")
    assert best[0]["gep_score_neutral"] == 0.0 and len(ds) == N_RESULTS
    # the folder itself, through its card's config, as the Hub's viewer reads it
    assert len(datasets.load_dataset(str(thousand / "contents"), split="train")) == N_RESULTS
    # the card's own example runs as written (from the results folder): demo rows filtered out first
    card = (thousand / contents.CARD_FILE).read_text()
    code = card.split("```python\n")[1].split("```")[0]
    _write(thousand, "results/demo--tiny/1.json", make_doc("builtin:tiny-sd", 0.0, builtin=True))
    try:
        contents.build_contents(thousand)
        monkeypatch.chdir(thousand)
        scope: dict = {}
        exec(code, scope)
        assert len(scope["ds"]) == N_RESULTS and not any(scope["ds"]["demo"])  # the demo row filtered out
        assert scope["by_value"][0]["gep_score_neutral"] == 0.0
    finally:
        (thousand / "results/demo--tiny/1.json").unlink()
        contents.build_contents(thousand)


def test_rank_ranges_from_intervals():
    lower = SCORE_METADATA["gep_score_neutral"]  # lower is better
    got = ranks.rank_ranges([("a", ranks.badness_interval(lower, 0.15, 0.1, 0.2)),
                             ("b", ranks.badness_interval(lower, 0.2, 0.15, 0.3)),
                             ("c", ranks.badness_interval(lower, 0.55, 0.5, 0.6)),
                             ("d", ranks.badness_interval(lower, 0.7))])  # no interval: zero width
    assert {k: r.text() for k, r in got.items()} == {"a": "1–2 ≈", "b": "1–2 ≈", "c": "3", "d": "4"}
    closest = next(m for m in SCORE_METADATA.values() if m.lower_is_better is None)
    ideal = closest.ideal or 0.0
    # an interval holding the ideal starts at 0; one on the other side is as bad as its distance
    assert ranks.badness_interval(closest, ideal + 1, ideal - 1, ideal + 2) == (0.0, 2.0)
    assert ranks.badness_interval(closest, ideal - 3, ideal - 4, ideal - 2) == (2.0, 4.0)
    higher = next(m for m in SCORE_METADATA.values() if m.lower_is_better is False)
    assert ranks.badness_interval(higher, 0.5, 0.4, 0.6) == (-0.6, -0.4)


def test_the_table_shows_rank_ranges_tiers_and_ties(tmp_path):
    subs = [make_doc("a/m", 0.10), make_doc("b/m", 0.11), make_doc("c/m", 0.5), make_doc("d/m", None),
            make_doc("builtin:tiny-sd", 0.0, builtin=True)]
    for i, doc in enumerate(subs):
        _write(tmp_path, f"r/{i}.json", doc)
    rows = results_files.load_folder(tmp_path).rows()
    columns = ["tier", "range"]
    t = board_table.leaderboard_table(rows, columns=columns)
    shown = dict(zip(t.shown()["Model"], t.shown()[board_table.RANGE_COLUMN]))
    # a (0.08-0.12) and b (0.09-0.13) overlap: tied for 1-2; c is third; undefined and demo: no rank
    assert shown == {"a/m": "1–2 ≈", "b/m": "1–2 ≈", "c/m": "3", "d/m": "", "builtin:tiny-sd": ""}
    # tiers: a and b tied with the leader (tier 1), c surely worse than both (tier 2)
    assert dict(zip(t.shown()["Model"], t.shown()[board_table.TIER_COLUMN])) == {
        "a/m": "1", "b/m": "1", "c/m": "2", "d/m": "", "builtin:tiny-sd": ""}
    # the rank tells a from b, by value and by the worse end (a's 0.12 is better than b's 0.13)
    for order in ("value", "conservative"):
        ranked = board_table.leaderboard_table(rows, columns=columns, order=order)
        assert dict(zip(ranked.shown()["Model"], ranked.shown()[board_table.RANK_COLUMN])) == {
            "a/m": "1", "b/m": "2", "c/m": "3", "d/m": "", "builtin:tiny-sd": ""}
    assert t.frame().set_index("Model")[board_table.RANGE_COLUMN]["c/m"] == 3  # numbers behind the text
    assert t.frame().set_index("Model")[board_table.RANK_COLUMN]["b/m"] == 2 and t.leaders == 2 and t.tiers == 2
    # searching does not re-rank
    t = board_table.leaderboard_table(rows, search="c/", columns=columns)
    assert t.shown()[board_table.RANGE_COLUMN].tolist() == ["3"] and t.shown()[board_table.RANK_COLUMN].tolist() == ["3"]
    assert t.shown()[board_table.TIER_COLUMN].tolist() == ["2"]


def test_pages_and_server_side_search(thousand):
    board = contents.load_board(thousand)
    rows = board.rows()
    everything = board_table.leaderboard_table(rows).keys
    page2 = board_table.leaderboard_table(rows, page=2, page_size=50)
    assert page2.keys == everything[50:100] and len(page2.values) == 50
    assert page2.page.text() == "Models 51–100 of 1,000 (page 2 of 20)"
    last = board_table.leaderboard_table(rows, page=999, page_size=50)
    assert last.page.number == 20 and last.keys == everything[950:]
    found = board_table.leaderboard_table(rows, search="org0999", page_size=50)
    assert found.shown()["Model"].tolist() == ["org0999/model"] and found.page.total == 1
    assert paging.page_of(0, 3).text() == "No model matches."


def test_the_page_holds_one_page_of_rows(thousand):
    pytest.importorskip("gradio")
    from submissions.leaderboard import app, app_state, forest_tab

    demo = app.build_app(results_dir=thousand)
    config = json.dumps(demo.get_config_file(), default=str)
    ranked = [r.latest.model_id for r in board_table.sort_rows(contents.load_board(thousand).rows(), "gep_score_neutral")]
    assert ranked[0] in config and ranked[-1] not in config  # the last model is on the last page only
    assert len(config) < 400_000, len(config)  # one page of rows, pickers of at most MAX_CHOICES models
    state = app_state.BoardState(app_state.Source(results_dir=thousand))
    assert len(state.model_choices()) == app_state.MAX_CHOICES
    assert state.model_choices([ranked[-1] + "@main"])[-1][1] == ranked[-1] + "@main"
    # the detail view reads the model's whole file on demand (the table holds a slim document)
    key = ranked[0] + "@main"
    assert "pipeline" not in state.by_key[key].latest.doc["settings"]
    assert state.detail_row(key).latest.doc["settings"]["pipeline"] == "StableDiffusionPipeline"
    assert len(forest_tab.forest_keys(state, [], state.ranked()[:app_state.FOREST_TOP], True)) == app_state.FOREST_TOP


def _validate(capsys, *argv):
    return exit_status(["validate", *argv]), capsys.readouterr().out.strip()


def test_validate_skips_files_the_table_accepted(tmp_path, capsys):
    root = tmp_path / "lb"
    good = _write(root, "results/a--m/1.json", make_doc("a/m", 0.1))
    demo = _write(root, "results/demo/1.json", make_doc("builtin:tiny-sd", 0.1, builtin=True))
    code, out = _validate(capsys, good)
    assert code == 0 and out == f"{good}: ok"  # no table yet: checked
    contents.build_contents(root)
    code, out = _validate(capsys, good)
    assert code == 0 and out == (f"{good}: ok, unchanged since {root / contents.CONTENTS_FILE} accepted it "
                                 "(not checked again)")
    code, out = _validate(capsys, demo)  # accepted as a demo by the leaderboard, refused without --allow-demo
    assert code == 1 and "not checked again" not in out
    code, out = _validate(capsys, "--allow-demo", demo)
    assert code == 0 and "not checked again" in out and "demo" in out
    _write(root, "results/a--m/1.json", make_doc("a/m", 3.0))  # changed since: checked, refused
    code, out = _validate(capsys, good)
    assert code == 1 and "outside its range" in out


def test_a_table_of_an_older_version_is_rebuilt(tmp_path):
    root = tmp_path / "lb"
    _write(root, "results/a--m/1.json", make_doc("a/m", 0.1))
    old = contents.contents_path(root)
    old.parent.mkdir(parents=True)
    pq.write_table(pa.table({"source": ["results/a--m/1.json"], "document": ["{}"]}), old)  # the old layout
    with pytest.raises(contents.OldTable):
        contents.read_contents(old)
    assert [s.model_id for s in contents.load_board(root).submissions] == ["a/m"]  # read from the files
    stats = contents.BuildStats()
    contents.build_contents(root, stats)
    assert stats.read == 1 and contents.read_contents(old)["results/a--m/1.json"].problems == ()


def test_tabs_without_the_table_still_plot(thousand):
    pytest.importorskip("gradio")
    from submissions.leaderboard import app, app_state, forest_tab

    state = app_state.BoardState(app_state.Source(results_dir=thousand))
    assert len(forest_tab.forest_keys(state, None, None, True)) == app_state.FOREST_TOP  # the default order's first
    assert forest_tab.forest_keys(state, None, [], True) == []  # filters that keep nothing: nothing drawn
    app.build_app(results_dir=thousand, tabs=[t for t in app.TABS if t.id in ("forest", "compare")])


def test_a_file_changed_since_the_table_is_read_once_across_reloads(tmp_path, monkeypatch):
    root = tmp_path / "lb"
    for i in range(3):
        _write(root, f"results/org{i}--m/1.json", make_doc(f"org{i}/m", 0.1))
    contents.build_contents(root)
    _write(root, "results/org1--m/1.json", make_doc("org1/m", 0.3))
    results_files.clear_cache()
    counts = Counts(monkeypatch)
    for _ in range(3):  # the app's "Reload results", the table not rebuilt
        board = contents.load_board(root)
    assert counts.parsed == 1 and {s.model_id: s.scores[0]["value"] for s in board.submissions}["org1/m"] == 0.3


def test_from_the_hub_the_detail_view_downloads_its_one_file(tmp_path, monkeypatch):
    pytest.importorskip("gradio")
    import huggingface_hub

    from submissions.leaderboard import app_state

    root = tmp_path / "lb"
    for i in range(3):
        _write(root, f"results/org{i}--m/1.json", make_doc(f"org{i}/m", 0.1 * i))
    contents.build_contents(root)
    hub = tmp_path / "hub-cache"  # what hf_hub_download gives: the table alone
    (hub / "contents").mkdir(parents=True)
    (hub / contents.CONTENTS_FILE).write_bytes(contents.contents_path(root).read_bytes())
    monkeypatch.setattr(contents, "download_contents", lambda repo, revision=None: hub)
    asked = []

    def download(repo, filename, **kw):
        asked.append((repo, filename, kw.get("repo_type")))
        return str(root / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    state = app_state.BoardState(app_state.Source(repo="org/results"))
    assert len(state.rows) == 3 and asked == []  # the table alone at start-up
    row = state.detail_row("org1/m@main")
    assert asked == [("org/results", "results/org1--m/1.json", "dataset")]
    assert row.latest.doc["settings"]["pipeline"] == "StableDiffusionPipeline"
