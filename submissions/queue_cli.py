"""``t2ibench request`` (ask for a model to be audited) and ``t2ibench worker`` (the
maintainers' GPU workers that audit the queue). See docs/queue.md."""

from __future__ import annotations

import argparse
import getpass
import signal
import sys
from pathlib import Path

from benchmark import cli_types
from benchmark.cli_types import batch_size, n_resamples, output_folder, positive_int, seconds, whole_number
from benchmark.contract.digest import sha256_hex
from benchmark.hub.access import check_access, require_hub
from benchmark.models.cuda_speed import OFFLOAD_MODES
from submissions.requests import DTYPES, GENERATION_SETTINGS, InvalidRequest
from submissions.worker_options import MAX_ATTEMPTS, MAX_HEARTBEAT_S, MAX_POLL_S

EXIT_OK, EXIT_FAILED = 0, 1


def parse_settings(values: list[str] | None) -> dict:
    """``--set KEY=VALUE`` pairs (values read as YAML: 30 -> int, 7.5 -> float); checked by the record."""
    import yaml

    out = {}
    for value in values or []:
        key, sep, raw = value.partition("=")
        if not sep or not key:
            raise InvalidRequest(f"--set takes KEY=VALUE with KEY one of {', '.join(GENERATION_SETTINGS)}, "
                                 f"got {value!r}")
        try:
            out[key.strip()] = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise InvalidRequest(f"--set {key}: cannot read {raw!r} as a value") from None
    return out


# --------------------------------------------------------------------------- request


def _submitter(args: argparse.Namespace) -> str:
    if args.submitter:
        return args.submitter
    if args.repo and not args.dry_run:
        return check_access(args.repo, require_hub(args.repo, args.token, action="write requests to"),
                            action="write requests to")
    return getpass.getuser()


def _cmd_request(args: argparse.Namespace) -> int:
    from submissions.request_checks import (RateLimit, build_request, check_request_options, resolve_base,
                                            resolve_lora, resolve_model, submit_request)
    from submissions.request_store import open_store

    rate_limit = RateLimit(max_open=args.max_open, max_per_day=args.max_per_day)
    settings = parse_settings(args.set)
    # the model's options as `t2ibench run` checks them, before the queue or the Hub is asked
    options = check_request_options(args.model_id, demo=args.demo, loras=args.lora, options={
        "base": args.base, "quantization": args.quantize, "lora_unet_only": args.lora_unet_only,
        "lora_trigger": args.lora_trigger})
    store = open_store(args.to_folder, args.repo, token=args.token, write=not args.dry_run)
    submitter = _submitter(args)  # a Hub queue: proves the token before anything else
    api = getattr(store, "api", None)
    model = resolve_model(args.model_id, args.revision, demo=args.demo, api=api, base=options["base"])
    if args.lora and model.demo:
        raise InvalidRequest("--lora: a demo request (built-in model) takes no LoRA")
    loras = [resolve_lora(ref, api) for ref in args.lora or ()]
    options["base"] = resolve_base(options["base"], api)
    record = build_request(model, submitter=submitter, dtype=args.dtype, settings=settings, loras=loras,
                           options=options)
    stored = submit_request(store, record, rate_limit=rate_limit, dry_run=args.dry_run)
    data = record.dumps()
    where = (f"{Path(args.to_folder) / stored.path}" if args.to_folder
             else f"{stored.path} in dataset {args.repo}")
    if args.dry_run:
        parent = f", parent_commit {stored.version}" if args.repo else ""
        print("DRY RUN: nothing is written.\n")
        print(f"would write {where}  ({len(data)} bytes, sha256 {sha256_hex(data)}{parent})\n")
        print(data.decode("utf-8"), end="")
        return EXIT_OK
    if model.demo:
        print("demo request: built-in tiny model, meaningless scores")
    model_name = f"hf://{record.model_id}/{record.file}" if record.file else record.model_id
    print(f"queued {model_name} @ {record.revision} (commit {record.commit}) as PENDING: {where}")
    print(f"request id: {record.request_id}")
    return EXIT_OK


