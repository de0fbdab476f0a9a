"""Inputs refused first, in one line, with nothing written (issue 33): output paths that cannot
be written, a misspelt image-API model on the probe sheet, model names that `t2ibench validate`
would refuse later, mapping paths outside the images folder, and image headers that declare
more pixels than a run scores. Each test fails without its fix."""

import csv
import struct
import zlib

import pytest
from PIL import Image

from benchmark.cli import main
from benchmark.contract.image_provenance import MAX_PIXELS, check_scorable_image, load_scorable_image
from benchmark.contract.model_specs import model_id_problem, model_name_problem, model_spec_problem
from benchmark.contract.audit_request import ProbeChoice
from benchmark.runner.probe_choice import choose_probes
from benchmark.runner.supplied_images import match_folder


def _one_line(capsys, *fragments):
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.strip().splitlines() if not ln.startswith("WARNING:")]
    assert len(lines) == 1 and lines[0].startswith("t2ibench"), captured.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in captured.err
    return lines[0]


def _exit_status(argv):
    try:
        return main(argv)
    except SystemExit as done:  # a usage error (argparse)
        return done.code


# --------------------------------------------------------------------------- output paths


def test_probe_sheet_to_an_unwritable_place_is_one_line(capsys):
    assert _exit_status(["probes", "export", "--suites", "gep_neutral", "--limit", "4", "--out",
                         "/proc/c06.csv"]) == 2
    _one_line(capsys, "/proc/c06.csv")


def test_probe_sheet_out_is_a_file_not_a_folder(tmp_path, capsys):
    assert _exit_status(["probes", "export", "--suites", "gep_neutral", "--limit", "4", "--out", str(tmp_path)]) == 2
    _one_line(capsys, "is a folder")
    assert list(tmp_path.iterdir()) == []


def test_submit_to_an_unwritable_folder_is_one_line(tmp_path, capsys):
    assert _exit_status(["submit", str(tmp_path), "--demo", "--to-folder", "/proc/c72"]) == 2
    _one_line(capsys, "/proc/c72")


def test_a_results_file_that_cannot_be_written_is_a_one_line_error():
    from submissions.submit import write_new_file

    with pytest.raises(ValueError, match="cannot write /proc/c72") as err:
        write_new_file(__import__("pathlib").Path("/proc/c72/org--model/20260101T000000Z.json"), b"{}")
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- model specs and names


def test_probe_sheet_refuses_a_misspelt_api_model_as_run_does(tmp_path, capsys):
    out = tmp_path / "sheet.csv"
    assert _exit_status(["probes", "export", "--suites", "gep_neutral", "--limit", "4", "--model", "openai:dalle-2",
                         "--out", str(out)]) == 2
    _one_line(capsys, "unknown OpenAI image model 'dalle-2'", "openai:dall-e-2")
    assert list(tmp_path.iterdir()) == []
    # run says the same of the same spelling
    assert _exit_status(["run", "--model", "openai:dalle-2", "--suites", "gep_neutral", "--limit", "2", "--out",
                         str(tmp_path / "run")]) == 2
    _one_line(capsys, "unknown OpenAI image model 'dalle-2'")
    assert list(tmp_path.iterdir()) == []
    for spec, fragment in (("sd:runwayml/x", "unknown scheme 'sd:'"), ("org/my model", "is not a Hub model id")):
        assert _exit_status(["probes", "export", "--suites", "gep_neutral", "--model", spec, "--out", str(out)]) == 2
        _one_line(capsys, fragment)
    assert list(tmp_path.iterdir()) == []


def test_run_refuses_a_model_name_validate_would_refuse_before_any_work(tmp_path, capsys):
    out = tmp_path / "run"
    folder = tmp_path / "images"
    folder.mkdir()
    for name in ("org/my model <b>x</b>", "my\u202emodel", "org/a--b", "images:x", " my-model"):
        assert _exit_status(["run", "--images", str(folder), "--model-name", name, "--suites", "gep_neutral",
                             "--limit", "2", "--out", str(out)]) == 2
        _one_line(capsys, "--model-name")
        assert not out.exists()


def test_run_refuses_a_model_spec_validate_would_refuse(tmp_path, capsys):
    out = tmp_path / "run"
    for spec in ("org/my model <b>x</b>", "someorg/mod\u0435l"):  # a space; a Cyrillic look-alike 'е'
        assert _exit_status(["run", "--model", spec, "--suites", "gep_neutral", "--limit", "2", "--out",
                             str(out)]) == 2
        _one_line(capsys, "--model")
        assert not out.exists()


NAMES = ["my-model", "org/my-model", "org/My_Model.v2", "a" * 96, "org/" + "a" * 96, "org/my model",
         "org/my model <b>x</b>", "org/a--b", "org/a..b", "-x", "x.git", "org/x/y", "images:x", "builtin:tiny-sd",
         "openai:dall-e-2", "python:m:f", "/abs/path", "./rel", "caf\u00e9", "x\u200by", "_x", ""]


@pytest.mark.parametrize("name", NAMES)
def test_a_model_name_run_accepts_is_one_validate_accepts(name):
    from submissions.validate import check_results
    from test_validate import hub_doc

    if model_name_problem(name) is not None:
        return
    doc = hub_doc()
    doc["model"].update(id=name, spec=f"images:{name}")
    problems = [p for p in check_results(doc) if p.startswith("model/")]
    assert problems == [], problems


@pytest.mark.parametrize("spec", NAMES + ["sd:x", "C:\\models\\sd"])
def test_a_model_spec_run_accepts_is_one_validate_accepts(spec):
    from submissions.validate import check_results
    from test_validate import hub_doc

    if model_spec_problem(spec) is not None:
        return
    doc = hub_doc()
    doc["model"].update(id=spec, spec=spec)
    problems = [p for p in check_results(doc, allow_demo=True) if p.startswith("model/") and "built-in" not in p]
    assert problems == [], problems


