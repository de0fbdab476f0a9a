"""The PaintSkills dataset builder (registered in this folder's ``__init__`` as
``paintskills``): the scenes of :mod:`.scenes` rendered by :mod:`.render` into a Hub-layout
folder, one config per skill, splits train / test, with COCO-style boxes, and its card.

    python -m dataset_builders.paintskills --out DIR [--skills object count spatial]
        [--splits train test] [--limit N] [--size 256] [--workers K]
        [--push-to-hub ORG/NAME [--create-pr]]

``datasets.load_dataset(DIR, "count", split="test")`` then loads it offline. Shards
are written atomically and skipped when already there, so an interrupted build
resumes where it stopped when run again with the same settings.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import math
import multiprocessing
import time
from dataclasses import dataclass
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from tqdm import tqdm

import benchmark
from benchmark.cli_types import output_folder, positive_int, seed, whole_number
from benchmark.contract.atomic import write_bytes_atomic
from benchmark.extras import require
from benchmark.hub.access import push_folder
from benchmark.tasks.paintskills import glyphs
from benchmark.tasks.paintskills.scenes import (BACKGROUNDS, CLASSES, COCO_IDS, RELATION_PHRASES, SHAPES, SKILLS,
                                          SPLIT_SIZES, SPLITS, STATES, TEMPLATES, build_scenes)
from benchmark.papers import PAPERS
from benchmark.present.text import markdown_table
from benchmark.hub.dataset_layout import configs_yaml, size_category, write_card, write_parquet_shard

BUILD_INFO = "build_info.json"
DEFAULT_SHARD_ROWS = 5000

FEATURES = datasets.Features({
    "image": datasets.Image(),
    "id": datasets.Value("string"),
    "skill": datasets.Value("string"),
    "split": datasets.Value("string"),
    "text": datasets.Value("string"),
    "scene": datasets.Value("string"),
    "target": datasets.Value("string"),
    "count": datasets.Value("int32"),
    "relation": datasets.Value("string"),
    "target_b": datasets.Value("string"),
    "seed": datasets.Value("int64"),
    # COCO-style struct of lists, one entry per object; bbox is [x, y, w, h] in pixels.
    "objects": {
        "id": datasets.List(datasets.Value("int32")),
        "bbox": datasets.List(datasets.List(datasets.Value("float32"), length=4)),
        "category": datasets.List(datasets.Value("int32")),
        "category_name": datasets.List(datasets.Value("string")),
        "scale": datasets.List(datasets.Value("float32")),
        "state": datasets.List(datasets.Value("string")),
    },
    "width": datasets.Value("int32"),
    "height": datasets.Value("int32"),
})


@dataclass
class BuildSummary:
    rows: dict[tuple[str, str], int]  # (skill, split) -> scenes in the folder
    rendered: int                     # scenes rendered by this call (the rest were there)
    seconds: float                    # time spent rendering and writing


def render_row(scene: dict, size: int) -> dict:
    """One dataset row: the rendered PNG and the scene with its exact boxes."""
    from benchmark.tasks.paintskills.render import render_scene  # Pillow: the [audit] extra

    image, out = render_scene(scene, size)
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    objs = out["objects"]
    return {
        "image": {"bytes": buf.getvalue(), "path": f"{scene['id']}.png"},
        **{k: out[k] for k in ("id", "skill", "split", "text", "scene", "target", "count", "relation", "target_b", "seed")},
        "objects": {
            "id": [o["id"] for o in objs], "bbox": [[float(v) for v in o["box"]] for o in objs],
            "category": [o["coco_id"] for o in objs], "category_name": [o["coco_name"] for o in objs],
            "scale": [o["scale"] for o in objs], "state": [o["state"] for o in objs],
        },
        "width": image.width, "height": image.height,
    }


def _render_job(job: tuple[dict, int]) -> dict:
    return render_row(*job)


def shard_paths(folder: Path, skill: str, split: str, n_rows: int, shard_rows: int) -> list[Path]:
    n = max(1, math.ceil(n_rows / shard_rows))
    return [folder / skill / f"{split}-{i:05d}-of-{n:05d}.parquet" for i in range(n)]


def _shard_complete(path: Path, rows: int) -> bool:
    try:
        return pq.ParquetFile(path).metadata.num_rows == rows
    except Exception:  # absent or unreadable: render it again
        return False


def _write_shard(path: Path, rows: list[dict]) -> None:
    write_parquet_shard(path, datasets.Dataset.from_list(rows, features=FEATURES))


def _check_out(folder: Path, settings: dict) -> None:
    """Refuse a folder holding something else, or a build with other settings."""
    info = folder / BUILD_INFO
    if info.exists():
        old = json.loads(info.read_text())
        if old.get("settings") != settings:
            raise ValueError(f"{folder} holds a PaintSkills build with other settings ({old.get('settings')}); "
                             "use the same settings to resume, or another --out")
    elif folder.exists() and any(folder.iterdir()):
        raise ValueError(f"{folder} exists and is not a PaintSkills build; choose another --out")


def build_dataset(out: str | Path, skills=SKILLS, splits=SPLITS, limit: int | None = None, size: int = 256,
                  workers: int = 1, seed: int = 0, shard_rows: int = DEFAULT_SHARD_ROWS,
                  progress: bool = True) -> BuildSummary:
    """Render the splits into ``out``, resuming a build there with the same settings."""
    # The renderer needs Pillow: in the base install, one line (exit 2) before any work.
    require("PIL", purpose="render PaintSkills scenes")
    from benchmark.tasks.paintskills.render import load_font

    skills, splits = list(dict.fromkeys(skills)), list(dict.fromkeys(splits))
    for s in skills:
        if s not in SKILLS:
            raise ValueError(f"unknown skill {s!r}; choose from {', '.join(SKILLS)}")
    for s in splits:
        if s not in SPLITS:
            raise ValueError(f"unknown split {s!r}; choose from {', '.join(SPLITS)}")
    for name, value, low in (("--limit", limit, 1), ("--size", size, 64), ("--workers", workers, 1),
                             ("--shard-rows", shard_rows, 1)):
        if value is not None and (not isinstance(value, int) or value < low):
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    load_font()  # missing font: one line before any work
    folder = Path(out)
    settings = {"size": size, "seed": seed, "limit": limit, "shard_rows": shard_rows}
    _check_out(folder, settings)
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(folder / BUILD_INFO, json.dumps(
        {"settings": settings, "builder": f"t2i-bias-benchmark {benchmark.__version__}"}, indent=2).encode())

    # The first `limit` scenes of each full-size split: a prefix is balanced block by block.
    plan, counts = [], {}
    for skill in skills:
        for split in splits:
            scenes = build_scenes(skill, split, seed=seed)[:limit]
            paths = shard_paths(folder, skill, split, len(scenes), shard_rows)
            for i, path in enumerate(paths):
                chunk = scenes[i * shard_rows:(i + 1) * shard_rows]
                if not _shard_complete(path, len(chunk)):
                    plan.append((path, chunk))
            counts[(skill, split)] = len(scenes)
    todo = sum(len(c) for _, c in plan)
    start = time.perf_counter()
    pool = multiprocessing.get_context("fork").Pool(workers) if workers > 1 and todo else None
    try:
        with tqdm(total=todo, unit="img", desc="rendering PaintSkills", disable=not progress) as bar:
            for path, chunk in plan:
                jobs = [(scene, size) for scene in chunk]
                results = pool.imap(_render_job, jobs, chunksize=16) if pool else map(_render_job, jobs)
                rows = []
                for row in results:
                    rows.append(row)
                    bar.update(1)
                _write_shard(path, rows)
    finally:
        if pool:
            pool.close()
            pool.join()
    write_card(folder, *paintskills_card(folder, counts, size, seed, limit))
    return BuildSummary(counts, todo, time.perf_counter() - start)


def _configs_on_disk(folder: Path, counts: dict[tuple[str, str], int]) -> dict[str, list[str]]:
    """Every skill / split with shards in ``folder`` (earlier runs may have built other skills)."""
    found: dict[str, list[str]] = {}
    for skill in SKILLS:
        for split in SPLITS:
            if (skill, split) in counts or list((folder / skill).glob(f"{split}-*.parquet")):
                found.setdefault(skill, []).append(split)
    return found


def _split_on_disk(folder: Path, skill: str, split: str) -> tuple[int, int]:
    """(rows, uncompressed bytes) of a split's shards."""
    metas = [pq.ParquetFile(p).metadata for p in sorted((folder / skill).glob(f"{split}-*.parquet"))]
    return (sum(m.num_rows for m in metas),
            sum(m.row_group(i).total_byte_size for m in metas for i in range(m.num_row_groups)))