# --------------------------------------------------------------------------- worker


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def _cmd_worker(args: argparse.Namespace) -> int:
    from submissions.request_store import open_store
    from submissions.worker import work_forever, work_once
    from submissions.worker_options import WorkerOptions, default_worker_id

    opts = WorkerOptions(
        worker_id=args.worker_id or default_worker_id(), runs_dir=Path(args.runs_dir), results_repo=args.results,
        results_folder=args.results_folder, images_repo=args.images, heartbeat_timeout=args.heartbeat_timeout,
        max_attempts=args.max_attempts, suites=args.suites, limit_per_suite=args.limit, batch_size=args.batch_size,
        device=args.device, compile=args.compile, offload=args.offload, n_resamples=args.n_resamples,
        progress=not args.quiet, token=args.token, probes=args.probes, probes_revision=args.probes_revision)
    from benchmark.probes.source import open_probe_set

    # the probe set and its suites are checked once, before the first claim
    open_probe_set(args.probes, args.probes_revision).check_suites(args.suites or [])
    # Every Hub check (token, offline mode, access) before the first claim.
    for repo, action in ((args.results, "post results to"), (args.images, "push images to")):
        if repo:
            check_access(repo, require_hub(repo, args.token, action=action), action=action)
    store = open_store(args.requests_folder, args.requests, token=args.token)

    # SIGTERM (a stopped container, a scheduler) hands the running request back like Ctrl+C.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.once:
            outcome = work_once(store, opts)
            return EXIT_FAILED if outcome.status == "failed" else EXIT_OK
        work_forever(store, opts, poll=args.poll)
    except KeyboardInterrupt:
        print(f"worker {opts.worker_id}: stopped", file=sys.stderr)
        return 130
    return EXIT_OK


# --------------------------------------------------------------------------- registration


def register(subparsers) -> None:
    """Add ``request`` and ``worker`` to the ``t2ibench`` subparsers."""
    _register_request(subparsers)
    _register_worker(subparsers)


def _register_request(subparsers) -> None:
    req = subparsers.add_parser("request", help="ask the maintainers' workers to audit a Hub model (a request "
                                "in the requests dataset, or a local requests folder)")
    req.add_argument("model_id", metavar="MODEL_ID", help="Hub model id ORG/NAME, or a single-file checkpoint on the "
                     "Hub hf://ORG/NAME[@REV]/FILE.safetensors (or .gguf; with --base, or the base its repo or card "
                     "names); builtin:tiny-sd with --demo")
    where = req.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", metavar="ORG/REQUESTS", help="Hub requests dataset to commit the request to")
    where.add_argument("--to-folder", metavar="Q", type=output_folder,
                       help="local requests folder (written as requests/... under it)")
    req.add_argument("--revision", help="branch, tag or commit (default main); resolved to a commit now")
    req.add_argument("--dtype", choices=DTYPES, help="weights dtype (default: per device)")
    req.add_argument("--lora", action="append", metavar="ORG/NAME[@REV][/FILE][:SCALE]", type=cli_types.lora_reference,
                     help="a LoRA on the Hub loaded onto the model and fused (repeatable, in order); resolved to a "
                     "commit now. The base with LoRAs is another request, audit and leaderboard row")
    req.add_argument("--lora-trigger", nargs="?", const=True, default=None, metavar="TEXT",
                     help="put the LoRAs' trigger before every probe's prompt, as `t2ibench run --lora-trigger`: "
                     "alone, the instance_prompt their cards name; with TEXT, that text")
    req.add_argument("--lora-unet-only", action="store_true", help="apply the LoRAs' UNet / transformer layers and "
                     "skip their text-encoder layers, recorded (as `t2ibench run --lora-unet-only`)")
    req.add_argument("--base", metavar="ORG/NAME", help="with a single-file checkpoint: the diffusers model on the Hub "
                     "whose configs read it (as `t2ibench run --base`; default: the file's repo when it is a "
                     "pipeline, else its card's base_model)")
    req.add_argument("--quantize", metavar="BACKEND:SCHEME", help="quantize the denoiser as it loads, as `t2ibench "
                     "run --quantize` (torchao:int8wo, bnb:4bit ...); what runs depends on the workers' machines")
    req.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help=f"generation setting, one of {', '.join(GENERATION_SETTINGS)} (default: the model "
                     "family's, docs/models.md)")
    req.add_argument("--submitter", metavar="NAME",
                     help="your name in the queue (default: the Hub user of the token; locally "
                     "the login name)")
    req.add_argument("--dry-run", action="store_true", help="check everything and print the request; write nothing")
    req.add_argument("--demo", action="store_true", help="allow a built-in tiny model (meaningless scores), to try "
                     "the queue offline")
    req.add_argument("--max-open", type=positive_int, default=3, metavar="N", help="rate limit: pending or running requests per "
                     "submitter (default 3)")
    req.add_argument("--max-per-day", type=positive_int, default=10, metavar="N",
                     help="rate limit: requests per submitter in 24 h "
                     "(default 10)")
    req.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    req.set_defaults(func=_cmd_request)


