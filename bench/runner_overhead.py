"""Benchmark: the runner's own cost per image, beside the model's (the CPU part).

Generates the same probes twice with ``builtin:tiny-sd`` on the CPU:

1. bare: the pipeline calls alone (one ``torch.Generator`` per image, as the runner's
   model wrapper makes them), images kept in memory;
2. runner: ``benchmark.runner.generate.generate`` into a fresh run folder (what
   ``t2ibench generate`` does): the same model calls plus PNG encoding, sha256,
   atomic batch writes (fsync + rename), the manifest and the dataset card.

Then it times the runner's write steps one by one on the same images (PNG encode,
sha256, batch write with metadata.jsonl) and, because tiny-sd's 64 px images say
little about real ones, PNG encode + sha256 of 512 / 768 / 1024 px images (smooth
random images: upsampled noise, which compresses about like a photo; plain noise is
the worst case) at zlib levels 6 (PIL's default, what the runner uses) and 1.

    python bench/runner_overhead.py                     # 32 images, batch 4
    python bench/runner_overhead.py --n-images 8 --sizes 64 512
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.contract.digest import sha256_hex  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.contract import run_folder as rf  # noqa: E402
from benchmark.models import load_text_to_image  # noqa: E402
from benchmark.runner.generate import generate  # noqa: E402
from benchmark.runner.probe_choice import build_probes  # noqa: E402
from benchmark.present.progress import StageTimer  # noqa: E402
from bench.workload import add_suites_option, generation_request  # noqa: E402


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


def png_bytes(image, level: int | None = None) -> bytes:
    buf = io.BytesIO()
    if level is None:
        image.save(buf, format="PNG")  # what the runner does (PIL's default zlib level 6)
    else:
        image.save(buf, format="PNG", compress_level=level)
    return buf.getvalue()


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


def smooth_image(size: int, rng: np.random.Generator):
    """A photo-like test image: 16x16 noise upsampled bicubically, plus a little fine noise."""
    from PIL import Image

    base = Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).resize((size, size), Image.BICUBIC)
    arr = np.asarray(base, dtype=np.int16) + rng.integers(-4, 5, (size, size, 3))
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


class SimulatedAccelerator:
    """Stands in for a GPU pipeline to measure the host side only: each call waits
    ``seconds_per_image`` (as the host does while a GPU works; the wait releases the GIL)
    and returns precomputed photo-like images of the real size. Its images are not model
    output and nothing is scored from them: it exists to time the runner's writing."""

    def __init__(self, size: int, seconds_per_image: float, n_distinct: int = 8):
        rng = np.random.default_rng(0)
        self.images = [smooth_image(size, rng) for _ in range(n_distinct)]
        self.seconds_per_image = seconds_per_image
        self.model_id, self.revision = "simulated-accelerator", None
        self.settings = {"height": size, "width": size, "simulated_seconds_per_image": seconds_per_image}

    def generate(self, prompts: list[str], seeds: list[int]):
        from types import SimpleNamespace

        time.sleep(self.seconds_per_image * len(prompts))
        return SimpleNamespace(images=[self.images[s % len(self.images)] for s in seeds], nsfw=[None] * len(prompts))


def overlap_rows(probes, size: int, seconds_per_image: float, batch_size: int, rounds: int) -> list[dict]:
    """Runner wall time with batches written inline vs on the background thread (the default),
    under a simulated accelerator, fastest of ``rounds``."""
    model = SimulatedAccelerator(size, seconds_per_image)
    best = {False: float("inf"), True: float("inf")}
    for _ in range(rounds):
        for overlap in (False, True):
            tmp = Path(tempfile.mkdtemp(prefix="t2ibench-overlap-"))
            try:
                t0 = time.perf_counter()
                generate(generation_request(tmp / "run", model, batch_size=batch_size), model, probes, overlap_writes=overlap)
                best[overlap] = min(best[overlap], time.perf_counter() - t0)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    n = len(probes)
    floor = seconds_per_image * n
    return [{"writes": "inline (each batch written before the next generates)", "size": size,
             "seconds_per_image": seconds_per_image, "wall_s": best[False], "images_per_s": n / best[False],
             "accelerator_busy_percent": 100 * floor / best[False]},
            {"writes": "background thread (runner default)", "size": size, "seconds_per_image": seconds_per_image,
             "wall_s": best[True], "images_per_s": n / best[True], "accelerator_busy_percent": 100 * floor / best[True]}]


