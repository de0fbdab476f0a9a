"""Benchmark: scoring a full-size audit on the CPU (target: under 60 s).

Builds a synthetic run folder the size of a full audit and times
``benchmark.runner.score.score_run`` on it, per suite:

* the probe rows are the real ones (``build_probes`` over every registered suite; with
  ``--scale`` > 1 each prompt gets proportionally more samples, < 1 keeps a spread
  subset with the runner's ``limit_probes`` rule);
* ``manifest.parquet`` has the columns generation writes;
* the label files are those of the annotators a real audit of these suites runs (each kind
  the suites' tasks declare, once per default model of the kind, made as the annotate stage
  makes them), with random answers and embeddings in place of model outputs, keyed by
  annotator kind (``SYNTHETIC_ROWS``): an annotator that reads CLIP embeddings gets random
  ones at its encoder's real width and writes its own rows (GEP's C / CC / CLS, its CLS
  classifiers really trained; MCAS's image and text rows for each of the six Generated Bias
  encoders); VQA gender and attribute answers to the tasks' own questions, skin tone and DETR
  queries are drawn at random in the annotators' row shapes, each annotator with its own
  random generator.
  Every registered label file is written, by the annotate stage's writer.

The labels are random, so the scores are meaningless; the work done (rows, groups,
bootstrap resamples) is that of a real audit. Per-suite seconds are the time between
consecutive score entries of a suite (each entry is added right after its score and
interval are computed); "read + write" is everything outside the suite scorers.

    python bench/scoring_cpu.py                      # full size, 1000 resamples
    python bench/scoring_cpu.py --scale 2            # twice the samples of every prompt
    python bench/scoring_cpu.py --profile prof.out   # + cProfile of score_run
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from types import SimpleNamespace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.contract import run_folder as rf  # noqa: E402
from benchmark.annotate.label_files import LABEL_FILES, write_label_rows  # noqa: E402
from benchmark.annotate.registry import AnnotateContext, Annotator, WorkItem, list_annotator_kinds  # noqa: E402
from benchmark.annotate.skin_tone import MST_ITA, nearest_mst  # noqa: E402
from benchmark.annotate.vqa_labels import perceived_gender_label, presence_label  # noqa: E402
from benchmark.models.detector import Detections  # noqa: E402
from benchmark.probes import get_suite, list_suites, load_config  # noqa: E402
from benchmark.probes.registry import stable_seed  # noqa: E402
from benchmark.contract.run_folder import LABELS_DIR  # noqa: E402
from benchmark.runner.batch_size import BatchSize  # noqa: E402
from benchmark.runner.annotate_plan import annotator_parameters  # noqa: E402
from benchmark.runner.probe_choice import build_probes, limit_probes  # noqa: E402
from benchmark.contract.audit_request import AuditRequest  # noqa: E402
from benchmark.runner.run_config import make_run_config  # noqa: E402
import benchmark.runner.score as score  # noqa: E402
from benchmark.tasks import TASKS, list_tasks  # noqa: E402
from benchmark.tasks.context import ScoringContext  # noqa: E402
from benchmark.present.terminal import print_error  # noqa: E402


#: embedding width of each encoder (open_clip model configs, ``embed_dim``)
ENCODER_DIMS = {
    "open_clip:ViT-L-14:openai": 768,
    "open_clip:RN50:openai": 1024,
    "open_clip:RN50x4:openai": 640,
    "open_clip:RN50x16:openai": 768,
    "open_clip:RN101:openai": 512,
    "open_clip:ViT-B-16:openai": 512,
    "open_clip:ViT-B-32:openai": 512,
}
TARGET_SECONDS = 60.0
# Shares of random answers: roughly what a real VQA model gives on these prompts.
GENDER_ANSWERS = (("a male", 0.55), ("a female", 0.35), ("i don't know", 0.10))
FACE_RATE = 0.8
DETR_QUERIES = 100  # facebook/detr-resnet-50's num_queries


# --------------------------------------------------------------------------- the synthetic run


def scaled_probes(scale: float) -> pd.DataFrame:
    """Every suite's probes, with about ``scale`` times as many rows per suite."""
    probes = build_probes(list_suites())
    frames = []
    for suite, df in probes.groupby("suite", sort=False):
        n_want = max(1, round(len(df) * scale))
        if n_want <= len(df):
            frames.append(limit_probes(df, n_want))
            continue
        # More samples of every prompt: copies with new sample indices (and ids, seeds).
        per_prompt = int(df["sample_index"].max()) + 1
        copies = [df]
        for k in range(1, math.ceil(scale)):
            extra = df.copy()
            extra["sample_index"] = df["sample_index"] + k * per_prompt
            extra["probe_id"] = [f"{p.rsplit('/', 1)[0]}/{s:02d}" for p, s in zip(df["probe_id"], extra["sample_index"])]
            extra["seed"] = [stable_seed(p) for p in extra["probe_id"]]
            copies.append(extra)
        frames.append(limit_probes(pd.concat(copies, ignore_index=True), n_want))
    return pd.concat(frames, ignore_index=True)


