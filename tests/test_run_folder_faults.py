"""A run folder that verifies itself: each fault below is found by `t2ibench verify`, refused by
the stages that would read it wrongly, and repaired by running generation again.

One real run of builtin:tiny-sd (two suites, 8 images in batches of 2, annotated and scored) is
made once for the module; every test works on its own copy.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmark.cli import main
from benchmark.contract.run_folder import RunFolderError, read_manifest
from benchmark.contract.run_folder_check import PROBLEM_KINDS
from benchmark.runner.expected import check_run_folder

GEN_ARGS = ("--model", "builtin:tiny-sd", "--suites", "gep_neutral", "pst_single", "--limit", "4",
            "--batch-size", "2", "--quiet")


def t2ibench(capsys, *args) -> tuple[int, str, str]:
    """The CLI in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("WARNING:")]
    assert len(lines) == 1 and lines[0].startswith("t2ibench: error: "), err
    return lines[0]


def labels(run: Path, name: str) -> pd.DataFrame:
    df = pd.read_parquet(run / "labels" / f"{name}.parquet")
    cols = [c for c in df.columns if c not in ("embedding", "score")]
    return df[cols].astype(str).sort_values(cols).reset_index(drop=True)


def png_bytes(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted((run / "images").rglob("*.png"))}


@pytest.fixture(scope="module")
def base(tmp_path_factory, cache):
    run = tmp_path_factory.mktemp("faults") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        assert main(["run", *GEN_ARGS, "--n-resamples", "20", "--out", str(run)]) == 0
    assert check_run_folder(run) == []
    return run


