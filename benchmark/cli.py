"""The ``t2ibench`` command line.

Every command fails with one line ``t2ibench: error: ...`` and exit status 2 on bad
input, before any heavy work.
"""

from __future__ import annotations

import argparse
import sys
from importlib import import_module
from importlib.metadata import entry_points

import benchmark
from benchmark import cli_types, frozen_imports
from benchmark.cli_types import (
    AUTO, CommandLineParser, batch_size, comma_list, model_args, n_resamples, positive_int, run_folder_out,
)
from benchmark.commands.external_models import API_PRECHECK, RUN_EPILOG, add_api_args, add_images_args
from benchmark.commands.probe_export import add_export_command
from benchmark.hub.access import HubError
from benchmark.models.cuda_speed import OFFLOAD_MODES
from benchmark.probe_build_args import add_arguments as add_probe_build_arguments
from benchmark.tasks.discovery import folder_declarations
from benchmark.tasks.inputs import declared_inputs

#: The generic annotator flags ``run`` and ``annotate`` define (the task folders' own are
#: generated from their annotator kinds, :func:`folder_annotator_kinds`).
ANNOTATOR_FLAGS = ("encoder", "vqa", "detector", "skin_tone", "vqa_mode")


#: run / generate of a pipeline: what its model_index.json and cards refuse, before the task folders and
#: the heavy libraries load (named, imported only when the command runs)
MODEL_PRECHECK = ("benchmark.commands.model_precheck:check_model_first",)

ALIASES_EPILOG = ("lm-evaluation-harness spellings are accepted as aliases: --tasks a,b (--suites a b), "
                  "--output_path (--out), --model_args k=v,k=v (--set k=v), --batch_size N|auto (--batch-size).")


# Commands that live beside the feature they drive: each module has ``register(subparsers)``
# (a task folder's own commands, in its cli.py, are found by cli_types.task_command_modules).
COMMAND_MODULES = (
    "benchmark.human.cli",
    "benchmark.human.agreement_command",
    "benchmark.compare.cli",
    "benchmark.commands.new_task",
)
# Packages outside the core (submission and leaderboard, plugins) add their commands through
# this entry-point group, so the core never imports them.
COMMAND_ENTRY_POINTS = "t2ibench.commands"


