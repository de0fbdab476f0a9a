"""Every metrics/<name> folder is a complete evaluate module that loads offline:
script, Space card, app and requirements, as evaluate's own metrics are laid out."""

import re
from pathlib import Path

import evaluate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ["gep", "mad", "pst_sts", "mcas", "human_agreement", "paintskills_accuracy"]


def test_the_public_modules_exist():
    found = sorted(p.name for p in (ROOT / "metrics").iterdir() if (p / f"{p.name}.py").is_file())
    assert set(EXPECTED) <= set(found), found


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
