"""Benchmark: the runner's own cost per image, beside the model's (the CPU part).

Generates the same probes twice with ``builtin:tiny-sd`` on the CPU:

1. bare: the pipeline calls alone (one ``torch.Generator`` per image, as the runner's
   model wrapper makes them), images kept in memory;
2. runner: ``benchmark.runner.generate.generate`` into a fresh run folder (what
   ``t2ibench generate`` does): the same model calls plus PNG encoding, sha256,
   atomic batch writes (fsync + rename), the manifest and the dataset card.

Then it times the runner's write steps one by one on the same images (PNG encode,
sha256, batch write with metadata.jsonl) and, because tiny-sd's 64 px images say
little about real ones, PNG encode + sha256 + the degenerate-image check
(``benchmark.contract.image_checks.degenerate_kind``) of 512 / 768 / 1024 px images (smooth
random images: upsampled noise; two real photographs, scikit-learn's bundled sample images,
resized; plain noise is the worst case) at zlib level 1, PIL's default level 6 (what the
runner used before) and zlib's run-length strategy Z_RLE (the runner's now), one thread vs
several.

Last, the writer beside a simulated accelerator (``--simulate PX SECONDS``, repeatable;
default 512 and 1024 px at 0.125 s per image, 8 images/s; it returns photographs): the
runner's wall time with the writer before this change (one background thread, zlib 6), the
encoder pool at zlib 6 and at zlib 1, and the runner's default (the pool, Z_RLE), side by
side in one run, and the share of the time the accelerator is kept busy.

    python bench/runner_overhead.py                     # 32 images, batch 4
    python bench/runner_overhead.py --n-images 8 --sizes 64 512
    python bench/runner_overhead.py --simulate-only --simulate 512 0.125 --simulate 1024 0.125
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.contract.digest import sha256_hex  # noqa: E402
from benchmark.contract.image_checks import degenerate_kind  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.contract import run_folder as rf  # noqa: E402
from benchmark.models import load_text_to_image  # noqa: E402
from benchmark.runner import batch_writer as bw  # noqa: E402
from benchmark.runner.generate import generate  # noqa: E402
from benchmark.runner.probe_choice import build_probes  # noqa: E402
from benchmark.present.progress import StageTimer  # noqa: E402
from bench.workload import add_suites_option, generation_request  # noqa: E402

#: the module (``benchmark.runner.generate``, the function, shadows it as an attribute of the package)
gen_module = importlib.import_module("benchmark.runner.generate")


def _ms(seconds: float, n: int) -> float:
    return 1000.0 * seconds / max(n, 1)


def _na(v: float, spec: str) -> str:
    return format(v, spec) if v == v else format("", spec.split(".")[0].lstrip("0") + "s")


def bare_pipeline(model, prompts: list[str], seeds: list[int], batch_size: int) -> tuple[list, float]:
    """The pipeline calls alone, batched as the runner batches them."""
    import torch

    images = []
    t0 = time.perf_counter()
    for start in range(0, len(prompts), batch_size):
        ps, ss = prompts[start:start + batch_size], seeds[start:start + batch_size]
        # the wrapper's own rule: one call per image when batch invariance is asked for (CPU default)
        calls = [([p], [s]) for p, s in zip(ps, ss)] if model.batch_invariant else [(ps, ss)]
        for cp, cs in calls:
            gens = [torch.Generator("cpu").manual_seed(s) for s in cs]
            with torch.inference_mode():
                out = model.pipe(prompt=cp, generator=gens, num_images_per_prompt=1, output_type="pil",
                                 **model.call_kwargs)
            images.extend(out.images)
    return images, time.perf_counter() - t0


def png_bytes(image, options: dict | None = None) -> bytes:
    """PNG bytes with PIL's PNG ``options`` (None: the runner's, :data:`batch_writer.PNG_OPTIONS`)."""
    return bw.png_bytes(image, options)


#: the PNG settings compared: (label, PIL save options)
COMPRESSIONS = (("zlib 1", {"compress_level": 1}), ("zlib 6 (PIL default; before)", bw.PNG_OPTIONS_BEFORE),
                ("Z_RLE (runner)", bw.PNG_OPTIONS))


def write_steps(images: list, batch_size: int, tmp: Path) -> dict[str, float]:
    """Seconds of each write step of the runner, on ``images``."""
    t = {"png": 0.0, "sha256": 0.0, "batch": 0.0}
    n = len(images)
    for start in range(0, n, batch_size):
        chunk = images[start:start + batch_size]
        files, meta = [], []
        for i, im in enumerate(chunk, start):
            t0 = time.perf_counter()
            data = png_bytes(im)
            t1 = time.perf_counter()
            digest = sha256_hex(data)
            t2 = time.perf_counter()
            t["png"] += t1 - t0
            t["sha256"] += t2 - t1
            name = rf.image_file_name(i, n)
            files.append((name, data))
            meta.append({"file_name": name, "probe_index": i, "probe_id": f"bench/{i:06d}", "sha256": digest,
                         "settings": "{}", "nsfw": None, "rank": 0, "batch_seconds": 0.0})
        t0 = time.perf_counter()
        rf.write_batch(tmp, rf.batch_name(start, n), files, meta)
        t["batch"] += time.perf_counter() - t0
    return t


def photos(size: int) -> list:
    """Two real photographs (scikit-learn's bundled sample images, 427 x 640), resized to ``size``
    square, and their mirror images: what generated images compress like."""
    from PIL import Image, ImageOps
    from sklearn.datasets import load_sample_images

    base = [Image.fromarray(a).resize((size, size), Image.BICUBIC) for a in load_sample_images().images]
    return base + [ImageOps.mirror(im) for im in base]


def smooth_image(size: int, rng: np.random.Generator):
    """A photo-like test image: 16x16 noise upsampled bicubically, plus a little fine noise."""
    from PIL import Image

    base = Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).resize((size, size), Image.BICUBIC)
    arr = np.asarray(base, dtype=np.int16) + rng.integers(-4, 5, (size, size, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


class SimulatedAccelerator:
    """Stands in for a GPU pipeline to measure the host side only: each call waits
    ``seconds_per_image`` (as the host does while a GPU works; the wait releases the GIL)
    and returns photographs of the real size (copies of :func:`photos`, as a pipeline makes new
    PIL images each call). Its images are not model output and nothing is scored
    from them: it exists to time the runner's writing."""

    def __init__(self, size: int, seconds_per_image: float):
        self.images = photos(size)
        self.seconds_per_image = seconds_per_image
        self.model_id, self.revision = "simulated-accelerator", None
        self.settings = {"height": size, "width": size, "simulated_seconds_per_image": seconds_per_image}

    def generate(self, prompts: list[str], seeds: list[int]):
        from types import SimpleNamespace

        time.sleep(self.seconds_per_image * len(prompts))
        return SimpleNamespace(images=[self.images[s % len(self.images)].copy() for s in seeds],
                               nsfw=[None] * len(prompts))


def writers() -> list[tuple[str, dict]]:
    """The writers compared beside the simulated accelerator: the one before this change (one
    background thread encoding a batch's images one after another with PIL's default, zlib 6),
    the encoder pool at zlib 6 and at zlib 1, and the runner's default (the pool, Z_RLE)."""
    n = bw.default_threads()
    return [("before: 1 background thread, zlib 6", {"threads": 1, "png_options": bw.PNG_OPTIONS_BEFORE}),
            (f"{n} encoder threads, zlib 6", {"png_options": bw.PNG_OPTIONS_BEFORE}),
            (f"{n} encoder threads, zlib 1", {"png_options": {"compress_level": 1}}),
            (f"{n} encoder threads, Z_RLE (runner default)", {})]


def overlap_rows(probes, size: int, seconds_per_image: float, batch_size: int, rounds: int) -> list[dict]:
    """Runner wall time beside a simulated accelerator with each of :func:`writers`, rounds
    interleaved (a shared machine drifts), fastest of ``rounds`` each; "busy" is the share of
    the wall time the accelerator works: over the whole ``generate`` call (config, resume scan,
    manifest and card included) and over its batch loop alone."""
    model = SimulatedAccelerator(size, seconds_per_image)
    chosen = writers()
    best: dict[str, tuple[float, float, float]] = {}
    for _ in range(rounds):
        for label, options in chosen:
            tmp = Path(tempfile.mkdtemp(prefix="t2ibench-overlap-"))
            try:
                with mock.patch.object(gen_module, "BatchWriter", functools.partial(bw.BatchWriter, **options)):
                    t0 = time.perf_counter()
                    summary = generate(generation_request(tmp / "run", model, batch_size=batch_size), model, probes)
                    wall = time.perf_counter() - t0
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            if wall < best.get(label, (float("inf"),))[0]:
                best[label] = (wall, summary.loop_seconds, summary.timings.get("write", 0.0))
    n = len(probes)
    floor = seconds_per_image * n
    return [{"writes": label, "size": size, "seconds_per_image": seconds_per_image, "wall_s": best[label][0],
             "images_per_s": n / best[label][0], "accelerator_busy_percent": 100 * floor / best[label][0],
             "loop_busy_percent": 100 * floor / best[label][1], "write_stage_s": best[label][2]}
            for label, _ in chosen]


def _best_of(repeats: int, work) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - t0)
    return best