def _register_worker(subparsers) -> None:
    wk = subparsers.add_parser("worker", help="audit the requests of a queue (maintainers, on GPU machines)")
    queue = wk.add_mutually_exclusive_group(required=True)
    queue.add_argument("--requests", metavar="ORG/REQUESTS", help="Hub requests dataset")
    queue.add_argument("--requests-folder", metavar="Q", help="local requests folder")
    results = wk.add_mutually_exclusive_group(required=True)
    results.add_argument("--results", metavar="ORG/RESULTS", help="Hub results dataset: a pull request per audit")
    results.add_argument("--results-folder", metavar="R", type=output_folder, help="local results folder (the "
                         "layout of `t2ibench submit --to-folder`; checked writable before any request is claimed)")
    wk.add_argument("--images", metavar="ORG/NAME", help="push each audit's images to the Hub dataset "
                    "ORG/NAME-<model>-<commit>")
    wk.add_argument("--runs-dir", default="runs/queue", metavar="DIR", type=output_folder,
                    help="run folders, one per request id (default runs/queue); "
                    "a restarted worker resumes its folder")
    wk.add_argument("--once", action="store_true", help="one round: re-queue, claim and audit at most one request")
    wk.add_argument("--heartbeat-timeout", type=seconds(1, MAX_HEARTBEAT_S), default=1800.0, metavar="S",
                    help="a RUNNING request without a heartbeat for S seconds is re-queued (default 1800); "
                    "this worker beats every S/4")
    wk.add_argument("--max-attempts", type=whole_number(1, MAX_ATTEMPTS), default=3, metavar="N",
                    help="abandoned runs before a request FAILS (default 3)")
    wk.add_argument("--poll", type=seconds(0.1, MAX_POLL_S), default=60.0, metavar="S", help="seconds between rounds when the queue "
                    "is empty (default 60)")
    wk.add_argument("--worker-id", metavar="ID",
                    help="this worker's name in the records (default HOST-PID); unique per worker")
    wk.add_argument("--suites", nargs="+", help="probe suites to run (default: every suite of the probe set)")
    wk.add_argument("--probes", metavar="SOURCE", help="the probe set every request is audited on: the leaderboard's "
                    "published probe dataset (a Hub dataset ID) or a folder (default: the built-in probes)")
    wk.add_argument("--probes-revision", metavar="REV", help="with a Hub probe dataset: the revision to audit")
    wk.add_argument("--limit", type=positive_int, metavar="N", help="at most N probes per suite (default: all; for trials)")
    wk.add_argument("--batch-size", type=batch_size, metavar="N|auto",
                    help="images per pipeline call, or auto (default, as `t2ibench run`: the largest batch that fits "
                    "a CUDA GPU; 4 on a CPU)")
    wk.add_argument("--no-compile", dest="compile", action="store_false", default=None,
                    help="no torch.compile of the models that denoise (on by default on CUDA, as `t2ibench run`)")
    wk.add_argument("--offload", choices=OFFLOAD_MODES, default=None,
                    help="diffusers' CPU offload: auto (default: only for models whose weights do not fit the GPU), "
                    "none, model or sequential, as `t2ibench run`")
    wk.add_argument("--device", type=cli_types.device, help="cpu, cuda, cuda:1 ... (default: the best available)")
    wk.add_argument("--n-resamples", type=n_resamples, default=1000, metavar="N",
                    help="bootstrap resamples per CI (default 1000)")
    wk.add_argument("--quiet", action="store_true", help="no progress bars")
    wk.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    wk.set_defaults(func=_cmd_worker)
