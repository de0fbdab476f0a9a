"""The package as users get it: one version source, a light base install with extras, metric
modules that pin it, and a built wheel that computes every metric card's example through
`evaluate.load` in a fresh virtual environment holding only the base dependencies.

The wheel test builds the wheel and the sdist (`pip wheel --no-deps`, `python -m build
--sdist`), installs the wheel into a new venv from the package index (pip's cache makes
later runs fast) and runs there, outside the repository; about 1-2 minutes.
"""

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

import benchmark
from benchmark.registries import EVALUATE_MODULES

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: huggingface_hub depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
benchmark.load_tasks()
METRICS = list(EVALUATE_MODULES)  # the evaluate modules the task folders declare
# Distributions that must never come with the base install (normalised names).
HEAVY_DISTRIBUTIONS = {"torch", "torchvision", "diffusers", "transformers", "open-clip-torch", "gradio", "accelerate",
                       "opencv-python-headless", "opencv-python", "matplotlib", "pillow", "safetensors"}
HEAVY_IMPORTS = ["torch", "torchvision", "diffusers", "transformers", "open_clip", "gradio", "accelerate", "cv2",
                 "matplotlib", "PIL", "safetensors"]


def _name(requirement: str) -> str:
    """Normalised distribution name of a requirement string."""
    return re.sub(r"[-_.]+", "-", re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)).lower()


def _card_example(name: str) -> tuple[str, str]:
    """(code, printed output) of the "How to use" example of metrics/<name>/README.md."""
    card = (ROOT / "metrics" / name / "README.md").read_text()
    use = card[card.index("## How to use"):]
    code = re.search(r"```python\n(.*?)```", use, re.S).group(1)
    printed = re.search(r"Output:\n\n```\w*\n(.*?)```", use, re.S).group(1)
    return code, printed


def _same_printout(got: str, expected: str) -> bool:
    """Equal text with every number equal to 1e-9 (relative); line breaks and spaces ignored."""
    number = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
    got, expected = " ".join(got.split()), " ".join(expected.split())
    if re.sub(number, "#", got) != re.sub(number, "#", expected):
        return False
    pairs = zip(re.findall(number, got), re.findall(number, expected))
    return all(abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b))) for a, b in pairs)


# --------------------------------------------------------------------------- metadata


def test_version_has_one_source():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "benchmark.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", benchmark.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog and "Keep a Changelog" in changelog


