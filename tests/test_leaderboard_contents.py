"""The leaderboard's contents table: 1,000 results read through one parquet read (the test
counts reads, it times nothing), files that changed since the table read again, the table
rebuilt by a command, and ``t2ibench leaderboard`` with a requests queue."""

from __future__ import annotations

import json

import pytest
from cli_here import exit_status

from submissions.leaderboard import board_table, contents, results_files
from test_leaderboard import _write, make_doc

N_RESULTS = 1000


def counter(monkeypatch, owner, name: str) -> list[int]:
    """Counts the calls of ``owner.name`` from now on (in the one item of the list returned)."""
    real, calls = getattr(owner, name), [0]

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(owner, name, counted)
    return calls


class Reads:
    """Counts per-file reads (the package's one results reader) and contents-table reads."""

    def __init__(self, monkeypatch):
        self._files = counter(monkeypatch, results_files, "load_results_file")
        self._tables = counter(monkeypatch, contents.pq, "read_table")

    files = property(lambda self: self._files[0])
    tables = property(lambda self: self._tables[0])


@pytest.fixture(scope="module")
def thousand(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb1000")
    for i in range(N_RESULTS):
        _write(root, f"results/org{i:04d}--model/2025-01-01T00-00-00.json",
               make_doc(f"org{i:04d}/model", (i % 97) / 100))
    _write(root, "results/bad--range/1.json", make_doc("bad/range", 3.0))  # invalid: outside [0, 1]
    path, n = contents.build_contents(root)
    assert n == N_RESULTS + 1 and path == root / "contents" / "contents.parquet"
    return root


def test_a_thousand_results_load_in_one_read(thousand, monkeypatch):
    results_files.clear_cache()  # nothing served from the in-memory cache of the build
    reads = Reads(monkeypatch)
    board = contents.load_board(thousand)
    assert (reads.tables, reads.files) == (1, 0)
    assert len(board.submissions) == N_RESULTS and len(board.rows()) == N_RESULTS
    assert [s.source for s in board.skipped] == ["results/bad--range/1.json"]
    assert "outside its range" in board.skipped[0].problem
    table = board_table.leaderboard_table(board.rows())
    assert len(table.keys) == N_RESULTS


def test_the_table_alone_is_the_board(thousand, monkeypatch):
    """A Hub results dataset: only the table is downloaded; its rows are the board."""
    results_files.clear_cache()
    reads = Reads(monkeypatch)
    board = contents.load_board(thousand, files_present=False)
    assert (reads.tables, reads.files) == (1, 0) and len(board.submissions) == N_RESULTS


def test_files_changed_since_the_table_are_read_again(tmp_path, monkeypatch):
    root = tmp_path / "lb"
    for i in range(5):
        _write(root, f"results/org{i}--m/1.json", make_doc(f"org{i}/m", 0.1 * i))
    contents.build_contents(root)
    _write(root, "results/org1--m/1.json", make_doc("org1/m", 0.77, created="2025-01-01T00:00:01+00:00"))
    _write(root, "results/new--m/1.json", make_doc("new/m", 0.5))
    (root / "results/org4--m/1.json").unlink()
    results_files.clear_cache()
    reads = Reads(monkeypatch)
    board = contents.load_board(root)
    assert (reads.tables, reads.files) == (1, 2)  # the changed file and the new one
    values = {s.model_id: s.scores[0]["value"] for s in board.submissions}
    assert values == {"org0/m": 0.0, "org1/m": 0.77, "org2/m": 0.2, "org3/m": 0.30000000000000004, "new/m": 0.5}


def test_without_a_table_every_file_is_read(tmp_path, monkeypatch):
    root = tmp_path / "lb"
    for i in range(3):
        _write(root, f"results/org{i}--m/1.json", make_doc(f"org{i}/m", 0.1))
    results_files.clear_cache()
    reads = Reads(monkeypatch)
    assert len(contents.load_board(root).submissions) == 3 and (reads.tables, reads.files) == (0, 3)


def run_cli(argv, capsys):
    code = exit_status(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_build_contents_command(tmp_path, capsys):
    root = tmp_path / "lb"
    _write(root, "results/a--m/1.json", make_doc("a/m", 0.1))
    _write(root, "results/b--m/1.json", "{broken")
    code, out, _ = run_cli(["leaderboard", "build-contents", root], capsys)
    assert code == 0 and out.strip() == (f"wrote {root / contents.CONTENTS_FILE}: 2 files, 1 row, 1 skipped "
                                         "(2 read, 0 touched but unchanged, 0 unchanged, 0 gone)")
    _write(root, "results/c--m/1.json", make_doc("c/m", 0.2))  # a rebuild reads the new file only
    code, out, _ = run_cli(["leaderboard", "build-contents", root], capsys)
    assert code == 0 and out.strip().endswith("3 files, 2 rows, 1 skipped (1 read, 0 touched but unchanged, "
                                              "2 unchanged, 0 gone)")
    rows = contents.read_contents(root / contents.CONTENTS_FILE)
    assert json.loads(json.dumps(rows["results/a--m/1.json"].document))["model"]["id"] == "a/m"
    assert rows["results/b--m/1.json"].document is None and rows["results/b--m/1.json"].problems
    code, _, err = run_cli(["leaderboard", "build-contents", tmp_path / "nope"], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "no such folder" in err


def test_build_contents_counts_rows_and_conflicts(tmp_path, capsys):
    """Issue 51: three files of one row key said "3 shown"; the board shows one row and lists two
    conflicts."""
    root = tmp_path / "lb"
    for i, value in enumerate((0.1, 0.2, 0.3)):
        _write(root, f"results/a--m/{i}.json", make_doc("a/m", value))
    code, out, _ = run_cli(["leaderboard", "build-contents", root], capsys)
    assert code == 0 and ": 3 files, 1 row (2 other files of the same row key, conflicts not shown), 0 skipped" \
        in out, out
    assert len(contents.load_board(root).conflicts) == 2  # what the board says too
    _write(root, "results/b--m/1.json", make_doc("b/m", 0.1))
    code, out, _ = run_cli(["leaderboard", "build-contents", root], capsys)
    assert ": 4 files, 2 rows (2 other files of the same row key, conflicts not shown), 0 skipped" in out, out


def test_leaderboard_command_opens_the_submit_tab_with_a_queue(tmp_path, capsys, monkeypatch):
    pytest.importorskip("gradio")
    from submissions.leaderboard import app

    seen = {}
    monkeypatch.setattr(app, "build_app", lambda **kw: seen.update(kw) or "blocks")
    monkeypatch.setattr(app, "launch", lambda demo, **kw: seen.update(launched=demo))
    results, queue = tmp_path / "results", tmp_path / "queue"
    results.mkdir()
    queue.mkdir()
    code, out, _ = run_cli(["leaderboard", "--results", results, "--requests-folder", queue], capsys)
    assert code == 0 and seen["requests_dir"] == str(queue) and seen["requests_repo"] is None
    assert seen["launched"] == "blocks" and "(Submit tab)" in out
    for argv, message in ([["--results", results, "--requests", "not-a-repo"], "--requests takes a Hub dataset id"],
                          [["--results", results, "--requests-folder", tmp_path / "none"], "no such folder"],
                          [["--requests-folder", queue], "give --results DIR or --repo ORG/NAME"],
                          [["--results", results, "--port", "70000"], "between 1 and 65535"]):
        code, _, err = run_cli(["leaderboard", *argv], capsys)
        assert code == 2 and len(err.splitlines()) == 1 and message in err, (argv, err)


def test_the_app_reads_the_folder_through_the_table(thousand, monkeypatch):
    pytest.importorskip("gradio")
    from submissions.leaderboard import app_state

    results_files.clear_cache()
    reads = Reads(monkeypatch)
    board = app_state.Source(results_dir=thousand).load()
    assert (reads.tables, reads.files) == (1, 0) and len(board.submissions) == N_RESULTS


def _odd_folder(root):
    """A results folder with one valid file and entries that must not be read: a link to
    /etc/passwd, a link to a folder outside, a FIFO; and a link inside the folder (followed)."""
    import os

    good = _write(root, "results/a--m/1.json", make_doc("a/m", 0.1))
    (root / "results/evil").mkdir(parents=True)
    os.symlink("/etc/passwd", root / "results/evil/passwd.json")
    outside = root.parent / f"{root.name}-outside"
    _write(outside, "x/1.json", make_doc("x/outside", 0.2))
    os.symlink(outside / "x", root / "results/linked-folder")
    os.mkfifo(root / "results/fifo.json")
    (root / "results/b--m").mkdir()
    os.symlink(good, root / "results/b--m/1.json")  # inside the folder: read (the same file twice: a conflict)
    return root


def test_links_that_leave_the_folder_and_odd_files_are_not_read(tmp_path, capsys, monkeypatch):
    from submissions.leaderboard import wording

    root = _odd_folder(tmp_path / "lb")
    reads = Reads(monkeypatch)
    code, out, _ = run_cli(["leaderboard", "build-contents", root], capsys)
    assert code == 0 and "not valid JSON" not in out and reads.files == 2, out  # the file and the link inside
    assert "3 entries not read: results/evil/passwd.json (a link that leaves the results folder" in out
    assert "results/fifo.json (not a regular file" in out and "results/linked-folder (a link to a folder" in out
    rows = contents.read_contents(root / contents.CONTENTS_FILE)
    assert sorted(rows) == ["results/a--m/1.json", "results/b--m/1.json"]
    for board in (contents.load_board(root), results_files.load_folder(root)):
        skipped = {s.source: s.problem for s in board.skipped}
        assert skipped == {"results/evil/passwd.json": results_files.LEAVES_FOLDER,
                           "results/fifo.json": results_files.NOT_A_FILE,
                           "results/linked-folder": results_files.LINKED_FOLDER}
        assert "**results/evil/passwd.json** skipped: a link that leaves the results folder" in \
            wording.warnings_markdown(board)
        assert [s.model_id for s in board.submissions] == ["a/m", "a/m"]


def test_a_hub_download_follows_its_links_into_its_cache_only(tmp_path):
    import os

    cache = tmp_path / "datasets--org--results"
    blob = _write(cache, "blobs/abc", make_doc("a/m", 0.1))
    snapshot = cache / "snapshots" / "rev"
    (snapshot / "results/a").mkdir(parents=True)
    os.symlink(blob, snapshot / "results/a/1.json")
    os.symlink("/etc/passwd", snapshot / "results/a/2.json")
    board = results_files.load_folder(snapshot, within=results_files.hub_cache_folder(snapshot))
    assert [s.model_id for s in board.submissions] == ["a/m"]
    assert [(s.source, s.problem) for s in board.skipped] == [("results/a/2.json", results_files.LEAVES_FOLDER)]
