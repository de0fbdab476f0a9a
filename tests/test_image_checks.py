"""Issue 51: degenerate images (blank, constant, non-finite) are counted as they are written and
never scored silently, whatever made them.

Real models and real files: a tiny Stable Diffusion pipeline (the built-in tiny-sd, saved again)
whose UNet weights are NaN, the same pipeline with a LoRA whose weights blow up (fused, it turns
the output into NaN, as ``--lora X:-1e30`` did), a folder of one-colour images given with
``--images``, the local image API answering black images, and callables that return placeholders.
Each stops before anything is annotated or scored, in one line, exit 2; ``--allow-degenerate``
scores them and marks the results, the report and the leaderboard row.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchmark.cli import main
from benchmark.contract.image_checks import (DEGENERATE_SHARE, IMAGE_CHECKS_FILE, NonFiniteWatch, count_degenerate,
                                             degenerate_kind, read_image_checks, record_image_checks)
from degenerate_models import CRASH_ENV
from api_fixtures import key, server  # noqa: F401 (fixtures used by name)

TINY_ANNOTATORS = ["--encoder", "builtin:tiny-clip", "--vqa", "builtin:tiny-vqa"]
ONE_SUITE = ["--suites", "gep_neutral", "--limit", "2", "--quiet"]


def t2ibench(capsys, *args) -> tuple[int, str, list[str]]:
    capsys.readouterr()
    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, [ln for ln in out.err.splitlines() if ln.strip() and not ln.startswith("W1")]


def _one_refusal(err: list[str], *fragments: str) -> str:
    """The single line of a refused run: the count, the kinds, the likely causes, the way out."""
    lines = [ln for ln in err if not ln.startswith("WARNING:")]
    assert len(lines) == 1 and lines[0].startswith("t2ibench: error: "), err
    for fragment in ("are degenerate", f"more than the {DEGENERATE_SHARE:.0%} that stops an audit before scoring",
                     "likely causes:", "--allow-degenerate", *fragments):
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _nothing_scored(run: Path) -> None:
    assert not (run / "results.json").exists() and not (run / "scores").exists() and not (run / "labels").exists()


# --------------------------------------------------------------------------- one image


def _photo(size=64, seed=0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).resize((size, size), Image.BICUBIC)


def _flat(colour, mode="RGB", size=48, jitter=0) -> Image.Image:
    image = Image.new(mode, (size, size), colour)
    if jitter:  # what a lossy codec leaves of a flat colour
        arr = np.asarray(image).astype(int) + np.random.default_rng(1).integers(0, jitter + 1, np.asarray(image).shape)
        image = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), mode)
    return image


def _one_pixel_off(colour=(0, 0, 0)) -> Image.Image:
    image = _flat(colour)
    image.putpixel((5, 5), (200, 10, 10))
    return image


@pytest.mark.parametrize("image,non_finite,kind", [
    (_flat((0, 0, 0)), False, "blank"),
    (_flat((255, 255, 255)), False, "blank"),
    (_flat((2, 1, 0), jitter=0), False, "blank"),                      # within FLAT_LEVELS of black
    (_flat((120, 120, 120), jitter=2), False, "constant"),             # a lossy codec's flat grey
    (_flat((30, 200, 90)), False, "constant"),
    (_flat((0, 0, 0)), True, "non-finite"),                            # black in a batch that held NaN
    (_flat(0, "L"), False, "blank"),
    (_flat((1, 1, 1, 255), "RGBA"), False, "blank"),
    (_flat((10, 10, 10, 255), "RGBA"), False, "constant"),            # a very dark grey: one colour, not black
    (_flat((0, 0, 0)).convert("P"), False, "blank"),                   # a palette's extrema are indices
    (_flat((120, 120, 120), jitter=3), False, None),                   # past FLAT_LEVELS: an image
    (_one_pixel_off(), False, None),
    (_photo(), False, None),
    (_photo(), True, None),                                            # NaN elsewhere in the batch: not this one
    (_flat((255, 255, 255), "RGBA").convert("RGBA"), False, "blank"),
])
def test_degenerate_kind(image, non_finite, kind):
    before = image.tobytes(), image.mode, image.size
    assert degenerate_kind(image, non_finite) == kind
    assert (image.tobytes(), image.mode, image.size) == before  # the check never changes an image


def test_the_watch_counts_a_nan_cast_in_its_own_thread_only(recwarn):
    import threading

    with NonFiniteWatch() as watch:
        other = threading.Thread(target=lambda: np.array([np.nan]).astype("uint8"))  # another thread: not watched
        other.start()
        other.join()
    assert not watch.seen
    recwarn.clear()  # the other thread's warning, numpy's as before
    with NonFiniteWatch() as watch:
        out = (np.array([np.nan, 0.5]) * 255).round().astype("uint8")  # what a pipeline's NaN output does
    assert watch.seen and out[1] == 128  # the values as numpy makes them
    assert not [w for w in recwarn if "invalid value" in str(w.message)]


def test_the_record_keeps_the_last_verdict_and_skips_a_cut_line(tmp_path):
    record_image_checks(tmp_path, "b0", ["a", "b"], ["blank", None])
    record_image_checks(tmp_path, "b2", ["b", "c"], [None, "constant"], non_finite=False)
    record_image_checks(tmp_path, "b0", ["a"], [None])  # a regenerated probe: the later line wins
    with open(tmp_path / IMAGE_CHECKS_FILE, "a") as fh:
        fh.write('{"batch": "b9", "checked": ["d"')  # cut by a kill
    assert read_image_checks(tmp_path) == {"a": None, "b": None, "c": "constant"}


# --------------------------------------------------------------------------- real models


@pytest.fixture(scope="module")
def tiny_sd(cache) -> Path:
    from benchmark.models.tiny import ensure_builtin

    return ensure_builtin("tiny-sd")


@pytest.fixture(scope="module")
def nan_pipeline(tiny_sd, tmp_path_factory) -> Path:
    """tiny-sd saved again with every UNet weight NaN."""
    import torch
    from diffusers import AutoPipelineForText2Image

    pipe = AutoPipelineForText2Image.from_pretrained(tiny_sd)
    with torch.no_grad():
        for p in pipe.unet.parameters():
            p.fill_(float("nan"))
    folder = tmp_path_factory.mktemp("nan") / "nan-unet"
    pipe.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def exploding_lora(tiny_sd, tmp_path_factory) -> Path:
    """A LoRA of tiny-sd whose up matrices are 1e30 times too large (finite, so every file check
    passes): fused at scale 1, the UNet's output is NaN, as ``--lora X:-1e30`` made it."""
    from diffusers import AutoPipelineForText2Image
    from safetensors.torch import load_file, save_file
    from tiny_pipelines import make_tiny_lora

    pipe = AutoPipelineForText2Image.from_pretrained(tiny_sd)
    folder = make_tiny_lora(pipe, tmp_path_factory.mktemp("lora") / "exploding", text_encoders=False)
    (file,) = folder.glob("*.safetensors")
    save_file({k: v * 1e30 if "lora_B" in k else v for k, v in load_file(file).items()}, file)
    return file


