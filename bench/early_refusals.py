"""Benchmark: how long ``t2ibench run`` takes to refuse a model it cannot audit when no weight is
needed to say so (issue 48): this tree beside an earlier one (default ``27b7286``, where these
refusals came after the task folders, torch, diffusers and transformers had loaded), each command
in its own subprocess, the two trees alternated, the median of ``--repeats`` printed.

The cases are folders holding a ``model_index.json`` (and a README.md) only: an image-to-image,
an inpainting, a ControlNet and an SDXL refiner pipeline; an SDXL folder whose card says
``base_model: black-forest-labs/FLUX.1-schnell``; a card whose front matter does not parse; a LoRA
whose card names FLUX.1 [dev] as its base, on an SD 1.5 folder. The earlier tree refuses the first
four only (the table says what it did with the others: ran on, or a traceback). The "before" tree is
``git archive REF`` unpacked in a temporary folder (no git state changes).

    python bench/early_refusals.py                       # every case, 3 repeats, against 27b7286
    python bench/early_refusals.py --no-before --repeats 1 --cases img2img
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from benchmark.contract.times import utc_now
from benchmark.present.text import markdown_table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BEFORE = "27b7286"
SD_INDEX = {"_diffusers_version": "0.42.1", "unet": ["diffusers", "UNet2DConditionModel"],
            "vae": ["diffusers", "AutoencoderKL"], "text_encoder": ["transformers", "CLIPTextModel"],
            "tokenizer": ["transformers", "CLIPTokenizer"], "scheduler": ["diffusers", "PNDMScheduler"]}
#: case -> (class in model_index.json, README front matter or None, a LoRA's card front matter or None)
CASES = {
    "img2img": ("StableDiffusionImg2ImgPipeline", None, None),
    "inpaint": ("StableDiffusionInpaintPipeline", None, None),
    "controlnet": ("StableDiffusionControlNetPipeline", None, None),
    "sdxl-refiner": ("StableDiffusionXLImg2ImgPipeline", None, None),
    "mislabelled-base": ("StableDiffusionXLPipeline", "base_model: black-forest-labs/FLUX.1-schnell", None),
    "bad-card": ("StableDiffusionPipeline", "base_model: [unclosed", None),
    "lora-other-base": ("StableDiffusionPipeline", None, "base_model: black-forest-labs/FLUX.1-dev"),
}
_PROBE = ("import sys, runpy; sys.argv = ['t2ibench', *sys.argv[1:]]\n"
          "try:\n    runpy.run_module('benchmark.cli', run_name='__main__')\n"
          "finally:\n    print('HEAVY=' + ','.join(m for m in ('torch', 'diffusers', 'transformers') "
          "if m in sys.modules), file=sys.stderr)\n")


def build_case(root: Path, name: str) -> list[str]:
    """The folder(s) of case ``name`` under ``root``; returns the model options of the command."""
    class_name, card, lora_card = CASES[name]
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "model_index.json").write_text(json.dumps({"_class_name": class_name, **SD_INDEX}))
    if card is not None:
        (folder / "README.md").write_text(f"---\n{card}\n---\n\n# {name}\n")
    options = ["--model", str(folder)]
    if lora_card is not None:
        lora = root / f"{name}-lora"
        lora.mkdir()
        (lora / "pytorch_lora_weights.safetensors").write_bytes(struct.pack("<Q", 2) + b"{}")
        (lora / "README.md").write_text(f"---\n{lora_card}\n---\n\n# a LoRA\n")
        options += ["--lora", str(lora)]
    return options


def export_tree(ref: str, dest: Path) -> Path:
    """``git archive ref`` unpacked into ``dest`` (the earlier tree, importable by PYTHONPATH)."""
    proc = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"git archive {ref} failed: {proc.stderr.decode(errors='replace').strip()}")
    archive = dest / "tree.tar"
    archive.write_bytes(proc.stdout)
    with tarfile.open(archive) as tar:
        tar.extractall(dest / "tree", filter="data")
    return dest / "tree"


def time_refusal(tree: Path, options: list[str], out: Path, timeout: float) -> dict:
    """One ``t2ibench run`` of ``tree`` (``--quiet``, offline): seconds, exit status, the last line,
    whether it was one line, which heavy libraries it had imported."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE, "run", *options, "--out", str(out), "--limit", "1",
                               "--quiet"], capture_output=True, text=True, env=env, timeout=timeout, cwd=out.parent)
    except subprocess.TimeoutExpired:
        return {"seconds": timeout, "status": "timeout", "line": "", "one_line": False, "heavy": "?"}
    seconds = time.perf_counter() - start
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith(("HEAVY=", "WARNING:"))]
    heavy = next((ln[6:] for ln in proc.stderr.splitlines() if ln.startswith("HEAVY=")), "")
    return {"seconds": seconds, "status": proc.returncode, "line": (lines[-1] if lines else "")[:160],
            "one_line": len(lines) == 1 and lines[0].startswith("t2ibench") and "Traceback" not in proc.stderr,
            "heavy": heavy or "none"}


def measure(args: argparse.Namespace) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="early-refusals-") as tmp:
        tmp = Path(tmp)
        trees = {"now": ROOT}
        if not args.no_before:
            trees["before"] = export_tree(args.before, tmp)
        for name in args.cases:
            options = build_case(tmp / "cases", name)
            runs: dict[str, list[dict]] = {k: [] for k in trees}
            for _ in range(args.repeats):
                for label, tree in trees.items():  # alternated: the machine's load falls on both alike
                    runs[label].append(time_refusal(tree, options, tmp / "run", args.timeout))
            row = {"case": name}
            for label, got in runs.items():
                row[label] = {"median_s": round(statistics.median(r["seconds"] for r in got), 2),
                              "status": got[-1]["status"], "one_line": got[-1]["one_line"],
                              "heavy": got[-1]["heavy"], "line": got[-1]["line"]}
            rows.append(row)
    return rows


def table(rows: list[dict], before: str | None) -> str:
    head = ["case", "now (s)", "now: exit, one line, heavy libraries loaded"]
    if before:
        head[1:1] = [f"{before} (s)"]
        head += [f"{before}: exit, one line", "ratio"]
    out = []
    for r in rows:
        now = r["now"]
        cells = [r["case"], f"{now['median_s']:.2f}", f"{now['status']}, {now['one_line']}, {now['heavy']}"]
        if before:
            old = r["before"]
            cells[1:1] = [f"{old['median_s']:.2f}"]
            cells += [f"{old['status']}, {old['one_line']}", f"{old['median_s'] / now['median_s']:.1f}"]
        out.append([str(c) for c in cells])
    return markdown_table(head, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="the earlier tree's git ref")
    parser.add_argument("--no-before", action="store_true", help="this tree only")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    parser.add_argument("--out", type=Path, help="a folder for early_refusals.json and .md")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats: at least 1")
    rows = measure(args)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    header = (f"early refusals, {utc_now():%Y-%m-%d %H:%M} UTC, {platform.platform()}, "
              f"{os.cpu_count()} CPUs, load average {load and ', '.join(f'{x:.1f}' for x in load)}, "
              f"Python {platform.python_version()}, median of {args.repeats}")
    text = header + "\n\n" + table(rows, None if args.no_before else args.before)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "early_refusals.json").write_text(json.dumps({"header": header, "rows": rows}, indent=1))
        (args.out / "early_refusals.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