@pytest.fixture()
def run(base, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    dst = tmp_path / "run"
    shutil.copytree(base, dst)
    return dst


def regenerate(capsys, run: Path, command: str = "generate") -> str:
    extra = ("--n-resamples", "20") if command == "run" else ()
    rc, _, err = t2ibench(capsys, command, *GEN_ARGS, *extra, "--out", run)
    assert rc == 0, err[-3000:]
    return err


def assert_verifies(capsys, run: Path, *, after_generate: bool = False) -> None:
    """verify says OK; ``after_generate``: once the annotate stage has labelled the images that
    generation made again (until then verify names only their missing label rows)."""
    rc, out, _ = t2ibench(capsys, "verify", run)
    if after_generate and rc == 1:
        assert {line.split()[0] for line in out.splitlines()[:-1]} == {"label-rows"}, out
        assert "not computed yet" in out and f"t2ibench annotate {run}" in out
        rc, _, err = t2ibench(capsys, "annotate", run, "--quiet")
        assert rc == 0, err
        rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 0 and out.startswith("OK "), out


# --------------------------------------------------------------------------- the clean run


def test_clean_run_verifies_and_results_record_batch_sizes(run, capsys):
    assert_verifies(capsys, run)
    results = json.loads((run / "results.json").read_text())
    assert results["run"]["batch_size"] == 2          # generation, from run_config.json
    assert results["run"]["annotate_batch_size"] == 32  # the annotate stage's default
    rc, _, err = t2ibench(capsys, "annotate", run, "--batch-size", "3", "--force", "--quiet")
    assert rc == 0, err
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20")
    assert rc == 0, err
    from benchmark.contract.results import validate_results

    results = json.loads((run / "results.json").read_text())
    assert results["run"]["annotate_batch_size"] == 3
    assert validate_results(results) == []


def test_a_resume_with_another_batch_size_is_recorded(run, capsys):
    results = json.loads((run / "results.json").read_text())
    assert results["run"]["generation_batch_sizes"] == [2]
    shutil.rmtree(next(p for p in sorted((run / "images").iterdir()) if p.is_dir()))
    args = [a if a != "2" else "1" for a in GEN_ARGS]  # --batch-size 1 this time
    rc, _, err = t2ibench(capsys, "run", *args, "--n-resamples", "20", "--out", run)
    assert rc == 0, err[-3000:]
    results = json.loads((run / "results.json").read_text())
    assert results["run"]["batch_size"] == 2 and results["run"]["generation_batch_sizes"] == [2, 1]
    from benchmark.contract.results import validate_results

    assert validate_results(results) == []


def test_verify_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    rc, _, err = t2ibench(capsys, "verify", tmp_path)
    assert rc == 2 and "not a run folder" in one_error_line(err)


# --------------------------------------------------------------------------- images


def test_truncated_png_is_named_refused_and_regenerated_byte_identical(run, capsys):
    before, attributes_before = png_bytes(run), labels(run, "attributes")
    rel = "images/b000002/000003.png"
    (run / rel).write_bytes(before[rel][: len(before[rel]) // 2])
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1
    assert out.splitlines()[0].startswith("image-sha256") and rel in out and "truncated" in out
    # annotate and score refuse it before working, naming the file in one line
    for cmd in ("annotate", "score"):
        rc, _, err = t2ibench(capsys, cmd, run)
        assert rc == 2 and rel in one_error_line(err) and "t2ibench verify" in err, err
    # the annotate stage alone (no check) names the file instead of a traceback when it decodes
    # it (without the embedding cache, which holds this image's embedding by its recorded sha256)
    from benchmark.runner.annotate import annotate_run

    shutil.move(run / "embeddings", run.parent / "embeddings")

    with pytest.raises(RunFolderError, match="000003.png cannot be decoded"):
        annotate_run(run, progress=False, force=True)
    shutil.move(run.parent / "embeddings", run / "embeddings")
    err = regenerate(capsys, run)
    assert "repaired: images/b000002 removed" in err and rel in err
    assert png_bytes(run) == before  # byte-identical on CPU
    # the label rows of the regenerated probes were dropped, and annotate computes them again
    pids = set(read_manifest(run).query("batch == 'b000002'")["probe_id"])
    assert not pids & set(pd.read_parquet(run / "labels" / "attributes.parquet")["probe_id"])
    assert "labels/attributes.parquet: dropped" in err
    assert_verifies(capsys, run, after_generate=True)
    rc, _, err = t2ibench(capsys, "annotate", run, "--quiet")
    assert rc == 0, err
    pd.testing.assert_frame_equal(labels(run, "attributes"), attributes_before)


def test_swapped_pngs_are_both_named(run, capsys):
    a, b = run / "images/b000000/000000.png", run / "images/b000004/000005.png"
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    problems = check_run_folder(run)
    assert [(p.kind, p.where) for p in problems] == [("image-sha256", "images/b000000/000000.png"),
                                                     ("image-sha256", "images/b000004/000005.png")]
    assert "holds the bytes of images/b000004/000005.png" in problems[0].message
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and "000000.png" in out and "000005.png" in out
    regenerate(capsys, run)
    assert a.read_bytes() == da and b.read_bytes() == db
    assert_verifies(capsys, run, after_generate=True)


def test_symlink_out_of_the_run_folder_is_refused(run, tmp_path, capsys):
    rel = "images/b000000/000001.png"
    outside = tmp_path / "elsewhere.png"
    shutil.copyfile(run / rel, outside)  # the same bytes: only where it lies is wrong
    (run / rel).unlink()
    os.symlink(outside, run / rel)
    assert [(p.kind, p.where) for p in check_run_folder(run)] == [("image-outside", rel)]
    rc, _, err = t2ibench(capsys, "score", run)
    assert rc == 2 and rel in one_error_line(err)
    regenerate(capsys, run)
    assert not (run / rel).is_symlink() and outside.is_file()  # the file outside is never touched
    assert_verifies(capsys, run, after_generate=True)


# --------------------------------------------------------------------------- manifest


def test_edited_manifest_gender_is_refused_by_score(run, capsys):
    m = read_manifest(run)
    i = m.index[m["suite"] == "gep_neutral"][0]
    pid, old = m.at[i, "probe_id"], m.at[i, "gender"]
    m.at[i, "gender"] = "man" if old == "woman" else "woman"
    m.to_parquet(run / "manifest.parquet", index=False)
    results_before = (run / "results.json").read_bytes()
    rc, _, err = t2ibench(capsys, "score", run)
    line = one_error_line(err)
    assert rc == 2 and "manifest.parquet" in line and pid in line and "gender" in line
    assert "t2ibench run" in line and "t2ibench verify" in line
    assert (run / "results.json").read_bytes() == results_before  # nothing written
    err = regenerate(capsys, run)
    assert "repaired: manifest.parquet is rewritten" in err
    assert read_manifest(run).set_index("probe_id").at[pid, "gender"] == old
    assert_verifies(capsys, run)


def test_dropped_manifest_row_is_refused_by_score(run, capsys):
    m = read_manifest(run)
    pid = m.at[3, "probe_id"]
    m.drop(index=3).to_parquet(run / "manifest.parquet", index=False)
    rc, _, err = t2ibench(capsys, "score", run)
    line = one_error_line(err)
    assert rc == 2 and "manifest.parquet" in line and pid in line
    regenerate(capsys, run)
    assert_verifies(capsys, run)


def test_image_path_outside_the_run_is_refused_by_annotate_and_score(run, tmp_path, capsys):
    m = read_manifest(run)
    outside = tmp_path / "elsewhere.png"
    shutil.copyfile(run / m.at[0, "image_path"], outside)
    for bad in (str(outside), "../elsewhere.png", "images/../../elsewhere.png"):
        m.at[0, "image_path"] = bad
        m.to_parquet(run / "manifest.parquet", index=False)
        problems = check_run_folder(run)
        assert problems[0].kind == "image-outside" and problems[0].probe_id == m.at[0, "probe_id"]
        for cmd in ("annotate", "score"):
            rc, _, err = t2ibench(capsys, cmd, run)
            assert rc == 2 and repr(bad) in one_error_line(err), (cmd, err)
        # the annotate stage refuses it even without the full check
        from benchmark.runner.annotate import annotate_run

        with pytest.raises(RunFolderError, match="outside the run folder"):
            annotate_run(run, progress=False, force=True)
    regenerate(capsys, run)
    assert_verifies(capsys, run)


# --------------------------------------------------------------------------- batches and metadata


def test_deleted_batch_is_refused_by_score_and_regenerated_by_run(run, capsys):
    before = png_bytes(run)
    shutil.rmtree(run / "images" / "b000004")
    rc, _, err = t2ibench(capsys, "score", run)
    assert rc == 2 and "manifest.parquet" in one_error_line(err) and "no metadata.jsonl lists" in err
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and sum(ln.startswith("manifest ") for ln in out.splitlines()) == 2  # both rows of the batch
    regenerate(capsys, run, "run")
    assert png_bytes(run) == before
    assert_verifies(capsys, run)


@pytest.mark.parametrize("line_no", [1, 0], ids=["second-row", "first-row"])
def test_removed_metadata_row_is_regenerated_without_orphan(run, capsys, line_no):
    before = png_bytes(run)
    meta = run / "images" / "b000002" / "metadata.jsonl"
    lines = meta.read_text().splitlines(keepends=True)
    removed = json.loads(lines.pop(line_no))
    meta.write_text("".join(lines))
    kinds = {p.kind for p in check_run_folder(run)}
    assert "orphan-image" in kinds and "manifest" in kinds
    err = regenerate(capsys, run)
    assert "repaired: images/b000002 removed" in err
    assert png_bytes(run) == before  # the orphan is replaced by the regenerated file, nothing else left
    assert removed["probe_id"] in set(read_manifest(run)["probe_id"])
    assert_verifies(capsys, run, after_generate=True)


def test_orphan_outside_any_batch_is_removed(run, capsys):
    stray = run / "images" / "stray.png"
    shutil.copyfile(run / "images/b000000/000000.png", stray)
    assert [(p.kind, p.where) for p in check_run_folder(run)] == [("orphan-image", "images/stray.png")]
    err = regenerate(capsys, run)
    assert "repaired: images/stray.png removed" in err and not stray.exists()
    assert_verifies(capsys, run)


def test_edited_metadata_row_is_regenerated(run, capsys):
    meta = run / "images" / "b000000" / "metadata.jsonl"
    original = meta.read_text()
    rows = [json.loads(ln) for ln in original.splitlines()]
    rows[0]["gender"] = "man" if rows[0]["gender"] == "woman" else "woman"
    meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = check_run_folder(run)  # the manifest no longer matches its metadata
    assert problems[0].kind == "manifest" and "gender" in problems[0].message
    err = regenerate(capsys, run)
    assert "repaired: images/b000000 removed" in err and "the probe list says" in err
    assert [json.loads(ln)["gender"] for ln in meta.read_text().splitlines()] == \
        [json.loads(ln)["gender"] for ln in original.splitlines()]
    assert_verifies(capsys, run, after_generate=True)


# --------------------------------------------------------------------------- labels


def test_corrupt_label_file_is_set_aside_and_rebuilt(run, capsys):
    before = labels(run, "gender")
    path = run / "labels" / "gender.parquet"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    problems = check_run_folder(run)
    assert [(p.kind, p.where) for p in problems] == [("label-unreadable", "labels/gender.parquet")]
    rc, _, err = t2ibench(capsys, "score", run)
    assert rc == 2 and "labels/gender.parquet" in one_error_line(err) and "t2ibench annotate" in err
    err = regenerate(capsys, run, "run")
    assert "repaired: labels/gender.parquet cannot be read" in err
    aside = list((run / "labels").glob("gender.parquet.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == data[: len(data) // 3]
    pd.testing.assert_frame_equal(labels(run, "gender"), before)
    assert_verifies(capsys, run)


def test_problem_kinds_are_reported_in_a_fixed_order(run):
    (run / "labels" / "gender.parquet").write_bytes(b"not parquet")
    shutil.copyfile(run / "images/b000000/000000.png", run / "images/b000000/000099.png")
    (run / "images/b000002/000002.png").unlink()
    m = read_manifest(run)
    m.at[5, "gender"] = "someone"
    m.to_parquet(run / "manifest.parquet", index=False)
    kinds = [p.kind for p in check_run_folder(run)]
    assert kinds == ["manifest", "image-missing", "orphan-image", "label-unreadable"]
    assert kinds == sorted(kinds, key=PROBLEM_KINDS.index)


# --------------------------------------------------------------------------- issue 23: `t2ibench run` repairs as `generate` does


def _delete_metadata(run: Path) -> None:
    (run / "images" / "b000002" / "metadata.jsonl").unlink()


def _truncate_metadata(run: Path) -> None:
    meta = run / "images" / "b000002" / "metadata.jsonl"
    meta.write_bytes(meta.read_bytes()[:300])  # mid-line, inside a string


def _copy_batch(run: Path) -> None:
    shutil.copytree(run / "images" / "b000002", run / "images" / "b000009")


@pytest.mark.parametrize("damage", [_delete_metadata, _truncate_metadata, _copy_batch],
                         ids=["metadata-deleted", "metadata-truncated", "batch-copied"])
def test_the_same_run_command_repairs_what_generate_repairs(run, capsys, damage):
    before = png_bytes(run)
    damage(run)
    err = regenerate(capsys, run, "run")
    assert "repaired: images/b00000" in err
    assert png_bytes(run) == before and not (run / "images" / "b000009").exists()
    assert_verifies(capsys, run)


def test_a_truncated_metadata_file_is_named_in_every_error(run, capsys):
    from benchmark.contract.run_folder import scan_batches

    _truncate_metadata(run)
    meta = run / "images" / "b000002" / "metadata.jsonl"
    with pytest.raises(RunFolderError) as caught:
        scan_batches(run)
    assert str(caught.value).startswith(f"{meta} line 1 is not valid JSON (Unterminated string")
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and out.splitlines()[0].startswith("batch") and "images/b000002/metadata.jsonl: line 1" in out


def test_bytes_appended_after_a_png_are_reported_as_such(run, capsys):
    rel = "images/b000000/000000.png"
    with open(run / rel, "ab") as fh:
        fh.write(b"<script>")
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1
    first = out.splitlines()[0]
    assert first.startswith("image-sha256") and rel in first, out
    assert first.endswith("the file has 8 bytes appended after the PNG's end chunk") and "truncated" not in out


def test_a_corrupt_timings_file_is_not_called_unannotated(run, capsys):
    (run / "timings.json").write_text('{"annotate/total": {"seconds": 1.0,')
    rc, _, err = t2ibench(capsys, "score", run)
    line = one_error_line(err)
    assert rc == 2 and "has not been annotated" not in line
    assert "timings.json is damaged (is not valid JSON" in line and "t2ibench annotate" in line


@pytest.mark.parametrize("damage", ["deleted", "garbled", "truncated", "not an object", "entry removed"])
def test_a_damaged_timings_file_is_reported_and_repaired_by_annotate(run, capsys, damage):
    """Issue 41: verify said OK, score "not annotated", annotate "up to date, wrote none": stuck."""
    path = run / "timings.json"
    text = path.read_text()
    {"deleted": lambda: path.unlink(), "garbled": lambda: path.write_bytes(b"\xff\xfe{x"),
     "truncated": lambda: path.write_text(text[: len(text) // 2]), "not an object": lambda: path.write_text("[1]"),
     "entry removed": lambda: path.write_text(json.dumps({k: v for k, v in json.loads(text).items()
                                                          if k != "annotate/total"}))}[damage]()
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and out.splitlines()[0].startswith("timings") and "annotation finished" in out, out
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20")
    line = one_error_line(err)
    assert rc == 2 and "timings.json is damaged" in line and f"t2ibench annotate {run}" in line
    rc, out, err = t2ibench(capsys, "annotate", run, "--quiet")  # labels up to date: records annotate/total
    assert rc == 0 and "wrote none" in out, err
    assert_verifies(capsys, run)
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20")
    assert rc == 0, err


def _drop_half_the_rows(run: Path, name: str) -> None:
    """Rows of half the images of a label file dropped and its sha256 record rewritten to match."""
    import hashlib

    path = run / "labels" / f"{name}.parquet"
    df = pd.read_parquet(path)
    keep = sorted(set(df["probe_id"]))[::2]
    df[df["probe_id"].isin(keep)].to_parquet(path, index=False)
    (run / "labels" / f"{name}.parquet.sha256").write_text(hashlib.sha256(path.read_bytes()).hexdigest() + "\n")


@pytest.mark.parametrize(("damage", "kind"), [("file deleted, record left", "label-missing"),
                                              ("file and record deleted", "label-missing"),
                                              ("rows dropped, record rewritten", "label-rows")])
def test_a_label_file_deleted_or_cut_is_reported_refused_and_rebuilt(run, capsys, damage, kind):
    """Issue 41: verify said OK and score wrote results with fewer entries, exit 0."""
    before = labels(run, "gender")
    if damage == "rows dropped, record rewritten":
        _drop_half_the_rows(run, "gender")
    else:
        (run / "labels" / "gender.parquet").unlink()
        if damage == "file and record deleted":
            (run / "labels" / "gender.parquet.sha256").unlink()
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and out.splitlines()[0].startswith(f"{kind}  labels/gender.parquet"), out
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20")
    line = one_error_line(err)
    assert rc == 2 and "labels/gender.parquet" in line and f"t2ibench annotate {run}" in line
    rc, _, err = t2ibench(capsys, "annotate", run, "--quiet")
    assert rc == 0, err
    pd.testing.assert_frame_equal(labels(run, "gender"), before)
    assert_verifies(capsys, run)


def test_score_exits_1_naming_suites_not_fully_scored_unless_allowed(run, capsys):
    """Labels turned off on purpose (--vqa none): the folder verifies, and score says which suite
    is not scored and why instead of exiting 0 with fewer entries."""
    for name in ("gender",):
        (run / "labels" / f"{name}.parquet").unlink()
        (run / "labels" / f"{name}.parquet.sha256").unlink()
    rc, _, err = t2ibench(capsys, "annotate", run, "--vqa", "none", "--quiet")
    assert rc == 0, err
    assert_verifies(capsys, run)
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20")
    line = one_error_line(err)
    assert rc == 1 and "1 of 2 suites" in line and "pst_single (missing labels/gender.parquet)" in line
    assert "--allow-partial" in line
    rc, out, err = t2ibench(capsys, "score", run, "--n-resamples", "20", "--allow-partial")
    assert rc == 0 and "1 of 2 suites not fully scored" in out, err


# --------------------------------------------------------------------------- issue 23: verify follows the scores


def _drop_batch_and_its_manifest_rows(run: Path) -> None:
    shutil.rmtree(run / "images" / "b000004")
    m = read_manifest(run)
    m[m["batch"] != "b000004"].to_parquet(run / "manifest.parquet", index=False)


def _flip_gender_everywhere(run: Path) -> None:
    meta = run / "images" / "b000000" / "metadata.jsonl"
    rows = [json.loads(ln) for ln in meta.read_text().splitlines()]
    rows[0]["gender"] = "man" if rows[0]["gender"] == "woman" else "woman"
    meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = read_manifest(run)
    m.loc[m["probe_id"] == rows[0]["probe_id"], "gender"] = rows[0]["gender"]
    m.to_parquet(run / "manifest.parquet", index=False)


def _edit_config(run: Path, change) -> None:
    config = json.loads((run / "run_config.json").read_text())
    change(config)
    (run / "run_config.json").write_text(json.dumps(config))


def _another_model(run: Path) -> None:
    _edit_config(run, lambda c: c["model"].update(spec="acme/other", model_id="acme/other"))


def _another_limit(run: Path) -> None:
    _edit_config(run, lambda c: c.update(limit_per_suite=2))


def _garbage_config(run: Path) -> None:
    (run / "run_config.json").write_text("[1, 2]")


@pytest.mark.parametrize("damage, first", [
    (_drop_batch_and_its_manifest_rows, "probe-missing  pst_single/occupation/"),
    (_flip_gender_everywhere, "row-mismatch  images/b000000/metadata.jsonl (probe gep_neutral/woman/"),
    (_another_model, "row-mismatch  images/b000000/metadata.jsonl (probe "),
    (_another_limit, "run-config  run_config.json: probes_sha256 is not the fingerprint of the probe list"),
    (_garbage_config, "run-config  run_config.json: "),
], ids=["batch-and-manifest-rows-dropped", "gender-flipped-in-metadata-and-manifest", "config-names-another-model",
        "config-limit-edited", "config-garbage"])
def test_verify_and_score_check_the_folder_against_what_the_run_asked_for(run, capsys, damage, first):
    assert_verifies(capsys, run)
    damage(run)
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and " ".join(out.splitlines()[0].split()).startswith(" ".join(first.split())), out
    rc, _, err = t2ibench(capsys, "score", run)
    # a run_config.json that is no run configuration at all is refused as the command reads the
    # folder (it names the file); every other damage by the folder check before scoring
    refusal = ("run_config.json is not a run configuration" if damage is _garbage_config else "score refused")
    assert rc == 2 and refusal in one_error_line(err), err
    if damage is _another_model:
        assert "model_id is 'builtin:tiny-sd', run_config.json says 'acme/other'" in out


def test_a_dropped_batch_and_a_flipped_gender_are_repaired_by_run(run, capsys):
    before = png_bytes(run)
    _drop_batch_and_its_manifest_rows(run)
    _flip_gender_everywhere(run)
    regenerate(capsys, run, "run")
    assert png_bytes(run) == before
    assert_verifies(capsys, run)


# --------------------------------------------------------------------------- issue 23: files a score reads are hashed when written


def test_an_edited_label_value_is_reported_refused_and_rebuilt(run, capsys):
    before = labels(run, "attributes")
    path = run / "labels" / "attributes.parquet"
    assert (run / "labels" / "attributes.parquet.sha256").is_file()
    df = pd.read_parquet(path)
    df.loc[0, "label"] = 1 - int(df.loc[0, "label"])  # one label flipped
    df.to_parquet(path, index=False)
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and out.splitlines()[0].startswith("label-sha256  labels/attributes.parquet: bytes do not match")
    rc, _, err = t2ibench(capsys, "score", run)
    assert rc == 2 and "labels/attributes.parquet" in one_error_line(err) and "t2ibench annotate" in err
    rc, _, err = t2ibench(capsys, "annotate", run, "--quiet")
    assert rc == 0 and "moved aside" in err, err
    pd.testing.assert_frame_equal(labels(run, "attributes"), before)
    assert_verifies(capsys, run)


def test_a_rolled_embedding_cache_is_rebuilt_not_trusted(run, capsys):
    import numpy as np

    before = pd.read_parquet(run / "labels" / "attributes.parquet")
    [cache] = (run / "embeddings").glob("*/images.npy")
    np.save(cache, np.roll(np.load(cache), 1, axis=0))  # rows rolled by one: every image gets another's
    (run / "labels" / "attributes.parquet").unlink()
    with pytest.warns(UserWarning, match="does not match the sha256 recorded when it was written; rebuilding"):
        rc, _, err = t2ibench(capsys, "annotate", run, "--quiet")
    assert rc == 0, err
    pd.testing.assert_frame_equal(pd.read_parquet(run / "labels" / "attributes.parquet"), before)
    assert_verifies(capsys, run)


# ------------------------------------------------------------------ issue 33: what the hostile-user audit found


def first_problem(out: str) -> str:
    """verify's first line with its padding squeezed: ``kind where: message``."""
    return " ".join(out.splitlines()[0].split())


def test_swapped_label_files_are_reported_refused_and_rebuilt(run, capsys):
    before = {name: labels(run, name) for name in ("attributes", "gender")}
    d = run / "labels"
    for suffix in ("", ".sha256"):  # each file with its own record: both match their records
        (d / f"attributes.parquet{suffix}").rename(d / "swap")
        (d / f"gender.parquet{suffix}").rename(d / f"attributes.parquet{suffix}")
        (d / "swap").rename(d / f"gender.parquet{suffix}")
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and first_problem(out).startswith("label-schema labels/attributes.parquet: lacks column "
                                                     "'attribute'"), out
    assert "label-schema  labels/gender.parquet" in out
    assert f"`t2ibench annotate {run} --force` repairs them" in out  # the verify hint names what repairs it
    results_before = (run / "results.json").read_bytes()
    rc, _, err = t2ibench(capsys, "score", run)  # no KeyError: one line
    line = one_error_line(err)
    assert rc == 2 and "labels/attributes.parquet" in line and "t2ibench annotate" in line
    assert (run / "results.json").read_bytes() == results_before
    rc, _, err = t2ibench(capsys, "annotate", run, "--quiet")  # computes both files again
    assert rc == 0, err
    for name, frame in before.items():
        pd.testing.assert_frame_equal(labels(run, name), frame)
    assert_verifies(capsys, run)


def test_a_label_column_of_another_type_is_reported(run, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmark.contract.written_hashes import record_written

    path = run / "labels" / "attributes.parquet"
    table = pq.read_table(path)
    i = table.schema.get_field_index("label")
    pq.write_table(table.set_column(i, "label", table["label"].cast(pa.string())), path)
    record_written(path)  # with a matching record: only the type tells
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and first_problem(out).startswith("label-schema labels/attributes.parquet: column 'label' is "
                                                     "string, the annotate stage writes int64"), out
    err = regenerate(capsys, run, "run")
    assert "repaired: labels/attributes.parquet column 'label' is string" in err
    assert_verifies(capsys, run)


def _flip_nsfw(run: Path) -> str:
    meta = run / "images" / "b000002" / "metadata.jsonl"
    rows = [json.loads(ln) for ln in meta.read_text().splitlines()]
    assert rows[0]["nsfw"] is not True
    rows[0]["nsfw"] = True
    meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = read_manifest(run)
    m["nsfw"] = m["nsfw"].astype(object)
    m.loc[m["probe_id"] == rows[0]["probe_id"], "nsfw"] = True
    m.to_parquet(run / "manifest.parquet", index=False)
    return rows[0]["probe_id"]


def test_an_nsfw_flag_set_in_metadata_and_manifest_is_reported_refused_and_repaired(run, capsys):
    before = png_bytes(run)
    _flip_nsfw(run)
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and first_problem(out).startswith("metadata-sha256 images/b000002/metadata.jsonl: bytes do not "
                                                     "match the sha256 recorded"), out
    rc, _, err = t2ibench(capsys, "score", run)
    assert rc == 2 and "images/b000002/metadata.jsonl" in one_error_line(err)
    err = regenerate(capsys, run, "run")
    assert "repaired: images/b000002 removed (images/b000002/metadata.jsonl: bytes do not match" in err
    assert png_bytes(run) == before
    assert_verifies(capsys, run)
    results = json.loads((run / "results.json").read_text())
    assert results["run"]["n_images"] == 8 and results["run"]["n_nsfw_excluded"] == 0


def test_a_batch_without_its_metadata_record_is_reported(run, capsys):
    (run / "images" / "b000004" / "metadata.sha256").unlink()
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and first_problem(out).startswith("metadata-sha256 images/b000004/metadata.jsonl: has no "
                                                     "recorded sha256"), out


@pytest.mark.parametrize("rel", ["labels/gender.parquet", "labels/attributes.parquet.sha256",
                                 "images/b000000/metadata.jsonl", "manifest.parquet"],
                         ids=["label-file", "label-record", "metadata", "manifest"])
def test_a_file_symlinked_out_of_the_run_folder_is_reported_refused_and_repaired(run, tmp_path, capsys, rel):
    outside = tmp_path / "elsewhere" / Path(rel).name
    outside.parent.mkdir()
    shutil.copyfile(run / rel, outside)  # the same bytes: only where it lies is wrong
    (run / rel).unlink()
    os.symlink(outside, run / rel)
    named = rel.removesuffix(".sha256")
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and first_problem(out).startswith(f"file-outside {named}"), out
    assert "outside the run folder" in out.splitlines()[0] and len(out.splitlines()) == 2, out
    rc, _, err = t2ibench(capsys, "score", run)
    assert rc == 2 and named in one_error_line(err)
    # a label file is moved aside and computed again, a batch generated again, the manifest rewritten
    repaired = {"labels": f"{named} ", "images": "images/b000000 removed (images/b000000/metadata",
                "manifest.parquet": "manifest.parquet is rewritten"}[rel.split("/")[0]]
    err = regenerate(capsys, run, "run" if rel.startswith("labels/") else "generate")
    assert f"repaired: {repaired}" in err, err
    assert not (run / rel).is_symlink() and outside.is_file()  # the file outside is never touched
    assert_verifies(capsys, run, after_generate=True)


@pytest.mark.parametrize("record", [False, True], ids=["metadata-and-manifest", "with-its-record"])
def test_a_model_id_edited_in_metadata_and_manifest_is_repaired_by_run(run, capsys, record):
    from benchmark.contract.written_hashes import file_sha256

    before = png_bytes(run)
    meta = run / "images" / "b000000" / "metadata.jsonl"
    rows = [json.loads(ln) for ln in meta.read_text().splitlines()]
    rows[1]["model_id"] = "acme/other"
    meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    if record:  # the record rewritten too: only run_config.json tells
        (meta.parent / "metadata.sha256").write_text(file_sha256(meta) + "\n")
    m = read_manifest(run)
    m.loc[m["probe_id"] == rows[1]["probe_id"], "model_id"] = "acme/other"
    m.to_parquet(run / "manifest.parquet", index=False)
    rc, out, _ = t2ibench(capsys, "verify", run)
    assert rc == 1 and first_problem(out).startswith("row-mismatch images/b000000/metadata.jsonl"), out
    err = regenerate(capsys, run, "generate" if record else "run")
    assert ("repaired: images/b000000 removed (images/b000000/metadata.jsonl (probe "
            f"{rows[1]['probe_id']}): model_id is 'acme/other', run_config.json says 'builtin:tiny-sd')") in err, err
    assert png_bytes(run) == before
    assert_verifies(capsys, run, after_generate=True)


# --------------------------------------------------------------------------- issue 51: leftovers of a kill


def _killed_report(run: Path) -> None:
    """``write_report`` killed with SIGKILL while rendering (after its staging folder is drawn)."""
    import subprocess
    import sys

    code = ("import os, signal, sys; from benchmark.runner import report; "
            "report.render = lambda context: os.kill(os.getpid(), signal.SIGKILL); report.write_report(sys.argv[1])")
    proc = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


@pytest.mark.parametrize("stage", ["report", "score", "annotate", "run"])
def test_what_a_killed_stage_left_is_removed_by_the_next_stage(run, capsys, stage):
    """Issue 51: a kill during the report stage left a `.report-staging-*` folder that reruns never
    removed; staged files of other stages (atomic writes' temporary names) alike."""
    if stage == "report":  # a real kill once; the other stages find what it leaves, made by hand
        _killed_report(run)
        staged = [p.name for p in run.glob(".report-staging-*")]
        assert len(staged) == 1 and (run / staged[0]).is_dir() and any((run / staged[0]).iterdir())
    dead = _dead_pid()
    left = [run / f".results.json.{dead}.1.tmp", run / "labels" / f".gender.parquet.{dead}.2.tmp",
            run / f".report-staging-{dead}-abc_123", run / ".report-staging-x1y2z3w4"]  # the last: before issue 51
    kept = [run / f".results.json.{os.getpid()}.3.tmp", run / f".report-staging-{os.getpid()}-live"]
    for path in left + kept:
        path.mkdir() if "staging" in path.name else path.write_bytes(b"half")
    args = {"run": ("run", *GEN_ARGS, "--n-resamples", "20", "--out", run), "score": ("score", run, "--n-resamples", "20"),
            "annotate": ("annotate", run, "--quiet"), "report": ("report", run)}[stage]
    rc, _, err = t2ibench(capsys, *args)
    assert rc == 0, err[-2000:]
    assert [p.name for p in run.glob(".report-staging-*")] == [f".report-staging-{os.getpid()}-live"]
    assert not any(p.exists() for p in left)
    assert all(p.exists() for p in kept)  # this process's: a stage running now
    assert f"removed what a stopped stage left in {run}: " in err