@pytest.fixture(scope="module")
def refused_nan_run(nan_pipeline, tmp_path_factory):
    run = tmp_path_factory.mktemp("nan-run") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        capsys_free = _capture(lambda: main(["run", "--model", str(nan_pipeline), *ONE_SUITE, *TINY_ANNOTATORS,
                                             "--set", "num_inference_steps=2", "--out", str(run)]))
    return run, capsys_free


def _capture(call):
    """(exit status, stderr lines) of ``call`` without pytest's capsys (module fixtures have none)."""
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = call()
    return rc, [ln for ln in err.getvalue().splitlines() if ln.strip() and not ln.startswith("W1")]


def test_nan_weights_stop_the_run_before_scoring_in_one_line(refused_nan_run):
    run, (rc, err) = refused_nan_run
    assert rc == 2
    line = _one_refusal(err, "2 of 2 images in", "2 black from non-finite output", "NaN weights")
    assert "invalid value encountered" not in "\n".join(err)  # numpy's warning was the only sign; now the line
    _nothing_scored(run)
    assert (run / "manifest.parquet").is_file() and len(list((run / "images").rglob("*.png"))) == 2  # the evidence
    assert len(line) < 700


def test_allowed_they_are_scored_and_marked_everywhere(refused_nan_run, nan_pipeline, tmp_path, capsys, monkeypatch):
    from submissions.validate import check_results

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base, _ = refused_nan_run
    run = tmp_path / "run"
    shutil.copytree(base, run)  # the refused run, resumed: its images are not made again
    rc, out, err = t2ibench(capsys, "run", "--model", nan_pipeline, *ONE_SUITE, *TINY_ANNOTATORS, "--set",
                            "num_inference_steps=2", "--n-resamples", "20", "--allow-degenerate", "--out", run)
    assert rc == 0, err
    results = json.loads((run / "results.json").read_text())
    assert results["run"]["degenerate_images"] == {
        "n_checked": 2, "n_degenerate": 2, "share": 1.0, "by_kind": {"non-finite": 2, "blank": 0, "constant": 0},
        "threshold": DEGENERATE_SHARE, "allowed": True, "n_unchecked": 0}
    said = ("2 of 2 images are degenerate (2 black from non-finite output), scored with --allow-degenerate: the "
            "scores describe these images as they are")
    assert said in results["notes"] and f"WARNING: {said}" in " ".join(out.split())  # the terminal's summary too
    assert said in (run / "report" / "report.md").read_text() and said in (run / "report" / "report.html").read_text()
    assert check_results(results, allow_demo=True) == []  # the schema takes the block

    # `t2ibench score` on such a folder refuses likewise, and takes the flag
    before = (run / "results.json").read_bytes()
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20")
    assert rc == 2
    _one_refusal(err, "2 of 2 images in")
    assert (run / "results.json").read_bytes() == before
    rc, _, err = t2ibench(capsys, "score", run, "--n-resamples", "20", "--allow-degenerate")
    assert rc == 0, err

    # the leaderboard's row: the contents column, the slim document, the badge
    from submissions.leaderboard import board_model, contents_schema, wording

    sub = board_model.Submission(doc=results, source="r.json", path=run / "results.json", run_dir=run)
    cells = contents_schema.cells(sub)
    assert cells["degenerate_images"]["n_degenerate"] == 2 and cells["degenerate_images"]["non-finite"] == 2
    slim = contents_schema.slim_document(cells, [])
    badges = dict(wording.badges(board_model.Submission(doc=slim, source="r.json", path=run / "results.json", run_dir=None)))
    assert badges[wording.DEGENERATE_BADGE] == said


