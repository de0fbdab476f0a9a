"""Benchmark: the annotate stage, this tree against an earlier version, on one synthetic run.

Builds a run folder of ``builtin:tiny-sd`` the annotate stage accepts, at real image size:

* the probe rows are the real ones of the bias suites (``build_probes``, ``--limit`` per
  suite, the runner's spread subset), with the probe record a real run keeps;
* the images are noise plus shapes (``--image-size``, 512 px by default: 16x16 noise
  upsampled bicubically, a few random ellipses and rectangles, a little fine noise), written
  by the runner's own ``generate`` (PNG, sha256, ``metadata.jsonl`` batches, manifest, run
  config) from a stand-in model that draws them, so the folder is what generation writes.

The folder is copied once per measured version, so each starts cold (no label files, no
embedding cache). Each version's annotate stage then runs in its own subprocess
(``bench/_annotate_driver.py``, ``PYTHONPATH`` = that version's tree, same
``OMP_NUM_THREADS``, one after the other): first an unmeasured warm-up on a one-image-per-suite
copy (builds the tiny models in that version's own cache, warms imports), then the measured
run. The built-in tiny CLIP / VQA / DETR annotate (the run is ``builtin:``); skin tone uses
the same face detector in both (``--skin-tone``, default ``haar``, a real audit's default;
this tree's built-in default would be ``whole-image``), so both do the same work. The
"before" version is a temporary ``git worktree add --detach`` of ``--before-ref`` (default
``4bc1128``: per-annotator passes, one PNG decode per annotator, free-text VQA per (image,
question) grouped by exact question text), removed at the end.

The driver counts through the libraries, not the package: PNG decodes (``PIL.Image.open``
of the run's PNGs), VQA vision-encoder passes (``Blip2VisionModel.forward`` rows), VQA
language-model calls that start sequences (no or an empty key/value cache: scoring passes and
``generate`` prefills) and their batch sizes, ``generate`` calls, CLIP image-encoder calls,
and the time inside those model calls. Host time = stage wall time - model time.

"Calls at batch 1 while more than one item was pending": a language-model call that starts a
single sequence while the stage still had other sequences to run (it is not the stage's last
one). Every input of the stage exists when it starts (the PNGs are on disk, the questions
come from the manifest), so such a call could have been batched with another.

Unless ``--no-marginal``, a second folder with twice ``--limit`` images per suite is measured
the same way, and the difference between the two sizes gives the wall, model and host time
per extra image: what a larger audit adds per image once the fixed costs (loading the models,
training the CLS, writing the files) are paid. It is a difference of two noisy times; at a
small ``--limit`` it can come out near zero or below (then no ratio is given).

Images/s per annotator are each version's own ``timings.json`` entries (names differ
between versions; ``gep_clip`` of the earlier version is ``clip_existence`` now). They are not
like for like: this tree's per-annotator seconds leave out the PNG decoding (done once, on a
worker thread, ``annotate/images``), the earlier version's include it. Stage wall, model and
host time are like for like.

    python bench/annotation.py                          # 24 images per suite, against 4bc1128
    python bench/annotation.py --limit 48 --out bench-results/
    python bench/annotation.py --no-before --limit 2 --image-size 64   # this tree only (tests)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.contract import run_folder as rf  # noqa: E402
from benchmark.probes.source import open_probe_set  # noqa: E402
from benchmark.runner.generate import generate  # noqa: E402
from benchmark.runner.probe_choice import ChosenProbes, build_probes, limit_probes  # noqa: E402
from bench.workload import generation_request  # noqa: E402
from bench.provenance import checkout_commit, git  # noqa: E402
from benchmark.present.terminal import print_error  # noqa: E402
from benchmark.probes import list_suites  # noqa: E402
from benchmark.tasks import list_tasks  # noqa: E402


DRIVER = Path(__file__).resolve().parent / "_annotate_driver.py"
#: every registered suite, in registration order
SUITES = tuple(list_suites())
DEFAULT_BEFORE = "4bc1128"
TARGET_HOST_GAIN = 3.0
#: earlier timings.json names -> this tree's annotator kinds: the earlier version named the CLIP
#: existence annotator after the task that asked for it ("<task>_clip")
KIND_ALIASES = {f"{t.name}_clip": "clip_existence" for t in list_tasks() if "clip_existence" in t.annotators}
#: a word on the kinds whose name says little
KIND_NOTES = {**{kind: f" ({old} before)" for old, kind in KIND_ALIASES.items()},
              "images": " (the one image pass)", "embed_images": " (CLIP cache fill)"}


# --------------------------------------------------------------------------- the synthetic run


def noise_and_shapes(size: int, seed: int):
    """A 512 px (``size``) test image: smooth noise, a few random shapes, a little fine noise."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    im = Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).resize((size, size), Image.BICUBIC)
    draw = ImageDraw.Draw(im)
    for _ in range(int(rng.integers(3, 9))):
        x0, y0 = rng.integers(0, size, 2)
        w, h = rng.integers(size // 16, size // 2, 2)
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        box = [int(x0), int(y0), int(min(size - 1, x0 + w)), int(min(size - 1, y0 + h))]
        (draw.ellipse if rng.uniform() < 0.5 else draw.rectangle)(box, fill=colour)
    arr = np.asarray(im, dtype=np.int16) + rng.integers(-4, 5, (size, size, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


class SyntheticImages:
    """Stands in for a text-to-image model in ``generate``: draws an image per seed."""

    model_id = "bench/synthetic-noise-and-shapes"
    revision = None
    is_builtin = True

    def __init__(self, size: int):
        self.size = size
        self.settings = {"height": size, "width": size,
                         "note": "noise-and-shapes images drawn by bench/annotation.py, no model"}

    def generate(self, prompts, seeds):
        from types import SimpleNamespace

        return SimpleNamespace(images=[noise_and_shapes(self.size, int(s)) for s in seeds], nsfw=[False] * len(seeds))


def build_run(run_dir: Path, limit: int, size: int) -> dict[str, int]:
    """The synthetic run folder (see the module docstring); returns images per suite."""
    probe_set = open_probe_set()
    suites = probe_set.check_suites(list(SUITES))
    probes = build_probes(suites, None, probe_set)
    chosen = ChosenProbes(list(suites), probe_set.record(suites), probes, limit_probes(probes, limit))
    model = SyntheticImages(size)
    generate(generation_request(run_dir, model, batch_size=8, limit=limit, spec="builtin:tiny-sd"), model, chosen)
    manifest = rf.read_manifest(run_dir)
    return {s: int(n) for s, n in manifest["suite"].value_counts(sort=False).items()}


def png_kib(run_dir: Path) -> float:
    sizes = [p.stat().st_size for p in (run_dir / "images").rglob("*.png")]
    return sum(sizes) / len(sizes) / 1024 if sizes else math.nan


# --------------------------------------------------------------------------- the versions


class BeforeTree:
    """A temporary detached worktree of ``ref`` (checked when made, added on enter, removed on exit)."""

    def __init__(self, ref: str, parent: Path):
        self.ref = ref
        self.path = parent / "before-tree"
        try:
            self.commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet",
                                          f"{ref}^{{commit}}"], check=True, capture_output=True,
                                         text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            raise ValueError(f"--before-ref {ref!r} is not a commit of the git repository at {ROOT}") from None
        self.subject = git("log", "-1", "--format=%s", self.commit)

    def __enter__(self) -> "BeforeTree":
        proc = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(self.path), self.commit],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"git worktree add of {self.ref} failed: {proc.stderr.strip()}")
        return self

    def __exit__(self, *exc) -> None:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(self.path)],
                       capture_output=True, text=True)
        if self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
            subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True, text=True)


