"""`t2ibench run` checks every input before the first image (one line, exit 2, nothing
written), prints its plan, and the later stages name the command to run first."""

import json

import pytest

from audit_requests import audit_request
from benchmark.cli import main
from benchmark.runner.preflight import AuditPlan, preflight


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _error_line(capsys) -> str:
    lines = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("WARNING:")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("t2ibench: error: ")
    return lines[0]


@pytest.mark.parametrize("extra,fragment", [
    (["--set", "num_inference_steps=abc"], "num_inference_steps='abc' for StableDiffusionPipeline: expected int"),
    (["--set", "guidance_scale=high"], "guidance_scale='high' for StableDiffusionPipeline: expected float"),
    (["--set", "num_inference_step=3"], "unknown setting 'num_inference_step' for StableDiffusionPipeline"),
    (["--set", "scheduler=NoSuchScheduler"], "unknown diffusers scheduler 'NoSuchScheduler'"),
    (["--set", "output_type=np"], "setting 'output_type' of StableDiffusionPipeline is set by the benchmark"),
    (["--revision", "main"], "--revision main does not apply to a built-in model"),
    (["--dtype", "float16"], "--dtype float16 does not run on the CPU"),
    (["--vqa", "someorg/not-cached-vqa"], "VQA model someorg/not-cached-vqa is not in the local Hugging Face cache"),
    (["--vqa", "./no-such-folder"], "local VQA model folder './no-such-folder' does not exist"),
    (["--encoder", "open_clip:ViT-Q-99:openai"], "unknown open_clip architecture 'ViT-Q-99'"),
    (["--encoder", "hf:someorg/not-cached-clip"], "CLIP model someorg/not-cached-clip is not in the local"),
    (["--detector", "someorg/not-cached-detr"], "detector someorg/not-cached-detr is not in the local"),
    (["--mcas-encoders", "builtin:tiny-clip", "open_clip:ViT-B-32:laion400m_e32"], "ViT-B-32:laion400m_e32"),
    (["--annotator", "skin_tone=nope"], "unknown skin-tone annotator 'nope'"),
])
def test_a_bad_input_fails_in_one_line_before_anything_is_written(tmp_path, capsys, extra, fragment):
    out = tmp_path / "run"
    code = main(["run", "--model", "builtin:tiny-sd", "--out", str(out), "--limit", "1", "--quiet", *extra])
    assert code == 2
    assert fragment in _error_line(capsys)
    assert not out.exists()


def test_revision_with_a_local_folder_is_refused(tmp_path, capsys):
    from benchmark.models.tiny import ensure_builtin

    folder = ensure_builtin("tiny-sd", kind="text-to-image")
    code = main(["run", "--model", str(folder), "--out", str(tmp_path / "run"), "--revision", "v1", "--quiet"])
    assert code == 2 and "does not apply to a local folder" in _error_line(capsys)


def test_the_plan_names_suites_images_models_and_settings(tmp_path):
    plan = preflight(audit_request(tmp_path / "run", "builtin:tiny-sd", suites=["gep_neutral", "dalleval_bias"],
                                   limit=2, settings={"num_inference_steps": 2}))
    assert isinstance(plan, AuditPlan) and not (tmp_path / "run").exists()
    assert plan.images == {"gep_neutral": 2, "dalleval_bias": 2} and plan.done == 0
    assert plan.pipeline == "StableDiffusionPipeline"
    assert plan.annotators["encoder"] == "builtin:tiny-clip" and plan.annotators["vqa"] == "builtin:tiny-vqa"
    assert "detector" not in plan.annotators  # no task of these suites detects objects
    text = plan.format()
    assert text.startswith("plan: 4 images in 2 suite(s) (gep_neutral 2, dalleval_bias 2)")
    assert "num_inference_steps=2" in text and "no estimate yet" in text


def test_stages_name_the_command_to_run_first_and_the_plan_estimates_from_measured_rates(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["generate", "--model", "builtin:tiny-sd", "--out", str(run), "--suites", "gep_neutral",
                 "--limit", "2", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["score", str(run)]) == 2
    assert f"run `t2ibench annotate {run}` first" in _error_line(capsys)
    assert main(["report", str(run)]) == 2
    assert f"run `t2ibench score {run}` first" in _error_line(capsys)
    assert not (run / "results.json").exists() and not (run / "report").exists()

    batches = sorted((run / "images").glob("*/metadata.jsonl"))
    # each batch's rows repeat its batch_seconds
    spent = {p: json.loads(p.read_text().splitlines()[0])["batch_seconds"] for p in batches}
    plan = preflight(audit_request(run, "builtin:tiny-sd", suites=["gep_neutral"], limit=2))
    assert plan.done == 2 and plan.seconds_per_image == pytest.approx(sum(spent.values()) / 2)
    assert "every image is generated already" in plan.format()
