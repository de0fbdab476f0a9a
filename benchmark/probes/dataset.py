"""The probe sets as one Hub-layout dataset folder (a config per suite, split ``test``)
with its dataset card: what ``t2ibench probes build`` and ``python -m
dataset_builders.probes`` write, and optionally publish.

    t2ibench probes build --out DIR [--suites gep_neutral ...]
        [--config gep=my_gep.yaml ...] [--push-to-hub ORG/NAME [--create-pr]]

``datasets.load_dataset(DIR, "gep_neutral", split="test")`` then loads it offline.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import pandas as pd

import benchmark
from benchmark.hub.access import push_folder
from benchmark.papers import PAPERS, paper_label
from benchmark.probes import build_suite, get_suite, list_suites, load_config
from benchmark.contract.atomic import write_bytes_atomic
from benchmark.hub.dataset_layout import clear_folder, configs_yaml, size_category, write_card, write_split
from benchmark.present.text import markdown_table
from benchmark.probes.source import PROBE_SET_FILE, PROBES_SPLIT, probe_set_manifest
from benchmark.probe_build_args import add_arguments  # noqa: F401 (python -m dataset_builders.probes)

SPLIT = PROBES_SPLIT  # probes are evaluation inputs: one split


def family_configs(suites: list[str], config_paths: dict[str, str] | None = None) -> dict[str, dict]:
    """The config of every family of ``suites``: the package's YAML, or the file given for it."""
    config_paths = config_paths or {}
    families = list(dict.fromkeys(get_suite(n).family for n in suites))
    unknown = set(config_paths) - set(families)
    if unknown:
        raise ValueError(f"--config names families not built here: {', '.join(sorted(unknown))}")
    return {f: load_config(f, config_paths.get(f)) for f in families}


#: the fields every probe row has, for the card
COMMON_FIELDS = (
    ("`probe_id`", "stable unique id, `suite/key/.../sample`"),
    ("`suite`", "the config name"),
    ("`prompt`", "the exact text given to the model"),
    ("`sample_index`", "which of the images of this prompt"),
    ("`seed`", "generator seed, the first 31 bits of sha256(probe_id)"),
)


def _field_table(df: pd.DataFrame) -> str:
    rows = []
    first = df.iloc[0]
    for col in df.columns:
        example = first[col]
        text = repr(list(example)) if hasattr(example, "__len__") and not isinstance(example, str) else repr(example)
        if len(text) > 70:
            text = text[:67] + "..."
        rows.append([f"`{col}`", str(df[col].dtype), f"`{text.replace('|', '/')}`"])
    return markdown_table(["field", "type", "example"], rows)


