"""Optional dependencies: the base modules import none of them, and every entry point that
needs one says which extra to install in one line (never an ImportError traceback)."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark import extras
from benchmark.cli import main
from benchmark.extras import MissingExtraError, require

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "torchvision", "diffusers", "transformers", "open_clip", "accelerate", "cv2", "safetensors", "PIL",
         "matplotlib", "gradio")


@pytest.fixture
def hide(monkeypatch):
    """Make ``require`` see the given import names as not installed."""
    def _hide(*names):
        monkeypatch.setattr(extras, "missing", lambda *modules: [m for m in modules if m in names])
    return _hide


def test_require_message_is_one_line_naming_the_extra():
    with pytest.raises(MissingExtraError) as err:
        require("json", "no_such_module_t2ibench", "PIL.no_such_submodule", extra="audit", purpose="generate images")
    assert isinstance(err.value, ValueError)
    assert str(err.value) == ("install t2i-bias-benchmark[audit] to generate images "
                              "(no_such_module_t2ibench, PIL.no_such_submodule are not installed)")
    assert err.value.extra == "audit" and err.value.modules == ["no_such_module_t2ibench", "PIL.no_such_submodule"]
    require("json", "numpy", purpose="anything")  # present: no error
    with pytest.raises(ValueError, match="at least one"):
        require(purpose="x")


def test_extra_defaults_to_the_one_that_installs_the_module(hide):
    hide("gradio", "PIL")
    with pytest.raises(MissingExtraError, match=r"^install t2i-bias-benchmark\[app\] to x \(gradio is not"):
        require("gradio", purpose="x")
    with pytest.raises(MissingExtraError, match=r"^install t2i-bias-benchmark\[audit\] to x \(pillow is not"):
        require("PIL", purpose="x")  # the distribution's name, not the import name


def test_base_modules_import_no_optional_dependency():
    # A fresh interpreter: the base paths (probes, scores, results, validation, the CLI parser
    # with every command) must not import a heavy package at module level.
    code = ("import sys\n"
            "import benchmark.tasks.gep.scores, benchmark.tasks.dalleval.scores, benchmark.tasks.pst.scores, benchmark.tasks.mcas.scores\n"
            "import benchmark.scores.agreement, benchmark.tasks.paintskills.scores, benchmark.scores.existence\n"
            "import benchmark.tasks.generated_bias.scores, benchmark.scores.metadata, benchmark.probes.dataset\n"
            "import benchmark.contract.results, benchmark.hub.dataset_layout, benchmark.tasks.paper_checks, benchmark.models\n"
            "import benchmark.runner.pipeline, benchmark.runner.report, submissions.validate, submissions.submit\n"
            "import benchmark.cli\n"
            "benchmark.cli.build_parser()\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_run_without_the_audit_extra_is_one_line(hide, tmp_path, capsys):
    hide("torch")
    run_dir = tmp_path / "run"
    assert main(["run", "--model", "builtin:tiny-sd", "--out", str(run_dir), "--limit", "1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("t2ibench: error: install t2i-bias-benchmark[audit] to generate images "
                       "(torch is not installed)")
    assert "Traceback" not in "\n".join(err)
    assert not run_dir.exists()  # stopped before anything was written


@pytest.mark.parametrize("module,hidden,message", [
    ("submissions.leaderboard.app", ("gradio",), "install t2i-bias-benchmark[app] to run the leaderboard"),
    ("benchmark.human.app", ("gradio",), "install t2i-bias-benchmark[app] to run the annotation app"),
    ("benchmark.tasks.paintskills.render", ("PIL",), "install t2i-bias-benchmark[audit] to render PaintSkills scenes"),
])
def test_app_and_renderer_modules_name_their_extra(hide, monkeypatch, module, hidden, message):
    hide(*hidden)
    monkeypatch.delitem(sys.modules, module, raising=False)  # restored after the test
    with pytest.raises(MissingExtraError, match=message.replace("[", r"\[").replace("]", r"\]")):
        importlib.import_module(module)
    monkeypatch.delitem(sys.modules, module, raising=False)  # the failed import left nothing behind


def test_leaderboard_command_without_the_app_extra(hide, monkeypatch, tmp_path, capsys):
    hide("gradio")
    monkeypatch.delitem(sys.modules, "submissions.leaderboard.app", raising=False)
    assert main(["leaderboard", "--results", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == ("t2ibench: error: install t2i-bias-benchmark[app] to run the "
                                               "leaderboard (gradio is not installed)")


def test_model_loaders_name_the_audit_extra(hide):
    from benchmark.annotate.skin_tone import SkinToneAnnotator
    from benchmark.models import load_encoder, load_text_to_image, load_vqa, resolve_device
    from benchmark.models.detector import load_detector
    from benchmark.tasks.paintskills.detector.training import train_detector
    from benchmark.present.plotting import plt_agg

    hide("torch", "open_clip", "transformers", "diffusers", "cv2", "matplotlib", "safetensors")
    cases = [
        (lambda: load_text_to_image("builtin:tiny-sd"), "generate images"),
        (lambda: load_encoder("builtin:tiny-clip"), "embed images with CLIP"),
        (lambda: load_vqa("builtin:tiny-vqa"), "label images with a VQA model"),
        (lambda: load_detector("builtin:tiny-detr"), "detect objects with DETR"),
        (lambda: resolve_device("cpu"), "run models"),
        (lambda: SkinToneAnnotator(), "measure skin tone"),
        (lambda: train_detector("nowhere", "nowhere"), "fine-tune a detector"),
        (lambda: plt_agg(), "draw the report's plots"),
    ]
    for call, purpose in cases:
        with pytest.raises(MissingExtraError, match=rf"^install t2i-bias-benchmark\[audit\] to {purpose} \("):
            call()


def test_building_a_builtin_model_names_the_audit_extra(hide, monkeypatch, tmp_path):
    from benchmark.models.tiny import ensure_builtin

    monkeypatch.setenv("T2IBENCH_CACHE", str(tmp_path))  # not built yet
    hide("safetensors")
    with pytest.raises(MissingExtraError, match=r"^install t2i-bias-benchmark\[audit\] to build the built-in tiny"):
        ensure_builtin("tiny-clip", kind="encoder")
    assert not (tmp_path / "builtin" / "tiny-clip").exists()
