"""PaintSkills commands: ``t2ibench paintskills-baselines`` (the reference rows of DALL-Eval's
Table 2) and ``t2ibench train-detector`` (fine-tune a DETR on the rendered train split).
Options only: the bodies are in :mod:`.commands`, imported when a command runs. ``t2ibench``
reads this file without importing the task folder (``cli_types.task_command_modules``), so it
imports nothing but the option types of :mod:`benchmark.cli_types`: ``--help`` stays light."""

from __future__ import annotations

from benchmark.cli_types import (
    MAX_RESAMPLES, learning_rate, output_file, output_folder, positive_int, seed, whole_number,
)

#: The module holding the command bodies, imported only when a command runs (like an entry point).
BODIES = f"{__package__}.commands"

# benchmark.tasks.paintskills.scores.SKILLS, spelled here so that help loads no numpy (a test checks they agree)
SKILLS = ("object", "count", "spatial")


def register(subparsers) -> None:
    """Add this module's commands to the ``t2ibench`` subparsers."""
    base = subparsers.add_parser(
        "paintskills-baselines", help="PaintSkills oracle and shuffled-ground-truth accuracy (DALL-Eval Table 2)",
        description="Score the rendered ground truth with the ground-truth detector (oracle: 100%%) and against "
                    "the ground truth of random scenes (shuffled: near chance), per skill and split.")
    base.add_argument("--data", required=True, help="rendered PaintSkills dataset folder "
                      "(python -m dataset_builders.paintskills --out DIR)")
    base.add_argument("--split", default="test", help="split to score (default: test)")
    base.add_argument("--skills", nargs="+", default=list(SKILLS), choices=list(SKILLS), help="skills to score")
    base.add_argument("--n-resamples", type=whole_number(0, MAX_RESAMPLES), default=1000,
                      help="bootstrap resamples per CI (0: none)")
    base.add_argument("--seed", type=seed, default=0, help="seed of the shuffle and the bootstrap")
    base.add_argument("--json", type=output_file, help="also write the numbers to this JSON file")
    base.add_argument("--quiet", action="store_true", help="no progress bars")
    base.set_defaults(func=f"{BODIES}:baselines")

    tr = subparsers.add_parser(
        "train-detector", help="fine-tune a COCO DETR on the rendered PaintSkills train split (the paper's protocol)",
        description="Fine-tune DetrForObjectDetection on the rendered train split(s); rerun the same command to "
                    "resume from OUT/checkpoint-last.")
    tr.add_argument("--data", required=True, help="rendered PaintSkills dataset folder with train splits")
    tr.add_argument("--out", required=True, type=output_folder,
                    help="output folder (model + image processor + training.json)")
    which = tr.add_mutually_exclusive_group()
    which.add_argument("--model", default="facebook/detr-resnet-50",
                       help="DETR to start from: Hub ID or folder (default facebook/detr-resnet-50; the paper used "
                            "facebook/detr-resnet-101)")
    which.add_argument("--tiny", action="store_true", help="start from builtin:tiny-detr (random weights, tests)")
    tr.add_argument("--skills", nargs="+", default=list(SKILLS), choices=list(SKILLS),
                    help="train splits to pool (default: all, as the release's allskills checkpoint)")
    tr.add_argument("--steps", type=whole_number(1, 10**7), default=1000, help="optimiser steps (default 1000)")
    tr.add_argument("--batch-size", type=whole_number(1, 4096), default=16,
                    help="images per step (default 16, the release's)")
    tr.add_argument("--lr", type=learning_rate, default=1e-5, help="learning rate (default 1e-5, the release's)")
    tr.add_argument("--lr-backbone", type=learning_rate, default=1e-6, help="backbone learning rate (default 1e-6)")
    tr.add_argument("--checkpoint-every", type=whole_number(1, 10**7), default=500,
                    help="steps between resumable checkpoints")
    tr.add_argument("--limit", type=positive_int, help="at most N scenes per skill")
    tr.add_argument("--seed", type=seed, default=0, help="seed of the training run")
    tr.add_argument("--revision", help="revision of a Hub --model")
    tr.add_argument("--device", help="cpu, cuda, cuda:1 ... (default: the best available)")
    tr.add_argument("--quiet", action="store_true", help="no progress bars")
    tr.set_defaults(func=f"{BODIES}:train")

    sm = subparsers.add_parser("paintskills-samples", help="a PNG contact sheet of rendered scenes with their "
                               "prompts and ground-truth boxes")
    sm.add_argument("--out", required=True, type=output_file, help="PNG file to write")
    sm.add_argument("--n", type=whole_number(1, 64), default=4, help="scenes per skill (default 4)")
    sm.add_argument("--size", type=whole_number(64, 1024), default=192, help="pixels per render (default 192)")
    sm.add_argument("--split", default="test", choices=["train", "test"], help="split the scenes come from")
    sm.set_defaults(func=f"{BODIES}:samples")
