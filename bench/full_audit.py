"""Benchmark: a whole audit, end to end, at full size on one GPU (or, with --tiny, on a CPU).

Builds SD 1.5 (``configs/sd15.json``) and every default annotator (CLIP ViT-L/14, the six
Generated Bias CLIPs, BLIP-2 OPT-2.7b, DETR ResNet-50: ``annotator_models.py``) with random
weights into folders, runs the real ``t2ibench run`` command on a slice of every suite
(``--limit N``, N chosen so the slice holds at least ``--images`` images, 1,000 by default and
at least: ``--limit 79``, 1,008 images; at 4.5 images/s generation takes about 4 minutes), and
prints seconds per image and images/s per stage (generate, compile, annotate by annotator,
score, report), the GPU memory peak and the projected time of the full audit (every suite of
the built-in probe set, 15,129 images). Random weights: the scores are meaningless; only the
times mean something.

Projection: generation scales with the number of images, scoring and the report too (upper
bounds: part of them is per prompt or per run); the annotate stage's image pass scales per
suite with the number of annotator kinds that read it (the slice over-represents small
suites), while its loads and once-per-run work (GEP's classifiers on cached embeddings) count
once, as do model loads, compilation and the batch-size probe.

    python bench/full_audit.py --out bench-results/          # on a GPU: about 6 minutes on one H100 (estimate)
    python bench/full_audit.py --tiny --out /tmp/fa          # tiny configs on a CPU (CI checks the table)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from bench.annotator_models import build_annotators  # noqa: E402
from bench.generation import Device, build_pipeline_folder, environment, load_config, tiny_config  # noqa: E402
from benchmark.present.text import markdown_table  # noqa: E402

TIMES_LINE = re.compile(r"^time:\s+(.*)$", re.M)
#: the least images measured at full size (the slice every stage's rate is projected from)
MIN_IMAGES = 1000


def full_audit_counts() -> dict[str, int]:
    """Images per suite of the full audit (every suite of the built-in probe set)."""
    from benchmark.probes.source import open_probe_set

    probe_set = open_probe_set()
    return {str(k): int(v) for k, v in probe_set.table(probe_set.suites())["suite"].value_counts().items()}


def limit_for(counts: dict[str, int], target: int) -> int:
    """The smallest per-suite limit whose slice holds at least ``target`` images (or every image)."""
    lo, hi = 1, max(counts.values())
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(min(mid, n) for n in counts.values()) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def annotator_flags(options: dict) -> list[str]:
    """``t2ibench run`` flags naming the built annotators: ``--<option>`` (as the command line
    generates each annotator kind's flag), then its model or models."""
    return [a for option, value in options.items()
            for a in ("--" + option.replace("_", "-"), *(value if isinstance(value, list) else [value]))]


def annotator_weights(run_dir: Path, suites: list[str], options: dict) -> dict[str, int]:
    """Per suite, the number of annotator kinds that read its images (the tasks' own choice)."""
    from benchmark.contract import run_folder as rf
    from benchmark.probes.source import suite_families
    from benchmark.runner.annotate_plan import annotator_options, choose_annotators

    cfg = rf.read_run_config(run_dir) or {}
    families = suite_families(cfg.get("probes"), suites)
    choices, _ = choose_annotators(families, suites, annotator_options(cfg, options))
    return {s: sum(1 for c in choices if s in c.suites and c.annotators) for s in suites}


def run_audit_command(argv: list[str]) -> tuple[dict[str, float], str]:
    """``t2ibench run ARGV`` in this process (so the GPU memory peak is ours); returns the
    stage seconds it prints on its ``time:`` line, and its output."""
    from benchmark.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    text = out.getvalue()
    if code:
        raise RuntimeError(f"t2ibench run exited with {code}:\n{text[-2000:]}")
    match = TIMES_LINE.search(text)
    stages = {}
    for part in (match.group(1).split(",") if match else []):
        name, secs, _ = part.strip().rsplit(" ", 2)
        stages[name] = float(secs)
    return stages, text


def stage_rows(run_dir: Path, stages: dict[str, float], n_run: int, counts_run: dict[str, int],
               counts_full: dict[str, int], weights: dict[str, int], models_root: str = "") -> list[dict]:
    """One row per stage or annotator: seconds, images, seconds per image, projected seconds
    (``models_root``: left out of the annotator names, which are folder paths here)."""
    from benchmark.contract import run_folder as rf

    timings = json.loads((run_dir / rf.TIMINGS_FILE).read_text(encoding="utf-8"))
    n_full = sum(counts_full.values())
    ann_run = sum(counts_run[s] * weights.get(s, 0) for s in counts_run)
    ann_full = sum(counts_full[s] * weights.get(s, 0) for s in counts_run)
    ann_scale = ann_full / ann_run if ann_run else 0.0

    def row(stage, seconds, images, projected, note=""):
        stage = stage.replace(models_root.rstrip("/") + "/", "") if models_root else stage
        return {"stage": stage, "seconds": round(seconds, 3), "images": images,
                "s_per_image": round(seconds / images, 5) if images else None,
                "images_per_s": round(images / seconds, 3) if images and seconds > 0 else None,
                "projected_full_s": round(projected, 1), "note": note}

    rows = []
    for key, fixed in (("generate/load model", True), ("generate/batch size probe", True),
                       ("generate/compile", True), ("generate/batches (wall)", False)):
        if key in timings:
            secs = float(timings[key]["seconds"])
            rows.append(row(key, secs, None if fixed else n_run, secs if fixed else secs / n_run * n_full,
                            "once per run" if fixed else "PNG writes overlap on a thread"))
    # timings.json keeps the stage's order: the image pass's entries, "annotate/images", then
    # the annotators that work on cached embeddings once per run (GEP's classifiers ...)
    after_pass, pass_s = False, 0.0
    for key, entry in timings.items():
        if not key.startswith("annotate/") or key == "annotate/total":
            continue
        n, secs = int(entry.get("n_images") or 0), float(entry["seconds"])
        if key == "annotate/images":
            after_pass, pass_s = True, secs
            rows.append(row(key, secs, n, secs * ann_scale, "the image pass: decode + every model, wall"))
        elif after_pass:
            rows.append(row(key, secs, n, secs, "after the image pass, once per run: not scaled"))
        else:
            rows.append(row(key, secs, n, secs * ann_scale, "model time in the image pass"))
    total = timings.get("annotate/total") or {}
    if total:
        secs = float(total["seconds"])
        rows.append(row("annotate (stage)", secs, int(total.get("n_images") or 0),
                        secs - pass_s + pass_s * ann_scale, "wall: loads and once-per-run work + the pass scaled"))
    for name in ("score", "report"):
        if name in stages:
            rows.append(row(name, stages[name], n_run, stages[name] / n_run * n_full,
                            "upper bound (linear in images; part is per prompt or per run)"))
    return rows


def projected_total(rows: list[dict], stages: dict[str, float]) -> float:
    keep = [r for r in rows if r["stage"].startswith("generate/") or r["stage"] in ("annotate (stage)", "score",
                                                                                       "report")]
    return sum(r["projected_full_s"] for r in keep)


def format_report(doc: dict) -> str:
    env, a = doc["environment"], doc["audit"]
    lines = [f"full-audit benchmark: {env['date']}, {env['host']}",
             f"device {env['device']}, torch {env['torch']} (CUDA {env['cuda']}), diffusers {env['diffusers']}, "
             f"transformers {env['transformers']}",
             f"{'tiny configs' if doc['tiny'] else 'published configs'}, RANDOM WEIGHTS: scores meaningless, "
             f"times only; slice: --limit {a['limit']} = {a['n_images']:,} images of {a['n_full']:,}; "
             f"generation batch {a['batch_size']}, compile {a['compile']}",
             f"GPU memory peak: {a['peak_gib'] if a['peak_gib'] is not None else 'n/a'} GiB; "
             f"wall (build excluded): {a['wall_s']:.1f} s; build: {a['build_s']:.1f} s", "",
             markdown_table(["stage", "seconds", "images", "s/image", "images/s", "projected full audit (s)", "note"],
                            ([r["stage"], f"{r['seconds']:.2f}", str(r["images"] or ""),
                              "" if r["s_per_image"] is None else f"{r['s_per_image']:.4f}",
                              "" if r.get("images_per_s") is None else f"{r['images_per_s']:.2f}",
                              f"{r['projected_full_s']:,.0f}", r["note"]] for r in doc["rows"]), align="lrrrrrl")]
    annotate = next((r["projected_full_s"] for r in doc["rows"] if r["stage"] == "annotate (stage)"), None)
    lines += ["", f"projected full audit ({a['n_full']:,} images, every suite, every default annotator): "
                  f"{doc['projected_total_s'] / 60:.1f} min (issue 24's target on one H100 / H200: <= 60 min)"]
    if annotate is not None:
        lines.append(f"projected annotate stage: {annotate / 60:.1f} min (target: <= 5 min)")
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="tiny configs on the CPU (the CI path)")
    ap.add_argument("--images", type=int, default=None,
                    help=f"images in the slice (default {MIN_IMAGES:,}, the least at full size: --limit 79, 1,008 "
                         "images of the built-in probe set; 13 with --tiny: one per suite)")
    ap.add_argument("--device", default=None, help="cuda (default when present) or cpu (with --tiny)")
    ap.add_argument("--no-compile", action="store_true", help="pass --no-compile to t2ibench run")
    ap.add_argument("--n-resamples", type=int, default=None, help="bootstrap resamples (default 1000; 20 with --tiny)")
    ap.add_argument("--keep", help="keep the built models and the run folder here")
    ap.add_argument("--out", help="folder for full_audit.json and full_audit.md")
    args = ap.parse_args(argv)
    args.images = args.images or (13 if args.tiny else MIN_IMAGES)
    args.n_resamples = args.n_resamples or (20 if args.tiny else 1000)
    if args.images < 1 or args.n_resamples < 1:
        ap.error("--images and --n-resamples must be >= 1")
    if not args.tiny and args.images < MIN_IMAGES:
        ap.error(f"--images must be at least {MIN_IMAGES:,} at full size (fewer leave some suites' stages too few "
                 "images to project from); use --tiny for a small CPU run")
    import torch

    args.device = args.device or ("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        ap.error(f"--device {args.device} was asked for but no CUDA GPU is available; use --tiny on a CPU")
    if not args.tiny and not args.device.startswith("cuda"):
        ap.error("full-size models need a GPU (--device cuda); use --tiny on a CPU")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore")  # random weights: NaN casts in postprocessing, etc.
    dev = Device(args.device)
    env = environment(dev)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="t2ibench-full-audit-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        cfg = tiny_config(load_config("sd15")) if args.tiny else load_config("sd15")
        print("building SD 1.5 and the annotators (random weights) ...", file=sys.stderr)
        model = build_pipeline_folder(cfg, work / "sd15", args.device)
        options = build_annotators(work / "annotators", args.device, tiny=args.tiny)
        build_s = time.perf_counter() - t0
        counts_full = full_audit_counts()
        limit = limit_for(counts_full, args.images)
        run_dir = work / "run"
        argv = ["run", "--model", str(model), "--out", str(run_dir), "--limit", str(limit), "--device", args.device,
                *annotator_flags(options), "--n-resamples", str(args.n_resamples), "--quiet"]
        argv += (["--no-compile"] if args.no_compile else []) + (["--set", "num_inference_steps=2"] if args.tiny else [])
        dev.reset_peak()
        t0 = time.perf_counter()
        stages, _ = run_audit_command(argv)
        wall = time.perf_counter() - t0
        from benchmark.contract import run_folder as rf

        config = rf.read_run_config(run_dir)
        counts_run = {s: min(limit, n) for s, n in counts_full.items()}
        weights = annotator_weights(run_dir, list(counts_full), {k: options[k] for k in options})
        rows = stage_rows(run_dir, stages, sum(counts_run.values()), counts_run, counts_full, weights,
                          models_root=str(work / "annotators"))
        doc = {"environment": env, "tiny": args.tiny, "argv": argv,
               "audit": {"limit": limit, "n_images": sum(counts_run.values()), "n_full": sum(counts_full.values()),
                         "batch_size": config.get("batch_size"),
                         "compile": config.get("settings", {}).get("compile", False),
                         "peak_gib": round(dev.peak_gib(), 2) if dev.peak_gib() is not None else None,
                         "wall_s": wall, "build_s": build_s, "stages_s": stages,
                         "annotator_kinds_per_suite": weights},
               "rows": rows}
        doc["projected_total_s"] = projected_total(rows, stages)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    text = format_report(doc)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "full_audit.json").write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
        (out / "full_audit.md").write_text(text + "\n", encoding="utf-8")
    return 0 if math.isfinite(doc["projected_total_s"]) else 1


if __name__ == "__main__":
    sys.exit(main())