def test_base_install_is_light_and_the_extras_hold_the_rest():
    project = PYPROJECT["project"]
    base = {_name(r) for r in project["dependencies"]}
    assert not base & HEAVY_DISTRIBUTIONS, base & HEAVY_DISTRIBUTIONS
    assert {"numpy", "pandas", "scipy", "scikit-learn", "statsmodels", "krippendorff", "pyarrow", "pyyaml",
            "datasets", "evaluate", "huggingface-hub", "jsonschema"} <= base
    extras = {k: {_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    assert {"torch", "torchvision", "diffusers", "transformers", "open-clip-torch", "accelerate",
            "opencv-python-headless", "pillow", "matplotlib", "safetensors"} <= extras["audit"]
    assert "gradio" in extras["app"]
    all_ = " ".join(project["optional-dependencies"]["all"])
    assert "audit" in all_ and "app" in all_
    assert "t2i-bias-benchmark[all]" in project["optional-dependencies"]["test"]
    assert "t2i-bias-benchmark[docs]" in project["optional-dependencies"]["test"]  # the tests build the site
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= extras["docs"]
    assert {"pytest", "playwright", "build", "twine"} <= extras["test"]


def test_metric_modules_pin_only_index_packages_as_pyproject_does():
    # Self-contained scripts: their requirements are base dependencies of the package, pinned
    # as pyproject.toml pins them, and never the package itself.
    pins = {_name(r): r for r in PYPROJECT["project"]["dependencies"]}
    for name in METRICS:
        lines = [ln.strip() for ln in (ROOT / "metrics" / name / "requirements.txt").read_text().splitlines()]
        requirements = {ln for ln in lines if ln and not ln.startswith("#")}
        assert pins["evaluate"] in requirements, name
        assert all(pins.get(_name(r)) == r for r in requirements), (name, requirements)
        assert not {_name(r) for r in requirements} & (HEAVY_DISTRIBUTIONS | {"t2i-bias-benchmark"}), name


def test_cards_load_from_the_org_the_readme_names_and_by_path():
    readme = (ROOT / "README.md").read_text()
    loads = re.findall(r'evaluate\.load\("([\w.-]+)/(?:' + "|".join(METRICS) + r')"\)', readme)
    orgs = set(loads) - {"metrics"}  # evaluate.load("metrics/gep") is the checkout's folder
    assert len(orgs) == 1, orgs
    org = orgs.pop()
    for name in METRICS:
        folder = ROOT / "metrics" / name
        card = (folder / "README.md").read_text()
        code, _ = _card_example(name)
        assert f'evaluate.load("{org}/{name}")' in code, name
        assert f'evaluate.load("path/to/{name}")' in card, name
        for f in folder.glob("*"):
            if f.suffix in (".md", ".py"):
                bare = re.findall(r'evaluate\.load\("([^"/]+)"\)', f.read_text())
                assert not bare, f"{f.relative_to(ROOT)} loads a bare name {bare}: evaluate looks in its own namespace"
        assert f'with_name("{name}.py")' in (folder / "app.py").read_text()  # the Space loads its own script


def test_metric_scripts_import_only_what_their_requirements_install():
    from evaluate.loading import get_imports

    dist = {"sklearn": "scikit-learn"}
    for name in METRICS:
        folder = ROOT / "metrics" / name
        lines = (folder / "requirements.txt").read_text().splitlines()
        required = {_name(ln) for ln in lines if ln.strip() and not ln.startswith("#")}
        imports = get_imports(str(folder / f"{name}.py"))
        assert {kind for kind, *_ in imports} == {"library"}, (name, imports)
        third_party = {module for _, module, _, _ in imports if module not in sys.stdlib_module_names}
        assert "benchmark" not in third_party, name
        assert {dist.get(m, m) for m in third_party} == required, (name, third_party, required)


# --------------------------------------------------------------------------- the built wheel


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert out.returncode == 0, f"{cmd}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(wheel, sdist) built from a copy of the working tree (no stale build/ folder leaks in)."""
    tmp = tmp_path_factory.mktemp("build")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".cache", "out", "runs"))
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)], timeout=600,
         env=_clean_env())
    _run([sys.executable, "-m", "build", "--sdist", "--outdir", str(dist), str(src)], timeout=600, env=_clean_env())
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def base_venv(built, tmp_path_factory):
    """A fresh venv (no system site-packages) with the wheel and its base dependencies only."""
    wheel, _ = built
    venv = tmp_path_factory.mktemp("venv") / "base"
    # without pip of its own: this interpreter's pip installs into it (`pip --python`), which spares
    # the 3 CPU s of ensurepip; what is installed is the same
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=300)
    python = venv / "bin" / "python"
    # --no-compile: pip's byte-compiling of every installed file was half of the install's CPU
    # time; Python compiles what the tests import when they import it
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile", str(wheel)],
         timeout=1200, env=_clean_env())
    return venv


