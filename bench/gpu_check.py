"""The GPU checks in one command: each part is one of the bench scripts at full size, run in its
own process under its own time budget, inside one overall deadline (9 minutes by default, what
one H100 session's command may take); then one summary, JSON + Markdown, with the date, the
device, the library versions, every part's table and the targets met or not.

``bench/gpu_check.sh`` installs the wheels the GPU host lacks and runs this script.

    python bench/gpu_check.py all                 # the parts of ALL that fit the deadline, in order
    python bench/gpu_check.py dit full-audit      # some parts
    python bench/gpu_check.py --cpu sd15 modes    # the CPU dry path: the same parts at tiny sizes (CI)

Parts (budget: the part's time limit: sd15 and dit measured on an H200 on 2026-11-29 (134 s and
246 s), the others estimated from that run's rates; a part that would end after the deadline is
not started, and the summary names it with the command to run it next):
see :data:`PARTS`. A part cut by its budget keeps the rows it wrote (generation.py rewrites its
output after each row); full_audit.py has no partial result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.present.text import markdown_table, md_escape  # noqa: E402

PY = sys.executable


@dataclass(frozen=True)
class Part:
    name: str
    budget_s: int
    what: str
    gpu: tuple[str, ...]  # arguments of the script on a GPU (``--out`` is added)
    cpu: tuple[str, ...]  # the same path at tiny sizes on a CPU

    def argv(self, cpu: bool, out: Path) -> list[str]:
        extra = []
        if self.name == "families" and os.environ.get("FAMILIES"):  # FAMILIES="sd15 sdxl ...": some families
            extra = ["--families", *os.environ["FAMILIES"].split()]
        return [PY, *(self.cpu if cpu else self.gpu), *extra, "--out", str(out)]


_TINY = ("--tiny", "--n-images", "1", "--steps", "1", "--peak-tflops", "1")
PARTS = (
    Part("sd15", 150, "SD 1.5 at 512 px: the runner's default path (compiled, auto batch; 4 batches) beside the "
         "batch-1 fp16 loop (8 images)",
         ("bench/generation.py", "--models", "sd15", "--device", "cuda", "--configs", "runner,batch1-fp16",
          "--n-images", "8"),
         ("bench/generation.py", "--models", "sd15", "--configs", "runner,batch1-fp16", *_TINY)),
    Part("dit", 300, "FLUX.1 [dev] and SD 3.5 Medium at 1024 px: the plain pipeline at batch 1 and 4, the runner's "
         "default path (compiled, auto batch up to 4)",
         ("bench/generation.py", "--models", "flux-dev", "sd35-medium", "--device", "cuda", "--configs", "runner",
          "--n-images", "2", "--batch-size", "4", "--dit-max-batch", "4"),
         ("bench/generation.py", "--models", "flux-dev", "sd35-medium", "--configs", "runner", *_TINY)),
    Part("full-audit", 520, "the whole audit on SD 1.5 with every default annotator (random weights from their "
         "configs): 1,000 images of every suite, each stage's rate, projected to 15,129 images",
         ("bench/full_audit.py", "--images", "1000", "--device", "cuda"),
         ("bench/full_audit.py", "--tiny", "--images", "13")),
    Part("modes", 240, "SD 1.5 compile modes on the runner's static batch of 32 (default, reduce-overhead = CUDA "
         "graphs, max-autotune-no-cudagraphs; the VAE decoder compiled too), images compared with mode default's",
         ("bench/generation.py", "--models", "sd15", "--device", "cuda", "--configs", "compile-modes,compile-vae",
          "--batch-size", "32", "--n-images", "32"),
         ("bench/generation.py", "--models", "sd15", "--configs", "compile-modes,compile-vae", *_TINY)),
    Part("sdxl", 240, "SDXL at 1024 px: the runner's default path (one static batch) beside the batch-1 fp16 loop",
         ("bench/generation.py", "--models", "sdxl", "--device", "cuda", "--configs", "runner,batch1-fp16",
          "--n-images", "2", "--runner-batches", "1"),
         ("bench/generation.py", "--models", "sdxl", "--configs", "runner,batch1-fp16", *_TINY)),
    Part("families", 240, "every supported diffusers family's tiny pipeline through the CUDA defaults (compiled)",
         ("bench/gpu_families.py", "--device", "cuda"),
         ("bench/gpu_families.py", "--device", "cpu", "--families", "sd15", "flux_schnell")),
)
BY_NAME = {p.name: p for p in PARTS}
#: ``all``: in this order, as many as fit the deadline (``families`` is run by name). The parts never
#: measured on a GPU come first: sd15 and dit ran on an H200 on 2026-11-29 (docs/performance.md),
#: full-audit, sdxl and modes have not
ALL = ("full-audit", "sdxl", "modes", "sd15", "dit")
DEADLINE_S = 530  # 9 minutes less the wheel install and start-up


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", nargs="*", default=["all"], help=f"all (= {' '.join(ALL)}) or part names: "
                    f"{', '.join(BY_NAME)}")
    ap.add_argument("--cpu", action="store_true", help="the CPU dry path: each part at tiny sizes")
    ap.add_argument("--deadline-s", type=float, default=DEADLINE_S,
                    help=f"no part starts unless its budget ends within this many seconds (default {DEADLINE_S})")
    ap.add_argument("--budget", action="append", default=[], metavar="PART=SECONDS",
                    help="another budget for a part (repeatable)")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-results/gpu-check"),
                    help="output folder (default $OUT or bench-results/gpu-check)")
    args = ap.parse_args(argv)
    names = [n for p in args.parts for n in (ALL if p == "all" else (p,))]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        ap.error(f"unknown part {unknown[0]!r}; use all or: {', '.join(BY_NAME)}")
    args.names = list(dict.fromkeys(names))
    args.budgets = {p.name: p.budget_s for p in PARTS}
    for item in args.budget:
        name, _, secs = item.partition("=")
        if name not in BY_NAME or not secs.replace(".", "", 1).isdigit() or float(secs) <= 0:
            ap.error(f"--budget wants PART=SECONDS with a known part and seconds > 0, got {item!r}")
        args.budgets[name] = float(secs)
    if not args.cpu:
        import torch

        if not torch.cuda.is_available():
            ap.error("no CUDA GPU is available; --cpu runs the same parts at tiny sizes")
    return args


def _pump(stream, log, echo: bool) -> None:
    for line in stream:
        log.write(line)
        log.flush()
        if echo and "warning" not in line.lower():
            sys.stdout.write(line)
            sys.stdout.flush()


def run_part(part: Part, cpu: bool, out: Path, timeout: float) -> dict:
    """One part in its own process group, killed (TERM, then KILL) at ``timeout``."""
    argv = part.argv(cpu, out / part.name)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if cpu:
        env.setdefault("OMP_NUM_THREADS", "1")
    print(f"== {part.name} ({utc_iso()}, budget {timeout:.0f} s): {' '.join(argv[1:])}", flush=True)
    t0 = time.perf_counter()
    with open(out / f"{part.name}.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        pump = threading.Thread(target=_pump, args=(proc.stdout, log, True), daemon=True)
        pump.start()
        status = "ok"
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = "timed out"
            for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=grace)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
        pump.join(timeout=10)
    if status == "ok" and proc.returncode != 0:
        status = f"failed (exit {proc.returncode})"
    return {"part": part.name, "status": status, "seconds": round(time.perf_counter() - t0, 1), "budget_s": timeout,
            "command": " ".join(argv[1:]), "what": part.what, "outputs": read_outputs(out / part.name)}


def read_outputs(folder: Path) -> dict:
    """The JSON documents a part wrote (generation.json, full_audit.json, families.json)."""
    docs = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            docs[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            docs[path.stem] = {"error": f"unreadable: {err}"}
    return docs


#: module -> its distribution's name (what importlib.metadata knows it by)
DISTRIBUTIONS = {"torch": "torch", "diffusers": "diffusers", "transformers": "transformers",
                 "accelerate": "accelerate", "open_clip": "open_clip_torch", "datasets": "datasets", "PIL": "pillow"}


def versions() -> dict:
    """The versions the parts ran with (read from the installed metadata, nothing imported)."""
    from importlib import metadata

    found = {"python": platform.python_version()}
    for module, dist in DISTRIBUTIONS.items():
        try:
            found[module] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[module] = "missing"
    return found


def device_name(cpu: bool) -> str:
    if cpu:
        return f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores): tiny sizes, dry run"
    import torch

    props = torch.cuda.get_device_properties(0)
    return f"{props.name} ({props.total_memory / 2 ** 30:.0f} GiB), {os.cpu_count()} CPU cores"


def generation_rows(results: list[dict]) -> list[dict]:
    rows = []
    for r in results:
        for row in (r["outputs"].get("generation") or {}).get("rows", []):
            rows.append({"part": r["part"], **row})
    return rows


def targets(results: list[dict], cpu: bool) -> list[dict]:
    """The issue's targets, each met / not met / not measured (None), with the figure behind it."""
    rows = generation_rows(results)

    def row(part, model, config):
        return next((x for x in rows if x["part"] == part and x["model"] == model and x["config"] == config
                     and not x.get("error")), None)

    out = []
    sd15 = row("sd15", "sd15", "runner")
    out.append({"target": "SD 1.5, the runner's default path: >= 4.5 images/s and >= 38% of the floor",
                "met": None if sd15 is None or cpu else bool(sd15["images_per_s"] >= 4.5
                                                            and (sd15.get("pct_of_floor") or 0) >= 38),
                "figure": None if sd15 is None else f"{sd15['images_per_s']:.2f} images/s, "
                                                    f"{sd15.get('pct_of_floor') or 0:.1f}% of the floor"})
    for model in ("flux-dev", "sd35-medium"):
        r = row("dit", model, "runner")
        compiled = bool(r and (r.get("extra", {}).get("speed", {}).get("compiled")))
        out.append({"target": f"{model}: the runner's default path compiled, with its % of the floor",
                    "met": None if r is None or cpu else compiled and r.get("pct_of_floor") is not None,
                    "figure": None if r is None else f"{r['images_per_s']:.3f} images/s, "
                                                     f"{r.get('pct_of_floor') or 0:.1f}% of the floor, compiled: "
                                                     f"{compiled}"})
    audit = next((r["outputs"].get("full_audit") for r in results if r["part"] == "full-audit"), None)
    total = (audit or {}).get("projected_total_s")
    out.append({"target": "the whole audit (15,129 images) projected under 60 minutes from >= 1,000 measured",
                "met": None if total is None or cpu else bool(total < 3600 and audit["audit"]["n_images"] >= 1000),
                "figure": None if total is None else f"{total / 60:.1f} min projected from "
                                                     f"{audit['audit']['n_images']:,} images"})
    return out


