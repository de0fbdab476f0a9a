"""Fine-tune a DETR on the rendered PaintSkills train split (DALL-Eval, DALL-Eval Sec. 4.1):
``t2ibench train-detector --data DIR --out DIR [--model facebook/detr-resnet-50 | --tiny]``.

The paper initialises DETR from the official COCO checkpoint (ResNet-101) and fine-tunes
it on the train split; the release's ``scripts/train_detr_skill.sh`` uses AdamW with lr
1e-5, backbone lr 1e-6, batch 16, 10 epochs, and its evaluation loads one checkpoint
trained on all skills ("allskills"). Here: the same optimiser settings (plus DETR's
weight decay 1e-4 and gradient clipping at 0.1), the COCO label map of the checkpoint
kept (rendered objects carry COCO ids; they are matched by class name), all skills'
train splits pooled, and a number of optimiser steps instead of epochs.

Checkpoints: every ``checkpoint_every`` steps ``OUT/checkpoint-last/`` (model, image
processor, optimiser state, step) is replaced atomically; running the same command again
resumes from it, with the same data order (a seeded permutation per epoch). At the end
``OUT`` holds the model and image processor (``save_pretrained``) and ``training.json``;
``t2ibench annotate RUN --detector OUT`` (or ``DetrDetector.from_pretrained(OUT)``) uses it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.extras import require
from benchmark.models.detector import check_detector_spec, resolve_detector_source
from benchmark.models.device import resolve_device
from benchmark.tasks.paintskills.scores import SKILLS
from benchmark.tasks.paintskills.detector.baselines import check_rendered
from benchmark.present.progress import progress_bar

__all__ = ["TrainConfig", "TrainSummary", "train_detector", "training_examples"]

CHECKPOINT = "checkpoint-last"
STATE_FILE = "trainer_state.pt"
TRAINING_FILE = "training.json"


@dataclass
class TrainConfig:
    """Settings of one fine-tuning run (the release's by default; steps replace epochs)."""

    model: str = "facebook/detr-resnet-50"
    skills: tuple[str, ...] = SKILLS
    split: str = "train"
    steps: int = 1000
    batch_size: int = 16
    lr: float = 1e-5
    lr_backbone: float = 1e-6
    weight_decay: float = 1e-4
    max_grad_norm: float = 0.1
    seed: int = 0
    checkpoint_every: int = 500
    limit: int | None = None  # at most this many scenes per skill (tests, quick runs)

    def check(self) -> None:
        for k in ("steps", "batch_size", "checkpoint_every"):
            if int(getattr(self, k)) < 1:
                raise ValueError(f"{k.replace('_', '-')} must be >= 1, got {getattr(self, k)}")
        for k in ("lr", "lr_backbone"):
            if not float(getattr(self, k)) > 0:
                raise ValueError(f"{k.replace('_', '-')} must be > 0, got {getattr(self, k)}")
        unknown = [s for s in self.skills if s not in SKILLS]
        if unknown or not self.skills:
            raise ValueError(f"unknown skill {unknown[0] if unknown else None!r}; choose from {', '.join(SKILLS)}")
        if self.limit is not None and int(self.limit) < 1:
            raise ValueError(f"limit must be >= 1, got {self.limit}")


@dataclass
class TrainSummary:
    out_dir: Path
    steps_done: int
    resumed_from: int
    n_examples: int
    losses: list[float] = field(default_factory=list)  # loss of every step run by this call
    seconds: float = 0.0

    def format(self) -> str:
        last = f", last loss {self.losses[-1]:.4f}" if self.losses else ""
        start = f" (resumed at step {self.resumed_from})" if self.resumed_from else ""
        return (f"trained {self.steps_done} steps on {self.n_examples} images{start}{last} in {self.seconds:.1f} s; "
                f"model in {self.out_dir}")


# --------------------------------------------------------------------------- data


def training_examples(data_dir: str | Path, skills: Sequence[str], split: str = "train",
                      limit: int | None = None):
    """The rendered split of each skill, concatenated (a ``datasets.Dataset`` with images)."""
    from datasets import concatenate_datasets, load_dataset

    root = Path(data_dir)
    for skill in skills:
        check_rendered(root, skill, split)
    parts = []
    for skill in skills:
        ds = load_dataset(str(root), skill, split=split)
        if limit is not None:
            ds = ds.select(range(min(int(limit), len(ds))))
        parts.append(ds.select_columns(["image", "objects", "width", "height"]))
    return concatenate_datasets(parts)


def _annotations(rows: list[dict], label2id: dict[str, int]) -> list[dict]:
    """COCO-style targets for the image processor, classes mapped to the model's label ids by name."""
    out = []
    for i, r in enumerate(rows):
        objs = r["objects"]
        anns = []
        for box, name in zip(objs["bbox"], objs["category_name"]):
            if name not in label2id:
                raise ValueError(f"the detector has no class {name!r} in its label map; fine-tune a COCO DETR "
                                 "(its id2label holds the PaintSkills classes)")
            x, y, w, h = (float(v) for v in box)
            anns.append({"bbox": [x, y, w, h], "category_id": int(label2id[name]), "area": w * h, "iscrowd": 0})
        out.append({"image_id": i, "annotations": anns})
    return out


def _order(n: int, epoch: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n)


# --------------------------------------------------------------------------- model


def _save_atomic(folder: Path, write) -> None:
    """Write a folder next to ``folder`` and rename it into place (a crash leaves the old one)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        write(tmp)
        old = None
        if folder.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{folder.name}-old-", dir=folder.parent))
            os.replace(folder, old / folder.name)
        os.replace(tmp, folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- training


def train_detector(data_dir: str | Path, out_dir: str | Path, config: TrainConfig | None = None, *,
                   device=None, revision: str | None = None, token: Any = None,
                   progress: bool = True) -> TrainSummary:
    """Fine-tune ``config.model`` on the rendered train split(s) in ``data_dir``; see the module docstring."""
    require("torch", "transformers", "PIL", extra="audit", purpose="fine-tune a detector")
    import torch
    from transformers import AutoImageProcessor, DetrForObjectDetection

    cfg = config or TrainConfig()
    cfg.check()
    out = Path(out_dir)
    start_time = time.perf_counter()
    done = _finished_run(out, cfg)
    if done is not None:  # a finished run: the same command again does nothing
        return done
    if out.exists() and any(p.name != CHECKPOINT for p in out.iterdir()):
        raise ValueError(f"{out} exists and is not a train-detector output folder; choose another --out")
    data = training_examples(data_dir, cfg.skills, cfg.split, cfg.limit)  # data errors before loading a model
    check_detector_spec(cfg.model, revision=revision, token=token)
    ckpt = out / CHECKPOINT
    resume = (ckpt / STATE_FILE).is_file()
    if resume:
        state = load_training_state(ckpt / STATE_FILE)
        if state["config"] != _comparable(cfg):
            raise ValueError(f"{ckpt} was written with other settings ({state['config']}); use the same settings "
                             "to resume, or another --out")
        source, rev = str(ckpt), None
    else:
        state = None
        source, rev, _ = resolve_detector_source(cfg.model, revision=revision, token=token)
    dev = resolve_device(device)
    kw = {"revision": rev} if rev else {}
    model = DetrForObjectDetection.from_pretrained(source, token=token, **kw).to(dev)
    processor = AutoImageProcessor.from_pretrained(source, token=token, **kw)
    label2id = {str(v): int(k) for k, v in model.config.id2label.items()}

    optimizer, step = _optimizer(model, cfg, state)
    n = len(data)
    per_epoch = max(1, math.ceil(n / cfg.batch_size))
    summary = TrainSummary(out_dir=out, steps_done=step, resumed_from=step, n_examples=n)

    def save_checkpoint(at: int) -> None:
        def write(tmp: Path) -> None:
            model.save_pretrained(tmp, safe_serialization=True)
            processor.save_pretrained(tmp)
            torch.save({"step": at, "optimizer": optimizer.state_dict(), "config": _comparable(cfg)}, tmp / STATE_FILE)

        _save_atomic(ckpt, write)

    model.train()
    bar = progress_bar(cfg.steps, "train detector", enabled=progress, unit="step")
    bar.update(step)
    try:
        while step < cfg.steps:
            epoch, pos = divmod(step, per_epoch)
            idx = _order(n, epoch, cfg.seed)[pos * cfg.batch_size:(pos + 1) * cfg.batch_size]
            rows = [data[int(i)] for i in idx]
            loss = _train_step(model, processor, optimizer, rows, label2id, cfg, step, dev)
            step += 1
            summary.losses.append(loss)
            bar.update(1)
            bar.set_postfix(loss=f"{summary.losses[-1]:.3f}")
            if step % cfg.checkpoint_every == 0 and step < cfg.steps:
                save_checkpoint(step)
    finally:
        bar.close()
    summary.steps_done = step
    model.eval()
    info = {"base_model": cfg.model, "revision": revision, "data": str(Path(data_dir).resolve()),
            "n_examples": n, "config": asdict(cfg), "steps": step, "resumed_from": summary.resumed_from,
            "last_losses": summary.losses[-10:], "device": str(dev),
            "protocol": "DALL-Eval Sec. 4.1: COCO DETR fine-tuned on the rendered PaintSkills train split"}

    _write_final(out, ckpt, model, processor, info)
    summary.seconds = time.perf_counter() - start_time
    return summary


def _finished_run(out: Path, cfg: TrainConfig) -> TrainSummary | None:
    """The summary of a finished run in ``out`` with the same settings (None when there is none);
    ValueError when ``out`` holds one trained with other settings."""
    done = _finished(out)
    if done is None:
        return None
    if _comparable_dict(done.get("config", {})) != _comparable(cfg) or int(done.get("steps", 0)) < cfg.steps:
        raise ValueError(f"{out} holds a detector trained with other settings ({done.get('config')}, "
                         f"{done.get('steps')} steps); choose another --out")
    return TrainSummary(out_dir=out, steps_done=int(done["steps"]), resumed_from=int(done["steps"]),
                        n_examples=int(done.get("n_examples", 0)))


def _optimizer(model, cfg: TrainConfig, state: dict | None):
    """(AdamW, first step): two parameter groups as DETR's main.py (the backbone at
    lr_backbone), restored from a checkpoint's ``state`` when there is one."""
    import torch

    backbone = [p for n, p in model.named_parameters() if "backbone" in n and p.requires_grad]
    rest = [p for n, p in model.named_parameters() if "backbone" not in n and p.requires_grad]
    optimizer = torch.optim.AdamW([{"params": rest, "lr": cfg.lr}, {"params": backbone, "lr": cfg.lr_backbone}],
                                  weight_decay=cfg.weight_decay)
    if state is None:
        return optimizer, 0
    optimizer.load_state_dict(state["optimizer"])
    return optimizer, int(state["step"])


