"""Runs one annotate stage under counters and writes what it saw as JSON (for bench/annotation.py).

Started in a subprocess with ``PYTHONPATH`` set to the source tree being measured, so the
same driver measures any version of ``benchmark``. It relies only on the stage's public
entry point (``benchmark.runner.annotate.annotate_run``) and on the libraries both versions
use; the counters sit on those libraries, not on the package:

* PNG decodes: ``PIL.Image.open`` of a ``.png`` path under the run folder's ``images/``;
* VQA vision-encoder passes: ``transformers`` ``Blip2VisionModel.forward`` (rows of
  ``pixel_values`` per call), and its Q-Former (``Blip2QFormerModel.forward``);
* VQA language-model calls: the ``forward`` of the language model of every
  ``Blip2ForConditionalGeneration`` built (wrapped on the instance when the model is
  constructed). A call *starts sequences* when it has no key/value cache or an empty one
  (``past_key_values``, or ``cache`` from transformers 5.24, is None or its
  ``get_seq_length()`` is 0): a prefill or a scoring pass, not a decoding step. Its batch
  size is the rows of ``inputs_embeds`` / ``input_ids``. ``generate`` calls of that language
  model are counted separately;
* CLIP image / text encoder calls: ``open_clip`` ``encode_image`` / ``encode_text``;
* the object detector: ``transformers`` ``DetrForObjectDetection.forward``.

Model time is the wall time inside the outermost of these calls (a forward inside a
``generate`` inside ... counts once); everything else of the stage's wall time is host
time (PNG decoding, preprocessing, tokenising, Python, writing label files, OpenCV's
face detector, model loading).

    PYTHONPATH=TREE python bench/_annotate_driver.py --tree TREE --scratch DIR --run-dir RUN [--run-dir RUN2] \
        [--repeats N] --out result.json [--warmup-dir SMALL_RUN] [--options JSON] [--device cpu]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

_tls = threading.local()


class Counters:
    def __init__(self, images_root: Path | None = None):
        self.images_root = images_root
        self.reset()

    def reset(self) -> None:
        self.png_opens: list[str] = []
        self.png_threads: dict[str, int] = {}
        self.vision_rows: list[int] = []
        self.qformer_rows: list[int] = []
        self.lm_start_rows: list[int] = []    # calls that start sequences, in order
        self.lm_step_calls = 0                  # decoding steps (a cache already filled)
        self.lm_generate_rows: list[int] = []
        self.clip_image_rows: list[int] = []
        self.clip_text_rows: list[int] = []
        self.detector_rows: list[int] = []
        self.model_seconds: dict[str, float] = {}
        self.sync = None

    def as_dict(self) -> dict:
        return {"png_opens": len(self.png_opens), "png_unique": len(set(self.png_opens)),
                "png_threads": dict(self.png_threads), "vision_rows": self.vision_rows,
                "qformer_rows": self.qformer_rows, "lm_start_rows": self.lm_start_rows,
                "lm_step_calls": self.lm_step_calls, "lm_generate_rows": self.lm_generate_rows,
                "clip_image_rows": self.clip_image_rows, "clip_text_rows": self.clip_text_rows,
                "detector_rows": self.detector_rows, "model_seconds": dict(self.model_seconds)}


COUNTERS = Counters()


def _rows(value) -> int:
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    try:
        return len(value)
    except TypeError:
        return 0


def _timed(category: str, fn, count=None):
    """``fn`` with its outermost calls timed under ``category`` and ``count(args, kwargs)`` called first."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if count is not None:
            count(args, kwargs)
        depth = getattr(_tls, "depth", 0)
        _tls.depth = depth + 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if depth == 0 and COUNTERS.sync is not None:
                COUNTERS.sync()
            _tls.depth = depth
            if depth == 0:
                s = COUNTERS.model_seconds
                s[category] = s.get(category, 0.0) + time.perf_counter() - t0

    return wrapper


def _arg(args, kwargs, name, pos):
    if name in kwargs:
        return kwargs[name]
    return args[pos] if len(args) > pos else None