def add_run_args(p: argparse.ArgumentParser, annotators: bool, images: bool = False) -> None:
    """The options of ``run`` and ``generate`` (``annotators``: and of the label stage; ``images``:
    ``--images DIR`` may stand for ``--model``)."""
    p.add_argument("--model", required=not images, help="builtin:tiny-sd, a Hub model ID, a local diffusers "
                   "folder, a single-file checkpoint (FILE.safetensors, FILE.gguf or hf://ORG/NAME/FILE, with --base), "
                   "python:module:function (prompts, seeds -> PIL images), or an image API: "
                   "openai:dall-e-2, openai:dall-e-3, openai:gpt-image-1"
                   + (" (or --images DIR for images made elsewhere)" if images else ""))
    p.add_argument("--out", "--output_path", required=True, type=run_folder_out,
                   help="run folder (created; rerun the same command to resume); --output_path is the "
                   "lm-evaluation-harness spelling")
    p.add_argument("--suites", nargs="+", action=cli_types.ExtendFlat, help="probe suites (default: every "
                   "suite of the probe set; see `t2ibench probes list`); with --tasks, both are kept")
    p.add_argument("--tasks", dest="suites", type=comma_list, action=cli_types.ExtendFlat, metavar="A,B",
                   help="alias of --suites, comma-separated as in lm-evaluation-harness")
    p.add_argument("--probes", metavar="SOURCE", help="the probe set: a folder from `t2ibench probes build` or a "
                   "Hub dataset ID (default: the built-in probes)")
    p.add_argument("--probes-revision", metavar="REV", help="with a Hub dataset ID: the revision to audit "
                   "(branch, tag or commit; recorded as the resolved commit)")
    add_task_input_args(p)
    p.add_argument("--limit", type=positive_int, help="at most N probes per suite, spread over its prompts")
    p.add_argument("--pilot", type=cli_types.results_file, metavar="RESULTS_JSON",
                   help="the results.json of an earlier audit (any model) of the same suites: the plan prints, per "
                   "headline score, the smallest change a comparison of two audits of this size detects, from "
                   "audits of this size simulated from the pilot's own labels (docs/compare.md)")
    p.add_argument("--batch-size", "--batch_size", type=batch_size, default=AUTO,
                   help="images per generation batch, or auto: the largest batch that fits a CUDA GPU's free "
                   "memory at the model's resolution, chosen once per run folder and recorded in run_config.json; "
                   "4 on a CPU, where images are made one per call (batch-invariant)")
    p.add_argument("--no-compile", dest="compile", action="store_false", default=None,
                   help="no torch.compile of the modules that denoise (on by default on CUDA only: bf16, "
                   "channels-last convolutional models, fused QKV projections and every denoiser (UNet, "
                   "transformer, prior) compiled, with every batch padded to one static size; compile time is "
                   "reported apart from the time per image; a compile that fails is undone and recorded)")
    p.add_argument("--offload", choices=OFFLOAD_MODES, default=None,
                   help="diffusers' CPU offload for models that do not fit the GPU: auto (default: offload only "
                   "when the weights do not fit 70%% of the free GPU memory), none, model (one model on the GPU "
                   "at a time) or sequential (layer by layer, slowest; never compiled); recorded in run_config.json")
    p.add_argument("--lora", action="append", metavar="PATH_OR_HUB_ID[:SCALE]", type=cli_types.lora_reference,
                   help=f"a LoRA adapter loaded onto the pipeline and fused (repeatable, at most {cli_types.MAX_LORAS}, "
                   "applied in order): a local .safetensors file or folder, or ORG/NAME[@REV][/FILE] on the Hub; "
                   "SCALE from -10 to 10, default the scale its card's example applies, else 1. Its README (model "
                   "card) is read: its base_model is checked against --model, its trigger word offered. The base "
                   "with a LoRA is another model: its own settings row, run folder and leaderboard row")
    p.add_argument("--lora-trigger", nargs="?", const=True, default=None, metavar="TEXT",
                   help="put the LoRAs' trigger before every probe's prompt (TRIGGER, PROMPT): alone, the "
                   "instance_prompt their cards name; with TEXT, that text. Recorded with its source")
    p.add_argument("--unet", metavar="PATH_OR_HUB_ID", type=cli_types.unet_reference,
                   help="a UNet checkpoint that replaces the pipeline's (e.g. "
                   "ByteDance/SDXL-Lightning/sdxl_lightning_4step_unet.safetensors on its SDXL base)")
    p.add_argument("--base", metavar="REPO_OR_FOLDER", help="with --model FILE.safetensors (or .gguf, or "
                   "hf://ORG/NAME/FILE): the diffusers model whose configs read the single-file checkpoint (default: "
                   "the file's Hub repo when it is a pipeline, else its model card's base_model); read offline from a "
                   "folder or the Hugging Face cache. The model audited is the file, recorded with its sha256")
    p.add_argument("--quantize", metavar="BACKEND:SCHEME", help="quantize the denoiser (UNet / transformer) as it "
                   "loads, through diffusers' quantization configs: torchao:int8wo, torchao:int8dq, torchao:float8wo, "
                   "torchao:int4wo (torchao), bnb:4bit, bnb:8bit (bitsandbytes, GPU only); a quantized model is "
                   "another model: its own run folder and leaderboard row (GGUF files: --model FILE.gguf --base BASE)")
    p.add_argument("--lora-unet-only", action="store_true", help="apply a LoRA's UNet / transformer layers and "
                   "skip its text-encoder layers (transformers loads those only with a newer peft), recording what "
                   "was skipped in run_config.json, results.json and the report")
    p.add_argument("--revision", help="model revision (branch, tag or commit)")
    p.add_argument("--device", type=cli_types.device, help="cpu, cuda, cuda:1 ... (default: the best available)")
    p.add_argument("--dtype", type=cli_types.dtype, help="float32, float16 or bfloat16 (default: per device)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="pipeline argument, e.g. --set num_inference_steps=30 --set guidance_scale=5")
    p.add_argument("--model_args", dest="set", type=model_args, action=cli_types.ExtendFlat, metavar="K=V,K=V",
                   help="alias of --set, comma-separated as in lm-evaluation-harness")
    p.add_argument("--quiet", action="store_true", help="no progress bars and no plan (warnings are printed "
                   "whatever it says)")
    add_allow_degenerate(p)
    if annotators:
        p.add_argument("--dry-run", action="store_true", help="check everything and print the whole plan (every "
                       "setting with its source, adapters, annotators, images), then stop: nothing is written, "
                       "not even the --out folder")
        add_annotator_args(p)
        p.add_argument("--n-resamples", type=n_resamples, default=1000, help="bootstrap resamples per CI")


def add_allow_degenerate(p: argparse.ArgumentParser) -> None:
    """``--allow-degenerate``, of ``run``, ``generate`` and ``score``."""
    p.add_argument("--allow-degenerate", action="store_true",
                   help="score an audit even when more than 1%% of its images are degenerate (one colour: blank, "
                   "constant, or black from NaN / infinite output); without it the run stops before scoring with "
                   "one line naming the count and likely causes. The results are marked either way")


def add_task_input_args(p: argparse.ArgumentParser) -> None:
    """The options of the task inputs the task folders declare (:mod:`benchmark.tasks.inputs`):
    ``--<name> SOURCE`` and, for an input with a revision, ``--<name>-revision REV``; the
    runner takes them by name (``args.task_inputs``)."""
    names = []
    for task_input in declared_inputs():
        p.add_argument(task_input.option, dest=task_input.name, metavar=task_input.metavar, help=task_input.help)
        if task_input.revision_name:
            p.add_argument(f"{task_input.option}-revision", dest=task_input.revision_name, metavar="REV",
                           help=task_input.revision_help)
        names += task_input.names
    p.set_defaults(task_inputs=tuple(names))


def folder_annotator_kinds() -> list:
    """The annotator kinds the task folders declare in their ``inputs.py`` (light: read to build
    the parser), in folder order."""
    return [kind for module in folder_declarations() for kind in getattr(module, "ANNOTATORS", ())]


def add_annotator_args(p: argparse.ArgumentParser) -> None:
    """The annotator options of ``run`` and ``annotate``: the generic ones, and one generated from
    each annotator kind a task folder declares (``--<option>``; a list for a ``many`` kind)."""
    p.add_argument("--encoder", help="CLIP encoder of the attribute-existence labels (default open_clip:ViT-L-14:openai; builtin:tiny-clip "
                   "for builtin models)")
    generated = []
    for kind in folder_annotator_kinds():
        if kind.option in ANNOTATOR_FLAGS or kind.option in generated:  # a kind sharing an option (as VQA's do)
            continue
        p.add_argument("--" + kind.option.replace("_", "-"), dest=kind.option, nargs="+" if kind.many else None,
                       help=kind.help or f"model of the {kind.name} annotator")
        generated.append(kind.option)
    p.add_argument("--vqa", help="VQA model for gender / attribute questions (default Salesforce/blip2-opt-2.7b)")
    p.add_argument("--detector", help="object detector of the scene probes: a DETR Hub ID or folder (default "
                   "facebook/detr-resnet-50; builtin:tiny-detr for builtin models; a folder from "
                   "`t2ibench train-detector`), or none")
    p.add_argument("--vqa-mode", choices=("closed-set", "generate"), help="closed-set (default): score each "
                   "allowed answer by the VQA model's likelihood; generate: the papers' free-text answers, parsed")
    p.add_argument("--annotator", action="append", metavar="OPTION=MODEL",
                   help="any annotator option by name, a plugin's too (e.g. --annotator skin_tone=whole-image)")
    p.set_defaults(annotator_flags=ANNOTATOR_FLAGS + tuple(generated))


def add_stage_commands(sub) -> None:
    """``annotate``, ``score``, ``verify``, ``report`` and ``demo``: the stages run one by one."""
    ann = sub.add_parser("annotate", help="(re-)label the images of a run folder",
                         description="Label the images of a run folder (gender, attributes, skin tone, objects) "
                         "with the annotators its suites need.")
    ann.add_argument("run_dir", help="run folder made by `t2ibench run` or `t2ibench generate`")
    add_annotator_args(ann)
    ann.add_argument("--skin-tone", help="face detector for skin tone: haar (default), whole-image or none")
    ann.add_argument("--suites", nargs="+", help="label only these suites (others' labels are kept)")
    ann.add_argument("--batch-size", "--batch_size", type=batch_size, default=32,
                     help="images per annotator call: a number >= 1, or auto")
    ann.add_argument("--device", type=cli_types.device, help="cpu, cuda, cuda:1 ... (default: the best available)")
    ann.add_argument("--force", action="store_true", help="redo label files that are already complete")
    ann.add_argument("--quiet", action="store_true", help="no progress bars")
    ann.set_defaults(func="benchmark.commands.stages:annotate")

    score = sub.add_parser("score", help="(re-)compute results.json from a run folder's labels",
                           description="Compute every score of a labelled run folder with its bootstrap "
                           "confidence interval and write results.json; exit 1 when a suite of the run could not "
                           "be scored, or only partly (unless --allow-partial), naming each and why.")
    score.add_argument("run_dir", help="run folder with labels (after `t2ibench annotate`)")
    score.add_argument("--n-resamples", type=n_resamples, default=1000, help="bootstrap resamples per CI")
    score.add_argument("--allow-partial", action="store_true", help="exit 0 even when some suites of the run are "
                       "not scored or only partly (a label file of theirs missing, every image withheld...); "
                       "without it such a run exits 1 and names them")
    add_allow_degenerate(score)
    score.set_defaults(func="benchmark.commands.stages:score")

    ver = sub.add_parser("verify", help="check a run folder against its files (manifest, images' sha256, "
                         "orphans, label files); exit 1 when something does not match",
                         description="Check a run folder against its records: manifest, images' sha256, "
                         "orphan files, label files. Exit 1 when something does not match.")
    ver.add_argument("run_dir", help="run folder to check")
    ver.set_defaults(func="benchmark.commands.stages:verify")

    rep_cmd = sub.add_parser("report", help="(re-)write the report of a scored run folder",
                             description="Write the HTML report (tables and plots) of a scored run folder; "
                             "refuses a results.json that `t2ibench validate` refuses.")
    rep_cmd.add_argument("run_dir", help="scored run folder (with results.json)")
    rep_cmd.set_defaults(func="benchmark.commands.stages:report")

    demo = sub.add_parser("demo", help="offline audit of the built-in tiny model on every suite (what make demo runs)",
                          description="Offline audit of the built-in tiny random-weight model on every suite: "
                          "shows that every stage runs (its scores are meaningless).")
    demo.add_argument("--out", "--output_path", default="out/demo", type=run_folder_out, help="run folder")
    demo.add_argument("--limit", type=positive_int, default=16, help="probes per suite")
    demo.add_argument("--batch-size", "--batch_size", type=batch_size, default=8,
                      help="images per pipeline call: a number >= 1, or auto")
    demo.add_argument("--n-resamples", type=n_resamples, default=200, help="bootstrap resamples per CI")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func="benchmark.commands.audit:demo")


