"""benchmark/frozen_imports.py: a heavy package loads with the collector off, its objects are frozen,
the collector is back on after, and the module never sees the wrapper."""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import importlib.resources
import importlib.util
import subprocess
import sys
import textwrap

import pytest

from benchmark import frozen_imports


@pytest.fixture
def heavy(tmp_path, monkeypatch):
    """A folder of packages on sys.path, the named ones counted as heavy; removed from sys.modules after."""
    def make(name: str, body: str, data: str | None = None, is_heavy: bool = True):
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(textwrap.dedent(body))
        if data is not None:
            (pkg / "data.txt").write_text(data)
        if is_heavy:
            monkeypatch.setattr(frozen_imports, "HEAVY_PACKAGES", frozen_imports.HEAVY_PACKAGES | {name})
        made.append(name)
    made: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))
    frozen_imports.install()
    yield make
    for name in made:
        sys.modules.pop(name, None)
    gc.unfreeze()
    gc.enable()


def test_a_heavy_package_runs_with_the_collector_off_and_its_objects_are_frozen(heavy):
    heavy("heavy_a", """
        import gc
        COLLECTOR_ON = gc.isenabled()
        LOADER = __loader__
        SPEC_LOADER = __spec__.loader
        objects = [{"n": i} for i in range(1000)]
    """, data="hello")
    gc.unfreeze()
    module = importlib.import_module("heavy_a")
    assert module.COLLECTOR_ON is False
    assert gc.isenabled()
    assert gc.get_freeze_count() > 1000
    # the module only ever saw its real loader, so its resources read as usual
    assert type(module.LOADER) is importlib.machinery.SourceFileLoader
    assert module.SPEC_LOADER is module.LOADER is module.__loader__ is module.__spec__.loader
    assert (importlib.resources.files("heavy_a") / "data.txt").read_text() == "hello"


def test_a_light_package_is_left_alone(heavy):
    heavy("light_a", "import gc\nCOLLECTOR_ON = gc.isenabled()\n", is_heavy=False)
    gc.unfreeze()
    assert importlib.import_module("light_a").COLLECTOR_ON is True
    assert gc.get_freeze_count() == 0


def test_a_failing_heavy_import_turns_the_collector_back_on(heavy):
    heavy("heavy_broken", "raise ImportError('no such backend')\n")
    with pytest.raises(ImportError, match="no such backend"):
        importlib.import_module("heavy_broken")
    assert gc.isenabled()


def test_heavy_inside_heavy_freezes_once_at_the_outer_end(heavy):
    heavy("heavy_inner", "import gc\nCOLLECTOR_ON = gc.isenabled()\nFROZEN = gc.get_freeze_count()\n")
    heavy("heavy_outer", "import gc\nimport heavy_inner\nAFTER_INNER_ON = gc.isenabled()\n"
                         "AFTER_INNER_FROZEN = gc.get_freeze_count()\n")
    gc.unfreeze()
    outer = importlib.import_module("heavy_outer")
    assert sys.modules["heavy_inner"].COLLECTOR_ON is False
    assert outer.AFTER_INNER_ON is False and outer.AFTER_INNER_FROZEN == 0
    assert gc.isenabled() and gc.get_freeze_count() > 0


def test_a_caller_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with frozen_imports.collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_command_line_installs_it_and_a_library_import_does_not():
    code = ("import sys; import benchmark; from benchmark import frozen_imports as f; "
            "before = any(isinstance(x, f.FrozenImportFinder) for x in sys.meta_path); "
            "from benchmark import cli; cli.main(['scores']); "
            "after = any(isinstance(x, f.FrozenImportFinder) for x in sys.meta_path); "
            "import gc; print(before, after, gc.isenabled(), gc.get_freeze_count() > 10000, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1] == "False True True True"


def test_a_spec_found_but_not_loaded_answers_as_its_loader(heavy):
    heavy("heavy_found", "X = 1\n")
    spec = importlib.util.find_spec("heavy_found")
    assert spec.loader.is_package("heavy_found")
    assert spec.loader.get_filename("heavy_found") == spec.origin