def _cache_is_empty(cache) -> bool:
    if cache is None:
        return True
    length = getattr(cache, "get_seq_length", None)
    if callable(length):
        try:
            return int(length()) == 0
        except Exception:  # a cache type that cannot tell: treat as a decoding step
            return False
    if isinstance(cache, (tuple, list)):
        return len(cache) == 0
    return False


def install_counters() -> None:
    """Wrap the library entry points listed in the module docstring (before the package is imported)."""
    import PIL.Image
    import transformers

    open_png = PIL.Image.open

    @functools.wraps(open_png)
    def counting_open(fp, *args, **kwargs):
        if isinstance(fp, (str, os.PathLike)) and str(fp).lower().endswith(".png"):
            path = Path(fp).resolve()
            root = COUNTERS.images_root
            if root is None or root in path.parents:
                COUNTERS.png_opens.append(str(path))
                name = threading.current_thread().name
                key = "main" if name == "MainThread" else "worker"
                COUNTERS.png_threads[key] = COUNTERS.png_threads.get(key, 0) + 1
        return open_png(fp, *args, **kwargs)

    PIL.Image.open = counting_open

    vision = transformers.Blip2VisionModel
    vision.forward = _timed("vqa vision encoder", vision.forward, lambda a, k: COUNTERS.vision_rows.append(
        _rows(_arg(a, k, "pixel_values", 1))))
    qformer = transformers.Blip2QFormerModel
    qformer.forward = _timed("vqa q-former", qformer.forward, lambda a, k: COUNTERS.qformer_rows.append(
        _rows(_arg(a, k, "query_embeds", 1))))

    blip2 = transformers.Blip2ForConditionalGeneration
    init = blip2.__init__

    @functools.wraps(init)
    def init_and_wrap_lm(self, *args, **kwargs):
        init(self, *args, **kwargs)
        lm = self.language_model

        def count_forward(a, k):
            batch = k.get("inputs_embeds")
            if batch is None:
                batch = k.get("input_ids", a[0] if a else None)
            # transformers 5.24 names the key/value cache ``cache``, earlier versions ``past_key_values``
            cache = k["past_key_values"] if k.get("past_key_values") is not None else k.get("cache")
            if _cache_is_empty(cache):
                COUNTERS.lm_start_rows.append(_rows(batch))
            else:
                COUNTERS.lm_step_calls += 1

        def count_generate(a, k):
            batch = k.get("inputs_embeds")
            if batch is None:
                batch = k.get("input_ids", a[0] if a else None)
            COUNTERS.lm_generate_rows.append(_rows(batch))

        lm.forward = _timed("vqa language model", lm.forward, count_forward)
        lm.generate = _timed("vqa language model", lm.generate, count_generate)

    blip2.__init__ = init_and_wrap_lm

    detr = transformers.DetrForObjectDetection
    detr.forward = _timed("detector", detr.forward, lambda a, k: COUNTERS.detector_rows.append(
        _rows(_arg(a, k, "pixel_values", 1))))

    import open_clip.model as ocm

    for cls in {getattr(ocm, n) for n in ("CLIP", "CustomTextCLIP") if hasattr(ocm, n)}:
        cls.encode_image = _timed("clip image encoder", cls.encode_image,
                                  lambda a, k: COUNTERS.clip_image_rows.append(_rows(_arg(a, k, "image", 1))))
        cls.encode_text = _timed("clip text encoder", cls.encode_text,
                                 lambda a, k: COUNTERS.clip_text_rows.append(_rows(_arg(a, k, "text", 1))))


