"""The ``t2ibench`` command line.

Every command fails with one line ``t2ibench: error: ...`` and exit status 2 on bad
input, before any heavy work.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import benchmark
from benchmark import cli_types
from benchmark.cli_types import AUTO, CommandLineParser, batch_size, comma_list, model_args, output_folder, positive_int
from benchmark.probe_build_args import add_arguments as add_probe_build_arguments


def _cmd_probes_list(args: argparse.Namespace) -> int:
    from benchmark.papers import PAPERS
    from benchmark.probes import build_suite, get_suite, list_suites

    print(f"{'suite':<24}{'rows':>7}  paper")
    for name in list_suites():
        spec = get_suite(name)
        print(f"{name:<24}{len(build_suite(name)):>7,}  {PAPERS[spec.paper].short}: {spec.summary}")
    return 0


def _cmd_probes_build(args: argparse.Namespace) -> int:
    from benchmark.probes import dataset as probe_builder

    return probe_builder.run(args)


def _cmd_scores(args: argparse.Namespace) -> int:
    from benchmark.scores.metadata import SCORE_METADATA
    from benchmark.terminal import print_score_metadata

    print_score_metadata(SCORE_METADATA)
    return 0


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_paper_checks(checks) -> str:
    """Every check, one row each."""
    from benchmark.papers import PAPERS

    rows = [("paper", "where printed", "quantity", "printed", "recomputed", "ok")]
    for c in checks:
        rows.append((PAPERS[c.paper].short, c.source, c.quantity, f"{c.printed:g}", f"{c.recomputed:.4g}",
                     "yes" if c.passed else "NO"))
    return _table(rows)


def format_paper_checks_summary(checks) -> str:
    """One row per printed table (count, passed, largest difference), then the headline numbers."""
    from benchmark.papers import PAPERS
    from benchmark.tasks.paper_checks import is_headline

    groups: dict[tuple[str, str], list] = {}
    for c in checks:
        groups.setdefault((c.paper, c.source.split(",")[0]), []).append(c)
    rows = [("paper", "table", "numbers", "within precision", "largest |difference|")]
    for (paper, table), cs in groups.items():
        worst = max(abs(c.recomputed - c.printed) for c in cs)
        rows.append((PAPERS[paper].short, table, str(len(cs)), str(sum(c.passed for c in cs)), f"{worst:.4g}"))
    key = [c for c in checks if is_headline(c)]
    key_rows = [("paper", "where printed", "quantity", "printed", "recomputed", "ok")]
    for c in key:
        key_rows.append((PAPERS[c.paper].short, c.source, c.quantity, f"{c.printed:g}", f"{c.recomputed:.4g}",
                         "yes" if c.passed else "NO"))
    return _table(rows) + "\n\nHeadline numbers:\n\n" + _table(key_rows)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from benchmark.tasks.paper_checks import all_checks, checked_families

    known = checked_families()
    families = tuple(args.papers) if args.papers else known
    unknown = set(families) - set(known)
    if unknown:
        raise ValueError(f"unknown paper family {sorted(unknown)[0]!r}; choose from {', '.join(known)}")
    checks = all_checks(families)
    print(format_paper_checks(checks) if args.all else format_paper_checks_summary(checks))
    failed = [c for c in checks if not c.passed]
    for c in failed:
        print(f"MISMATCH {c.source} {c.quantity}: printed {c.printed:g}, recomputed {c.recomputed:.6g}")
    print(f"\n{len(checks) - len(failed)} of {len(checks)} printed numbers recomputed within their printed precision"
          + ("" if args.all else " (t2ibench reproduce --all lists each one)"))
    return 1 if failed else 0


def _parse_overrides(values: list[str]) -> dict:
    import yaml

    out = {}
    for v in values or []:
        key, sep, raw = v.partition("=")
        if not sep or not key:
            raise ValueError(f"--set takes KEY=VALUE (a pipeline argument such as num_inference_steps=30), got {v!r}")
        out[key] = yaml.safe_load(raw)
    return out


def _annotator_args(args: argparse.Namespace) -> dict:
    """Annotator options: the named flags, then ``--annotator OPTION=MODEL`` (a plugin's too)."""
    out = {"encoder": args.encoder, "mcas_encoders": args.mcas_encoders, "vqa": args.vqa, "detector": args.detector,
           "skin_tone": getattr(args, "skin_tone", None), "vqa_mode": args.vqa_mode}
    for v in getattr(args, "annotator", None) or []:
        key, sep, raw = v.partition("=")
        if not sep or not key:
            raise ValueError(f"--annotator takes OPTION=MODEL (e.g. vqa=Salesforce/blip2-opt-2.7b), got {v!r}")
        out[key.strip().replace("-", "_")] = raw.strip()
    from benchmark.annotate.registry import list_annotator_kinds

    known = {k.option for k in list_annotator_kinds()} | {x for k in list_annotator_kinds() for x in k.settings}
    unknown = [k for k, v in out.items() if v is not None and k not in known]
    if unknown:
        raise ValueError(f"unknown annotator option {unknown[0]!r}; options: {', '.join(sorted(known))}")
    return out


def _print_outcome(outcome) -> None:
    import json

    from benchmark.terminal import print_results_summary

    print_results_summary(json.loads(outcome.results_path.read_text()))
    times = ", ".join(f"{k} {v:.1f} s" for k, v in outcome.stage_seconds.items())
    print(f"\nresults: {outcome.results_path}\nreport:  {outcome.report_path}\ntime:    {times}")


def _batch_size(value: int | str, default: int) -> int:
    """A stage that sizes its batches by a fixed number (annotate, the demo) reads ``auto`` as its
    default; generation resolves ``auto`` itself (:mod:`benchmark.runner.batch_size`)."""
    return default if value == AUTO else int(value)


def _cmd_run(args: argparse.Namespace) -> int:
    from benchmark.commands.external_models import api_overrides, check_source, run_images
    from benchmark.runner.pipeline import run_audit

    check_source(args)
    if args.images:  # images made elsewhere
        _print_outcome(run_images(args, _annotator_args(args)))
        return 0
    outcome = run_audit(args.out, args.model, args.suites, limit_per_suite=args.limit,
                        batch_size=args.batch_size, revision=args.revision, device=args.device, dtype=args.dtype,
                        overrides={**_parse_overrides(args.set), **api_overrides(args)},
                        annotators=_annotator_args(args),
                        n_resamples=args.n_resamples, progress=not args.quiet, probes=args.probes,
                        probes_revision=args.probes_revision, mcas_reference=args.mcas_reference,
                        mcas_reference_revision=args.mcas_reference_revision, compile=args.compile)
    if outcome.main_process:
        _print_outcome(outcome)
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    from benchmark.runner import run_generation
    from benchmark.commands.external_models import api_overrides

    summary = run_generation(args.out, args.model, args.suites, args.limit, args.batch_size,
                             revision=args.revision, device=args.device, dtype=args.dtype,
                             overrides={**_parse_overrides(args.set), **api_overrides(args)}, progress=not args.quiet, probes=args.probes,
                             probes_revision=args.probes_revision, mcas_reference=args.mcas_reference,
                             mcas_reference_revision=args.mcas_reference_revision, compile=args.compile)
    print(summary.format())
    return 0


def _check_stage(run_dir: Path, stage: str) -> None:
    """One line naming the command to run first when the stage before has not finished."""
    from benchmark.runner.preflight import check_stage_inputs

    check_stage_inputs(run_dir, stage)


def _existing_run(path: str) -> Path:
    run_dir = Path(path)
    from benchmark.run_folder import CONFIG_FILE

    if not (run_dir / CONFIG_FILE).is_file():
        raise ValueError(f"{run_dir} is not a run folder (no run_config.json); make one with `t2ibench run`")
    from benchmark.runner.preflight import check_run_config_format

    check_run_config_format(run_dir)
    return run_dir


def _cmd_annotate(args: argparse.Namespace) -> int:
    from benchmark.runner.annotate import DEFAULT_BATCH_SIZE, annotate_run

    run_dir = _existing_run(args.run_dir)
    _check_stage(run_dir, "annotate")
    summary = annotate_run(run_dir, device=args.device, force=args.force, progress=not args.quiet,
                           suites=args.suites,
                           batch_size=_batch_size(args.batch_size, DEFAULT_BATCH_SIZE), annotators=_annotator_args(args),
                           verify=True)
    if args.quiet:  # with progress on, the stage prints its own summary line
        print(summary)
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from benchmark.runner.score import score_run

    run_dir = _existing_run(args.run_dir)
    _check_stage(run_dir, "score")
    results = score_run(run_dir, n_resamples=args.n_resamples, verify=True)
    if not any(s.get("status") == "scored" for s in results.get("suites", [])):
        from benchmark.terminal import print_error

        reasons = sorted({str(s.get("reason") or s.get("status")) for s in results.get("suites", [])})
        print_error(f"nothing scored in {run_dir}: {'; '.join(reasons) or 'no suites'} "
                    f"(`t2ibench annotate {run_dir}` writes the label files)")
        return 1
    print(f"wrote {run_dir / 'results.json'}")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from benchmark.run_folder_check import inspect_run_folder
    from benchmark.runner.expected import expected_problems

    check = inspect_run_folder(_existing_run(args.run_dir), expected=expected_problems)
    if check.ok:
        print(f"OK {check.run_dir}: {check.summary()} match their records")
        return 0
    width = max(len(p.kind) for p in check.problems)
    for p in check.problems:
        print(f"{p.kind:<{width}}  {p.line()}")
    print(f"{len(check.problems)} problem{'s' if len(check.problems) > 1 else ''} in {check.run_dir} "
          f"(checked {check.summary()}); "
          + ("no command repairs run_config.json: restore it, or start the run again in another folder"
             if any(p.kind == "run-config" for p in check.problems) else
             f"`t2ibench run` with the run's arguments repairs the images and the manifest, "
             f"`t2ibench annotate {check.run_dir}` the label files"))
    return 1


def _cmd_report(args: argparse.Namespace) -> int:
    from benchmark.runner.report import write_report

    run_dir = _existing_run(args.run_dir)
    _check_stage(run_dir, "report")
    print(f"wrote {write_report(run_dir)}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from benchmark.tasks.paper_checks import all_checks
    from benchmark.runner.pipeline import run_audit

    print("Offline audit of builtin:tiny-sd, a tiny random-weight model: its scores are meaningless and only show "
          "that every stage runs. For a real model: t2ibench run --model stable-diffusion-v1-5/stable-diffusion-v1-5 "
          "--out runs/sd15\n")
    outcome = run_audit(Path(args.out), "builtin:tiny-sd", None, limit_per_suite=args.limit,
                        batch_size=_batch_size(args.batch_size, 8), n_resamples=args.n_resamples, progress=not args.quiet)
    _print_outcome(outcome)
    checks = all_checks()
    passed = sum(c.passed for c in checks)
    print(f"\nPaper checks: {passed} of {len(checks)} printed numbers recomputed from the papers' printed inputs "
          "(`t2ibench reproduce` shows the table).")
    return 0 if passed == len(checks) else 1


ALIASES_EPILOG = ("lm-evaluation-harness spellings are accepted as aliases: --tasks a,b (--suites a b), "
                  "--output_path (--out), --model_args k=v,k=v (--set k=v), --batch_size N|auto (--batch-size).")


# Commands that live beside the feature they drive: each module has ``register(subparsers)``.
COMMAND_MODULES = (
    "benchmark.paintskills.cli",
    "benchmark.human.cli",
    "benchmark.human.agreement_command",
)
# Packages outside the core (submission and leaderboard, plugins) add their commands through
# this entry-point group, so the core never imports them.
COMMAND_ENTRY_POINTS = "t2ibench.commands"


def add_run_args(p: argparse.ArgumentParser, annotators: bool, images: bool = False) -> None:
    """The options of ``run`` and ``generate`` (``annotators``: and of the label stage; ``images``:
    ``--images DIR`` may stand for ``--model``)."""
    p.add_argument("--model", required=not images, help="builtin:tiny-sd, a Hub model ID, a local diffusers "
                   "folder, python:module:function (prompts, seeds -> PIL images), or an image API: "
                   "openai:dall-e-2, openai:dall-e-3, openai:gpt-image-1"
                   + (" (or --images DIR for images made elsewhere)" if images else ""))
    p.add_argument("--out", "--output_path", required=True, type=output_folder,
                   help="run folder (created; rerun the same command to resume); --output_path is the "
                   "lm-evaluation-harness spelling")
    p.add_argument("--suites", nargs="+", help="probe suites (default: every suite of the probe set; see "
                   "`t2ibench probes list`)")
    p.add_argument("--tasks", dest="suites", type=comma_list, action=cli_types.ExtendFlat, metavar="A,B",
                   help="alias of --suites, comma-separated as in lm-evaluation-harness")
    p.add_argument("--probes", metavar="SOURCE", help="the probe set: a folder from `t2ibench probes build` or a "
                   "Hub dataset ID (default: the built-in probes)")
    p.add_argument("--probes-revision", metavar="REV", help="with a Hub dataset ID: the revision to audit "
                   "(branch, tag or commit; recorded as the resolved commit)")
    p.add_argument("--mcas-reference", metavar="SOURCE", help="score MCAS / Generated Bias against the attribute "
                   "images of a reference-attributes dataset (a folder from `python -m "
                   "dataset_builders.reference_attributes` or a Hub dataset ID) instead of the model's own; "
                   "mcas_attributes is then not generated")
    p.add_argument("--mcas-reference-revision", metavar="REV", help="with a Hub dataset ID for --mcas-reference: "
                   "the revision (recorded as the resolved commit)")
    p.add_argument("--limit", type=positive_int, help="at most N probes per suite, spread over its prompts")
    p.add_argument("--batch-size", "--batch_size", type=batch_size, default=AUTO,
                   help="images per generation batch, or auto: the largest batch that fits a CUDA GPU's free "
                   "memory at the model's resolution, chosen once per run folder and recorded in run_config.json; "
                   "4 on a CPU, where images are made one per call (batch-invariant)")
    p.add_argument("--no-compile", dest="compile", action="store_false", default=None,
                   help="no torch.compile of the UNet (on by default on CUDA only: bf16, channels-last, fused QKV "
                   "projections and a compiled UNet with every batch padded to one static size; compile time "
                   "is reported apart from the time per image)")
    p.add_argument("--revision", help="model revision (branch, tag or commit)")
    p.add_argument("--device", type=cli_types.device, help="cpu, cuda, cuda:1 ... (default: the best available)")
    p.add_argument("--dtype", type=cli_types.dtype, help="float32, float16 or bfloat16 (default: per device)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="pipeline argument, e.g. --set num_inference_steps=30 --set guidance_scale=5")
    p.add_argument("--model_args", dest="set", type=model_args, action=cli_types.ExtendFlat, metavar="K=V,K=V",
                   help="alias of --set, comma-separated as in lm-evaluation-harness")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    if annotators:
        add_annotator_args(p)
        p.add_argument("--n-resamples", type=positive_int, default=1000, help="bootstrap resamples per CI")

def add_annotator_args(p: argparse.ArgumentParser) -> None:
    """The annotator options of ``run`` and ``annotate``."""
    p.add_argument("--encoder", help="CLIP encoder for GEP (default open_clip:ViT-L-14:openai; builtin:tiny-clip "
                   "for builtin models)")
    p.add_argument("--mcas-encoders", nargs="+", help="CLIP encoders averaged for MCAS / Diffusion Bias "
                   "(default: the six OpenAI CLIPs of Generated Bias)")
    p.add_argument("--vqa", help="VQA model for gender / attribute questions (default Salesforce/blip2-opt-2.7b)")
    p.add_argument("--detector", help="object detector for PaintSkills: a DETR Hub ID or folder (default "
                   "facebook/detr-resnet-50; builtin:tiny-detr for builtin models; a folder from "
                   "`t2ibench train-detector`), or none")
    p.add_argument("--vqa-mode", choices=("closed-set", "generate"), help="closed-set (default): score each "
                   "allowed answer by the VQA model's likelihood; generate: the papers' free-text answers, parsed")
    p.add_argument("--annotator", action="append", metavar="OPTION=MODEL",
                   help="any annotator option by name, a plugin's too (e.g. --annotator skin_tone=whole-image)")


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
    ann.set_defaults(func=_cmd_annotate)

    score = sub.add_parser("score", help="(re-)compute results.json from a run folder's labels",
                           description="Compute every score of a labelled run folder with its bootstrap "
                           "confidence interval and write results.json; exit 1 when nothing could be scored.")
    score.add_argument("run_dir", help="run folder with labels (after `t2ibench annotate`)")
    score.add_argument("--n-resamples", type=positive_int, default=1000, help="bootstrap resamples per CI")
    score.set_defaults(func=_cmd_score)

    ver = sub.add_parser("verify", help="check a run folder against its files (manifest, images' sha256, "
                         "orphans, label files); exit 1 when something does not match",
                         description="Check a run folder against its records: manifest, images' sha256, "
                         "orphan files, label files. Exit 1 when something does not match.")
    ver.add_argument("run_dir", help="run folder to check")
    ver.set_defaults(func=_cmd_verify)

    rep_cmd = sub.add_parser("report", help="(re-)write the report of a scored run folder",
                             description="Write the HTML report (tables and plots) of a scored run folder; "
                             "refuses a results.json that `t2ibench validate` refuses.")
    rep_cmd.add_argument("run_dir", help="scored run folder (with results.json)")
    rep_cmd.set_defaults(func=_cmd_report)

    demo = sub.add_parser("demo", help="offline audit of the built-in tiny model on every suite (what make demo runs)",
                          description="Offline audit of the built-in tiny random-weight model on every suite: "
                          "shows that every stage runs (its scores are meaningless).")
    demo.add_argument("--out", "--output_path", default="out/demo", type=output_folder, help="run folder")
    demo.add_argument("--limit", type=positive_int, default=16, help="probes per suite")
    demo.add_argument("--batch-size", "--batch_size", type=batch_size, default=8,
                      help="images per pipeline call: a number >= 1, or auto")
    demo.add_argument("--n-resamples", type=positive_int, default=200, help="bootstrap resamples per CI")
    demo.add_argument("--quiet", action="store_true", help="no progress bars")
    demo.set_defaults(func=_cmd_demo)


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(prog="t2ibench", description="Audit text-to-image models for social bias "
                               "and compositional skill.", epilog=ALIASES_EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {benchmark.__version__}")
    parser.add_argument("--plugin", action="append", metavar="MODULE", default=[],
                        help="import MODULE first: it may register suites, annotators, scores and tasks")
    sub = parser.add_subparsers(dest="command", required=True)

    probes = sub.add_parser("probes", help="list or build the probe datasets",
                            description="List the probe suites, or write them as a Hub-layout dataset folder.")
    psub = probes.add_subparsers(dest="probes_command", required=True)
    psub.add_parser("list", help="the suites with their row counts",
                    description="Every probe suite with its row count and paper.").set_defaults(func=_cmd_probes_list)
    build = psub.add_parser("build", help="write the probe suites as a Hub-layout dataset folder",
                            description="Write the probe suites as a Hub-layout dataset folder (one config per "
                            "suite) that datasets.load_dataset reads offline; optionally publish it.")
    add_probe_build_arguments(build)
    build.set_defaults(func=_cmd_probes_build)
    from benchmark.commands.probe_export import add_export_command

    add_export_command(psub)

    sub.add_parser("scores", help="every score with its range and direction",
                   description="Every score the benchmark computes: range, direction, paper.").set_defaults(
        func=_cmd_scores)

    rep = sub.add_parser("reproduce", help="recompute the papers' printed numbers from their printed inputs",
                         description="Recompute the numbers the papers print from the inputs they print; exit 1 "
                         "on a mismatch.")
    rep.add_argument("--papers", nargs="+", help="families to check (gep, dalleval, pst, mcas)")
    rep.add_argument("--all", action="store_true", help="list every recomputed number, not the summary")
    rep.set_defaults(func=_cmd_reproduce)

    from benchmark.commands.external_models import RUN_EPILOG, add_api_args, add_images_args

    run = sub.add_parser("run", help="audit a model end to end: generate, annotate, score, report",
                         description="Audit a model end to end: generate the probe images, label them, score\n"
                         "them with confidence intervals, write results.json and the report. Every option is\n"
                         "checked before the model loads; rerun the same command to resume.",
                         epilog=RUN_EPILOG, formatter_class=cli_types.RawDescriptionDefaultsHelpFormatter)
    add_run_args(run, annotators=True, images=True)
    add_api_args(run)
    add_images_args(run)
    run.set_defaults(func=_cmd_run)

    gen = sub.add_parser("generate", help="only generate the images of a run",
                         description="Only generate the probe images of a run folder (resumable); `t2ibench "
                         "annotate` and `t2ibench score` do the rest.")
    add_run_args(gen, annotators=False)
    add_api_args(gen)
    gen.set_defaults(func=_cmd_generate)

    add_stage_commands(sub)

    from importlib import import_module
    from importlib.metadata import entry_points

    for module in COMMAND_MODULES:
        import_module(module).register(sub)
    for ep in sorted(entry_points(group=COMMAND_ENTRY_POINTS), key=lambda e: e.name):
        ep.load()(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from benchmark.terminal import print_error, quiet_third_party

    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "quiet", False):
        quiet_third_party()
    try:
        if args.plugin:
            from benchmark.tasks import load_plugins

            load_plugins(args.plugin)
        return int(args.func(args) or 0)
    except ValueError as exc:
        print_error(exc)
        return 2
    except Exception as exc:
        from benchmark.hub import HubError

        if isinstance(exc, HubError):
            print_error(exc)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