def test_a_lora_that_blows_up_stops_the_run(tiny_sd, exploding_lora, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run = tmp_path / "run"
    rc, _, err = t2ibench(capsys, "run", "--model", tiny_sd, "--lora", exploding_lora, *ONE_SUITE, *TINY_ANNOTATORS,
                          "--set", "num_inference_steps=2", "--out", run)
    assert rc == 2
    _one_refusal(err, "2 black from non-finite output")
    _nothing_scored(run)


def test_a_folder_of_one_colour_images_is_refused(tmp_path, capsys):
    from benchmark.probes.sheet import sheet_table
    from benchmark.runner.probe_choice import choose_probes
    from benchmark.contract.audit_request import ProbeChoice

    folder = tmp_path / "images"
    folder.mkdir()
    probes = choose_probes(ProbeChoice(suites=["gep_neutral"], limit_per_suite=4)).limited
    for i, name in enumerate(sheet_table(probes)["file_name"]):  # distinct bytes, each one colour
        _flat((i * 40, 10, 200) if i % 2 else (i, i, i)).save(folder / name)
    run = tmp_path / "run"
    rc, _, err = t2ibench(capsys, "run", "--images", folder, "--model-name", "flat-model", "--suites", "gep_neutral",
                          "--limit", "4", "--quiet", *TINY_ANNOTATORS, "--out", run)
    assert rc == 2
    _one_refusal(err, "4 of 4 images in", "2 blank (black or white), 2 of one other colour")
    _nothing_scored(run)


def test_an_image_api_answering_black_images_is_refused(server, key, tmp_path, capsys):  # noqa: F811
    server.default_action = "blank"
    run = tmp_path / "run"
    rc, _, err = t2ibench(capsys, "run", "--model", "openai:dall-e-2", "--set", "size=256x256", "--api-base",
                          server.api_base, "--api-key-env", key, "--api-rpm", "6000", *ONE_SUITE, *TINY_ANNOTATORS,
                          "--out", run)
    assert rc == 2
    _one_refusal(err, "2 of 2 images in", "2 blank (black or white)", "a filter that blanks images")
    _nothing_scored(run)


def test_a_callable_making_placeholders_is_stopped_early(tmp_path, capsys):
    """More than half of the first 16 images degenerate: generation stops there, not after every probe."""
    run = tmp_path / "run"
    rc, _, err = t2ibench(capsys, "generate", "--model", "python:degenerate_models:flat", "--suites", "gep_neutral",
                          "--limit", "40", "--batch-size", "4", "--quiet", "--out", run)
    assert rc == 2
    _one_refusal(err, "images written to", "generation stopped early", "of one other colour")
    n = len(list((run / "images").rglob("*.png")))
    assert 16 <= n <= 24, n  # the batch in flight when it stopped is written too, not the 40


def test_a_resumed_run_keeps_the_count(tmp_path, capsys, monkeypatch):
    """A run that dies after one batch of placeholders, resumed with a good model: the first batch's
    verdicts are still counted (image_checks.jsonl)."""
    run = tmp_path / "run"
    args = ["generate", "--suites", "gep_neutral", "--limit", "8", "--batch-size", "4", "--quiet", "--out", run]
    monkeypatch.setenv(CRASH_ENV, "1")
    with pytest.raises(RuntimeError, match="the generator died"):  # a crash (a traceback: not a user's error)
        t2ibench(capsys, *args, "--model", "python:degenerate_models:flat_then_crash")
    assert len(list((run / "images").rglob("*.png"))) == 4
    monkeypatch.delenv(CRASH_ENV)
    import degenerate_models

    monkeypatch.setattr(degenerate_models, "flat_then_crash", degenerate_models.good)  # the model mended, same spec
    rc, _, err = t2ibench(capsys, *args, "--model", "python:degenerate_models:flat_then_crash")
    assert rc == 2
    _one_refusal(err, "4 of 8 images in", "4 of one other colour")
    assert count_degenerate(run).n_checked == 8


def test_a_folder_without_verdicts_is_checked_from_its_files(refused_nan_run, tmp_path):
    """A run folder made before the check (no image_checks.jsonl): the gate reads the PNGs once and
    records what it found."""
    base, _ = refused_nan_run
    run = tmp_path / "run"
    shutil.copytree(base, run)
    (run / IMAGE_CHECKS_FILE).unlink()
    count = count_degenerate(run)
    assert (count.n_checked, count.n_degenerate, count.n_checked_late) == (2, 2, 2)
    assert count.by_kind == {"blank": 2}  # from the files alone NaN cannot be told from black
    assert len(read_image_checks(run)) == 2 and count_degenerate(run).n_checked_late == 0


def test_images_whose_files_cannot_be_read_are_not_counted(refused_nan_run, tmp_path):
    """A manifest without image paths, or whose files are gone or point out of the folder (a
    synthetic run, a damaged one: `t2ibench verify` names those): counted as unchecked, never a
    traceback."""
    import pandas as pd

    base, _ = refused_nan_run
    run = tmp_path / "run"
    shutil.copytree(base, run)
    (run / IMAGE_CHECKS_FILE).unlink()
    manifest = pd.read_parquet(run / "manifest.parquet")
    manifest["image_path"] = [manifest["image_path"].iloc[0], "../../etc/passwd"]
    first = run / manifest["image_path"].iloc[0]
    first.write_bytes(b"not a png")
    count = count_degenerate(run, manifest)
    assert (count.n_checked, count.n_unchecked) == (0, 2)
    assert count_degenerate(run, manifest.drop(columns=["image_path"])).n_unchecked == 2


def test_flagged_images_are_not_counted(refused_nan_run, tmp_path):
    """A safety checker's black images and the placeholders of withheld probes are left out of every
    score already: they are not degenerate output of the model."""
    import pandas as pd

    base, _ = refused_nan_run
    manifest = pd.read_parquet(base / "manifest.parquet")
    manifest["nsfw"] = [True, None]
    count = count_degenerate(base, manifest)
    assert (count.n_checked, count.n_degenerate) == (1, 1)


def test_the_help_states_the_share():
    from benchmark.cli import build_parser

    text = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert f"more than {DEGENERATE_SHARE:.0%} of its images are degenerate" in " ".join(text.split())