def probe_card(tables: dict[str, pd.DataFrame], config_paths: dict[str, str] | None = None) -> tuple[dict, str]:
    """(YAML header, markdown body) of the probe dataset card."""
    by_paper: dict[str, list[str]] = defaultdict(list)
    for name in tables:
        by_paper[get_suite(name).paper].append(name)
    header = {
        "pretty_name": f"Text-to-image social bias probes ({', '.join(paper_label(k) for k in by_paper)})",
        "license": "mit",
        "language": ["en"],
        "task_categories": ["text-to-image"],
        "tags": ["bias", "fairness", "gender", "evaluation", "text-to-image", "t2i-bias-benchmark"],
        "size_categories": [size_category(sum(len(df) for df in tables.values()))],
        "configs": configs_yaml({name: [SPLIT] for name in tables}, default=next(iter(tables))),
    }
    example = next(iter(tables))  # the default config: the card's example loads a suite of this set

    parts = [
        "# Text-to-image social bias probes",
        "Probe prompts of five papers on social bias in text-to-image models, one row per image to "
        "generate, built by the `t2i-bias-benchmark` package "
        f"(version {benchmark.__version__}). Each config is one probe suite; every row carries a stable "
        "`probe_id`, the exact `prompt`, a `sample_index` and a `seed` derived from the probe id alone "
        "(so an image does not depend on batch size or order), plus the structured fields its score needs.",
        "## Load",
        f"```python\nfrom datasets import load_dataset\n\nprobes = load_dataset(\"ORG/NAME\", \"{example}\", "
        f"split=\"{SPLIT}\")\nprint(probes[0][\"prompt\"], probes[0][\"seed\"])\n```\n"
        "A local copy built with `python -m dataset_builders.probes --out DIR` loads the same way: "
        f"`load_dataset(DIR, \"{example}\", split=\"{SPLIT}\")`.",
        "## Suites",
    ]
    rows = []
    for name, df in tables.items():
        spec = get_suite(name)
        per = df.groupby("prompt").size()
        per_text = str(per.iloc[0]) if per.nunique() == 1 else f"{per.min()}-{per.max()}"
        rows.append([f"`{name}`", f"{len(df):,}", f"{df['prompt'].nunique():,}", per_text, PAPERS[spec.paper].short,
                     spec.summary])
    parts.append(markdown_table(["config", "rows", "prompts", "images per prompt", "paper", "what it probes"], rows))
    if config_paths:
        parts.append("\n**Variant.** Built with custom configurations: "
                     + ", ".join(f"{k} from `{Path(v).name}`" for k, v in config_paths.items())
                     + "; row counts differ from the papers' designs.")
    parts.append("## Common fields\n" + markdown_table(["field", "meaning"], COMMON_FIELDS))
    for paper_key, names in by_paper.items():
        paper = PAPERS[paper_key]
        parts.append(f"## {paper.title}\n*{paper.authors}, {paper.venue}* ({paper.url})")
        for name in names:
            spec = get_suite(name)
            parts.append(f"### `{name}`\n{spec.card or spec.summary}\n\n{_field_table(tables[name])}")
    parts.append("## Seeds and reproducibility\n"
                 "`seed` depends only on `probe_id`, so the same probe on the same model and settings gives the "
                 "same image whatever the batch size, the order or the number of processes. Every choice a paper "
                 "leaves open is fixed in the family's YAML configuration (shipped in the package under "
                 "`benchmark/tasks/<paper>/probes.yaml`) and documented above.")
    parts.append("## Limitations\n"
                 "The papers probe gender as a binary (woman / man, masculine / feminine) and perceived, not "
                 "actual, attributes; this is a limitation they state. The configurations make other indicators "
                 "(for example a non-binary one) a YAML change. Prompts are English only.")
    parts.append("## Licence\n"
                 "MIT. Prompt lists come from the papers and their public releases ("
                 + "; ".join(f"{paper_label(k)}: {PAPERS[k].prompt_source}" for k in by_paper if PAPERS[k].prompt_source)
                 + "). Cite the papers below when you use a suite.")
    parts.append("## Citation\n```bibtex\n" + "\n\n".join(PAPERS[k].bibtex for k in by_paper) + "\n```")
    return header, "\n\n".join(parts)


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Columns without any value (``relation`` / ``target_b`` of the PaintSkills object and count
    suites) as strings: Arrow would give them type null, which the Hub's viewer cannot show and
    which does not concatenate with the same column of another suite."""
    empty = [c for c in df.columns if df[c].isna().all()]
    return df.astype({c: "string" for c in empty}) if empty else df


def build_probe_dataset(out: str | Path, suites: list[str] | None = None,
                        config_paths: dict[str, str] | None = None) -> dict[str, pd.DataFrame]:
    """Write every suite to ``out`` in Hub layout with its card and ``probe_set.json`` (each
    suite's family, the family configs: what ``t2ibench run --probes DIR`` needs); returns the tables."""
    names = suites or list_suites()
    configs = family_configs(names, config_paths)
    tables = {name: build_suite(name, config=configs[get_suite(name).family]) for name in names}
    folder = clear_folder(out)
    for name, df in tables.items():
        write_split(folder, name, SPLIT, _typed(df))
    manifest = probe_set_manifest({n: get_suite(n).family for n in names}, configs,
                                  papers={n: get_suite(n).paper for n in names}, package_version=benchmark.__version__)
    write_bytes_atomic(folder / PROBE_SET_FILE,
                       (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    header, body = probe_card(tables, config_paths)
    write_card(folder, header, body)
    return tables


def _parse_config_args(values: list[str]) -> dict[str, str]:
    out = {}
    for v in values:
        family, sep, path = v.partition("=")
        if not sep or not family or not path:
            raise ValueError(f"--config takes FAMILY=PATH, got {v!r}")
        if not Path(path).is_file():
            raise ValueError(f"--config {family}: no such file {path}")
        out[family] = path
    return out


def run(args: argparse.Namespace) -> int:
    tables = build_probe_dataset(args.out, args.suites, _parse_config_args(args.config))
    width = max(len(n) for n in tables)
    for name, df in tables.items():
        print(f"  {name:<{width}}  {len(df):>6,} rows")
    print(f"wrote {sum(len(t) for t in tables.values()):,} probes in {len(tables)} configs to {args.out}")
    if args.push_to_hub:
        url = push_folder(args.out, args.push_to_hub, repo_type="dataset", create_pr=args.create_pr,
                          commit_message="Probe datasets from t2i-bias-benchmark")
        print(f"pushed to {url}")
    return 0
