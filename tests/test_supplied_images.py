"""Audit a folder of images made elsewhere: ``t2ibench probes export`` then ``t2ibench run
--images DIR --model-name NAME``, with images from a real builtin:tiny-sd run renamed as the
sheet says (meaningless images: the tests check the path, not the scores)."""

import csv
import json
import shutil

import pandas as pd
import pytest
from PIL import Image

from benchmark.cli import main
from benchmark.runner.generate import choose_probes
from benchmark.runner.supplied_images import check_folder, match_folder

SUITES = ["gep_neutral", "dalleval_bias"]
SELECTION = ["--suites", *SUITES, "--limit", "8"]
TINY_ANNOTATORS = ["--encoder", "builtin:tiny-clip", "--mcas-encoders", "builtin:tiny-clip", "--vqa",
                   "builtin:tiny-vqa", "--detector", "builtin:tiny-detr", "--annotator", "skin_tone=whole-image",
                   "--n-resamples", "20", "--quiet"]


@pytest.fixture(scope="module")
def sheet(tmp_path_factory):
    out = tmp_path_factory.mktemp("sheet") / "sheet.csv"
    assert main(["probes", "export", *SELECTION, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def filled(tmp_path_factory, sheet, cache):
    """A folder filled from the sheet with the images of a builtin:tiny-sd run, renamed."""
    gen = tmp_path_factory.mktemp("gen") / "run"
    assert main(["generate", "--model", "builtin:tiny-sd", *SELECTION, "--quiet", "--out", str(gen)]) == 0
    manifest = pd.read_parquet(gen / "manifest.parquet")
    name_of = dict(zip(*[pd.read_csv(sheet)[c] for c in ("probe_id", "file_name")]))
    folder = tmp_path_factory.mktemp("filled")
    for pid, path in zip(manifest["probe_id"], manifest["image_path"]):
        shutil.copy(gen / path, folder / name_of[pid])
    return folder


def test_sheet_rows_are_the_run_selection(sheet, tmp_path):
    rows = pd.read_csv(sheet)
    chosen = choose_probes(None, None, SUITES, 8)
    assert list(rows.columns) == ["probe_id", "suite", "prompt", "sample_index", "seed", "file_name"]
    assert rows["probe_id"].tolist() == chosen.limited["probe_id"].tolist() and rows["file_name"].is_unique
    readme = sheet.with_name("sheet.README.md").read_text()
    assert "t2ibench run --images FOLDER --model-name NAME --suites gep_neutral dalleval_bias --limit 8" in readme
    jsonl = tmp_path / "sheet.jsonl"
    assert main(["probes", "export", *SELECTION, "--out", str(jsonl)]) == 0
    assert [json.loads(line)["file_name"] for line in jsonl.read_text().splitlines()] == rows["file_name"].tolist()
    assert main(["probes", "export", "--suites", "gep_neutral", "--out", str(tmp_path / "sheet.txt")]) == 2
    api = tmp_path / "api.csv"
    assert main(["probes", "export", *SELECTION, "--model", "openai:dall-e-2", "--out", str(api)]) == 0
    assert set(pd.read_csv(api)["seed"]) == {"not controllable"}


def test_folder_audit_end_to_end(filled, tmp_path):
    out = tmp_path / "run"
    assert main(["run", "--images", str(filled), "--model-name", "my-model", "--supplied-by", "a test", *SELECTION,
                 *TINY_ANNOTATORS, "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    scored = [s for s in results["scores"] if s["suite"] in SUITES]
    assert scored and all(s["value"] is not None for s in scored), [s["name"] for s in scored if s["value"] is None]
    prov = results["provenance"]
    assert prov["kind"] == "images supplied" and prov["supplied_by"] == "a test" and prov["seeds_controlled"] is False
    assert prov["n_supplied"] == 16 and prov["n_missing"] == 0 and prov["sheet"]["suites"] == SUITES
    assert results["model"] == {"id": "my-model", "spec": "images:my-model", "revision": None, "builtin": False}
    from submissions.validate import check_results

    assert check_results(results, allow_demo=True) == []  # demo only because the annotators are tiny
    assert main(["verify", str(out)]) == 0 and main(["score", str(out), "--n-resamples", "20"]) == 0


def test_missing_image_refused_then_counted(filled, tmp_path, capsys):
    folder = tmp_path / "folder"
    shutil.copytree(filled, folder)
    gone = sorted(folder.glob("dalleval_bias__*.png"))[0]
    gone.unlink()
    out = tmp_path / "run"
    args = ["run", "--images", str(folder), "--model-name", "my-model", *SELECTION, *TINY_ANNOTATORS,
            "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and gone.name in err and "dalleval_bias/" in err and "--allow-missing" in err
    assert not out.exists()
    assert main(args + ["--allow-missing"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["n_withheld"] == {"refused": 0, "missing": 1} and results["run"]["n_nsfw_excluded"] == 0
    assert results["provenance"]["n_missing"] == 1
    suite = next(s for s in results["suites"] if s["name"] == "dalleval_bias")
    assert suite["excluded"].get("missing") == 1 and suite["n_images"] == 8
    assert any("not supplied" in n for n in results["notes"])


def _probes():
    return choose_probes(None, None, ["gep_neutral"], 4).limited


def _fill(folder, probes, colours=None):
    from benchmark.probes.sheet import sheet_table

    for i, name in enumerate(sheet_table(probes)["file_name"]):
        Image.new("RGB", (48, 48), (colours or {}).get(i, (i * 40, 10, 200))).save(folder / name)


@pytest.mark.parametrize("damage, match", [
    (lambda f, n: (f / "stray.png").write_bytes((f / n[0]).read_bytes() + b"x"), "match no probe"),
    (lambda f, n: (f / n[1]).write_bytes((f / n[0]).read_bytes()), "same bytes"),
    (lambda f, n: (f / n[0]).write_bytes(b"not an image"), "cannot be decoded"),
    (lambda f, n: Image.new("L", (48, 48)).save(f / n[0]), "RGB"),
    (lambda f, n: Image.new("RGBA", (48, 48), (1, 2, 3, 100)).save(f / n[0]), "transparency"),
    (lambda f, n: Image.new("RGB", (8, 8)).save(f / n[0]), "at least 32 pixels"),
    (lambda f, n: Image.new("RGB", (48, 48), (9, 9, 9)).save(f / n[0].replace(".png", ".jpg")), "two files"),
])
def test_every_file_is_checked_first(tmp_path, damage, match):
    from benchmark.probes.sheet import sheet_table

    probes = _probes()
    _fill(tmp_path, probes)
    damage(tmp_path, sheet_table(probes)["file_name"].tolist())
    with pytest.raises(ValueError, match=match) as err:
        match_folder(tmp_path, probes)
    assert "\n" not in str(err.value)


def test_mapping_csv(tmp_path):
    probes = _probes()
    for i in range(len(probes)):
        Image.new("RGB", (40, 40), (i * 50, 0, 0)).save(tmp_path / f"img{i}.jpg")
    mapping = tmp_path / "map.csv"
    with open(mapping, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["probe_id", "sample", "path"])
        for i, (pid, sample) in enumerate(zip(probes["probe_id"], probes["sample_index"])):
            w.writerow([pid.rsplit("/", 1)[0], sample, f"img{i}.jpg"])  # the prompt's id and the sample
    supplied = match_folder(tmp_path, probes, mapping)
    assert sorted(supplied.found) == sorted(probes["probe_id"]) and not supplied.missing
    check_folder(supplied, allow_missing=False)
    mapping.write_text("probe_id,path\nno/such/probe,img0.jpg\n")
    with pytest.raises(ValueError, match="not in this selection"):
        match_folder(tmp_path, probes, mapping)


def test_run_help_lists_both_ways(capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "--images DIR --model-name NAME" in text and "openai:dall-e-2" in text and "--api-base" in text


def test_run_arguments_are_checked(tmp_path, capsys):
    out = tmp_path / "run"
    for args, match in ((["--images", str(tmp_path)], "--model-name"),
                        (["--images", str(tmp_path), "--model", "builtin:tiny-sd"], "not both"),
                        ([], "--model SPEC"),
                        (["--model", "builtin:tiny-sd", "--allow-missing"], "goes with --images"),
                        (["--model", "builtin:tiny-sd", "--api-rpm", "5"], "--api-rpm applies to an image API")):
        assert main(["run", *args, "--suites", "gep_neutral", "--limit", "2", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert match in err and len(err.splitlines()) == 1 and not out.exists()