def _label_counts(run_dir: Path) -> dict:
    """Rows per label file and the images the VQA annotators answered about (gender rows, and
    attribute rows whose estimator names VQA), read from the finished files."""
    import pandas as pd

    out: dict = {"rows": {}, "vqa_images": 0, "vqa_items": 0, "vqa_estimators": []}
    labels = run_dir / "labels"
    vqa_ids: set[str] = set()
    for path in sorted(labels.glob("*.parquet")) if labels.is_dir() else []:
        df = pd.read_parquet(path)
        out["rows"][path.name] = len(df)
        if path.stem == "gender":
            vqa_ids |= set(df["probe_id"].astype(str))
            out["vqa_items"] += len(df)
            if "estimator" in df.columns:
                out["vqa_estimators"] += sorted(set(df["estimator"].astype(str)))
        elif path.stem == "attributes" and "estimator" in df.columns:
            v = df[df["estimator"].astype(str).str.startswith("vqa")]
            vqa_ids |= set(v["probe_id"].astype(str))
            out["vqa_items"] += len(v)
            out["vqa_estimators"] += sorted(set(v["estimator"].astype(str)))
    out["vqa_images"] = len(vqa_ids)
    out["vqa_estimators"] = sorted(set(out["vqa_estimators"]))
    return out


def _versions() -> dict:
    import numpy
    import open_clip
    import PIL
    import torch
    import transformers

    out = {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__,
           "open_clip": open_clip.__version__, "pillow": PIL.__version__, "numpy": numpy.__version__,
           "torch_threads": torch.get_num_threads()}
    try:
        import cv2

        out["opencv"] = cv2.__version__
    except ImportError:
        out["opencv"] = None
    return out


def annotate(run_dir: Path, options: dict, device: str | None) -> tuple[float, dict]:
    from benchmark.runner.annotate import annotate_run

    t0 = time.perf_counter()
    summary = annotate_run(run_dir, device=device, progress=False, **options)
    return time.perf_counter() - t0, summary.to_dict()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="run one annotate stage under counters (bench/annotation.py)")
    ap.add_argument("--run-dir", action="append", required=True,
                    help="a run folder to measure, left untouched: each measurement annotates a fresh copy "
                         "(repeat the option for several folders, measured in order)")
    ap.add_argument("--repeats", type=int, default=1, help="measure every folder this many times (in turn)")
    ap.add_argument("--scratch", required=True, help="folder for the copies")
    ap.add_argument("--warmup-dir", help="annotate this (small) run first, unmeasured: builds the tiny models, "
                                         "warms imports and first calls")
    ap.add_argument("--options", default="{}", help="JSON keyword arguments for annotate_run")
    ap.add_argument("--device", default=None)
    ap.add_argument("--tree", required=True, help="the source tree that must provide the package")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    options = json.loads(args.options)
    install_counters()
    import benchmark

    tree = Path(args.tree).resolve()
    where = Path(benchmark.__file__).resolve()
    if tree not in where.parents:
        print(f"t2ibench: error: benchmark was imported from {where}, not from {tree}; check PYTHONPATH",
              file=sys.stderr)
        return 2
    import torch

    # on a GPU, a model call ends when its kernels do
    sync = torch.cuda.synchronize if torch.cuda.is_available() and args.device != "cpu" else None
    COUNTERS.sync = sync
    if args.warmup_dir:
        warm = Path(args.scratch) / "warmup"
        shutil.copytree(args.warmup_dir, warm)
        COUNTERS.images_root = warm.resolve() / "images"
        annotate(warm, options, args.device)
        shutil.rmtree(warm, ignore_errors=True)
    runs = []
    scratch = Path(args.scratch)
    for rep in range(args.repeats):
        for k, source in enumerate(map(Path, args.run_dir)):
            run_dir = scratch / f"run-{k}-{rep}"  # a fresh copy: no label files, no embedding cache
            shutil.copytree(source, run_dir)
            try:
                COUNTERS.reset()
                COUNTERS.sync = sync
                COUNTERS.images_root = run_dir.resolve() / "images"
                wall, summary = annotate(run_dir, options, args.device)
                timings_path = run_dir / "timings.json"
                timings = json.loads(timings_path.read_text(encoding="utf-8")) if timings_path.is_file() else {}
                runs.append({"source": k, "repeat": rep, "wall_seconds": wall, "counters": COUNTERS.as_dict(),
                             "timings": {k: v for k, v in timings.items() if k.startswith("annotate/")},
                             "labels": _label_counts(run_dir), "summary": summary})
            finally:
                shutil.rmtree(run_dir, ignore_errors=True)
    doc = {"tree": str(tree), "package_file": str(where), "versions": _versions(), "options": options, "runs": runs}
    Path(args.out).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