def _fmt(v, spec: str) -> str:
    return "" if v is None else format(v, spec)


def _table(headers: list[str], rows: list[list]) -> list[str]:
    return markdown_table(headers, [[md_escape("" if c is None else str(c)) for c in row] for row in rows]).splitlines()


def format_summary(doc: dict) -> str:
    lines = [f"# GPU check: {doc['date']}", "", f"device: {doc['device']}",
             "versions: " + ", ".join(f"{k} {v}" for k, v in doc["versions"].items()),
             f"deadline {doc['deadline_s']:.0f} s; wall {doc['wall_s']:.0f} s"
             + ("; CPU DRY RUN at tiny sizes: no figure here is a GPU figure" if doc["cpu"] else ""), "",
             "## Targets", ""]
    lines += _table(["target", "met", "figure"],
                    [[t["target"], {True: "met", False: "NOT met", None: "not measured"}[t["met"]], t["figure"]]
                     for t in doc["targets"]])
    lines += ["", "## Parts", ""]
    lines += _table(["part", "status", "seconds", "budget s", "what"],
                    [[p["part"], p["status"], _fmt(p.get("seconds"), ".0f"), _fmt(p.get("budget_s"), ".0f"), p["what"]]
                     for p in doc["parts"]])
    waiting = [p for p in doc["parts"] if p["status"] != "ok"]
    if waiting:
        lines += ["", "Not run or not finished: `bash bench/gpu_check.sh "
                  + " ".join(p["part"] for p in waiting) + "`"]
    gen = generation_rows(doc["parts"])
    if gen:
        lines += ["", "## Generation rows", ""]
        lines += _table(
            ["part", "model", "config", "batch", "images/s", "% of floor", "vs batch 1", "compile s", "note"],
            [[r["part"], r["model"], r["config"], r["batch"], "failed: " + r["error"] if r.get("error") else
              _fmt(r.get("images_per_s"), ".3f"), _fmt(r.get("pct_of_floor"), ".1f"), _fmt(r.get("speedup"), ".2f"),
              _fmt((r.get("extra") or {}).get("compile_s"), ".1f"), r.get("note", "")] for r in gen])
    for p in doc["parts"]:
        audit = p["outputs"].get("full_audit")
        if audit and "rows" in audit:
            lines += ["", "## The whole audit", "", f"projected: {audit['projected_total_s'] / 60:.1f} min for "
                      f"{audit['audit']['n_full']:,} images, from {audit['audit']['n_images']:,} "
                      f"(--limit {audit['audit']['limit']}); GPU memory peak {audit['audit']['peak_gib']} GiB", ""]
            lines += _table(["stage", "seconds", "images", "images/s", "projected s"],
                            [[r["stage"], _fmt(r["seconds"], ".1f"), r["images"] or "",
                              _fmt(r.get("images_per_s"), ".2f"), _fmt(r["projected_full_s"], ",.0f")]
                             for r in audit["rows"]])
        families = p["outputs"].get("families")
        if isinstance(families, list) and families:
            lines += ["", "## Families", ""]
            keys = [k for k in families[0] if not isinstance(families[0][k], (dict, list))]
            lines += _table(keys, [[row.get(k, "") for k in keys] for row in families])
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    results = []
    for name in args.names:
        part, budget = BY_NAME[name], args.budgets[name]
        left = args.deadline_s - (time.perf_counter() - t0)
        if budget > left:
            results.append({"part": name, "status": f"not started: its budget ({budget:.0f} s) passes the deadline "
                            f"({left:.0f} s left)", "seconds": None, "budget_s": budget,
                            "command": " ".join(part.argv(args.cpu, out / name)[1:]), "what": part.what, "outputs": {}})
            continue
        results.append(run_part(part, args.cpu, out, budget))
    doc = {"date": utc_iso(), "device": device_name(args.cpu), "versions": versions(),
           "cpu": args.cpu, "deadline_s": args.deadline_s, "wall_s": time.perf_counter() - t0, "parts": results}
    doc["targets"] = targets(results, args.cpu)
    text = format_summary(doc)
    (out / "gpu_check.json").write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "gpu_check.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