def write_manifest_and_config(run_dir: Path, probes: pd.DataFrame, rng: np.random.Generator) -> None:
    settings = {"num_inference_steps": 50, "guidance_scale": 7.5, "height": 512, "width": 512,
                "family": "sd1", "dtype": "bfloat16", "note": "synthetic labels for bench/scoring_cpu.py"}
    model_id = "bench/synthetic-audit"
    model = SimpleNamespace(model_id=model_id, revision=None, settings=settings, is_builtin=False)
    config = make_run_config(AuditRequest(run_dir, model_id), probes, model=model, batch=BatchSize(8))
    rf.write_json_atomic(run_dir / rf.CONFIG_FILE, config)
    n = len(probes)
    probe_columns = list(probes.columns)
    rows = []
    settings_str = rf.settings_json(settings)
    for i, rec in enumerate(probes.to_dict("records")):
        name, batch = rf.image_file_name(i, n), rf.batch_name(i - i % 8, n)
        rows.append({"file_name": name, "probe_index": i, **rec, "sha256": rng.bytes(32).hex(),
                     "model_id": model_id, "revision": None, "settings": settings_str, "nsfw": False, "rank": 0,
                     "batch_seconds": 1.0, "batch": batch, "image_path": f"{rf.IMAGES_DIR}/{batch}/{name}"})
    columns = (["file_name", "probe_index"] + probe_columns
               + [c for c in rf.RUNNER_COLUMNS if c not in ("file_name", "probe_index")] + list(rf.MANIFEST_EXTRA_COLUMNS))
    rf.write_manifest(run_dir, rows, columns)


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _text_embedder(dim: int, salt: str):
    """A deterministic stand-in for ``encoder.embed_texts``: one random unit vector per text."""

    def embed(texts):
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(f"{salt}\x1f{t}".encode()).digest()[:8], "big")
            out.append(_unit_rows(np.random.default_rng(seed), 1, dim)[0])
        return np.stack(out) if out else np.zeros((0, dim), np.float32)

    return embed


class StandInEncoder:
    """A CLIP encoder's place in the annotate context: ``embed_texts`` gives one deterministic
    random unit vector per text, at the encoder's width."""

    def __init__(self, spec: str):
        self.embed_texts = _text_embedder(ENCODER_DIMS[spec], spec)


def embedding_rows(a: Annotator, records: list[dict], ctx: AnnotateContext, rng: np.random.Generator) -> list[dict]:
    """The rows of an annotator that reads CLIP embeddings, written by the annotator itself from
    random image embeddings at its encoder's width (and a stand-in encoder for texts)."""
    ctx.model(a.model_key, a.model, StandInEncoder)
    emb = _unit_rows(rng, len(records), ENCODER_DIMS[a.encoder])
    items = [WorkItem(row=r, keys=a.keys(r, ctx), embedding=e) for r, e in zip(records, emb)]
    return a.annotate(items, ctx) + a.annotate_extra(a.extra_keys(ctx), ctx)


def vqa_gender_rows(a: Annotator, records: list[dict], ctx: AnnotateContext, rng: np.random.Generator) -> list[dict]:
    """A random answer to each gender question the task asks of an image."""
    answers, p = [x for x, _ in GENDER_ANSWERS], [w for _, w in GENDER_ANSWERS]
    rows = []
    for r in records:
        for q in a.questions(r, ctx):
            ans = str(rng.choice(answers, p=p))
            rows.append({"probe_id": r["probe_id"], "person": q.key, "question": q.question, "answer": ans,
                         "label": perceived_gender_label(ans), "score": 1.0, "estimator": a.estimator,
                         "annotator": a.name})
    return rows


def vqa_attribute_rows(a: Annotator, records: list[dict], ctx: AnnotateContext,
                       rng: np.random.Generator) -> list[dict]:
    """A random yes / no to each attribute question the task asks of an image."""
    rows = []
    for r in records:
        for q in a.questions(r, ctx):
            ans = "yes" if rng.uniform() < 0.3 else "no"
            rows.append({"probe_id": r["probe_id"], "attribute": q.key, "score": float(presence_label(ans)),
                         "label": presence_label(ans), "estimator": a.estimator, "annotator": a.name,
                         "question": q.question, "answer": ans})
    return rows


def skin_tone_rows(a: Annotator, records: list[dict], ctx: AnnotateContext, rng: np.random.Generator) -> list[dict]:
    """A face in ``FACE_RATE`` of the images, with a random ITA."""
    rows = []
    for r in records:
        face = bool(rng.uniform() < FACE_RATE)
        angle = float(rng.uniform(min(MST_ITA), max(MST_ITA))) if face else None
        rows.append({"probe_id": r["probe_id"], "face_found": face, "ita": angle,
                     "mst": None if angle is None else nearest_mst(angle), "n_faces": int(face), "annotator": a.name})
    return rows