#: the card's opening paragraphs
CARD_INTRO = (
    "PaintSkills is the compositional diagnostic dataset of DALL-Eval (Cho, Zala and Bansal, ICCV 2023). "
    "It measures three visual reasoning skills of text-to-image models: **object recognition** "
    "(\"a photo of a dog\"), **object counting** (\"a photo of 3 dogs\") and **spatial relation "
    "understanding** (\"a photo of a dog and a chair; the chair is to the left of the dog\"). A model "
    "generates an image per prompt and a DETR detector fine-tuned on the train split checks it. Scene "
    "configurations are controlled so that classes, counts and relations are uniformly distributed.",
    "**This is a 2D stand-in, not the paper's images.** The paper renders scenes with a Unity 3D simulator "
    "(3D assets with random pose and rotation, 13 HDR photographic backgrounds). Those assets are not "
    "available, so this build draws each object as a Noto Color Emoji glyph, scaled and placed on a "
    "procedural background named after the simulator's scenes. What is the same: the skills, classes "
    "drawn from the simulator's shapes, counts 1-4, the four relations, the split sizes, the balance and "
    "the prompt templates. What differs: flat cartoon glyphs instead of 3D objects, no rotation or "
    "lighting, one glyph per class and pose (mirrored at random), 6 procedural backgrounds instead of 13 "
    "photographs, and 15 classes chosen by us (the paper's exact list is not public). Detector accuracy "
    "on these images is not comparable with the paper's numbers."
)
#: how to load a config and split
CARD_LOAD = (
    "```python\nfrom datasets import load_dataset\n\nds = load_dataset(\"ORG/NAME\", \"count\", split=\"test\")\n"
    "row = ds[0]\nrow[\"image\"], row[\"text\"], row[\"objects\"][\"bbox\"]  # bbox: COCO [x, y, w, h] in pixels\n```"
)
#: what each column holds
CARD_FIELDS = "## Fields\n" + markdown_table(["field", "meaning"], [
    ("`image`", "the rendered scene (PNG)"),
    ("`id`", "`<skill>_<split>_<index>`, stable"),
    ("`skill`, `split`", "config and split"),
    ("`text`", "the prompt from the official template"),
    ("`scene`", f"background: one of {', '.join(BACKGROUNDS)} (the simulator's scene names)"),
    ("`target`", "objA, the prompt's (first) class"),
    ("`count`", "number of objects (object: 1, count: 1-4, spatial: null)"),
    ("`relation`, `target_b`", "spatial only: objB is `relation` of objA (left, right, above, below)"),
    ("`seed`", "the layout seed of the renderer (the scene re-renders byte-identically from it)"),
    ("`objects`", "per object: `id`, `bbox` [x, y, w, h] (pixels, the tight box of the drawn glyph), `category` "
                  "(COCO id, 91-id scheme as DETR), `category_name`, `scale` (longer box side / image side), "
                  "`state` (pose, where the simulator has one)"),
    ("`width`, `height`", "image size in pixels"),
])
#: which of the simulator's shapes are drawn, before the table of classes
CARD_CLASSES_NOTE = (
    "15 of the simulator's shapes that map to a COCO class. Of its 21 shapes, van and dining table cannot "
    "map to the paper's COCO evaluation, fire hydrant and bench have no emoji, bear is left out (Noto draws "
    "only a bear's face) and stop sign too (a blank red octagon without the word STOP).\n\n"
)
CARD_LICENCE = (
    "## Licence\n"
    "Code and scene configurations: MIT. The simulator's vocabulary and templates come from "
    "aszala/PaintSkills-Simulator (MIT). The object images are derived from the Noto Color Emoji font "
    "(Google, SIL Open Font License 1.1, Debian package fonts-noto-color-emoji); the OFL permits "
    "this use; the glyph artwork remains under the OFL."
)


