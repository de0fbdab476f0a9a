"""Write folders laid out like a Hub dataset repo: ``<config>/<split>-00000-of-00001.parquet``
per config and split, plus a README.md card (``huggingface_hub.DatasetCard``) whose YAML
``configs:`` lets ``datasets.load_dataset(folder, config)`` load it offline exactly as from
the Hub.

All configs are parquet (datasets picks one builder per repo from the first config).
"""

from __future__ import annotations

import argparse
import copy
import shutil
from pathlib import Path

import datasets
import pandas as pd
import pyarrow.parquet as pq
from huggingface_hub import DatasetCard, DatasetCardData

from benchmark.cli_types import output_folder
from benchmark.contract.atomic import atomic_path


def write_split(folder: str | Path, config_name: str, split: str, table: pd.DataFrame | datasets.Dataset) -> Path:
    """Write one config's split as a single parquet shard; returns its path."""
    ds = table if isinstance(table, datasets.Dataset) else datasets.Dataset.from_pandas(table, preserve_index=False)
    out_dir = Path(folder) / config_name
    out_dir.mkdir(parents=True, exist_ok=True)
    return write_parquet_shard(out_dir / f"{split}-00000-of-00001.parquet", ds)


def write_parquet_shard(path: str | Path, ds: datasets.Dataset) -> Path:
    """Write ``ds`` to one parquet file atomically, so a crash never leaves a truncated
    shard; the Arrow table carries the datasets Features in its schema metadata."""
    with atomic_path(path) as tmp:
        pq.write_table(ds.with_format(None).data.table, tmp)
    return Path(path)


def configs_yaml(config_splits: dict[str, list[str]], default: str | None = None) -> list[dict]:
    """The card's ``configs:`` entries for ``{config: [split, ...]}``."""
    entries = []
    for name, splits in config_splits.items():
        entry: dict = {"config_name": name,
                       "data_files": [{"split": s, "path": f"{name}/{s}-*.parquet"} for s in splits]}
        if name == default:
            entry["default"] = True
        entries.append(entry)
    return entries


def _data_files_size(folder: Path, config: dict) -> int:
    patterns = [f["path"] if isinstance(f, dict) else f for f in config.get("data_files", [])]
    patterns = [p + "/*" if p.endswith("**") else p for p in patterns]  # pathlib's "**" matches folders only
    files = {p for pattern in patterns for p in folder.glob(pattern) if p.is_file()}
    return sum(p.stat().st_size for p in files)


def with_download_sizes(folder: str | Path, header: dict) -> dict:
    """``header`` with each config's ``dataset_info.download_size`` (bytes of its data files).

    ``datasets`` caches a local folder by its name and its card's YAML, not by its files:
    without a size that changes with the data, a folder rebuilt in place (more labels,
    other suites) would load its stale cached copy.
    """
    folder = Path(folder)
    configs = header.get("configs") or []
    if not configs:
        return header
    info = header.get("dataset_info")
    entries = [dict(e) for e in (info if isinstance(info, list) else [info] if info else [])]
    by_name = {e.get("config_name", "default"): e for e in entries}
    for config in configs:
        name = config.get("config_name", "default")
        entry = by_name.get(name)
        if entry is None:
            entry = by_name[name] = {"config_name": name}
            entries.append(entry)
        entry["download_size"] = _data_files_size(folder, config)
    return {**header, "dataset_info": entries[0] if len(entries) == 1 and not isinstance(info, list) else entries}


def _split_files(folder: Path, config: dict) -> dict[str, list[Path]]:
    """{split: [data files]} of one ``configs:`` entry."""
    out: dict[str, list[Path]] = {}
    for f in config.get("data_files", []):
        split, pattern = (f.get("split", "train"), f["path"]) if isinstance(f, dict) else ("train", f)
        pattern = pattern + "/*" if pattern.endswith("**") else pattern
        out.setdefault(split, []).extend(sorted(p for p in folder.glob(pattern) if p.is_file()))
    return out