def detection_rows(a: Annotator, records: list[dict], ctx: AnnotateContext, rng: np.random.Generator) -> list[dict]:
    """Every DETR query of every image, as the annotate stage stores them (top class, probability
    and box per query, plus the target classes' probabilities), over the classes the annotator's
    suites ask about (``target``, ``target_b`` of every one of their probes)."""
    asked = build_probes(a.suites).to_dict("records")
    classes = list(dict.fromkeys(c for r in asked for c in (r.get("target"), r.get("target_b"))
                                 if isinstance(c, str) and c))
    rows = []
    for r in records:
        logits = rng.normal(0.0, 2.0, (DETR_QUERIES, len(classes)))
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        boxes = rng.uniform(0.05, 0.5, (DETR_QUERIES, 4))
        det = Detections.from_probs(probs, boxes, classes).restrict(
            [r.get("target"), r.get("target_b") if isinstance(r.get("target_b"), str) else None])
        rows.append({"probe_id": r["probe_id"], "detector": a.name, **det.to_record()})
    return rows


#: annotator kind -> its synthetic rows ``(annotator, probe records, context, rng) -> rows``; an
#: annotator that reads CLIP embeddings (``inputs == "embeddings"``) gets :func:`embedding_rows`
SYNTHETIC_ROWS = {"vqa_gender": vqa_gender_rows, "vqa_attributes": vqa_attribute_rows, "skin_tone": skin_tone_rows,
                  "detections": detection_rows}


def audit_annotators(families: dict[str, str]) -> list[Annotator]:
    """The annotators a real audit of suites ``families`` runs: each kind its tasks declare, with
    their parameters, once per default model of the kind (as the annotate stage makes them, but
    without checking that the models can be loaded: none is)."""
    params = annotator_parameters(families)
    kinds = [(k, k.default(False)) for k in list_annotator_kinds() if k.name in params]
    return [k.create(m, params[k.name]) for k, default in kinds for m in (default if k.many else [default])]


def write_labels(run_dir: Path, probes: pd.DataFrame, seed: int = 0) -> dict[str, int]:
    """Every label file a full audit has: the rows of each annotator the annotate stage would
    run on these suites (each with its own random generator), by label file."""
    (run_dir / LABELS_DIR).mkdir(parents=True, exist_ok=True)
    records = probes.to_dict("records")
    families = {s: get_suite(s).family for s in probes["suite"].unique()}
    ctx = AnnotateContext(run_dir, configs={f: load_config(f) for f in set(families.values())}, families=families)
    rows: dict[str, list[dict]] = {name: [] for name in LABEL_FILES}
    for a in audit_annotators(families):
        make = SYNTHETIC_ROWS.get(a.kind) or (embedding_rows if a.inputs == "embeddings" else None)
        if make is None:
            raise SystemExit(f"scoring_cpu: no synthetic rows for the annotator kind {a.kind!r}: add them to "
                             "SYNTHETIC_ROWS")
        rng = np.random.default_rng([seed, stable_seed(a.kind, a.name)])
        rows[a.label_file] += make(a, [r for r in records if r["suite"] in a.suites], ctx, rng)
    counts = {}
    for name, spec in LABEL_FILES.items():
        write_label_rows(spec.path(run_dir), rows[name], spec)
        counts[spec.relpath] = len(rows[name])
    return counts


def build_run(run_dir: Path, scale: float, seed: int = 0) -> tuple[pd.DataFrame, dict[str, int]]:
    rng = np.random.default_rng(seed)
    probes = scaled_probes(scale)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_manifest_and_config(run_dir, probes, rng)
    return probes, write_labels(run_dir, probes, seed)


# --------------------------------------------------------------------------- timing


