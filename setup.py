"""Only what pyproject.toml cannot say: the evaluate modules of metrics/ go into the wheel.

metrics/<name>/ is laid out as an evaluate module and a Hub Space (its own card, app and
requirements), so it stays a top-level folder of the repository rather than a Python
package; the wheel carries a copy as benchmark/metric_modules/<name>/, which
``benchmark.metric_path(name)`` finds, so ``evaluate.load`` works offline after pip install.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

METRICS = Path(__file__).resolve().parent / "metrics"


class BuildPyWithMetricModules(build_py):
    """build_py, then every metrics/<name>/ folder that holds <name>.py into the build."""

    def run(self):
        super().run()
        dest = Path(self.build_lib) / "benchmark" / "metric_modules"
        for folder in sorted(METRICS.iterdir()):
            if (folder / f"{folder.name}.py").is_file():
                shutil.copytree(folder, dest / folder.name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithMetricModules})