def _parquet_info(config_name: str, splits: dict[str, list[Path]]) -> dict:
    """``dataset_info`` of a parquet config as the Hub writes it: features, splits with
    ``num_bytes`` and ``num_examples``, ``dataset_size``; read from the files' footers (no data
    is loaded; ``num_bytes`` is the uncompressed size the footers record). A column of Arrow
    type null (every value missing, so no type) is refused: the Hub's viewer and ``datasets``
    cannot tell what it holds, and a later shard with values would not concatenate."""
    features, split_dict = None, datasets.SplitDict()
    for split, files in splits.items():
        metas = [pq.read_metadata(f) for f in files]
        for f in files:
            feats = datasets.Features.from_arrow_schema(pq.read_schema(f))
            untyped = [name for name, ft in feats.items() if getattr(ft, "dtype", None) == "null"]
            if untyped:
                raise ValueError(f"{f.name} of config {config_name!r}: column(s) {', '.join(untyped)} have no type "
                                 "(every value is missing); give them a type in the builder's Features")
            features = features or feats
        split_dict.add(datasets.SplitInfo(
            name=split, num_examples=sum(m.num_rows for m in metas),
            num_bytes=sum(m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups))))
    info = datasets.DatasetInfo(features=features, splits=split_dict,
                                dataset_size=sum(s.num_bytes for s in split_dict.values()))
    return {k: v for k, v in info._to_yaml_dict().items() if k in ("features", "splits", "dataset_size")}


def with_dataset_info(folder: str | Path, header: dict) -> dict:
    """``header`` with each config's ``dataset_info`` filled as the Hub fills it on upload:
    ``download_size`` for every config (see :func:`with_download_sizes`), and for configs
    whose data files are all parquet their ``features``, ``splits`` (``num_bytes``,
    ``num_examples``) and ``dataset_size``. Entries the header already gives are kept."""
    folder = Path(folder)
    header = with_download_sizes(folder, header)
    info = header.get("dataset_info")
    entries = info if isinstance(info, list) else [info] if info else []
    by_name = {e.get("config_name", "default"): e for e in entries}
    for config in header.get("configs") or []:
        name = config.get("config_name", "default")
        splits = _split_files(folder, config)
        files = [f for fs in splits.values() for f in fs]
        if files and all(f.suffix == ".parquet" for f in files):
            entry = by_name[name]
            if entry.get("splits") and "dataset_size" not in entry:  # the header's own split sizes
                entry["dataset_size"] = sum(s.get("num_bytes", 0) for s in entry["splits"])
            entry.update({k: v for k, v in _parquet_info(name, splits).items() if k not in entry})
    return header


def size_category(n_rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a dataset of ``n_rows`` rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
              (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    return next((label for bound, label in bounds if n_rows < bound), "1B<n<10B")


def _check_plain(value, where: str) -> None:
    """Card metadata holds only what the Hub's YAML reader takes: mappings with string keys,
    lists, strings, numbers, booleans and nulls."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"dataset card metadata {where}: key {key!r} is not a string")
            _check_plain(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
    elif not (value is None or isinstance(value, (str, bool, int, float))):
        raise ValueError(f"dataset card metadata {where}: {type(value).__name__} values cannot be written "
                         "(use lists, mappings, strings and numbers)")


def dataset_card(header: dict, body: str) -> DatasetCard:
    """A ``huggingface_hub.DatasetCard`` with ``header`` as its metadata and ``body`` as its text.

    The header is checked (plain YAML types only), written by ``DatasetCardData`` and parsed
    back by ``DatasetCard``; anything that does not read back as the same mapping is
    refused with a ``ValueError`` instead of being written.
    """
    if not isinstance(header, dict):
        raise ValueError(f"a dataset card header must be a mapping, got {type(header).__name__}")
    _check_plain(header, "")
    data = DatasetCardData(**copy.deepcopy(header))
    card = DatasetCard(f"---\n{data.to_yaml(original_order=list(header))}\n---\n\n{body.strip()}\n")
    if card.data.to_dict() != {k: v for k, v in header.items() if v is not None}:
        raise ValueError("the dataset card metadata does not read back as written")
    return card


def write_card(folder: str | Path, header: dict, body: str, data_root: str | Path | None = None) -> Path:
    """README.md of ``folder``: a :class:`huggingface_hub.DatasetCard` with metadata ``header``
    and markdown ``body``. Write it after the data files: each config's ``dataset_info`` is read
    from them, in ``data_root`` (default: ``folder``; another folder when the card is written
    aside, then moved)."""
    header = with_dataset_info(folder if data_root is None else data_root, header)
    path = Path(folder) / "README.md"
    dataset_card(header, body).save(path)
    return path


def clear_folder(folder: str | Path) -> Path:
    """An empty folder at ``folder`` (refuses to clear one that is not a dataset folder we wrote,
    and a run folder or a folder inside one: a run folder has a dataset card too, and clearing it
    deleted the run)."""
    folder = Path(folder)
    try:
        output_folder(str(folder))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"--out {exc}") from None
    if folder.exists():
        entries = list(folder.iterdir())
        if entries and not (folder / "README.md").exists():
            raise ValueError(f"{folder} exists and is not a dataset folder written by this tool; choose another --out")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder
