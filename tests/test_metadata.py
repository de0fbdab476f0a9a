import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.papers import PAPERS
from benchmark.scores.metadata import SCORE_METADATA, get_metadata

ROOT = Path(__file__).resolve().parents[1]


def test_every_score_names_a_known_paper_and_a_sane_range():
    for m in SCORE_METADATA.values():
        assert m.paper in PAPERS, m.name
        assert m.min_value < m.max_value, m.name
        if m.ideal is not None:
            assert m.in_range(m.ideal), m.name
        json.dumps(m.to_dict())  # serialisable for results files and the leaderboard


def test_badness_orders_by_direction():
    assert get_metadata("gep_score_neutral").badness(0.1) < get_metadata("gep_score_neutral").badness(0.2)
    assert get_metadata("paintskills_object").badness(90) < get_metadata("paintskills_object").badness(10)
    sts = get_metadata("sts_occupation_paired")
    assert sts.badness(-5) < sts.badness(20)  # closer to 0 is better either side


def test_infinite_bounds_become_null_in_json():
    d = get_metadata("bias_amplification").to_dict()
    assert d["max_value"] is None and not math.isinf(d["min_value"])


def test_unknown_score():
    with pytest.raises(ValueError, match="no metadata for score 'nope'"):
        get_metadata("nope")


def test_dalleval_mad_descriptions_say_what_is_averaged():
    """The score stage groups gender MAD by profession and skin-tone MAD by prompt (as the
    release's compute_mad.py; docs/results.md); the descriptions must say the same."""
    assert "averaged over professions" in get_metadata("mad_gender").description
    skin = get_metadata("mad_skin_tone").description
    assert "per prompt" in skin and "averaged over all prompts" in skin and "professions" not in skin


# The papers' scores and citations are declared in their task folders (benchmark/tasks/<paper>/
# metadata.py and citation.py) and registered from each folder's task.py (REGISTRATIONS): the
# registries list them in folder order, a folder's in its declared order, whichever folder was
# imported first (results.json, the report, the leaderboard columns and the metric cards keep
# that order). The expected order is read from the folders' declarations, so a new score is
# written in its folder only; a score registered anywhere else, twice or out of order fails here.
def _declared(kind: str) -> list[str]:
    from benchmark.tasks.discovery import task_folders

    out = []
    for folder in task_folders():
        declared = getattr(__import__(f"benchmark.tasks.{folder}.task", fromlist=["REGISTRATIONS"]), "REGISTRATIONS")
        out += [getattr(e, "key", None) or e.name for e in getattr(declared, kind)]
    return out


SCORE_ORDER = _declared("scores")
PAPER_ORDER = _declared("papers")


def test_the_task_folders_register_every_score_and_paper_in_folder_order():
    assert list(SCORE_METADATA) == SCORE_ORDER and list(PAPERS) == PAPER_ORDER
    assert len(SCORE_ORDER) == len(set(SCORE_ORDER)) >= 28 and PAPER_ORDER[:2] == ["gep", "dalleval"]
    assert PAPERS["diffusion_bias"].title.startswith("Generated Bias")  # results.json keeps the key
    for folder, names in (("generated_bias", ["diffusion_bias", "bias_amplification"]),
                          ("mcas", ["mcas", "II", "ITP", "ITA", "TT"])):
        module = __import__(f"benchmark.tasks.{folder}.metadata", fromlist=["SCORES"])
        assert [m.name for m in module.SCORES] == names


@pytest.mark.parametrize("first", ["benchmark.tasks.paintskills", "benchmark.tasks.generated_bias",
                                   "benchmark.tasks.mcas.task", "benchmark.scores.metadata"])
def test_registry_order_does_not_depend_on_which_folder_is_imported_first(first):
    script = (f"import {first}\n"
              "from benchmark.papers import PAPERS\n"
              "from benchmark.scores.metadata import SCORE_METADATA\n"
              "print([list(SCORE_METADATA), list(PAPERS)])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str([SCORE_ORDER, PAPER_ORDER])


def test_a_score_or_paper_cannot_be_redefined_and_a_lookup_imports_no_folder_twice():
    from dataclasses import replace

    from benchmark.registries import register_paper, register_score

    with pytest.raises(ValueError, match="already has other metadata"):
        register_score(replace(get_metadata("mcas"), display_name="other"))
    with pytest.raises(ValueError, match="already cited differently"):
        register_paper(replace(PAPERS["gep"], title="other"))
    assert register_score(get_metadata("mcas")) is get_metadata("mcas")  # the same again: allowed, same place
    assert list(SCORE_METADATA) == SCORE_ORDER


def _fresh_process(script: str) -> str:
    """What ``script`` prints, run in a new interpreter (nothing of the package imported yet)."""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_threads_reading_the_registries_at_once_wait_for_the_whole_load():
    """Two queue workers in one process ask for score metadata at the same moment: the second
    must wait for the task folders the first is importing, not read a half-filled registry."""
    script = (
        "import threading\n"
        "from benchmark.scores.metadata import SCORE_METADATA\n"
        "from benchmark.papers import PAPERS\n"
        "from benchmark.tasks import list_tasks\n"
        "barrier, seen = threading.Barrier(6), []\n"
        "def read(i):\n"
        "    barrier.wait()\n"
        "    if i % 3 == 0: seen.append(('score', 'gep_score_neutral' in SCORE_METADATA))\n"
        "    elif i % 3 == 1: seen.append(('paper', 'mcas' in PAPERS))\n"
        "    else: seen.append(('task', len(list_tasks()) >= 5))\n"
        "threads = [threading.Thread(target=read, args=(i,)) for i in range(6)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "print(sorted(seen))\n")
    assert _fresh_process(script).strip() == str(sorted([("score", True)] * 2 + [("paper", True)] * 2 + [("task", True)] * 2))


def test_the_task_folders_load_once_whoever_asks_first():
    """A registry read before any entry point (a library user) loads the task folders through the
    loader the top package installed; benchmark.load_tasks() and later reads do not load again."""
    script = (
        "import benchmark\n"
        "from benchmark import registries\n"
        "calls, real = [], registries._loader\n"
        "registries.install_loader(lambda: (calls.append(1), real()))\n"
        "from benchmark.scores.metadata import SCORE_METADATA\n"
        "found = 'gep_score_neutral' in SCORE_METADATA\n"
        "benchmark.load_tasks(); list(SCORE_METADATA)\n"
        "print(found, len(calls))\n")
    assert _fresh_process(script).split() == ["True", "1"]