def run_version(name: str, tree: Path, sources: list[Path], warmup_run: Path, work: Path, args,
                options: dict) -> dict:
    """Annotate fresh copies of the runs with ``tree``'s package in one subprocess (warm-up first,
    then every run ``--repeats`` times, in turn); the driver's JSON."""
    scratch = work / f"scratch-{name}"
    scratch.mkdir()
    out = work / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads), "T2IBENCH_CACHE": str(work / f"cache-{name}"),
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, str(DRIVER), "--warmup-dir", str(warmup_run), "--tree", str(tree), "--scratch",
           str(scratch), "--repeats", str(args.repeats), "--options", json.dumps(options), "--out", str(out)]
    for d in sources:
        cmd += ["--run-dir", str(d)]
    if args.device:
        cmd += ["--device", args.device]
    print(f"annotating with {name} ({tree}) ...", file=sys.stderr)
    try:
        proc = subprocess.run(cmd, cwd=str(work), env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"the annotate stage of {name} failed (exit {proc.returncode}):\n"
                               f"{proc.stderr[-4000:]}")
        return json.loads(out.read_text(encoding="utf-8"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------- figures


def pending_batch_1(batches: list[int]) -> int:
    """Calls of one sequence made while the stage still had other sequences to run (not its last)."""
    remaining = sum(batches)
    n = 0
    for b in batches:
        if b == 1 and remaining > 1:
            n += 1
        remaining -= b
    return n


def _summary(batches: list[int]) -> dict:
    if not batches:
        return {"calls": 0, "min": None, "median": None, "max": None, "mean": None}
    return {"calls": len(batches), "min": min(batches), "median": float(statistics.median(batches)),
            "max": max(batches), "mean": sum(batches) / len(batches)}


def _kind(key: str) -> str:
    kind = key.removeprefix("annotate/").split("[", 1)[0]
    return KIND_ALIASES.get(kind, kind)


def annotator_rates(timings: dict) -> dict[str, dict]:
    """images/s per annotator kind from one version's timings.json (entries of one kind summed)."""
    out: dict[str, dict] = {}
    for key, entry in timings.items():
        if not isinstance(entry, dict) or key == "annotate/total":
            continue
        kind = _kind(key)
        e = out.setdefault(kind, {"seconds": 0.0, "n_images": 0})
        e["seconds"] += float(entry.get("seconds") or 0.0)
        e["n_images"] += int(entry.get("n_images") or 0)
    for e in out.values():
        e["images_per_s"] = e["n_images"] / e["seconds"] if e["seconds"] > 0 and e["n_images"] else None
    return out


def figures(doc: dict) -> dict:
    """The figures of one measured run (one entry of the driver's ``runs``)."""
    c = doc["counters"]
    n = int(doc["summary"]["n_images"])
    vqa_images = int(doc["labels"]["vqa_images"])
    model = sum(c["model_seconds"].values())
    wall = float(doc["wall_seconds"])
    lm = c["lm_start_rows"]
    return {
        "n_images": n,
        "vqa_images": vqa_images,
        "vqa_items": int(doc["labels"]["vqa_items"]),
        "vision_rows": sum(c["vision_rows"]),
        "vision_calls": len(c["vision_rows"]),
        "vision_per_vqa_image": sum(c["vision_rows"]) / vqa_images if vqa_images else math.nan,
        "lm": _summary(lm),
        "lm_sequences": sum(lm),
        "lm_batch_1": lm.count(1),
        "lm_batch_1_pending": pending_batch_1(lm),
        "lm_decode_steps": c["lm_step_calls"],
        "generate": _summary(c["lm_generate_rows"]),
        "png_decodes": c["png_opens"],
        "png_unique": c["png_unique"],
        "png_on_worker": c["png_threads"].get("worker", 0),
        "png_per_image": c["png_opens"] / n if n else math.nan,
        "clip_image": _summary(c["clip_image_rows"]),
        "clip_image_rows": sum(c["clip_image_rows"]),
        "detector_rows": sum(c["detector_rows"]),
        "wall_s": wall,
        "model_s": model,
        "model_by_kind": dict(c["model_seconds"]),
        "host_s": wall - model,
        "host_ms_per_image": 1000.0 * (wall - model) / n if n else math.nan,
        "annotators": annotator_rates(doc["timings"]),
    }


TIMED = ("wall_s", "model_s", "host_s", "host_ms_per_image")


def median_figures(runs: list[dict]) -> dict:
    """:func:`figures` of repeated runs of one folder: the counts of the first (the work is the
    same every time: checked), the median of each time, and the range of host time per image."""
    figs = [figures(r) for r in runs]
    out = dict(figs[0])
    for f in figs[1:]:
        for key in ("n_images", "vision_rows", "lm_sequences", "png_decodes", "clip_image_rows"):
            if f[key] != out[key]:
                raise RuntimeError(f"repeats of one run did different work ({key}: {out[key]} vs {f[key]})")
    for key in TIMED:
        out[key] = float(statistics.median(f[key] for f in figs))
    out["host_ms_range"] = (min(f["host_ms_per_image"] for f in figs), max(f["host_ms_per_image"] for f in figs))
    out["repeats"] = len(figs)
    for kind, e in out["annotators"].items():
        rates = [f["annotators"][kind]["images_per_s"] for f in figs if (f["annotators"].get(kind) or {}).get(
            "images_per_s")]
        out["annotators"][kind] = {**e, "images_per_s": float(statistics.median(rates)) if rates else None}
    return out


def marginal(small: dict, large: dict) -> dict:
    """Seconds per extra image between two sizes of the same run: what a bigger audit adds per
    image once the fixed costs (model loading, CLS training, releasing models) are paid."""
    dn = large["n_images"] - small["n_images"]
    return {"from": small["n_images"], "to": large["n_images"],
            "host_ms_per_image": 1000.0 * (large["host_s"] - small["host_s"]) / dn if dn > 0 else math.nan,
            "wall_ms_per_image": 1000.0 * (large["wall_s"] - small["wall_s"]) / dn if dn > 0 else math.nan,
            "model_ms_per_image": 1000.0 * (large["model_s"] - small["model_s"]) / dn if dn > 0 else math.nan}


def _fmt(v, spec=".3g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return f"{v:,}"
    return format(v, spec)


def _gain(before, after, lower_is_better: bool) -> str:
    """before / after for counts and times, after / before for rates: above 1 is better."""
    if before is None or after is None:
        return ""
    b, a = float(before), float(after)
    if b < 0 or a < 0:  # a per-extra-image time below zero is noise: no ratio
        return ""
    if lower_is_better:
        if a == 0:
            return "inf" if b > 0 else ""
        return f"{b / a:.2f}x"
    return f"{a / b:.2f}x" if b > 0 else ""


def table_rows(before: dict | None, after: dict) -> list[dict]:
    """(metric, before, after, gain) rows of the side-by-side table. ``before`` / ``after``:
    :func:`figures` of the run at ``--limit``, with ``marginal`` added when two sizes ran."""
    rows = []

    def add(metric, fb, fa=None, *, spec=".3g", lower=True, gain=True):
        vb = fb(before) if before is not None else None
        va = fb(after) if fa is None else fa(after)
        rows.append({"metric": metric, "before": _fmt(vb, spec), "after": _fmt(va, spec),
                     "gain": _gain(vb, va, lower) if gain and before is not None else "",
                     "before_value": vb, "after_value": va})

    add("images annotated", lambda f: f["n_images"], gain=False)
    add("VQA images / (image, question) items", lambda f: f"{f['vqa_images']:,} / {f['vqa_items']:,}", gain=False)
    add("VQA vision-encoder passes (images)", lambda f: f["vision_rows"])
    add("VQA vision passes per VQA image", lambda f: f["vision_per_vqa_image"], spec=".2f")
    add("VQA vision-encoder calls", lambda f: f["vision_calls"])
    add("VQA LM calls starting sequences", lambda f: f["lm"]["calls"])
    add("VQA LM sequences (rows)", lambda f: f["lm_sequences"], gain=False)
    add("VQA LM batch min / median / max",
        lambda f: "-" if not f["lm"]["calls"] else f"{f['lm']['min']} / {f['lm']['median']:g} / {f['lm']['max']}",
        gain=False)
    add("VQA LM mean batch", lambda f: f["lm"]["mean"], spec=".1f", lower=False)
    add("VQA LM calls at batch 1", lambda f: f["lm_batch_1"])
    add("  of which with > 1 item pending", lambda f: f["lm_batch_1_pending"])
    add("VQA generate calls", lambda f: f["generate"]["calls"], gain=False)
    add("VQA LM decoding steps", lambda f: f["lm_decode_steps"], gain=False)
    add("PNG decodes", lambda f: f["png_decodes"])
    add("PNG decodes per image", lambda f: f["png_per_image"], spec=".2f")
    add("PNG decodes on a worker thread", lambda f: f["png_on_worker"], gain=False)
    add("CLIP image-encoder calls / images", lambda f: f"{f['clip_image']['calls']:,} / {f['clip_image_rows']:,}",
        gain=False)
    kinds = list(dict.fromkeys(list((before or {}).get("annotators", {})) + list(after["annotators"])))
    for kind in kinds:
        add(f"images/s {kind}{KIND_NOTES.get(kind, '')}", lambda f, k=kind: (f["annotators"].get(k) or {}).get("images_per_s"), spec=",.1f",
            lower=False)
    add("stage wall time, s", lambda f: f["wall_s"], spec=".2f")
    add("model time, s", lambda f: f["model_s"], spec=".2f")
    add("host time, s", lambda f: f["host_s"], spec=".2f")
    add("host time per image, ms", lambda f: f["host_ms_per_image"], spec=".1f")
    if after.get("repeats", 1) > 1:
        add(f"  min - max of {after['repeats']} runs",
            lambda f: f"{f['host_ms_range'][0]:.1f} - {f['host_ms_range'][1]:.1f}", gain=False)
    if "marginal" in after:
        m = after["marginal"]
        span = f"{m['from']:,} -> {m['to']:,} images"
        add(f"wall time per extra image, ms ({span})", lambda f: f["marginal"]["wall_ms_per_image"], spec=".1f")
        add(f"model time per extra image, ms ({span})", lambda f: f["marginal"]["model_ms_per_image"], spec=".1f")
        add(f"host time per extra image, ms ({span})", lambda f: f["marginal"]["host_ms_per_image"], spec=".1f")
    return rows


def targets(before: dict | None, after: dict) -> list[dict]:
    def host_target(label: str, get) -> dict:
        gain, why = None, None
        if before is None:
            why = "no before run"
        elif not (get(before) > 0 and get(after) > 0):  # a difference of two noisy times can be <= 0
            why = f"a time is not above zero: before {get(before):.1f} ms, after {get(after):.1f} ms; use a larger --limit"
        else:
            gain = get(before) / get(after)
        return {"target": f"host time per image down >= {TARGET_HOST_GAIN:g}x ({label})",
                "value": "-" if gain is None else f"{gain:.2f}x",
                "met": None if gain is None else gain >= TARGET_HOST_GAIN, "why_not_measured": why}

    out = [
        {"target": "1.0 VQA vision pass per image", "value": f"{after['vision_per_vqa_image']:.2f}",
         "met": after["vqa_images"] > 0 and after["vision_rows"] == after["vqa_images"]},
        {"target": "no VQA LM call at batch 1 while > 1 item is pending", "value": str(after["lm_batch_1_pending"]),
         "met": after["lm"]["calls"] > 0 and after["lm_batch_1_pending"] == 0},
        {"target": "1.0 PNG decode per image per stage", "value": f"{after['png_per_image']:.2f}",
         "met": after["png_decodes"] == after["png_unique"] == after["n_images"]},
        host_target(f"whole stage, {after['n_images']:,} images", lambda f: f["host_ms_per_image"]),
    ]
    if "marginal" in after and (before is None or "marginal" in before):
        m = after["marginal"]
        out.append(host_target(f"per extra image, {m['from']:,} -> {m['to']:,} images",
                               lambda f: f["marginal"]["host_ms_per_image"]))
    return out


def format_table(rows: list[dict], with_before: bool) -> str:
    columns = ["before", "after", "gain"] if with_before else ["after"]
    return markdown_table(["", *columns], ([r["metric"], *(str(r[c]) for c in columns)] for r in rows),
                          align="l" + "r" * len(columns), pad=True)


def format_targets(tg: list[dict]) -> str:
    def word(t):
        if t["met"] is None:
            return f"not measured ({t.get('why_not_measured') or 'no before run'})"
        return "met" if t["met"] else "NOT met"

    return "\n".join(f"target: {t['target']}: {t['value']} -> {word(t)}" for t in tg)


def header(env: dict) -> str:
    v = env["versions"]
    per_suite = ", ".join(f"{s} {n}" for s, n in env["images_per_suite"].items())
    lines = [f"annotation benchmark: {env['date']}, {env['host']}, {env['cpu']}, {env['cpu_cores']} CPU cores, "
             f"OMP_NUM_THREADS={env['threads']}, device {env['device']}",
             f"python {v['python']}, torch {v['torch']}, transformers {v['transformers']}, open_clip {v['open_clip']}, "
             f"pillow {v['pillow']}, opencv {v['opencv']}, numpy {v['numpy']}",
             f"synthetic run: {env['n_images']:,} images of {env['image_size']} px (noise and shapes, "
             f"PNG {env['png_kib']:.0f} KiB on average), builtin:tiny-sd annotators (tiny CLIP / VQA / DETR), "
             f"skin tone {env['skin_tone']}, stage batch size {env['batch_size'] or 'default'}",
             f"images per suite: {per_suite}",
             f"after: this tree ({env['after_commit']}), VQA estimator {env['vqa_mode']['after']}"]
    if env.get("before_commit"):
        lines.append(f"before: {env['before_ref']} = {env['before_commit'][:12]} \"{env['before_subject']}\", "
                     f"VQA estimator {env['vqa_mode']['before']}")
    lines.append(f"times: median of {env['repeats']} run(s) of each folder, each on a fresh copy, after an unmeasured "
                 f"warm-up; gain: before / after for counts and times, after / before for images/s (above 1 is better)")
    lines.append("images/s <annotator>: over the time of its annotate calls on the main thread; after, the decode "
                 "threads prepare the images beforehand (preprocessing, DETR's resize, the whole skin-tone "
                 "measurement), and that time is in no annotator's row")
    return "\n".join(lines)


# --------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=24, help="images per suite (default 24)")
    ap.add_argument("--image-size", type=int, default=512, help="image side in px (default 512, real size)")
    ap.add_argument("--before-ref", default=DEFAULT_BEFORE, help=f"git ref of the earlier version (default "
                                                                  f"{DEFAULT_BEFORE})")
    ap.add_argument("--no-before", action="store_true", help="measure this tree only")
    ap.add_argument("--threads", type=int, default=None,
                    help="OMP_NUM_THREADS of both runs (default: $OMP_NUM_THREADS, else the CPU count)")
    ap.add_argument("--skin-tone", default="haar", help="face detector of both runs (default haar)")
    ap.add_argument("--vqa-mode", default=None, help="this tree's --vqa-mode (default: its default, closed-set)")
    ap.add_argument("--batch-size", type=int, default=None, help="annotate batch size (default: each version's)")
    ap.add_argument("--device", default=None, help="annotate device (default: the stage's choice)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="measurements of each run folder per version; times are medians (default 3)")
    ap.add_argument("--no-marginal", dest="marginal", action="store_false",
                    help="skip the second run at twice --limit (the host time per extra image)")
    ap.add_argument("--out", help="folder for annotation.json and annotation.md")
    args = ap.parse_args(argv)
    if args.limit < 1:
        ap.error(f"--limit must be >= 1, got {args.limit}")
    if args.image_size < 32:
        ap.error(f"--image-size must be >= 32, got {args.image_size}")
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.batch_size is not None and args.batch_size < 1:
        ap.error(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.threads is None:
        args.threads = int(os.environ.get("OMP_NUM_THREADS") or os.cpu_count() or 1)
    if args.threads < 1:
        ap.error(f"--threads must be >= 1, got {args.threads}")
    return args


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    args = parse_args(argv)
    common = {"skin_tone": args.skin_tone}
    if args.batch_size:
        common["batch_size"] = args.batch_size
    after_options = dict(common)
    if args.vqa_mode:
        after_options["annotators"] = {"vqa_mode": args.vqa_mode}
    work = Path(tempfile.mkdtemp(prefix="t2ibench-annotation-bench-"))
    try:
        before_tree = None if args.no_before else BeforeTree(args.before_ref, work)
        t0 = time.perf_counter()
        sources = [work / "source-run"]
        per_suite = build_run(sources[0], args.limit, args.image_size)
        if args.marginal:
            sources.append(work / "source-run-2x")
            build_run(sources[1], 2 * args.limit, args.image_size)
        warm = work / "source-warmup"
        build_run(warm, 1, args.image_size)
        print(f"built synthetic runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        docs = {}
        if before_tree is not None:
            with before_tree:
                docs["before"] = run_version("before", before_tree.path, sources, warm, work, args, common)
        docs["after"] = run_version("after", ROOT, sources, warm, work, args, after_options)
        fig = {}
        for k, d in docs.items():
            by_source = [[r for r in d["runs"] if r["source"] == i] for i in range(len(sources))]
            fig[k] = median_figures(by_source[0])
            if len(by_source) > 1:
                fig[k]["marginal"] = marginal(fig[k], median_figures(by_source[1]))
        # the VQA mode as the label files name it (estimator "vqa closed-set" / "vqa generate"; "vqa" before)
        vqa_mode = {k: ", ".join(d["runs"][0]["labels"]["vqa_estimators"]) or "-" for k, d in docs.items()}
        env = {"date": utc_iso(), "host": platform.node(), "cpu": _cpu_name(),
               "cpu_cores": os.cpu_count(), "threads": args.threads, "device": args.device or "stage default",
               "versions": docs["after"]["versions"], "images_per_suite": per_suite,
               "n_images": sum(per_suite.values()), "image_size": args.image_size, "png_kib": png_kib(sources[0]),
               "skin_tone": args.skin_tone, "batch_size": args.batch_size, "vqa_mode": vqa_mode,
               "repeats": args.repeats,
               "after_commit": checkout_commit() or "?",
               "before_ref": args.before_ref if before_tree else None,
               "before_commit": before_tree.commit if before_tree else None,
               "before_subject": before_tree.subject if before_tree else None}
        rows = table_rows(fig.get("before"), fig["after"])
        tg = targets(fig.get("before"), fig["after"])
        text = header(env) + "\n\n" + format_table(rows, "before" in fig) + "\n\n" + format_targets(tg)
        print(text)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            raw = {k: {**d, "runs": [{kk: vv for kk, vv in r.items() if kk != "summary"} for r in d["runs"]]}
                   for k, d in docs.items()}
            doc = {"environment": env, "rows": rows, "targets": tg, "figures": fig, "raw": raw}
            (out / "annotation.json").write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
            (out / "annotation.md").write_text(text + "\n", encoding="utf-8")
    except (RuntimeError, ValueError) as e:
        print_error(str(e))
        return 1 if isinstance(e, RuntimeError) else 2
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