@pytest.mark.wheel
def test_wheel_metadata_base_requirements_and_package_data(built):
    wheel, sdist = built
    assert wheel.name.startswith(f"t2i_bias_benchmark-{benchmark.__version__}-")
    _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], timeout=300)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta_file = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_file).decode())
        entry_points = zf.read(meta_file.replace("METADATA", "entry_points.txt")).decode()
    assert meta["Version"] == benchmark.__version__
    requires = meta.get_all("Requires-Dist")
    base = {_name(r) for r in requires if "extra ==" not in r}
    assert base and not base & HEAVY_DISTRIBUTIONS, base & HEAVY_DISTRIBUTIONS
    assert {"audit", "app", "all", "test"} <= set(meta.get_all("Provides-Extra"))
    assert "t2ibench = benchmark.cli:main" in entry_points and "[t2ibench.commands]" in entry_points
    # Every data file of the packages (configs, CSVs, the results schema) is inside the wheel;
    # the leaderboard's Space files (its card and requirements) are not package data.
    space_files = {"submissions/leaderboard/README.md", "submissions/leaderboard/requirements.txt"}
    for package in ("benchmark", "submissions", "dataset_builders"):
        for f in (ROOT / package).rglob("*"):
            rel = f.relative_to(ROOT).as_posix()
            if f.is_file() and f.suffix not in (".py", ".pyc") and "__pycache__" not in rel and rel not in space_files \
                    and (f.parent / "__init__.py").is_file():
                assert rel in names, f"{rel} is not in the wheel"
    assert "benchmark/contract/results_schema.json" in names
    # The evaluate modules, whole, where benchmark.metric_path finds them; not the build script.
    for name in METRICS:
        for f in (f"{name}.py", "README.md", "app.py", "requirements.txt"):
            assert f"benchmark/metric_modules/{name}/{f}" in names, f"metrics/{name}/{f} is not in the wheel"
    assert not [n for n in names if n.endswith("inline_scores.py")]
    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    for needed in ("CHANGELOG.md", "LICENSE", "setup.py", "metrics/gep/gep.py", "metrics/inline_scores.py",
                   "tests/data/README.md", "mkdocs.yml", "docs/_hooks/site_links.py", "docs/index.md",
                   "tests/data/gep/gep_prompts_256x2.csv", "benchmark/contract/results_schema.json"):
        assert needed in members, needed


@pytest.mark.wheel
def test_base_venv_computes_every_metric_card_example(base_venv, tmp_path):
    python = base_venv / "bin" / "python"
    # The modules come from the wheel (benchmark.metric_path), loaded by path, offline.
    script = tmp_path / "run_examples.py"
    script.write_text(textwrap.dedent(f"""
        import contextlib, importlib.metadata, io, json, re, sys
        import benchmark
        out = {{"benchmark_file": benchmark.__file__, "version": benchmark.__version__,
                "installed": importlib.metadata.version("t2i-bias-benchmark"), "printed": {{}}, "paths": {{}}}}
        for name in {METRICS!r}:
            folder = benchmark.metric_path(name)
            out["paths"][name] = folder
            card = open(f"{{folder}}/README.md").read()
            code = re.search(r"```python\\n(.*?)```", card[card.index("## How to use"):], re.S).group(1)
            code = code.replace(f'evaluate.load("t2i-bias-benchmark/{{name}}")', f'evaluate.load({{folder!r}})')
            assert f'evaluate.load({{folder!r}})' in code, name
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(code, f"{{name}}/README.md", "exec"), {{}})
            out["printed"][name] = buf.getvalue()
        out["heavy"] = sorted(m for m in {HEAVY_IMPORTS!r} if m in sys.modules)
        print(json.dumps(out))
    """))
    env = _clean_env(HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"),
                     HF_DATASETS_CACHE=str(tmp_path / "hf" / "datasets"))
    res = _run([str(python), str(script)], cwd=tmp_path, env=env, timeout=600)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert Path(out["benchmark_file"]).is_relative_to(base_venv)  # the installed wheel, not the checkout
    assert out["version"] == out["installed"] == benchmark.__version__
    assert all(Path(p).is_relative_to(base_venv) for p in out["paths"].values()), out["paths"]
    for name in METRICS:
        _, expected = _card_example(name)
        assert _same_printout(out["printed"][name], expected), f"{name}:\n{out['printed'][name]}\n!=\n{expected}"
    assert out["heavy"] == []