def _card_header(configs: dict[str, list[str]], on_disk: dict[tuple[str, str], tuple[int, int]]) -> dict:
    """The card's YAML header: its tags, configs and each split's size."""
    feature_yaml = FEATURES._to_yaml_list()
    return {
        "pretty_name": "PaintSkills (2D emoji rendering)",
        "license": "mit",
        "language": ["en"],
        "task_categories": ["text-to-image", "object-detection"],
        "tags": ["paintskills", "dall-eval", "compositional", "counting", "spatial-relations", "synthetic",
                 "t2i-bias-benchmark"],
        "size_categories": [size_category(sum(n for n, _ in on_disk.values()))],
        "configs": configs_yaml(configs, default=next(iter(configs))),
        "dataset_info": [{"config_name": k, "features": copy.deepcopy(feature_yaml),
                          "splits": [{"name": s, "num_bytes": on_disk[(k, s)][1], "num_examples": on_disk[(k, s)][0]}
                                     for s in ss]}
                         for k, ss in configs.items()],
    }


def _size_table(configs: dict[str, list[str]], rows: dict[tuple[str, str], int]) -> str:
    """Markdown table: each skill's template and split sizes, built and in the paper."""
    size_rows = []
    for k in configs:
        cells = [f"{rows[(k, s)]:,}" if (k, s) in rows else "-" for s in SPLITS]
        size_rows.append([f"`{k}`", f"`{TEMPLATES[k]}`", *cells,
                          f"{SPLIT_SIZES[(k, 'train')]:,} / {SPLIT_SIZES[(k, 'test')]:,}"])
    return markdown_table(["skill", "template", *SPLITS, "paper train / test"], size_rows)