def test_validate_uses_the_benchmark_rule():
    import submissions.validate as validate

    assert validate.model_id_problem is model_id_problem
    assert model_id_problem("org/my model") and model_id_problem("org/" + "a" * 93) and not model_id_problem("o/m")


def test_requests_and_submit_use_the_same_hub_rule():
    from submissions.requests import InvalidRequest, check_hub_model_id
    from submissions.submit import _repo_id

    for bad in ("org/a--b", "org/x.git", "org/caf\u00e9", "org/" + "a" * 93, "org/x-"):
        with pytest.raises(InvalidRequest):
            check_hub_model_id(bad)
        with pytest.raises(ValueError):
            _repo_id(bad, "--repo")
        assert model_id_problem(bad)
    for good in ("org/" + "a" * 92, "a/_b", "a_/b"):  # what the queue accepts, validate accepts
        assert check_hub_model_id(good) and _repo_id(good, "--repo") and model_id_problem(good) is None


# --------------------------------------------------------------------------- supplied folders


def _probes():
    return choose_probes(ProbeChoice(suites=["gep_neutral"], limit_per_suite=4)).limited


def _mapped_folder(tmp_path, paths):
    probes = _probes()
    folder = tmp_path / "dir"
    folder.mkdir()
    for i in range(len(probes)):
        Image.new("RGB", (40, 40), (i * 50, 0, 0)).save(folder / f"img{i}.png")
    rows = [[pid, path] for pid, path in zip(probes["probe_id"], paths)]
    return probes, folder, rows


@pytest.mark.parametrize("outside", ["../elsewhere.png", "sub/../../elsewhere.png", "ABSOLUTE"])
def test_mapping_paths_outside_the_folder_are_refused(tmp_path, outside):
    elsewhere = tmp_path / "elsewhere.png"
    Image.new("RGB", (40, 40), (1, 200, 3)).save(elsewhere)
    outside = str(elsewhere) if outside == "ABSOLUTE" else outside
    probes, folder, rows = _mapped_folder(tmp_path, [outside, "img1.png", "img2.png", "img3.png"])
    (folder / "sub").mkdir()
    mapping = tmp_path / "map.csv"
    with open(mapping, "w", newline="") as fh:
        csv.writer(fh).writerows([["probe_id", "path"], *rows])
    with pytest.raises(ValueError, match="is not inside") as err:
        match_folder(folder, probes, mapping)
    assert "\n" not in str(err.value) and "line 2" in str(err.value)


def test_mapping_with_a_byte_order_mark_is_read(tmp_path):
    probes, folder, rows = _mapped_folder(tmp_path, [f"img{i}.png" for i in range(4)])
    mapping = tmp_path / "map.csv"
    with open(mapping, "w", newline="", encoding="utf-8-sig") as fh:  # Excel's "CSV UTF-8"
        csv.writer(fh).writerows([["probe_id", "path"], *rows])
    assert mapping.read_bytes().startswith(b"\xef\xbb\xbf")
    assert sorted(match_folder(folder, probes, mapping).found) == sorted(probes["probe_id"])


def _png_claiming(path, width, height):
    """A small PNG whose header says ``width`` x ``height`` (its pixel data is for 40 x 40)."""
    Image.new("RGB", (40, 40), (10, 20, 30)).save(path)
    data = bytearray(path.read_bytes())
    ihdr = bytes(data[12:16]) + struct.pack(">II", width, height) + bytes(data[24:29])
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(ihdr) & 0xFFFFFFFF)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("side", [12_000, 30_000])
def test_oversized_headers_are_refused_before_decoding(tmp_path, side):
    path = _png_claiming(tmp_path / "big.png", side, side)
    with pytest.raises(ValueError) as err:
        check_scorable_image(path.read_bytes(), label=str(path))
    message = str(err.value)
    assert "\n" not in message and ("not decoded" in message or f"{side}x{side} pixels" in message), message
    assert f"{MAX_PIXELS:,}" in message


def test_an_oversized_supplied_image_is_one_line_from_the_command(tmp_path, capsys):
    from benchmark.probes.sheet import sheet_table

    probes = _probes()
    folder = tmp_path / "images"
    folder.mkdir()
    for i, name in enumerate(sheet_table(probes)["file_name"]):
        Image.new("RGB", (48, 48), (i * 40, 10, 200)).save(folder / name)
    _png_claiming(folder / sheet_table(probes)["file_name"].iloc[0], 30_000, 30_000)
    out = tmp_path / "run"
    assert _exit_status(["run", "--images", str(folder), "--model-name", "my-model", "--suites", "gep_neutral",
                         "--limit", "4", "--out", str(out)]) == 2
    _one_line(capsys, "pixels")
    assert not out.exists()


def test_the_image_rule_is_one_public_function(tmp_path):
    opaque = tmp_path / "ok.png"
    Image.new("RGBA", (40, 40), (1, 2, 3, 255)).save(opaque)
    assert check_scorable_image(opaque) == (40, 40)
    assert load_scorable_image(opaque.read_bytes()).mode == "RGB"
    for image, fragment in ((Image.new("RGBA", (40, 40), (1, 2, 3, 10)), "transparency"),
                            (Image.new("RGB", (1, 1)), "at least 32 pixels"), (Image.new("L", (40, 40)), "L image")):
        path = tmp_path / "x.png"
        image.save(path)
        with pytest.raises(ValueError, match=fragment):
            load_scorable_image(path.read_bytes(), label="the API's answer")
    with pytest.raises(ValueError, match="the API's answer cannot be decoded"):
        load_scorable_image(b"<html>", label="the API's answer")