def add_catalogue_commands(sub) -> None:
    """``probes``, ``scores`` and ``reproduce``: the benchmark's own tables."""
    probes = sub.add_parser("probes", help="list or build the probe datasets",
                            description="List the probe suites, or write them as a Hub-layout dataset folder.")
    psub = probes.add_subparsers(dest="probes_command", required=True)
    psub.add_parser("list", help="the suites with their row counts",
                    description="Every probe suite with its row count and paper.").set_defaults(
        func="benchmark.commands.catalogue:probes_list")
    build = psub.add_parser("build", help="write the probe suites as a Hub-layout dataset folder",
                            description="Write the probe suites as a Hub-layout dataset folder (one config per "
                            "suite) that datasets.load_dataset reads offline; optionally publish it.")
    add_probe_build_arguments(build)
    build.set_defaults(func="benchmark.commands.catalogue:probes_build")
    add_export_command(psub)

    scores = sub.add_parser("scores", help="every score with its range and direction",
                            description="Every score the benchmark computes: range, direction, paper.")
    scores.add_argument("--markdown", action="store_true",
                        help="a Markdown table, with each score's headline flag and description (docs/results.md's)")
    scores.set_defaults(func="benchmark.commands.catalogue:scores")

    rep = sub.add_parser("reproduce", help="recompute the papers' printed numbers from their printed inputs",
                         description="Recompute the numbers the papers print from the inputs they print; exit 1 "
                         "on a mismatch.")
    rep.add_argument("--papers", nargs="+", help="probe families to check (default: every family whose task "
                     "declares paper checks; an unknown one lists them)")
    rep.add_argument("--all", action="store_true", help="list every recomputed number, not the summary")
    rep.set_defaults(func="benchmark.commands.catalogue:reproduce")


