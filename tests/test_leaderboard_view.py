"""The leaderboard's view without a browser: the view in a URL query and back, what a header
click orders by, the filters on adapters, access, date and package version, the mean win rate
(worked out by hand), the downloads (every row of the view, every column, the revision), the
About text and header hover texts from the metadata, the links and adapter names, and a reload
that finds nothing changed (the board kept as it was) or says which rows changed."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmark.contract import results as res
from benchmark.scores.metadata import SCORE_METADATA
from submissions.leaderboard import (about, board_table, board_view as bv, export, links, results_files,
                                    score_columns, wording)
from submissions.leaderboard.app_state import BoardState, Source
from test_leaderboard import XSS, _ci, _write, make_doc, write_sample_results


# --------------------------------------------------------------------------- the view in the URL


def test_a_view_goes_into_a_query_and_back():
    assert bv.View().query() == ""  # the default view: a bare address
    view = bv.View(search="sd x", suites=("a", "b"), show_demo=False, sort_by="m", order=bv.CONSERVATIVE_WORST,
                   columns=(), since="2025-01-01", page=7, versions=("0.1.0",))
    query = view.query()
    assert "page=" not in query and "view=" not in query  # Gradio's own page reads those
    params = dict(pair.split("=", 1) for pair in query.split("&"))
    from urllib.parse import unquote_plus

    back = bv.View.from_query({k: unquote_plus(v) for k, v in params.items()})
    assert back == view
    assert bv.View.from_query({"p": "last"}).page == bv.LAST_PAGE and bv.View.from_query({"p": "x"}).page == 1
    assert bv.View.from_query({"unknown": "1", "demo": "0"}) == bv.View(show_demo=False)


def test_a_view_the_board_does_not_offer_falls_back_to_the_default():
    asked = bv.View(sort_by="nope", order="sideways", scores="nope", columns=("tier", "nope"), suites=("x",),
                    adapters="maybe", since="yesterday", until="2025-02-30", page=0)
    got = bv.valid_view(asked, scores=["s1"], views=["Overview"], columns=["tier"], choices={"suites": ["y"]})
    assert got == bv.View(scores="Overview", columns=("tier",), page=1)


def test_a_header_click_orders_by_its_column():
    order = bv.header_order
    assert order("score", "b", "a", bv.BY_VALUE) == ("b", bv.BY_VALUE)  # another score: its value, best first
    assert order("score", "a", "a", bv.BY_VALUE) == ("a", bv.BY_VALUE_WORST)  # again: worst first
    assert order("score", "a", "a", bv.BY_VALUE_WORST) == ("a", bv.BY_VALUE)
    assert order("score", "a", "a", bv.CONSERVATIVE) == ("a", bv.CONSERVATIVE_WORST)  # conservative stays so
    assert order("model", None, "a", bv.BY_VALUE) == ("a", bv.MODEL_AZ)
    assert order("model", None, "a", bv.MODEL_AZ) == ("a", bv.MODEL_ZA)
    assert order("rank", None, "a", bv.CONSERVATIVE) == ("a", bv.CONSERVATIVE_WORST)
    assert order("tier", None, "a", bv.BY_VALUE) == ("a", bv.CONSERVATIVE)
    assert order("created", None, "a", bv.BY_VALUE) == ("a", bv.NEWEST)
    assert order("win_rate", None, "a", bv.WIN_RATE) == ("a", bv.WIN_RATE_WORST)
    assert order("", None, "a", bv.BY_VALUE) is None  # Badge, Suites: no order


# --------------------------------------------------------------------------- filters, orders, win rate


def _board(tmp_path):
    lora = make_doc("acme/model-a", 0.1, revision="main", created="2025-03-01T00:00:00Z")
    lora["model"]["adapters"] = [{"kind": "lora", "id": "org/style-lora/pytorch_lora_weights.safetensors",
                                  "repo": "org/style-lora", "file": "pytorch_lora_weights.safetensors",
                                  "sha256": "a" * 64, "scale": 0.8}]
    lora["package"]["version"] = "0.2.0"
    _write(tmp_path, "results/lora/1.json", lora)
    write_sample_results(tmp_path)
    board = results_files.load_folder(tmp_path)
    assert len(board.skipped) == 2  # the sample's two invalid files
    return board


def test_filters_on_adapters_access_date_and_version(tmp_path):
    board = _board(tmp_path)
    rows = board.rows()

    def models(**kw):
        return list(board_table.leaderboard_table(rows, **kw).shown()["Model"])

    with_lora = models(adapters=bv.WITH_ADAPTERS)
    assert with_lora == ["acme/model-a @ main + LoRA org/style-lora x0.8"]  # named by its repo, not its file
    assert len(models(adapters=bv.BASE_ONLY)) == len(rows) - 1
    assert models(access="local") == [XSS]  # a local folder's path is its id
    assert models(access="builtin") == ["builtin:tiny-sd"]
    assert models(since="2025-02-01") == [with_lora[0], "gamma/model-c"]
    assert models(since="2025-02-01", until="2025-02-01") == ["gamma/model-c"]
    assert models(versions=["0.2.0"]) == with_lora
    assert board_table.all_versions(rows) == ["0.1.0", "0.2.0"]
    newest = models(order=bv.NEWEST)
    assert newest[:2] == [with_lora[0], "gamma/model-c"]


def test_a_single_quantized_file_with_degenerate_images_has_its_columns_link_and_access(tmp_path):
    """main's model records reach the board's structure: a single file on the Hub (its sha256 in
    the key, the Model cell and the Checkpoint column; its link the file's Hub page; access "hub"),
    its quantization, and the degenerate images counted in the Degenerate column and the badge."""
    doc = make_doc("hf://org/ckpt@abc123/sd15.safetensors", 0.1)
    doc["model"]["checkpoint"] = {"kind": "single_file", "id": "hf://org/ckpt@abc123/sd15.safetensors",
                                  "sha256": "b" * 64, "format": "safetensors", "layout": "pipeline",
                                  "base": "org/base"}
    doc["model"]["quantization"] = {"backend": "bnb", "scheme": "nf4", "components": ["unet"]}
    doc["run"]["degenerate_images"] = {"n_checked": 40, "n_degenerate": 3, "share": 0.075,
                                       "by_kind": {"non-finite": 0, "blank": 3, "constant": 0}, "threshold": 0.01,
                                       "allowed": True}
    _write(tmp_path, "results/file/1.json", doc)
    _write(tmp_path, "results/plain/1.json", make_doc("acme/plain", 0.2))
    board = results_files.load_folder(tmp_path)
    assert not board.skipped, board.skipped
    picked = ("checkpoint", "quantization", "degenerate", "access", "badge")
    table = board_table.leaderboard_table(board.rows(), columns=picked, links=links.Links(root=tmp_path),
                                          order=bv.BY_VALUE)
    shown = table.shown().set_index(table.shown()["Model"].str.split(" ").str[0])
    row = shown.loc["hf://org/ckpt@abc123/sd15.safetensors"]
    assert "[file sha256 bbbbbbbbbbbb]" in row["Model"] and "[quantized bnb:nf4]" in row["Model"]
    assert row["Checkpoint sha256"] == "b" * 12 and row["Quantization"] == "bnb:nf4"
    assert row["Degenerate"] == "3 of 40" and "degenerate" in row["Badge"] and row["Access"]
    plain = shown.loc["acme/plain"]
    assert plain["Checkpoint sha256"] == plain["Quantization"] == plain["Degenerate"] == ""
    assert "degenerate" not in plain["Badge"]
    assert board_table.leaderboard_table(board.rows(), access="hub").order == table.order  # both on the Hub
    assert any(k.startswith(f"file:{'b' * 16}+quantized=bnb:nf4") for k in table.order)  # the row key's parts
    assert links.hub_file_url("hf://org/ckpt@abc123/sd15.safetensors") == \
        "https://huggingface.co/org/ckpt/blob/abc123/sd15.safetensors"
    assert links.Links(root=tmp_path).model("hf://org/ckpt/sd15.safetensors", "x.json") == \
        "https://huggingface.co/org/ckpt/blob/main/sd15.safetensors"
    assert links.hub_file_url("hf://bad--org/ckpt/x.safetensors") is None and links.hub_file_url("org/a") is None


def test_an_adapter_is_named_by_its_record_through_the_contents_table(tmp_path):
    """The name an adapter's record gives (a LoRA's card) reaches the Model cell of a board read
    from its contents table; a table of the previous layout (no name in the struct) is of an older
    version: the files are read instead."""
    from submissions.leaderboard import contents

    doc = make_doc("acme/model-a", 0.1)
    doc["model"]["adapters"] = [{"kind": "lora", "id": "org/style-lora/pytorch_lora_weights.safetensors",
                                 "name": "Pixel Art XL", "sha256": "a" * 64, "scale": 1.0}]
    _write(tmp_path, "results/a/1.json", doc)
    contents.build_contents(tmp_path)
    board = contents.load_board(tmp_path)
    assert list(wording.index_labels(board.index).values()) == ["acme/model-a + LoRA Pixel Art XL"]
    old = pq.read_table(tmp_path / contents.CONTENTS_FILE)
    field = old.schema.field("adapters")
    older = pa.list_(pa.struct([f for f in field.type.value_type if f.name != "name"]))
    rows = [[{k: v for k, v in a.items() if k != "name"} for a in r] for r in old.column("adapters").to_pylist()]
    pq.write_table(old.set_column(old.schema.get_field_index("adapters"), "adapters", pa.array(rows, type=older)),
                   tmp_path / contents.CONTENTS_FILE)
    with pytest.raises(contents.OldTable, match="adapters of another type"):
        contents.read_table(tmp_path / contents.CONTENTS_FILE)
    again = contents.load_board(tmp_path)  # the files, read again: the same row
    assert list(wording.index_labels(again.index).values()) == ["acme/model-a + LoRA Pixel Art XL"]


def test_the_mean_win_rate_is_worked_out_as_heim_does():
    """Three models, two scores (both lower is better): a beats b and c on the first (2 of 2), ties b
    on the second, which c has no value of (a half of 1): (1 + 0.5) / 2 = 0.75; b beats c on the
    first and ties a on the second: (0.5 + 0.5) / 2; c has only the first score and beats no one."""
    name1, name2 = [n for n, m in SCORE_METADATA.items() if m.headline and m.lower_is_better is True][:2]
    frame = pd.DataFrame({"demo": [False, False, False], "reference": [None] * 3,
                          name1: [0.1, 0.2, 0.3], f"{name1}_suite": ["s"] * 3,
                          name2: [0.1, 0.1, np.nan], f"{name2}_suite": ["s", "s", None]})
    for n in (name1, name2):
        frame[f"{n}_low"], frame[f"{n}_high"] = frame[n], frame[n]
    got = board_table.win_rates(frame, [name1, name2])
    assert got.tolist() == pytest.approx([0.75, 0.5, 0.0])


def test_every_order_keeps_undefined_and_demo_rows_last(tmp_path):
    rows = _board(tmp_path).rows()
    for how in (bv.BY_VALUE, bv.BY_VALUE_WORST, bv.CONSERVATIVE, bv.CONSERVATIVE_WORST, bv.WIN_RATE):
        models = list(board_table.leaderboard_table(rows, order=how).shown()["Model"])
        assert models[-2:] == ["delta/undefined", "builtin:tiny-sd"], (how, models)


# --------------------------------------------------------------------------- downloads


def test_the_download_is_every_row_of_the_view_with_its_revision(tmp_path):
    board = _board(tmp_path)
    index, labels = board.index, wording.index_labels(board.index)
    view = board_table.view_board(index, search="model", order=bv.BY_VALUE_WORST)
    table = export.board_export(index, view, labels, "org/results@abc123")
    page = board_table.leaderboard_table(index, search="model", order=bv.BY_VALUE_WORST, page=1, page_size=2)
    assert table.column("key").to_pylist() == page.order  # every row of the view, not the page of 2
    assert set(index.table.schema.names) <= set(table.schema.names)
    assert set(table.column("contents_revision").to_pylist()) == {"org/results@abc123"}
    csv_path = export.write_export(table, "csv", tmp_path / "dl", view_query="q=model")
    frame = pd.read_csv(csv_path)
    assert frame["model"].tolist() == [labels[k] for k in page.order]
    lora = frame[frame["model"].str.contains("LoRA")].iloc[0]
    assert json.loads(lora["adapters"])[0]["id"] == "org/style-lora/pytorch_lora_weights.safetensors"
    parquet = pq.read_table(export.write_export(table, "parquet", tmp_path / "dl", view_query="q=model"))
    assert parquet.schema.metadata[b"contents_revision"] == b"org/results@abc123"
    assert parquet.schema.metadata[b"view"] == b"q=model"
    assert parquet.column("rank_by_value").to_pylist() == frame["rank_by_value"].astype("Int64").tolist()
    with pytest.raises(ValueError, match="format"):
        export.write_export(table, "xlsx", tmp_path)


# --------------------------------------------------------------------------- words and links


def test_every_score_is_explained_from_its_metadata():
    text = about.about_markdown()
    helps = about.header_help()
    for name, meta in SCORE_METADATA.items():
        if not meta.headline:
            continue
        column = score_columns.value_column(name)
        assert column in helps and meta.description in helps[column]
        assert meta.description in text and column in text
    for header in ("Model", "Rank", "Tier", "Range", "Badge", "Suites", "Win rate", "Date"):
        assert helps[header], header
    assert "What the intervals do not adjust for" in text and "@software" in text
    assert "HEIM" in text  # why the overall view is what it is


def test_links_and_adapter_names(tmp_path):
    hub = links.Links(repo="org/results", revision="abc")
    assert hub.results_file("results/a b/1.json") == ("https://huggingface.co/datasets/org/results/blob/abc/"
                                                      "results/a%20b/1.json")
    assert hub.model("acme/model-a", "x.json") == "https://huggingface.co/acme/model-a"
    assert hub.model("builtin:tiny-sd", "x.json").endswith("/blob/abc/x.json")  # no Hub page: its file
    assert hub.contents() == "https://huggingface.co/datasets/org/results"
    local = links.Links(root=tmp_path)
    assert local.results_file("r/1.json") == f"gradio_api/file={tmp_path.resolve().as_posix()}/r/1.json"
    assert local.contents() is None  # no table in the folder
    assert links.Links(repo="not a repo").results_file("x.json") is None
    run = tmp_path / "runs" / "one"
    (run / "report").mkdir(parents=True)
    (run / "report" / "report.html").write_text("<html></html>")
    assert local.report(run).endswith("runs/one/report/report.html") and local.report(None) is None
    hub_lora = {"kind": "lora", "id": "org/style/pytorch_lora_weights.safetensors", "sha256": "a" * 64}
    assert links.adapter_name(hub_lora) == "org/style" and links.adapter_url(hub_lora) == "https://huggingface.co/org/style"
    assert links.adapter_name({**hub_lora, "id": "org/style/v2.safetensors"}) == "org/style/v2.safetensors"
    assert links.adapter_name({**hub_lora, "name": "Pixel art style"}) == "Pixel art style"  # the record's own name
    local_lora = {"kind": "lora", "id": "/data/my-lora/pytorch_lora_weights.safetensors", "sha256": "a" * 64}
    assert links.adapter_name(local_lora) == "my-lora" and links.adapter_url(local_lora) is None


# --------------------------------------------------------------------------- reload


def test_a_reload_that_finds_nothing_changed_keeps_the_board(tmp_path, monkeypatch):
    root = write_sample_results(tmp_path / "lb")
    st = BoardState(Source(results_dir=root))
    index = st.index
    reads = []
    real = results_files.read_and_check
    monkeypatch.setattr(results_files, "read_and_check", lambda *a, **k: reads.append(a) or real(*a, **k))
    change = st.reload()
    assert change.nothing and st.index is index and reads == [] and change.text() == "nothing changed"
    added = _write(root, "results/new/1.json", make_doc("new/model", 0.3))
    change = st.reload()
    assert not change.nothing and change.added == {"new/model@main"} and not change.changed and not change.removed
    doc = make_doc("new/model", 0.4)
    added.write_text(json.dumps(doc))
    os.utime(added, ns=(1, 1))  # another size and time: read again
    change = st.reload()
    assert change.changed == {"new/model@main"} and change.touches(["new/model@main"])
    added.unlink()
    assert st.reload().removed == {"new/model@main"}
    assert st.reload().nothing


def test_a_score_entry_of_other_suites_only_is_not_scored(tmp_path):
    extra = [res.score_entry("mad_gender", "dalleval_bias", 0.2, ci=_ci(0.2), n=38)]
    _write(tmp_path, "r/a.json", make_doc("a/m", 0.1, extra=extra, suites=("gep_neutral", "dalleval_bias")))
    _write(tmp_path, "r/b.json", make_doc("b/m", 0.2))
    rows = results_files.load_folder(tmp_path).rows()
    t = board_table.leaderboard_table(rows, view="All headline scores")
    cells = dict(zip(t.shown()["Model"], t.shown()[t.headers[t.first_score + 1]]))
    assert cells == {"a/m": "0.2 [0.18, 0.22]", "b/m": "not scored"}
