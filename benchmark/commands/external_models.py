"""The ``t2ibench run`` options for models the benchmark cannot load: a folder of images made
elsewhere (``--images``) and image-generation APIs (``--model openai:...``), and the check of an
API's endpoint that ``run`` and ``generate`` make before anything heavy loads
(:func:`check_api_first`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from benchmark.cli_types import RUN_FOLDER_MARK, positive_int

#: what ``run`` / ``generate`` check before the task folders and the heavy libraries load
#: (``benchmark.cli.main`` runs a command's ``prechecks``)
API_PRECHECK = (f"{__name__}:check_api_first",)

RUN_EPILOG = """\
Three ways to audit a model:
  --model SPEC                a pipeline the benchmark loads and runs (builtin:tiny-sd, a Hub
                              model ID, a local diffusers folder, python:module:function)
  --model openai:dall-e-2     an image-generation API speaking the OpenAI Images API
                              (also openai:dall-e-3, openai:gpt-image-1; --api-base for any
                              provider with the same API; key from $OPENAI_API_KEY or
                              --api-key-env, never written anywhere)
  --images DIR --model-name NAME
                              a folder of images you made elsewhere, named as the sheet of
                              `t2ibench probes export` (same --suites / --limit) says
"""


def add_api_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("image-generation API (--model openai:MODEL)")
    g.add_argument("--api-base", metavar="URL", help="base URL of an API speaking the OpenAI Images API "
                   "(default https://api.openai.com/v1)")
    g.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the key (default "
                   "OPENAI_API_KEY); the key is never written to any file, log or result")
    g.add_argument("--api-concurrency", type=positive_int, metavar="N", help="requests in flight at once (default 4; at most --batch-size: "
                   "the requests of one batch run together)")
    g.add_argument("--api-rpm", type=requests_per_minute, metavar="N", help="at most N requests started per minute "
                   "(default 60; a finite number, at least 0.01)")


def requests_per_minute(raw: str) -> float:
    """``--api-rpm``: a finite number of at least 0.01 per minute (nan, inf, 0, negatives and rates
    that would wait years are refused when the command line is parsed)."""
    from benchmark.models.api_images import check_rpm

    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of requests per minute, got {raw!r}") from None
    try:
        return check_rpm(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--api-rpm ")) from None


def add_images_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("images made elsewhere (--images DIR)")
    g.add_argument("--images", metavar="DIR", help="audit this folder of images instead of generating: one image "
                   "per row of `t2ibench probes export` with the same --suites / --limit, named as its file_name")
    g.add_argument("--model-name", metavar="NAME", help="with --images: the model's name in results and "
                   "leaderboard")
    g.add_argument("--mapping", metavar="CSV", help="with --images: a CSV probe_id,path (or probe_id,sample,path) "
                   "instead of the sheet's file names; paths relative to DIR")
    g.add_argument("--allow-missing", action="store_true", help="with --images: audit even when some probes have "
                   "no image (they are counted as missing in the results)")
    g.add_argument("--supplied-by", metavar="WHO", help="with --images: who made the images (shown in results and "
                   "leaderboard)")


def api_overrides(args: argparse.Namespace) -> dict:
    """The ``--api-*`` values, as the options the API model takes (None when not given)."""
    given = {"api_base": args.api_base, "api_key_env": args.api_key_env, "concurrency": args.api_concurrency,
             "rpm": args.api_rpm}
    given = {k: v for k, v in given.items() if v is not None}
    if given and not str(args.model or "").startswith("openai:"):
        flag = {"api_base": "--api-base", "api_key_env": "--api-key-env", "concurrency": "--api-concurrency",
                "rpm": "--api-rpm"}[next(iter(given))]
        raise ValueError(f"{flag} applies to an image API (--model openai:MODEL), not to {args.model or '--images'}")
    return given


def check_source(args: argparse.Namespace) -> None:
    """Exactly one of --model / --images; the --images options only with --images."""
    if args.images and args.model:
        raise ValueError("give --model (a model to generate with) or --images (images made elsewhere), not both")
    if not args.images and not args.model:
        raise ValueError("give --model SPEC (a pipeline or an image API) or --images DIR --model-name NAME "
                         "(images made elsewhere)")
    stray = [f for f, v in (("--model-name", args.model_name), ("--mapping", args.mapping),
                            ("--allow-missing", args.allow_missing), ("--supplied-by", args.supplied_by)) if v]
    if stray and not args.images:
        raise ValueError(f"{stray[0]} goes with --images DIR")


def parse_overrides(values: list[str] | None) -> dict:
    """``--set KEY=VALUE`` items as a mapping (values read as YAML: 30 -> int, 7.5 -> float)."""
    out = {}
    for v in values or []:
        key, sep, raw = v.partition("=")
        if not sep or not key:
            raise ValueError(f"--set takes KEY=VALUE (a pipeline argument such as num_inference_steps=30), got {v!r}")
        out[key] = yaml.safe_load(raw)
    return out


def generation_finished(run_dir: str | Path) -> bool:
    """Whether RUN_DIR holds as many generated images as its run_config.json asked for (read
    without pandas: counting the batches' metadata rows), so a rerun requests no image."""
    run_dir = Path(run_dir)
    try:
        wanted = json.loads((run_dir / RUN_FOLDER_MARK).read_text(encoding="utf-8")).get("n_probes")
    except (OSError, ValueError, AttributeError):
        return False
    if not isinstance(wanted, int) or isinstance(wanted, bool):
        return False
    done = 0
    for meta in run_dir.glob("images/b*/metadata.jsonl"):  # benchmark.contract.run_folder's batch layout
        try:
            done += sum(1 for line in meta.read_text(encoding="utf-8").splitlines() if line.strip())
        except (OSError, UnicodeDecodeError):
            return False
    return done >= wanted


def check_api_first(args: argparse.Namespace) -> None:
    """``run`` / ``generate`` of an image API (``--model openai:NAME``): its options and its
    endpoint (``GET /models``: the URL, the key, the model), checked before the task folders and
    the heavy libraries load, so an unreachable or misspelt ``--api-base`` is refused in about a
    second (it took 7-11 s when the check waited for diffusers and torch); nothing to do for
    another model, or for a rerun whose images are all made. A one-line ValueError."""
    model = str(getattr(args, "model", None) or "")
    if not model.startswith("openai:") or getattr(args, "images", None) or generation_finished(args.out):
        return
    from benchmark.models.api_images import check_api_endpoint

    check_api_endpoint(model.split(":", 1)[1], {**parse_overrides(args.set), **api_overrides(args)})
