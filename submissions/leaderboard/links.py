"""Where the board's links go: a model's page on the Hub (or its results file for a local, API or
built-in model), a results file, a run's report, the contents table, an adapter's repo; and the
name an adapter is shown by. Pure functions of validated ids and of where the results come
from (:class:`Links`); the page escapes every URL it writes (``html_escape``).

- A Hub results dataset (``--repo ORG/RESULTS``): files link to the dataset's file pages on the
  Hub (``/datasets/ORG/RESULTS/blob/REVISION/PATH``), the contents table to the dataset (whose
  viewer shows it).
- A local folder (``--results DIR``): files are served by the app itself, from the folder
  (Gradio's file route; the app is launched with the folder as an allowed path, which Gradio
  resolves, links included, so nothing outside the folder is served).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping
from urllib.parse import quote

from benchmark.contract.model_specs import HUB_FILE_ID, LOCAL_PATH_ID, hub_id_problem
from benchmark.contract.run_folder import REPORT_DIR
from benchmark.models.weights_ref import DIFFUSERS_LORA_FILE
from submissions.leaderboard.accepted import CONTENTS_FILE
from submissions.leaderboard.board_model import HUB_DATASETS, is_dataset_id

HUB = "https://huggingface.co/"
#: Gradio's route for a file of an allowed path (relative: works behind a proxy's prefix too)
FILE_ROUTE = "gradio_api/file="
REPORT_FILE = "report.html"


def is_hub_model_id(model_id: str) -> bool:
    """``model_id`` is a Hub model id ([ORG/]NAME by huggingface_hub's rule): safe in a URL as is."""
    return (isinstance(model_id, str) and model_id.count("/") <= 1 and ":" not in model_id
            and not LOCAL_PATH_ID.match(model_id) and hub_id_problem(model_id) is None)


def hub_file_url(model_id: str) -> str | None:
    """The Hub page of a single-file checkpoint's id ``hf://ORG/NAME[@REVISION]/PATH`` (None for another id)."""
    found = HUB_FILE_ID.match(model_id) if isinstance(model_id, str) else None
    if found is None or hub_id_problem(found["repo"]) is not None:
        return None
    return f"{HUB}{found['repo']}/blob/{quote(found['revision'] or 'main', safe='')}/{quote(found['path'], safe='/')}"


@dataclass(frozen=True)
class Links:
    """Where the results come from: a Hub dataset (``repo`` at ``revision``) or a local folder (``root``)."""

    repo: str | None = None
    revision: str | None = None
    root: Path | None = None

    def _local(self, rel: str) -> str | None:
        if self.root is None:
            return None
        path = Path(os.path.abspath(self.root / rel))
        return FILE_ROUTE + quote(path.as_posix(), safe="/")

    def results_file(self, source: str | None) -> str | None:
        """The page of results file ``source`` (its path under the folder or dataset)."""
        if not source:
            return None
        if self.repo is not None:
            if not is_dataset_id(self.repo):
                return None
            return f"{HUB_DATASETS}{self.repo}/blob/{quote(self.revision or 'main', safe='')}/{quote(source, safe='/')}"
        return self._local(source)

    def model(self, model_id: str, source: str | None) -> str | None:
        """A model's page: its Hub page for a Hub id, the file's page for a single file on the Hub
        (``hf://ORG/NAME@REVISION/PATH``), else its results file (local, API, built-in models)."""
        if is_hub_model_id(model_id):
            return HUB + model_id
        return hub_file_url(model_id) or self.results_file(source)

    def contents(self) -> str | None:
        """The contents table: the Hub dataset (its viewer shows the table), or the local parquet file."""
        if self.repo is not None:
            return f"{HUB_DATASETS}{self.repo}" if is_dataset_id(self.repo) else None
        if self.root is not None and (self.root / CONTENTS_FILE).is_file():
            return self._local(CONTENTS_FILE)
        return None

    def report(self, run_dir: Path | None) -> str | None:
        """The run's HTML report, when the results file sits in a run folder of a local board that has one."""
        if run_dir is None or self.root is None or not (run_dir / REPORT_DIR / REPORT_FILE).is_file():
            return None
        try:
            rel = (run_dir / REPORT_DIR / REPORT_FILE).resolve().relative_to(Path(self.root).resolve())
        except ValueError:  # outside the folder: not served
            return None
        return self._local(rel.as_posix())


def adapter_repo(adapter: Mapping) -> str | None:
    """The Hub repo of an adapter record (``repo``, else the ORG/NAME its ``id`` REPO/FILE starts with)."""
    repo = adapter.get("repo")
    if isinstance(repo, str) and is_dataset_id(repo):
        return repo
    ident = str(adapter.get("id") or "")
    if LOCAL_PATH_ID.match(ident) or ident.count("/") < 2:
        return None
    head = "/".join(ident.split("/")[:2])
    return head if is_dataset_id(head) else None


def adapter_name(adapter: Mapping) -> str:
    """The name an adapter is shown by: the name its record gives (``name``, ``title``), else its
    Hub repo (and the file, when it is not diffusers' default file name), else a local file's
    folder (for the default file name) or the file's name."""
    for key in ("name", "title"):
        if isinstance(adapter.get(key), str) and adapter[key].strip():
            return adapter[key].strip()
    ident = str(adapter.get("id") or adapter.get("path") or adapter.get("sha256") or "?").rstrip("/")
    repo = adapter_repo(adapter)
    if repo is not None:
        file = str(adapter.get("file") or ident[len(repo):].lstrip("/"))
        return repo if file in ("", DIFFUSERS_LORA_FILE) else f"{repo}/{file}"
    parts = ident.replace("\\", "/").split("/")
    return parts[-2] if parts[-1] == DIFFUSERS_LORA_FILE and len(parts) > 1 else parts[-1]


def adapter_url(adapter: Mapping) -> str | None:
    """An adapter's page on the Hub (its repo), or None for a local file."""
    repo = adapter_repo(adapter)
    return HUB + repo if repo else None
