"""Every metrics/<name> folder is a complete evaluate module that loads offline:
script, Space card, app and requirements, as evaluate's own metrics are laid out."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import evaluate
import numpy as np
import pytest
import yaml

import benchmark
from benchmark.registries import EVALUATE_MODULES

ROOT = Path(__file__).resolve().parents[1]
benchmark.load_tasks()
#: the evaluate modules the task folders declare (EvaluateModuleSpec in their metadata.py)
EXPECTED = list(EVALUATE_MODULES)


def test_the_public_modules_exist():
    """One metrics/<name>/ folder per declared module and no other: a folder no task declares
    (or a declaration without its folder) fails here."""
    found = sorted(p.name for p in (ROOT / "metrics").iterdir() if (p / f"{p.name}.py").is_file())
    assert sorted(EXPECTED) == found and len(found) >= 6


@pytest.mark.parametrize("name", EXPECTED)
def test_module_folder_is_space_ready(name):
    folder = ROOT / "metrics" / name
    for f in (f"{name}.py", "README.md", "app.py", "requirements.txt"):
        assert (folder / f).is_file(), f"metrics/{name}/{f} missing"
    card = (folder / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    for key in ("title", "sdk", "app_file", "tags", "description"):
        assert key in header, f"{name} card lacks {key}"
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert "evaluate" in header["tags"] and "metric" in header["tags"]
    for section in ("Inputs", "Output", "Citation"):
        assert re.search(rf"^#+ .*{section}", card, re.M), f"{name} card lacks a {section} section"
    assert "evaluate" in (folder / "requirements.txt").read_text()


@pytest.mark.parametrize("name", EXPECTED)
def test_script_has_one_import_per_line(name):
    # evaluate's import scanner is a regex over lines.
    src = (ROOT / "metrics" / name / f"{name}.py").read_text()
    for line in src.splitlines():
        m = re.match(r"\s*import\s+(.+)", line)
        if m:
            assert "," not in m.group(1), f"{name}: {line.strip()!r} imports several modules on one line"


@pytest.mark.parametrize("name", EXPECTED)
def test_loads_offline_by_path(name, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module = evaluate.load(str(ROOT / "metrics" / name))
    assert module.name and module.description and module.citation
    assert "@" in module.citation  # bibtex


# --------------------------------------------------------------------------- self-contained


def test_copied_maths_is_fresh():
    # metrics/inline_scores.py copies the formulas from benchmark/ into each script; a
    # change to benchmark/ without a rerun leaves a stale copy, which this catches.
    res = subprocess.run([sys.executable, str(ROOT / "metrics" / "inline_scores.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_the_copies_are_read_from_the_task_folders_and_go_stale_with_them(tmp_path):
    """A formula edited in its paper's folder (``benchmark/tasks/pst/scores.py``) leaves the STS
    module's copy stale: ``--check`` fails naming it, and a rerun brings it up to date."""
    for part in ("benchmark", "metrics"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    formulas = tmp_path / "benchmark" / "tasks" / "pst" / "scores.py"
    text = formulas.read_text()
    assert "\ndef sts(" in text and not (tmp_path / "benchmark" / "scores" / "sts.py").exists()
    formulas.write_text(text.replace("\ndef sts(", "\n# an edit\ndef sts(", 1).replace(
        "Overall STS (Eq. 1)", "Overall STS (Eq. 1, edited)", 1))
    script = [sys.executable, str(tmp_path / "metrics" / "inline_scores.py")]
    stale = subprocess.run(script + ["--check"], capture_output=True, text=True, timeout=120)
    assert stale.returncode == 1 and stale.stderr.strip().endswith("metrics/pst_sts/pst_sts.py"), stale.stderr
    assert subprocess.run(script, capture_output=True, text=True, timeout=120).returncode == 0
    assert "Overall STS (Eq. 1, edited)" in (tmp_path / "metrics" / "pst_sts" / "pst_sts.py").read_text()
    assert subprocess.run(script + ["--check"], capture_output=True, text=True, timeout=120).returncode == 0


def test_each_module_is_declared_by_a_task_folder(tmp_path):
    """The copies are declared in the task folders (``EvaluateModuleSpec``): a metrics/
    folder no task declares, or a declaration without its folder, stops the build with one line."""
    for part in ("benchmark", "metrics"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    script = [sys.executable, str(tmp_path / "metrics" / "inline_scores.py"), "--check"]
    (tmp_path / "metrics" / "toy").mkdir()
    (tmp_path / "metrics" / "toy" / "toy.py").write_text("")
    res = subprocess.run(script, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.startswith(
        "inline_scores: error: metrics/toy/ is declared by no task folder"), res.stderr
    shutil.rmtree(tmp_path / "metrics" / "toy")
    metadata = tmp_path / "benchmark" / "tasks" / "pst" / "metadata.py"
    metadata.write_text(metadata.read_text()
                        + '\nEVALUATE_MODULES += (EvaluateModuleSpec("pst_extra", ("benchmark.tasks.pst.scores:sts",)),)\n')
    res = subprocess.run(script, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.strip() == (
        "inline_scores: error: pst_extra is declared (EvaluateModuleSpec) but metrics/pst_extra/pst_extra.py "
        "does not exist"), res.stderr


def test_scripts_do_not_import_the_package():
    for name in EXPECTED:
        tree = ast.parse((ROOT / "metrics" / name / f"{name}.py").read_text())
        mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {m for m in mods if m.split(".")[0] == "benchmark"}, name


def _cases() -> dict[str, list[dict]]:
    """compute() keyword arguments per module: small, but every output field is non-trivial."""
    rng = np.random.default_rng(7)
    attrs = ["in a dress", "in a suit", "in a shirt", "with glasses"]
    n = 24  # images per group
    gep_rows = [(g, a, f"{g}{i}", float(rng.random() < p))
                for g, base in (("woman", 0.5), ("man", 0.3)) for i in range(n)
                for a, p in zip(attrs, (base, 1 - base, 0.4, 0.2))]
    labels = list(rng.choice(["male", "female"], size=60, p=[0.7, 0.3]))
    persons = rng.choice(["masculine", "feminine", "unidentifiable"], size=40, p=[0.55, 0.4, 0.05]).tolist()
    emb = rng.normal(size=(30, 6)).round(4).tolist()
    roles = (["attribute_a_image"] * 3 + ["attribute_b_image"] * 3 + ["attribute_a_text"] * 3
             + ["attribute_b_text"] * 3 + (["target_image"] * 5 + ["target_text"]) * 3)
    targets = [""] * 12 + ["ceo"] * 6 + ["nurse"] * 6 + ["pilot"] * 6
    scores = rng.random(30).round(3).tolist()
    boxes = rng.random((6, 4)).round(3).tolist()
    return {
        "gep": [dict(predictions=[r[3] for r in gep_rows], groups=[r[0] for r in gep_rows],
                     attributes=[r[1] for r in gep_rows], n_resamples=200),
                dict(predictions=[r[3] for r in gep_rows], groups=[r[0] for r in gep_rows],
                     attributes=[r[1] for r in gep_rows], image_ids=[r[2] for r in gep_rows], n_resamples=200)],
        "mad": [dict(predictions=labels, categories=["male", "female"], groups=["a"] * 20 + ["b"] * 20 + ["c"] * 20,
                     values={"male": -1, "female": 1}, n_resamples=200)],
        "pst_sts": [dict(predictions=persons, references=["male", "female"] * 20,
                         identities=["ceo", "assistant"] * 10 + ["pilot", "nurse"] * 10, n_resamples=200),
                    dict(predictions=persons, references=["male", "female"] * 20,
                         identities=["ceo", "assistant"] * 20, unidentifiable="zero", n_resamples=0)],
        "mcas": [dict(embeddings=emb, roles=roles, targets=targets, n_resamples=200)],
        "human_agreement": [dict(predictions=scores, references=(rng.random(30) < 0.5).astype(float).tolist(),
                                 groups=["a suit", "a tie", "a dress"] * 10),
                            dict(predictions=(rng.random(12) - 0.5).round(3).tolist(),
                                 references=(rng.random(12) - 0.5).round(3).tolist(), task="vector")],
        "paintskills_accuracy": [dict(
            predictions=[{"scores": [0.95, 0.9, 0.05], "labels": ["dog", "chair", "cat"], "boxes": boxes[:3]},
                         {"scores": [0.92, 0.88, 0.8], "labels": ["bus", "bird", "bus"], "boxes": boxes[3:]}] * 3,
            references=[{"target": "dog", "target_b": "chair", "relation": "left"},
                        {"target": "bus", "target_b": "bird", "relation": "below"}] * 3,
            skill="spatial", n_resamples=100)],
    }


def test_every_module_has_a_cross_check_case():
    """A module the folders declare without a case below would go unchecked against the package."""
    assert sorted(_cases()) == sorted(EXPECTED)


def _direct(name: str, kw: dict):
    """What benchmark's own functions give for the same keyword arguments."""
    from benchmark.models.detector import Detections
    from benchmark.scores.agreement import binary_agreement, vector_agreement
    from benchmark.tasks.gep.scores import gep
    from benchmark.tasks.dalleval.scores import average_value_score, mad_score
    from benchmark.tasks.mcas.scores import mcas_score
    from benchmark.tasks.paintskills.scores import evaluate_skill
    from benchmark.tasks.pst.scores import sts

    kw = dict(kw)
    if name == "gep":
        return gep(**kw)
    if name == "mad":
        values = kw.pop("values")
        out = mad_score(kw["predictions"], kw["categories"], kw["groups"], n_resamples=kw["n_resamples"])
        return {**out, **average_value_score(kw["predictions"], values, kw["groups"], n_resamples=kw["n_resamples"])}
    if name == "pst_sts":
        return sts(**kw)
    if name == "mcas":
        return mcas_score(**kw)
    if name == "human_agreement":
        if kw.pop("task", "binary") == "vector":
            return vector_agreement(**kw)
        return binary_agreement(**kw)
    dets = [Detections(np.asarray(p["scores"], dtype=np.float64), tuple(p["labels"]), np.asarray(p["boxes"]))
            for p in kw["predictions"]]
    out = evaluate_skill(kw["skill"], dets, kw["references"], n_resamples=kw["n_resamples"])
    out["correct"] = [bool(o["correct"]) for o in out.pop("outcomes")]
    return out


def _plain(value):
    """JSON-ready value with NaN spelled out, so that two results compare exactly."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)),
                      parse_constant=lambda c: c)


def _close(a, b) -> bool:
    """Equal structure and text, numbers equal to 1e-9 (the venv's numpy or scipy may be newer)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


@pytest.fixture(scope="session")
def evaluate_only_venv(tmp_path_factory):
    """A fresh venv (no system site-packages, no t2i-bias-benchmark) holding evaluate and the
    union of every module's requirements.txt, from the package index; built once per session."""
    venv = tmp_path_factory.mktemp("evaluate_only") / "venv"
    # without pip of its own: this interpreter's pip installs into it (`pip --python`), which spares
    # the 3 CPU s of ensurepip; what is installed is the same
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    reqs = sorted({ln.strip() for name in EXPECTED
                   for ln in (ROOT / "metrics" / name / "requirements.txt").read_text().splitlines()
                   if ln.strip() and not ln.startswith("#")})
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    # --no-compile: byte-compiling every installed file was half of the install's CPU time
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                          "--no-compile", *reqs],
                         capture_output=True, text=True, timeout=1200, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return venv


@pytest.mark.fresh_venv
def test_every_module_computes_what_benchmark_computes_in_an_evaluate_only_venv(evaluate_only_venv, tmp_path):
    cases = _cases()
    modules = tmp_path / "modules"  # a copy outside the repository, loaded by path and offline
    shutil.copytree(ROOT / "metrics", modules, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import importlib.util, json, sys
        import evaluate
        cases = json.load(open({str(tmp_path / "cases.json")!r}))
        out = {{"benchmark": importlib.util.find_spec("benchmark") is not None, "results": {{}}}}
        for name, kwargs in cases.items():
            module = evaluate.load({str(modules)!r} + "/" + name)
            out["results"][name] = [module.compute(**kw) for kw in kwargs]
        print(json.dumps(out, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    res = subprocess.run([str(evaluate_only_venv / "bin" / "python"), str(script)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1], parse_constant=lambda c: c)
    assert out["benchmark"] is False  # the package is not there: the scripts carry their maths
    for name, kwargs in cases.items():
        for kw, got in zip(kwargs, out["results"][name], strict=True):
            expected = _plain(_direct(name, kw))
            assert _close(got, expected), f"{name}: {got}\n!=\n{expected}"


def test_metric_path_finds_every_module_and_names_them_for_a_typo():
    import benchmark

    for name in EXPECTED:
        assert Path(benchmark.metric_path(name)) == ROOT / "metrics" / name  # the checkout (editable install)
    with pytest.raises(ValueError, match="the modules are: gep, "):
        benchmark.metric_path("gepp")