@pytest.mark.wheel
def test_base_venv_has_no_heavy_package_and_the_commands_work(base_venv, tmp_path):
    python, cli = base_venv / "bin" / "python", base_venv / "bin" / "t2ibench"
    env = _clean_env(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    torch = subprocess.run([str(python), "-c", "import torch"], capture_output=True, text=True, env=env,
                           cwd=tmp_path, timeout=120)
    assert torch.returncode != 0 and "ModuleNotFoundError: No module named 'torch'" in torch.stderr
    code = f"import importlib.util; print([m for m in {HEAVY_IMPORTS!r} if importlib.util.find_spec(m)])"
    assert _run([str(python), "-c", code], env=env, cwd=tmp_path, timeout=120).stdout.strip() == "[]"
    assert "gep_neutral" in _run([str(cli), "probes", "list"], env=env, cwd=tmp_path, timeout=300).stdout
    assert "gep_score" in _run([str(cli), "scores"], env=env, cwd=tmp_path, timeout=120).stdout
    assert "printed numbers recomputed" in _run([str(cli), "reproduce"], env=env, cwd=tmp_path, timeout=300).stdout
    # validate reads the results schema from the wheel's package data
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"schema_version": "1.0"}))
    val = subprocess.run([str(cli), "validate", str(bad)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert val.returncode == 1 and "scores: required field is missing" in val.stdout + val.stderr
    # commands that need an extra say which, in one line
    for args, line in (
        (["run", "--model", "builtin:tiny-sd", "--out", str(tmp_path / "run"), "--limit", "1", "--quiet"],
         "t2ibench: error: install t2i-bias-benchmark[audit] to generate images ("),
        (["leaderboard", "--results", str(tmp_path)], "t2ibench: error: install t2i-bias-benchmark[app] to run the "
                                                      "leaderboard ("),
        (["paintskills-samples", "--out", str(tmp_path / "s.png")],
         "t2ibench: error: install t2i-bias-benchmark[audit] to render PaintSkills scenes ("),
    ):
        res = subprocess.run([str(cli), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.strip().splitlines()[-1].startswith(line), res.stderr
        assert "Traceback" not in res.stderr
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- the index page


def test_readme_links_work_on_the_package_index_page():
    # PyPI renders README.md without the repository around it: a relative link or image
    # breaks there. Links into the repository start with [project.urls] Repository and point
    # to files that exist; in-page anchors are fine.
    repo = PYPROJECT["project"]["urls"]["Repository"]
    assert {"Homepage", "Repository", "Changelog", "Issues"} <= set(PYPROJECT["project"]["urls"])
    assert all(u.startswith(repo) for u in PYPROJECT["project"]["urls"].values())
    raw = repo.replace("https://github.com/", "https://raw.githubusercontent.com/") + "/main/"
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", readme) + re.findall(r'src="([^"]+)"', readme)
    assert len(targets) > 30
    relative = [t for t in targets if not re.match(r"(https?:|mailto:|#)", t)]
    assert relative == [], f"relative links break on the package index page: {relative}"
    ours = [t for t in targets if "t2i-bias-benchmark/t2i-bias-benchmark" in t]
    assert ours and all(t.startswith((repo + "/blob/main/", repo + "/tree/main/", raw)) for t in ours), ours
    missing = [t for t in ours if not (ROOT / re.sub(r"^.*?/main/", "", t).split("#")[0]).exists()]
    assert missing == [], f"links to files the repository does not have: {missing}"
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", readme)
    assert images and all(i.startswith(raw) for i in images), images  # raw files: GitHub's blob pages are HTML


#: the README and the pages its sections moved to (docs/getting_started.md, the walkthroughs)
README_PAGES = ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))]
WALKTHROUGH_PAGES = ["README.md", "docs/getting_started.md", "docs/submitting.md", "docs/human_labels_tour.md"]


def test_readme_tables_render():
    from markdown_tables import broken_table_lines

    for page in README_PAGES:
        assert broken_table_lines((ROOT / page).read_text()) == [], page


def test_readme_walkthroughs_write_under_out_only():
    # A walkthrough run in a checkout must not write into tracked folders (submissions/results/)
    # or runs/queue/ of the current folder: every folder it writes to is under out/.
    blocks = [b for page in WALKTHROUGH_PAGES for b in re.findall(r"```bash\n(.*?)```", (ROOT / page).read_text(), re.S)]
    commands = [c for b in blocks for c in b.replace("\\\n", " ").splitlines() if "--demo" in c or "-folder" in c]
    assert commands
    for command in commands:
        for option, value in re.findall(r"(--to-folder|--results-folder|--requests-folder|--runs-dir)\s+(\S+)", command):
            assert value.startswith("out/"), command
        if "t2ibench worker" in command and "--requests-folder" in command:
            assert "--runs-dir out/" in command, command  # the default is runs/queue of the current folder