def add_audit_commands(sub) -> None:
    """``run`` and ``generate``: a model audited end to end, or only its images made."""
    run = sub.add_parser("run", help="audit a model end to end: generate, annotate, score, report",
                         description="Audit a model end to end: generate the probe images, label them, score\n"
                         "them with confidence intervals, write results.json and the report. Every option is\n"
                         "checked before the model loads; rerun the same command to resume.",
                         epilog=RUN_EPILOG, formatter_class=cli_types.RawDescriptionDefaultsHelpFormatter)
    add_run_args(run, annotators=True, images=True)
    add_api_args(run)
    add_images_args(run)
    run.set_defaults(func="benchmark.commands.audit:run", prechecks=API_PRECHECK + MODEL_PRECHECK)

    gen = sub.add_parser("generate", help="only generate the images of a run",
                         description="Only generate the probe images of a run folder (resumable); `t2ibench "
                         "annotate` and `t2ibench score` do the rest.")
    add_run_args(gen, annotators=False)
    add_api_args(gen)
    gen.set_defaults(func="benchmark.commands.audit:generate", prechecks=API_PRECHECK + MODEL_PRECHECK)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(prog="t2ibench", description="Audit text-to-image models for social bias "
                               "and compositional skill.", epilog=ALIASES_EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {benchmark.__version__}")
    parser.add_argument("--plugin", action="append", metavar="MODULE", default=[],
                        help="import MODULE first: it may register suites, annotators, scores and tasks")
    sub = parser.add_subparsers(dest="command", required=True)
    add_catalogue_commands(sub)
    add_audit_commands(sub)
    add_stage_commands(sub)
    for module in [*cli_types.task_command_modules(), *map(import_module, COMMAND_MODULES)]:
        module.register(sub)
    for ep in sorted(entry_points(group=COMMAND_ENTRY_POINTS), key=lambda e: e.name):
        ep.load()(sub)
    return parser


def command_body(func):
    """A command's body: a function, or ``"module:function"`` imported only when the command runs
    (like an entry point), so that ``--help`` and a usage error load no stage."""
    if callable(func):
        return func
    module, _, name = func.partition(":")
    return getattr(import_module(module), name)


def main(argv: list[str] | None = None) -> int:
    frozen_imports.install()  # torch & co. load with the collector paused (benchmark/frozen_imports.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:  # a command's checks that need neither a registry nor a heavy library (an image API's endpoint)
        for check in getattr(args, "prechecks", ()):
            command_body(check)(args)
    except ValueError as exc:
        cli_types.print_error(exc)
        return 2
    # The terminal tables load pandas and scipy: imported once parsing is done, so `--help` and
    # usage errors stay light.
    from benchmark.present.terminal import print_error, quiet_library_warnings, quiet_third_party

    quiet_library_warnings()
    if getattr(args, "quiet", False):
        quiet_third_party()
    try:
        benchmark.load_tasks(args.plugin)  # the task folders and plugins, once, before a command reads a registry
        return int(command_body(args.func)(args) or 0)
    except (ValueError, HubError) as exc:
        print_error(exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