def encode_sizes(sizes: list[int], repeats: int, threads: int) -> list[dict]:
    from PIL import Image

    rng = np.random.default_rng(0)
    rows = []
    for size in sizes:
        kinds = {"smooth": smooth_image(size, rng),
                 "noise": Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8))}
        for kind, im in kinds.items():
            for level in (None, 1):
                t0 = time.perf_counter()
                for _ in range(repeats):
                    data = png_bytes(im, level)
                t1 = time.perf_counter()
                for _ in range(repeats):
                    sha256_hex(data)
                t2 = time.perf_counter()
                rows.append({"size": size, "image": kind, "zlib_level": 6 if level is None else level, "threads": 1,
                             "png_ms": _ms(t1 - t0, repeats), "sha256_ms": _ms(t2 - t1, repeats),
                             "png_kib": len(data) / 1024})
        # PIL's zlib encoder releases the GIL: encoding in threads overlaps images (and, in the
        # runner, could overlap the next batch's GPU work).
        ims = [kinds["smooth"]] * threads
        t0 = time.perf_counter()
        for im in ims:
            png_bytes(im)
        serial = time.perf_counter() - t0
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:
            t0 = time.perf_counter()
            list(pool.map(png_bytes, ims))
            parallel = time.perf_counter() - t0
        rows.append({"size": size, "image": "smooth", "zlib_level": 6, "png_ms": _ms(serial, threads),
                     "sha256_ms": float("nan"), "png_kib": float("nan"), "threads": 1})
        rows.append({"size": size, "image": "smooth", "zlib_level": 6, "png_ms": _ms(parallel, threads),
                     "sha256_ms": float("nan"), "png_kib": float("nan"), "threads": threads})
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-images", type=int, default=32, help="images to generate (default 32)")
    ap.add_argument("--batch-size", type=int, default=4, help="runner batch size (default 4, the runner's)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 768, 1024],
                    help="image sizes (px) for the PNG encode table (default 512 768 1024)")
    ap.add_argument("--repeats", type=int, default=5, help="encodes per size in the PNG table (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="bare/runner rounds; the fastest of each is kept (default 3)")
    ap.add_argument("--threads", type=int, default=4, help="threads of the parallel PNG encode row (default 4)")
    ap.add_argument("--simulate", type=float, nargs=2, metavar=("PX", "SECONDS"), default=[512, 0.25],
                    help="simulated accelerator for the overlap table: image size and seconds per image "
                         "(default 512 0.25, the 4 images/s target; 0 seconds skips the table)")
    ap.add_argument("--out", help="folder for runner_overhead.json and runner_overhead.md")
    add_suites_option(ap, 2, "suites whose first --n-images prompts are generated")
    args = ap.parse_args(argv)
    for name in ("n_images", "batch_size", "repeats", "rounds", "threads"):
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


def overlap_lines(overlap: list[dict], sim_px: int, sim_s: float, n: int, batch_size: int) -> list[str]:
    if not overlap:
        return []
    lines = ["", f"Writing beside a simulated accelerator ({sim_px} px images, {sim_s * 1000:.0f} ms per image of "
             f"waiting, {n} images, batch {batch_size}; no model runs, only the runner's writing is timed):",
             ""]
    return lines + [markdown_table(["writes", "wall s", "images/s", "accelerator busy"],
                                   ([r["writes"], f"{r['wall_s']:.2f}", f"{r['images_per_s']:.2f}",
                                     f"{r['accelerator_busy_percent']:.1f}%"] for r in overlap), align="lrrr", pad=True)]


def encode_lines(enc: list[dict]) -> list[str]:
    lines = ["", "PNG encode and sha256 per image at real sizes (what the write stage costs per image on a GPU run):",
             ""]
    return lines + [markdown_table(["px", "image", "zlib", "threads", "PNG ms", "sha256 ms", "KiB"],
                                   ([str(r["size"]), r["image"], str(r["zlib_level"]), str(r["threads"]),
                                     f"{r['png_ms']:.2f}", _na(r["sha256_ms"], ".2f"), _na(r["png_kib"], ".0f")]
                                    for r in enc), align="rlrrrrr", pad=True)]


def main(argv=None) -> int:
    args = parse_args(argv)
    import diffusers
    import torch
    import transformers

    for lib in (diffusers, transformers):  # the loading bars would bury the table
        lib.utils.logging.disable_progress_bar()
        lib.utils.logging.set_verbosity_error()
    probes = build_probes(args.suites, None).head(args.n_images).reset_index(drop=True)
    n = len(probes)
    model = load_text_to_image("builtin:tiny-sd", device="cpu")
    best, tm = measure_rounds(model, probes, args.batch_size, args.rounds)
    rows = [{"step": step, "ms_per_image": _ms(best[key], n), "per_run_s": best[key]} for step, key in STEP_ROWS]
    share = best["overhead"] / best["runner"] * 100 if best["runner"] > 0 else float("nan")
    header = (f"runner overhead: {utc_iso()}, {platform.node()}, {os.cpu_count()} CPU cores, "
              f"torch {torch.__version__} ({torch.get_num_threads()} threads), diffusers {diffusers.__version__}; "
              f"builtin:tiny-sd {model.call_kwargs.get('height')} px, {model.call_kwargs.get('num_inference_steps')} "
              f"steps, {n} images (the first of {', '.join(args.suites)}), batch {args.batch_size}, "
              f"batch_invariant={model.batch_invariant}; fastest of {args.rounds} rounds")
    sim_px, sim_s = int(args.simulate[0]), float(args.simulate[1])
    overlap = overlap_rows(probes, sim_px, sim_s, args.batch_size, args.rounds) if sim_s > 0 else []
    enc = encode_sizes(args.sizes, args.repeats, args.threads)
    text = "\n".join(step_lines(header, rows, share) + overlap_lines(overlap, sim_px, sim_s, n, args.batch_size)
                     + encode_lines(enc))
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"header": header, "n_images": n, "batch_size": args.batch_size, "rows": rows, "overlap": overlap,
               "overhead_percent": share, "png": enc, "timings": tm}
        doc = json.loads(json.dumps(doc), parse_constant=lambda c: None)  # NaN (not measured) -> null
        (out / "runner_overhead.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        (out / "runner_overhead.md").write_text(text + "\n", encoding="utf-8")
    return 0

if __name__ == "__main__":
    sys.exit(main())
