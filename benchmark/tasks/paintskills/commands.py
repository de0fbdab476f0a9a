"""Bodies of the PaintSkills commands (``paintskills-baselines``, ``train-detector``,
``paintskills-samples``); :mod:`.cli` registers their options and names these functions, so this
module is imported only when one of them runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmark.contract.model_specs import is_builtin

from .detector.baselines import BUILD_HINT, format_baselines, run_baselines
from .detector.training import TrainConfig, train_detector
from .sample_sheet import write_sample_sheet


def _data_dir(path: str) -> Path:
    root = Path(path)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder: no rendered PaintSkills dataset there; "
                         + BUILD_HINT.replace("DIR", str(root)))
    return root


def baselines(args: argparse.Namespace) -> int:
    if args.n_resamples < 0:
        raise ValueError(f"--n-resamples must be >= 0, got {args.n_resamples}")
    table = run_baselines(_data_dir(args.data), split=args.split, skills=args.skills, seed=args.seed,
                          n_resamples=args.n_resamples, progress=not args.quiet)
    print(f"PaintSkills baselines on {args.data} ({args.split} split), ground-truth detector, accuracy in % "
          f"with {'95% bootstrap CI' if args.n_resamples else 'no CI'}:")
    print(format_baselines(table))
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def train(args: argparse.Namespace) -> int:
    model = "builtin:tiny-detr" if args.tiny else args.model
    cfg = TrainConfig(model=model, skills=tuple(args.skills), steps=args.steps, batch_size=args.batch_size,
                      lr=args.lr, lr_backbone=args.lr_backbone, seed=args.seed,
                      checkpoint_every=args.checkpoint_every, limit=args.limit)
    cfg.check()
    summary = train_detector(_data_dir(args.data), args.out, cfg, device=args.device, revision=args.revision,
                             progress=not args.quiet)
    print(summary.format())
    if is_builtin(model):
        print("note: builtin:tiny-detr is a tiny random-weight model; the trained detector is for testing only")
    print(f"use it with: t2ibench annotate RUN_DIR --detector {args.out}")
    return 0


def samples(args: argparse.Namespace) -> int:
    out = write_sample_sheet(args.out, n_per_skill=args.n, size=args.size, split=args.split)
    print(f"wrote {out}")
    return 0