class SuiteClock:
    """Attributes score_run's time to suites: each score entry gets the time since the last mark."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.entries: dict[str, int] = {}
        self.other: dict[str, float] = {}
        self._last = None

    def wrap_scorer(self, name, fn):
        def timed(ctx, suites):
            start = self._last = time.perf_counter()
            attributed = sum(self.seconds.values())
            fn(ctx, suites)
            spent = time.perf_counter() - start - (sum(self.seconds.values()) - attributed)
            self.other[name] = self.other.get(name, 0.0) + spent  # detail tables etc. after the last entry
        return timed

    def wrap_add(self, add):
        clock = self

        def timed_add(ctx, name, suite, value, **kw):
            now = time.perf_counter()
            clock.seconds[suite] = clock.seconds.get(suite, 0.0) + (now - clock._last)
            clock.entries[suite] = clock.entries.get(suite, 0) + 1
            out = add(ctx, name, suite, value, **kw)
            clock._last = time.perf_counter()
            return out
        return timed_add


def time_scoring(run_dir: Path, n_resamples: int, profile: str | None = None) -> tuple[dict, SuiteClock, float]:
    import dataclasses

    clock = SuiteClock()
    saved = {t.name: t for t in list_tasks()}
    saved_add = ScoringContext.add
    for name, task in saved.items():
        TASKS[name] = dataclasses.replace(task, score=clock.wrap_scorer(name, task.score))
    ScoringContext.add = clock.wrap_add(saved_add)
    try:
        t0 = time.perf_counter()
        if profile:
            import cProfile

            prof = cProfile.Profile()
            results = prof.runcall(score.score_run, run_dir, n_resamples=n_resamples)
            prof.dump_stats(profile)
        else:
            results = score.score_run(run_dir, n_resamples=n_resamples)
        total = time.perf_counter() - t0
    finally:
        TASKS.update(saved)
        ScoringContext.add = saved_add
    return results, clock, total


def table_rows(results: dict, clock: SuiteClock, total: float) -> list[dict]:
    by_suite = {s["name"]: s for s in results["suites"]}
    rows = []
    for suite, st in by_suite.items():
        rows.append({"row": suite, "images": st["n_images"], "scores": clock.entries.get(suite, 0),
                     "seconds": clock.seconds.get(suite, 0.0), "status": st["status"]})
    other = sum(clock.other.values())
    rows.append({"row": "suite scorers: detail tables", "images": None, "scores": None, "seconds": other,
                 "status": ""})
    io = total - sum(clock.seconds.values()) - other
    rows.append({"row": "read labels + write results", "images": None, "scores": None, "seconds": io, "status": ""})
    rows.append({"row": "total", "images": sum(s["n_images"] for s in by_suite.values()),
                 "scores": len(results["scores"]), "seconds": total,
                 "status": f"target < {TARGET_SECONDS:.0f} s: {'met' if total < TARGET_SECONDS else 'NOT met'}"})
    return rows


def format_table(rows: list[dict]) -> str:
    return markdown_table(["suite", "images", "scores", "seconds", "status"],
                          ([r["row"], "" if r["images"] is None else f"{r['images']:,}",
                            "" if r["scores"] is None else str(r["scores"]), f"{r['seconds']:.2f}", r["status"]]
                           for r in rows), align="lrrrl", pad=True)


def machine_header(n_resamples: int, scale: float) -> str:
    import benchmark

    return (f"scoring benchmark: {utc_iso()}, {platform.node()}, "
            f"{os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, "
            f"python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, "
            f"package {getattr(benchmark, '__version__', '?')}; scale {scale:g}, {n_resamples} resamples")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="size relative to the full suites (1 = every probe of every suite once, a full audit)")
    ap.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples per interval (default 1000)")
    ap.add_argument("--run-dir", help="build the synthetic run here and keep it (default: a temporary folder)")
    ap.add_argument("--out", help="folder for scoring_cpu.json and scoring_cpu.md")
    ap.add_argument("--profile", help="write a cProfile of score_run to this file and print its top functions")
    args = ap.parse_args(argv)
    if not args.scale > 0:
        ap.error(f"--scale must be positive, got {args.scale}")
    if args.n_resamples < 1:
        ap.error(f"--n-resamples must be >= 1, got {args.n_resamples}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    keep = args.run_dir is not None
    run_dir = Path(args.run_dir) if keep else Path(tempfile.mkdtemp(prefix="t2ibench-scoring-"))
    if keep and run_dir.exists() and any(run_dir.iterdir()):
        print_error(f"{run_dir} is not empty; give a new --run-dir")
        return 2
    try:
        t0 = time.perf_counter()
        probes, counts = build_run(run_dir, args.scale)
        build_s = time.perf_counter() - t0
        print(f"built a synthetic run of {len(probes):,} images in {build_s:.1f} s: "
              + ", ".join(f"{k} {v:,} rows" for k, v in counts.items()), file=sys.stderr)
        results, clock, total = time_scoring(run_dir, args.n_resamples, args.profile)
        rows = table_rows(results, clock, total)
        header = machine_header(args.n_resamples, args.scale)
        table = format_table(rows)
        print(header)
        print(table)
        if args.profile:
            import pstats

            pstats.Stats(args.profile).sort_stats("cumulative").print_stats(25)
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            doc = {"header": header, "scale": args.scale, "n_resamples": args.n_resamples, "n_images": len(probes),
                   "label_rows": counts, "rows": rows, "total_seconds": total, "target_seconds": TARGET_SECONDS}
            (out / "scoring_cpu.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
            (out / "scoring_cpu.md").write_text(header + "\n\n" + table + "\n", encoding="utf-8")
    finally:
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