def encode_sizes(sizes: list[int], repeats: int, threads: int) -> list[dict]:
    """PNG encode and sha256 per image by size, image and PNG setting (:data:`COMPRESSIONS`;
    fastest of ``repeats``): two photographs, a smooth random image and plain noise (the worst
    case); then ``threads`` photographs encoded one after another vs on a pool of ``threads``
    threads (PIL's encoder releases the GIL), before and now."""
    from concurrent.futures import ThreadPoolExecutor

    from PIL import Image

    rng = np.random.default_rng(0)
    rows = []
    for size in sizes:
        shots = photos(size)
        kinds = {"photo 1": shots[0], "photo 2": shots[1], "smooth": smooth_image(size, rng),
                 "noise": Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8))}
        kinds["flat"] = Image.new("RGB", (size, size), (0, 0, 0))  # what a NaN model makes
        for kind, im in kinds.items():
            check_s = _best_of(repeats, lambda: degenerate_kind(im))  # the degenerate-image check, per image
            for label, options in COMPRESSIONS:
                data = png_bytes(im, options)
                png_s = _best_of(repeats, lambda: png_bytes(im, options))
                sha_s = _best_of(repeats, lambda: sha256_hex(data))
                rows.append({"size": size, "image": kind, "png": label, "threads": 1, "png_ms": 1000 * png_s,
                             "sha256_ms": 1000 * sha_s, "png_kib": len(data) / 1024, "check_ms": 1000 * check_s})
        ims = [shots[i % len(shots)].copy() for i in range(threads)]  # one object per thread, as a pipeline returns
        for label, options in (COMPRESSIONS[1], COMPRESSIONS[2]):
            serial = _best_of(repeats, lambda: [png_bytes(im, options) for im in ims])
            with ThreadPoolExecutor(threads) as pool:
                parallel = _best_of(repeats, lambda: list(pool.map(functools.partial(png_bytes, options=options), ims)))
            for n, secs in ((1, serial), (threads, parallel)):
                rows.append({"size": size, "image": "photos", "png": label, "threads": n,
                             "png_ms": _ms(secs, threads), "sha256_ms": float("nan"), "png_kib": float("nan"),
                             "check_ms": float("nan")})
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-images", type=int, default=32, help="images to generate (default 32)")
    ap.add_argument("--batch-size", type=int, default=4, help="runner batch size (default 4, the runner's)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 768, 1024],
                    help="image sizes (px) for the PNG encode table (default 512 768 1024)")
    ap.add_argument("--repeats", type=int, default=5, help="encodes per size in the PNG table (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="bare/runner rounds; the fastest of each is kept (default 3)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of the parallel PNG encode rows (default: the runner's encoder pool, "
                         f"{bw.default_threads()} here)")
    ap.add_argument("--simulate", type=float, nargs=2, metavar=("PX", "SECONDS"), action="append", default=None,
                    help="a simulated accelerator for the writer table: image size and seconds per image; repeat "
                         "for several (default 512 0.125 and 1024 0.125: 8 images/s; 0 seconds skips the table)")
    ap.add_argument("--simulate-images", type=int, default=128,
                    help="images of each run beside the simulated accelerator (default 128: 32 batches of 4, so that "
                         "the last batch's write and the run's fixed costs, which a real run of thousands of images "
                         "spreads thin, do not decide the figure; the busy share of the batch loop is shown too)")
    ap.add_argument("--simulate-only", action="store_true",
                    help="only the writer table beside the simulated accelerator (no tiny-sd rounds, no PNG table)")
    ap.add_argument("--out", help="folder for runner_overhead.json and runner_overhead.md")
    add_suites_option(ap, 2, "suites whose first --n-images prompts are generated")
    args = ap.parse_args(argv)
    args.threads = bw.default_threads() if args.threads is None else args.threads
    args.simulate = [(int(px), float(s)) for px, s in (args.simulate or [(512, 0.125), (1024, 0.125)]) if s > 0]
    if any(px < 8 for px, _ in args.simulate):
        ap.error("--simulate PX must be at least 8 px")
    for name in ("n_images", "batch_size", "repeats", "rounds", "threads", "simulate_images"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if any(s < 8 for s in args.sizes):
        ap.error("--sizes must be at least 8 px")
    return args


def measure_rounds(model, probes, batch_size: int, rounds: int) -> tuple[dict[str, float], dict]:
    """Rounds alternate bare and runner; the fastest of each is kept (a shared machine is noisy).
    Returns the best seconds by step and the fastest runner round's stage timings."""
    prompts, seeds = [str(p) for p in probes["prompt"]], [int(s) for s in probes["seed"]]
    bare_pipeline(model, prompts[:1], seeds[:1], 1)  # warm-up (first call allocates)
    best: dict[str, float] = {}
    tm: dict[str, float] = {}
    for r in range(rounds):
        tmp = Path(tempfile.mkdtemp(prefix="t2ibench-overhead-"))
        try:
            images, bare_s = bare_pipeline(model, prompts, seeds, batch_size)
            timer = StageTimer()
            t0 = time.perf_counter()
            summary = generate(generation_request(tmp / "run", model, batch_size=batch_size), model, probes, timer=timer)
            runner_s = time.perf_counter() - t0
            t0 = time.perf_counter()  # the same run with each batch written before the next generates
            generate(generation_request(tmp / "inline", model, batch_size=batch_size), model, probes, overlap_writes=False)
            inline_s = time.perf_counter() - t0
            steps = write_steps(images, batch_size, tmp / "steps")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        got = {"bare": bare_s, "runner": runner_s, **{f"stage:{k}": v for k, v in summary.timings.items()},
               **{f"step:{k}": v for k, v in steps.items()}}
        # the breakdown comes from the fastest runner round, so its parts add up to its total
        if runner_s < best.get("runner", float("inf")):
            best.update({k: v for k, v in got.items() if k != "bare"})
            tm = summary.timings
        best["bare"] = min(best.get("bare", float("inf")), bare_s)
        best["inline"] = min(best.get("inline", float("inf")), inline_s)
    best["overhead"] = best["runner"] - best["bare"]
    best["untimed"] = best["runner"] - sum(v for k, v in best.items() if k.startswith("stage:"))
    return best, tm


#: (row of the table, key of ``measure_rounds``'s seconds)
STEP_ROWS = (
    ("bare pipeline calls", "bare"),
    ("runner: model calls (generate stage)", "stage:generate"),
    ("runner: write stage (PNG + sha256 + batch)", "stage:write"),
    ("  of which PNG encode", "step:png"),
    ("  of which sha256", "step:sha256"),
    ("  of which batch write (fsync, rename, metadata)", "step:batch"),
    ("runner: prepare (config, card, resume scan; once)", "stage:prepare"),
    ("runner: manifest + card (once)", "stage:manifest"),
    ("runner: outside the stages (< 0: writes overlap)", "untimed"),
    ("runner: total wall", "runner"),
    ("runner, writes inline (no overlap): total wall", "inline"),
    ("runner overhead (total - bare)", "overhead"),
)


def step_lines(header: str, rows: list[dict], share: float) -> list[str]:
    lines = [header, "", markdown_table(["step", "ms / image", "s / run"],
                                        ([r["step"], f"{r['ms_per_image']:.2f}", f"{r['per_run_s']:.3f}"] for r in rows),
                                        align="lrr", pad=True)]
    lines.append(f"\nrunner overhead: {share:.1f}% of the runner's wall time on tiny-sd (fastest bare round vs fastest "
                 "runner round; a negative value means the machine's noise is larger than the overhead)")
    return lines


def overlap_lines(overlap: list[dict], n: int, batch_size: int) -> list[str]:
    if not overlap:
        return []
    lines = ["", f"The writer beside a simulated accelerator ({n} images, batch {batch_size}; each call waits the "
             "seconds per image, as the host does while a GPU works, and returns photographs; no model runs, "
             "only the runner's writing is timed; busy = the accelerator's share of the wall time, of the whole "
             "generate call and of its batch loop):", ""]
    return lines + [markdown_table(
        ["writer", "px", "s/img", "wall s", "images/s", "busy (call)", "busy (loop)", "write stage s"],
        ([r["writes"], str(r["size"]), f"{r['seconds_per_image']:.3f}", f"{r['wall_s']:.2f}", f"{r['images_per_s']:.2f}",
          f"{r['accelerator_busy_percent']:.1f}%", f"{r['loop_busy_percent']:.1f}%", f"{r['write_stage_s']:.2f}"]
         for r in overlap), align="lrrrrrrr", pad=True)]


def encode_lines(enc: list[dict]) -> list[str]:
    lines = ["", "PNG encode, sha256 and the degenerate-image check per image at real sizes (what the write stage "
             "costs per image on a GPU run; photos: threads rows, wall time per image; flat: a black image, what a "
             "model with NaN weights makes):", ""]
    return lines + [markdown_table(["px", "image", "PNG", "threads", "PNG ms", "sha256 ms", "check ms", "KiB"],
                                   ([str(r["size"]), r["image"], r["png"], str(r["threads"]), f"{r['png_ms']:.2f}",
                                     _na(r["sha256_ms"], ".2f"), _na(r["check_ms"], ".3f"), _na(r["png_kib"], ".0f")]
                                    for r in enc), align="rllrrrrr", pad=True)]


def machine_line() -> str:
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (f"{utc_iso()}, {platform.node()}, {os.cpu_count()} CPU cores (load average "
            f"{load} at the start: other work on the machine slows the writer), encoder pool "
            f"{bw.default_threads()} threads, runner PNG options {bw.PNG_OPTIONS} (zlib 3 = Z_RLE)")


def tiny_rounds(args, probes) -> tuple[list[str], list[dict], float, dict]:
    """The tiny-sd rows: bare pipeline vs runner, step by step (lines, rows, overhead %, timings)."""
    import diffusers
    import torch
    import transformers

    for lib in (diffusers, transformers):  # the loading bars would bury the table
        lib.utils.logging.disable_progress_bar()
        lib.utils.logging.set_verbosity_error()
    n = len(probes)
    model = load_text_to_image("builtin:tiny-sd", device="cpu")
    best, tm = measure_rounds(model, probes, args.batch_size, args.rounds)
    rows = [{"step": step, "ms_per_image": _ms(best[key], n), "per_run_s": best[key]} for step, key in STEP_ROWS]
    share = best["overhead"] / best["runner"] * 100 if best["runner"] > 0 else float("nan")
    header = (f"runner overhead: torch {torch.__version__} ({torch.get_num_threads()} threads), diffusers "
              f"{diffusers.__version__}; builtin:tiny-sd {model.call_kwargs.get('height')} px, "
              f"{model.call_kwargs.get('num_inference_steps')} steps, {n} images (the first of "
              f"{', '.join(args.suites)}), batch {args.batch_size}, batch_invariant={model.batch_invariant}; "
              f"fastest of {args.rounds} rounds")
    return step_lines(header, rows, share), rows, share, tm


def main(argv=None) -> int:
    args = parse_args(argv)
    probes = build_probes(args.suites, None).head(args.n_images).reset_index(drop=True)
    n = len(probes)
    header = machine_line()
    lines, rows, share, tm = ([], [], float("nan"), {}) if args.simulate_only else tiny_rounds(args, probes)
    sim_probes = build_probes(args.suites, None).head(args.simulate_images).reset_index(drop=True)
    overlap = [r for px, secs in args.simulate
               for r in overlap_rows(sim_probes, px, secs, args.batch_size, args.rounds)]
    enc = [] if args.simulate_only else encode_sizes(args.sizes, args.repeats, args.threads)
    text = "\n".join([header, ""] + lines + overlap_lines(overlap, len(sim_probes), args.batch_size)
                     + (encode_lines(enc) if enc else []))
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"header": header, "n_images": n, "simulate_images": len(sim_probes), "batch_size": args.batch_size,
               "rows": rows, "overlap": overlap,
               "overhead_percent": share, "png": enc, "timings": tm}
        doc = json.loads(json.dumps(doc), parse_constant=lambda c: None)  # NaN (not measured) -> null
        (out / "runner_overhead.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        (out / "runner_overhead.md").write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