def _class_table() -> str:
    """Markdown table: each class's COCO id, simulator shape, glyphs and states."""
    class_rows = []
    for name in CLASSES:
        table = glyphs.GLYPHS[name]
        points = "; ".join(f"{st or 'default'}: {glyphs.codepoints(g)}" for st, g in table.items())
        states = ", ".join(s or "default" for s in STATES.get(SHAPES[name], ())) or "-"
        class_rows.append([name, str(COCO_IDS[name]), SHAPES[name], table[None], points, states,
                           glyphs.NOTES.get(name, "")])
    return markdown_table(["COCO class", "COCO id", "simulator shape", "glyph", "code points", "states", "note"],
                          class_rows)


def _balance_section() -> str:
    """How classes, counts and relations are balanced and the prompts worded."""
    from benchmark.tasks.paintskills.render import RELATION_MARGIN  # Pillow: the [audit] extra

    return (
        "## Balance and prompts\n"
        "- object: scene i has class i mod 15: every class 1/15 of each split.\n"
        "- count: class i mod 15 and count (i mod 4) + 1: every (class, count) pair equally often.\n"
        "- spatial: objA = class i mod 15, relation i mod 4, objB = objA + k (mod 15) with k = (i div 60 mod 14) "
        "+ 1: every class is objA and objB equally often, every (class, relation) equally often, and every "
        "ordered pair of distinct classes with every relation appears once per 840 scenes.\n"
        "- Background, scale, pose and layout are sampled per scene from its id and the seed. Scale ranges "
        "(longer side / image side): object 0.35-0.75, count 0.16-0.30, spatial 0.20-0.36.\n"
        "- Count and spatial objects never overlap; a spatial relation holds for the box centres on the dominant "
        f"axis, which exceeds the other axis by at least {RELATION_MARGIN:.0%} of the image side.\n"
        "- Prompts: `a`/`an` before a class, digits for counts with English plurals (`1 person`, `3 people`, "
        "`2 buses`), relations as "
        + ", ".join(f"`{r}` -> \"{p}\"" for r, p in RELATION_PHRASES.items())
        + ", and `the` in the clause after the semicolon."
    )


