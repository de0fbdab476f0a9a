"""Test helper for tests/test_generate.py: a stand-in text-to-image model and a worker script.

``StandInModel`` is a tiny random-weight conv net: each image is computed from a
``torch.Generator`` seeded with the probe's seed plus the prompt's hash, so it depends
only on (prompt, seed, settings), like the real models.

As a script (run directly, or under ``accelerate launch``)::

    python tests/_gen_worker.py RUN_DIR --model SPEC --suites a,b --limit N --batch-size B [--delay S]

calls ``benchmark.runner.run_generation``. ``--delay`` sleeps that long after each
batch's generation; ``--pause-before-rename`` sleeps that long after a batch is fully
written into ``.partial/`` and before it is renamed into ``images/`` (so a test can
kill the process at exactly that point). Spec ``standin:tiny`` is the
stand-in model; any other spec goes to ``benchmark.models.load_text_to_image``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmark import frozen_imports

frozen_imports.install()  # import torch & co. as `t2ibench` does (benchmark/frozen_imports.py)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

STANDIN_SPEC = "python:standin:tiny"  # a valid spec; only the monkeypatched loader below builds it


@dataclass
class StandInOutput:
    images: list
    nsfw: list


class StandInModel:
    """A 3-layer conv net with fixed random weights; one generator per image."""

    def __init__(self, height: int = 24, width: int = 24, steps: int = 2):
        self.model_id = STANDIN_SPEC
        self.revision = None
        self.settings = {"steps": steps, "height": height, "width": width, "dtype": "float32", "device": "cpu"}
        g = torch.Generator().manual_seed(1234)
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(4, 8, 3, padding=1), torch.nn.Tanh(), torch.nn.Conv2d(8, 3, 3, padding=1), torch.nn.Tanh())
        with torch.no_grad():
            for p in self.net.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        self.net.eval()

    def _latent(self, prompt: str, seed: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(int(seed))
        h, w = self.settings["height"], self.settings["width"]
        noise = torch.randn(1, 3, h, w, generator=g)
        code = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big") / 2**32
        return torch.cat([noise, torch.full((1, 1, h, w), code)], dim=1)

    @torch.no_grad()
    def generate(self, prompts: list[str], seeds: list[int]) -> StandInOutput:
        x = torch.cat([self._latent(p, s) for p, s in zip(prompts, seeds)])
        for _ in range(self.settings["steps"]):
            y = self.net(x)
            x = torch.cat([y, x[:, 3:]], dim=1)
        arr = ((x[:, :3].clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
        images = [Image.fromarray(np.ascontiguousarray(a), "RGB") for a in arr]
        return StandInOutput(images=images, nsfw=[None] * len(images))


def _delay() -> float:
    return float(os.environ.get("GEN_WORKER_DELAY", "0") or 0)


def _maybe_slow(model):
    """Sleep after each batch when GEN_WORKER_DELAY is set (so a test can kill between batches)."""
    delay = _delay()
    if delay:
        inner = model.generate

        def slow_generate(prompts, seeds):
            out = inner(prompts, seeds)
            time.sleep(delay)
            return out

        model.generate = slow_generate
    return model


def make_loader(real=None):
    """A ``load_text_to_image`` that builds the stand-in for its spec and defers to ``real`` otherwise."""

    def load_text_to_image(spec, revision=None, device=None, dtype=None, **overrides):
        if spec == STANDIN_SPEC:
            return _maybe_slow(StandInModel(**overrides))
        if real is None:
            raise ValueError(f"benchmark.models.load_text_to_image is not available for {spec!r}")
        return _maybe_slow(real(spec, revision=revision, device=device, dtype=dtype, **overrides))

    return load_text_to_image


def install_loader(monkeypatch=None) -> None:
    """Make ``benchmark.models.load_text_to_image`` also understand the stand-in spec (test only).

    With a pytest ``monkeypatch`` the change is undone after the test; without one (the
    worker script) it lasts for the process.
    """
    import types

    setattr_ = monkeypatch.setattr if monkeypatch is not None else setattr
    try:
        import benchmark.models as models
    except ImportError:
        models = types.ModuleType("benchmark.models")
        if monkeypatch is not None:
            monkeypatch.setitem(sys.modules, "benchmark.models", models)
        else:
            sys.modules["benchmark.models"] = models
    real = getattr(models, "load_text_to_image", None)
    setattr_(models, "load_text_to_image", make_loader(real))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--model", default=STANDIN_SPEC)
    ap.add_argument("--suites", default="gep_neutral,gep_occupation")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--pause-before-rename", type=float, default=0.0)
    args = ap.parse_args(argv)
    if args.pause_before_rename:
        real_rename = os.rename

        def slow_rename(src, dst, *a, **k):
            if Path(src).parent.name == ".partial":
                time.sleep(args.pause_before_rename)
            return real_rename(src, dst, *a, **k)

        os.rename = slow_rename
    if args.delay:
        os.environ["GEN_WORKER_DELAY"] = str(args.delay)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    install_loader()
    from benchmark.contract.audit_request import AuditRequest, ProbeChoice, Runtime
    from benchmark.runner import run_generation

    request = AuditRequest(args.run_dir, args.model, probes=ProbeChoice(suites=args.suites.split(","),
                                                                         limit_per_suite=args.limit),
                           runtime=Runtime(batch_size=args.batch_size), progress=False)
    summary = run_generation(request)
    print(f"rank {summary.rank}/{summary.world_size}: generated {summary.n_generated} in {summary.n_batches} batches",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
