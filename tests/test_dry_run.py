"""``t2ibench run --dry-run`` (issue 48): every check, the whole plan on stdout (each setting with
its source, "no card row: pipeline default" for what nobody chose), then nothing written, not even
the --out folder; with --quiet a run prints no plan but still its warnings."""

from __future__ import annotations

import shutil

import pytest

from tiny_pipelines import build_family

from benchmark.cli import main


@pytest.fixture(scope="module")
def no_card(tmp_path_factory):
    """A tiny SD 1.5 folder with no README: no card row, no base_model."""
    root = tmp_path_factory.mktemp("dry-run")
    folder = root / "my-finetune"
    shutil.copytree(build_family("sd15", root / "sd15"), folder)
    return folder


def test_a_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "runs" / "plan-only"
    assert main(["run", "--model", "builtin:tiny-sd", "--out", str(out), "--suites", "gep_neutral", "--limit", "2",
                 "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("plan: 2 images in 1 suite(s) (gep_neutral 2)")
    assert "num_inference_steps=3  (built-in model)" in printed and "encoder:" in printed
    assert printed.rstrip().endswith("run the same command without --dry-run to audit")
    assert not out.exists() and not out.parent.exists()


def test_a_dry_run_says_which_settings_nobody_chose(no_card, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--model", str(no_card), "--out", str(out), "--suites", "gep_neutral", "--limit", "1",
                 "--set", "height=64", "--set", "width=64", "--encoder", "builtin:tiny-clip", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "guidance_scale=7.5  (no card row: pipeline default)" in printed
    assert "num_inference_steps=50  (no card row: pipeline default)" in printed and "height=64  (--set)" in printed
    assert f"warning:  {no_card} is not in the model card table" in printed
    assert not out.exists()


def test_a_dry_run_of_an_existing_run_folder_leaves_it_as_it_is(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    before = sorted(out.rglob("*"))
    assert main(["run", "--model", "builtin:tiny-sd", "--out", str(out), "--suites", "gep_neutral", "--limit", "2",
                 "--dry-run"]) == 0
    assert "is left as it is" in capsys.readouterr().out and sorted(out.rglob("*")) == before


def test_dry_run_goes_with_a_model_not_with_supplied_images(tmp_path, capsys):
    images = tmp_path / "images"
    images.mkdir()
    assert main(["run", "--images", str(images), "--model-name", "my-model", "--out", str(tmp_path / "run"),
                 "--dry-run"]) == 2
    assert "--dry-run plans the images a model would make" in capsys.readouterr().err


def test_quiet_prints_no_plan_but_its_warnings(no_card, tmp_path, capsys, monkeypatch):
    """run_audit with progress off: the plan's warnings on stderr, before generation starts."""
    import benchmark.runner.pipeline as pipeline
    from benchmark.contract.audit_request import AuditRequest, ModelChoice, ProbeChoice

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(pipeline, "run_generation", stop)
    request = AuditRequest(run_dir=tmp_path / "run", model=ModelChoice(str(no_card), settings={"height": 64}),
                           probes=ProbeChoice(suites=("gep_neutral",), limit_per_suite=1),
                           annotators={"encoder": "builtin:tiny-clip"}, progress=False)
    with pytest.raises(Stop):
        pipeline.run_audit(request)
    err = capsys.readouterr().err
    assert f"WARNING: {no_card} is not in the model card table" in err and "plan:" not in err