def paintskills_card(folder: Path, counts: dict[tuple[str, str], int], size: int, seed: int,
                     limit: int | None) -> tuple[dict, str]:
    """(YAML header, markdown body) of the dataset card."""
    balance = _balance_section()
    configs = _configs_on_disk(folder, counts)
    on_disk = {(k, s): _split_on_disk(folder, k, s) for k, ss in configs.items() for s in ss}
    rows = {key: n for key, (n, _) in on_disk.items()}
    paper = PAPERS["dalleval"]
    partial = (f"\n\n**Partial build**: the first {limit:,} scenes of each split (`--limit {limit}`); "
               "the full sizes are in the last column." if limit else "")
    parts = [
        "# PaintSkills (2D emoji rendering)", CARD_INTRO[0], CARD_INTRO[1] + partial, "## Load", CARD_LOAD,
        "## Configs and sizes\n" + _size_table(configs, rows) +
        f"\n\nImages are {size} x {size} PNG. Scenes built with seed {seed}.",
        CARD_FIELDS, "## Classes and glyphs\n" + CARD_CLASSES_NOTE + _class_table(), balance,
        "## Build\n"
        "```bash\npython -m dataset_builders.paintskills --out paintskills --workers 8\n```\n"
        f"Built by t2i-bias-benchmark {benchmark.__version__}; `--limit N` builds the first N scenes of each split.",
        CARD_LICENCE,
        f"## Citation\n*{paper.title}*, {paper.authors}, {paper.venue} ({paper.url})\n\n"
        "```bibtex\n" + paper.bibtex + "\n```",
    ]
    return _card_header(configs, on_disk), "\n\n".join(parts)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=output_folder,
                        help="folder to write (an earlier build there with the same settings resumes)")
    parser.add_argument("--skills", nargs="+", default=list(SKILLS), help="skills to build (default: all)")
    parser.add_argument("--splits", nargs="+", default=list(SPLITS), help="splits to build (default: train test)")
    parser.add_argument("--limit", type=positive_int, help="build only the first N scenes of each split")
    parser.add_argument("--size", type=whole_number(64, 4096), default=256, help="image side in pixels (default 256)")
    parser.add_argument("--workers", type=whole_number(1, 256), default=1, help="rendering processes (default 1)")
    parser.add_argument("--seed", type=seed, default=0, help="scene sampling seed (default 0)")
    parser.add_argument("--shard-rows", type=whole_number(1, 10**7), default=DEFAULT_SHARD_ROWS,
                        help="rows per parquet file")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="publish the folder as a Hub dataset")
    parser.add_argument("--create-pr", action="store_true", help="with --push-to-hub: open a pull request")


def run(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    summary = build_dataset(args.out, args.skills, args.splits, args.limit, args.size, args.workers,
                            args.seed, args.shard_rows)
    for (skill, split), n in summary.rows.items():
        print(f"  {skill:<8} {split:<5} {n:>7,} scenes")
    elapsed = time.perf_counter() - start
    rate = summary.rendered / summary.seconds if summary.rendered else 0.0
    print(f"wrote {sum(summary.rows.values()):,} scenes to {args.out} in {elapsed:.1f} s "
          f"({summary.rendered:,} rendered now, {rate:.0f} images/s)")
    if args.push_to_hub:
        url = push_folder(args.out, args.push_to_hub, repo_type="dataset", create_pr=args.create_pr,
                          commit_message="PaintSkills dataset from t2i-bias-benchmark")
        print(f"pushed to {url}")
    return 0