def _train_step(model, processor, optimizer, rows: list, label2id: dict, cfg: TrainConfig, step: int, dev) -> float:
    """One optimiser step on ``rows`` (step ``step``, counted from 0); returns its loss."""
    import torch

    # dropout draws from a seed of (seed, step): a resumed run repeats an uninterrupted one
    torch.manual_seed(int(np.random.default_rng([cfg.seed, step]).integers(2**31)))
    enc = processor(images=[r["image"].convert("RGB") for r in rows],
                    annotations=_annotations(rows, label2id), return_tensors="pt")
    labels = [{k: v.to(dev) for k, v in t.items()} for t in enc["labels"]]
    outputs = model(pixel_values=enc["pixel_values"].to(dev), pixel_mask=enc["pixel_mask"].to(dev),
                    labels=labels)
    loss = outputs.loss
    if not torch.isfinite(loss):
        raise ValueError(f"the training loss became {float(loss)} at step {step + 1}: lower --lr")
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
    optimizer.step()
    return float(loss.detach())


def _write_final(out: Path, ckpt: Path, model, processor, info: dict) -> None:
    """The final model, its processor and ``training.json`` into ``out``; the checkpoint folder dropped."""
    def write_final(tmp: Path) -> None:
        model.save_pretrained(tmp, safe_serialization=True)
        processor.save_pretrained(tmp)
        (tmp / TRAINING_FILE).write_text(json.dumps(info, indent=2, default=str), encoding="utf-8")

    # The final model goes into OUT beside the checkpoint folder, which is then dropped.
    tmp_final = out.parent / f".{out.name}-final"
    _save_atomic(tmp_final, write_final)
    out.mkdir(parents=True, exist_ok=True)
    for p in tmp_final.iterdir():
        os.replace(p, out / p.name)
    shutil.rmtree(tmp_final, ignore_errors=True)
    shutil.rmtree(ckpt, ignore_errors=True)


def load_training_state(path: Path) -> dict:
    """The step, optimizer state and settings of a checkpoint, loaded with ``weights_only=True``:
    tensors and plain values only, so a crafted file cannot run code when a run resumes.
    ValueError (one line) for anything else."""
    import pickle

    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ValueError(f"{path} cannot be resumed: not a train-detector checkpoint of tensors and plain values "
                         f"({reason}); delete the checkpoint folder to start again") from None
    if not isinstance(state, dict) or not {"step", "optimizer", "config"} <= set(state):
        raise ValueError(f"{path} cannot be resumed: not a train-detector checkpoint (no step, optimizer and config)")
    return state


def _comparable(cfg: TrainConfig) -> dict:
    """The settings a resumed run must share (the step budget may grow)."""
    return _comparable_dict(asdict(cfg))


def _comparable_dict(d: dict) -> dict:
    d = {k: v for k, v in d.items() if k not in ("steps", "checkpoint_every")}
    d["skills"] = list(d.get("skills") or [])
    return d


def _finished(out: Path) -> dict | None:
    try:
        return json.loads((out / TRAINING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
