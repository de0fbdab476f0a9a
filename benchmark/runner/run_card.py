"""README.md of a run folder: the dataset card that lets ``datasets.load_dataset(RUN_DIR)`` read
its images, and says what made them. The runner writes it after every batch; it sits here, not
in the run-folder contract, because it needs the Hub card writer (:mod:`benchmark.hub.dataset_layout`)."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path
from typing import Sequence

from benchmark.contract.digest import sha256_hex
from benchmark.contract.run_folder import IMAGES_DIR, partial_dir
from benchmark.hub.dataset_layout import write_card


def write_run_card(run_dir: str | Path, *, config: dict, features: list[dict], n_done: int, n_total: int,
                   meaningless: bool, image_hashes: Sequence[str] = ()) -> Path:
    """README.md of RUN_DIR: the image dataset config and what made the images.

    ``datasets`` keys its cache of a local folder by the folder's name and the card's YAML,
    so the YAML carries the images' total size (``dataset_info.download_size``, added by
    ``write_card``): without it two runs in folders of the same name, or one run before and
    after a resume, would share a stale cache.
    """
    run_dir = Path(run_dir)
    model = config.get("model", {})
    header = {
        "configs": [{
            "config_name": "default",
            "default": True,
            "data_files": [{"split": "train", "path": f"{IMAGES_DIR}/**"}],
            "features": features,
        }],
        # dataset_info replaces the builder's info, so it repeats the features (without
        # them datasets would not decode `file_name` into the image column); write_card adds
        # the download size.
        "dataset_info": {"config_name": "default", "features": copy.deepcopy(features)},  # no YAML anchors
        "tags": ["t2i-bias-benchmark", "text-to-image", "bias-audit"]
        + (["synthetic-test-output"] if meaningless else []),
        "pretty_name": f"t2i-bias-benchmark images of {model.get('model_id') or model.get('spec')}",
    }
    name = model.get("spec") or model.get("model_id")
    limit = config.get("limit_per_suite")
    lines = []
    if meaningless:
        lines += [f"**These images come from a tiny random-weight model ({name}) and are meaningless: "
                  f"they test the pipeline, they say nothing about any real model.**", ""]
    spec_note = f" (spec `{model['spec']}`)" if model.get("spec") and model.get("spec") != model.get("model_id") else ""
    unfinished = "" if n_done == n_total else " (run not finished; rerun the same command to resume)"
    lines += [
        "# Images generated for a t2i-bias-benchmark audit",
        "",
        f"- Model: `{model.get('model_id')}`{spec_note}",
        f"- Revision: `{model.get('revision')}`",
        f"- Settings: `{json.dumps(config.get('settings', {}), sort_keys=True)}`",
        f"- Suites: {', '.join(config.get('suites', []))}",
        f"- Limit per suite: {limit if limit is not None else 'none (all probes)'}",
        f"- Images: {n_done:,} of {n_total:,} probes generated{unfinished}",
        f"- Package: t2i-bias-benchmark {config.get('package_version')}",
        *([f"- Images fingerprint: `{sha256_hex(' '.join(sorted(image_hashes)).encode())[:16]}` "
           "(sha256 over the images' sha256 values)"] if image_hashes else []),  # none before the first batch
        "",
        "Each image has its probe fields (probe_id, suite, prompt, sample_index, seed and the suite's",
        "structured fields), the sha256 of its PNG bytes, the model id, revision and generation settings",
        "(a JSON string), and the safety-checker flag `nsfw` (null when the model has none).",
        "",
        "```python",
        "import datasets",
        'ds = datasets.load_dataset("path/to/this/folder", split="train")  # or the Hub repo id it was pushed to',
        'ds = ds.sort("probe_index")',
        "```",
        "",
        "Row order is not guaranteed: sort by `probe_index`, or read `manifest.parquet` (the same rows in",
        "probe order). The generation arguments are in `run_config.json`.",
    ]
    tmp = partial_dir(run_dir) / f"card.{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        written = write_card(tmp, header, "\n".join(lines), data_root=run_dir)
        os.replace(written, run_dir / "README.md")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return run_dir / "README.md"

