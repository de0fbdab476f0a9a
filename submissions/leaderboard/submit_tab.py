"""The leaderboard's "Submit a model" tab and its view of the requests queue, and the
provenance helpers (self-reported vs evaluated by the maintainers' workers).

``add_submit_tab(store, oauth=...)`` adds the tab inside an open ``gr.Blocks`` (inside its
``gr.Tabs`` when there is one). The submitter is the Hugging Face user logged in with
``gr.LoginButton`` on a Space (``oauth=True``; the Space's README needs ``hf_oauth: true``),
or a configured name for local use. The checks are those of ``t2ibench request``
(:mod:`submissions.request_checks`).

Escaping: everything shown comes from requests written by others. Table cells are plain
text (Gradio renders Dataframe strings as text); Markdown text goes through
:func:`benchmark.present.text.md_escape`, the project's one escaper. No HTML is built here.
"""

import getpass
import os
from collections.abc import Callable, Mapping
from typing import Any, Optional

import gradio as gr
import pandas as pd

from benchmark.hub.access import HubError
from benchmark.present.text import md_escape
from submissions.request_checks import RateLimit, RequestRefused, build_request, resolve_model, submit_request
from submissions.request_store import RequestStore, Snapshot, open_store
from submissions.requests import (
    DTYPES,
    FAILED,
    FINISHED,
    GENERATION_SETTINGS,
    PENDING,
    RUNNING,
    STATUSES,
    InvalidRequest,
    RequestRecord,
)

TAB_TITLE = "Submit a model"
QUEUE_COLUMNS = ["Model", "Revision", "Commit", "Submitter", "Submitted (UTC)", "Worker", "Last update (UTC)",
                 "Attempts", "Results or reason"]
# widths that keep short columns (Attempts) on one line instead of wrapping letter by letter
QUEUE_WIDTHS = ["220px", "90px", "110px", "110px", "150px", "110px", "150px", "90px", "260px"]
MAX_ROWS_PER_STATUS = 200
INTRO = ("Ask for a model to be audited: the maintainers' GPU workers take requests in order, run the whole "
         "benchmark on the model at the commit its revision points to now, and post the results to the "
         "leaderboard, marked *evaluated by the maintainers' worker*. The model must be a public diffusers "
         "text-to-image pipeline on the Hugging Face Hub. One request per model commit. Results you computed "
         "yourself go another way: `t2ibench submit` opens a pull request (shown as *self-reported*).")


# --------------------------------------------------------------------------- the queue view


def _time(value: Optional[str]) -> str:
    return (value or "").replace("T", " ").removesuffix("Z")[:19]


def runs_started(rec: RequestRecord) -> int:
    """Runs of the request so far: the abandoned ones (``attempts``) and the current or last one,
    unless the request waits for its next run or failed by being abandoned (then counted)."""
    abandoned_last = rec.status == FAILED and (rec.failure_reason or "").startswith("abandoned")
    return rec.attempts + (0 if rec.status == PENDING or abandoned_last else 1)


def queue_row(rec: RequestRecord) -> dict:
    result = {FINISHED: rec.results_url or rec.results_path or "", FAILED: rec.failure_reason or ""}.get(rec.status, "")
    return {
        "Model": rec.model_label + (" [demo]" if rec.demo else ""), "Revision": rec.revision, "Commit": rec.commit[:12],
        "Submitter": rec.submitter, "Submitted (UTC)": _time(rec.submitted_at), "Worker": rec.worker_id or "",
        "Last update (UTC)": _time(rec.finished_at or rec.heartbeat_at), "Attempts": runs_started(rec),
        "Results or reason": result,
    }


def queue_tables(snapshot: Snapshot) -> dict[str, pd.DataFrame]:
    """One table per status: pending and running oldest first (the order workers take them),
    finished and failed newest first."""
    tables = {}
    for status in STATUSES:
        found = snapshot.by_status(status)
        if status in (FINISHED, FAILED):
            found = sorted(found, key=lambda s: (s.record.finished_at or "", s.path), reverse=True)
        rows = [queue_row(s.record) for s in found[:MAX_ROWS_PER_STATUS]]
        tables[status] = pd.DataFrame(rows, columns=QUEUE_COLUMNS)
    return tables


def invalid_markdown(snapshot: Snapshot) -> str:
    if not snapshot.invalid:
        return ""
    lines = [f"- {md_escape(path)}: {md_escape(problem)}" for path, problem in snapshot.invalid]
    head = f"**{len(snapshot.invalid)} file(s) in the queue are not valid requests** (never run):"
    return head + "\n\n" + "\n".join(lines)


def _heading(status: str, n: int) -> str:
    return f"#### {status.capitalize()} ({n})"


# --------------------------------------------------------------------------- submitting


def form_settings(fields: Mapping[str, Any]) -> dict:
    """The settings typed in the form (text; blank = the model's default) as numbers, unchecked."""
    out = {}
    for key, raw in fields.items():
        text = "" if raw is None else str(raw).strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            raise InvalidRequest(f"{key}: {text!r} is not a number") from None
        kind = GENERATION_SETTINGS[key][0] if key in GENERATION_SETTINGS else float
        out[key] = int(value) if kind is int and value.is_integer() else value
    return out


def submit_from_form(store: RequestStore, submitter: Optional[str], model_id: str, revision: str, dtype: str,
                     settings: Mapping[str, Any], *, allow_demo: bool, rate_limit: RateLimit,
                     hub_api: Any = None) -> str:
    """Check and queue one request from the form; the Markdown message to show (escaped)."""
    if not submitter:
        return "**Not queued**: log in with Hugging Face first."
    model_id = (model_id or "").strip()
    builtin = model_id.startswith("builtin:")
    if builtin and not allow_demo:
        return "**Not queued**: built-in tiny models are for trying the queue locally, not for this leaderboard."
    revision = (revision or "").strip() or None
    if builtin and revision == "main":
        revision = None  # a built-in model has one revision; the form's default names none
    try:
        values = form_settings(settings)
        model = resolve_model(model_id, revision, demo=builtin, api=hub_api)
        record = build_request(model, submitter=submitter, dtype=dtype or None, settings=values)
        submit_request(store, record, rate_limit=rate_limit)
    except (InvalidRequest, RequestRefused, HubError, ValueError) as exc:
        return f"**Not queued**: {md_escape(exc)}"
    demo = " (demo: built-in tiny model, meaningless scores)" if record.demo else ""
    return (f"**Queued** {md_escape(record.model_label)} at commit `{record.commit}` as PENDING{demo}. "
            f"Request id: {md_escape(record.request_id)}.")


def submit_handler(store: RequestStore, *, oauth: bool, submitter: Optional[str], allow_demo: bool,
                   rate_limit: RateLimit, hub_api: Any = None, after: Callable[[], list] = list) -> Callable:
    """The Submit button's function: (model, revision, dtype, the settings[, profile]) -> [message, *after()].

    With ``oauth`` its last parameter is annotated ``gr.OAuthProfile``, so Gradio passes the
    logged-in user (None when nobody is); otherwise the submitter is ``submitter``.
    """
    keys = list(GENERATION_SETTINGS)
    assert keys == ["num_inference_steps", "guidance_scale", "height", "width"], keys  # the parameters below

    def submit(name, model_v, revision_v, dtype_v, settings_v) -> list:
        message_v = submit_from_form(store, name, model_v, revision_v, dtype_v, dict(zip(keys, settings_v)),
                                     allow_demo=allow_demo, rate_limit=rate_limit, hub_api=hub_api)
        return [message_v] + after()

    if oauth:
        def on_submit(model_v, revision_v, dtype_v, steps, guidance, height, width,
                      profile: Optional[gr.OAuthProfile]):
            name = getattr(profile, "username", None) if profile is not None else None
            return submit(name, model_v, revision_v, dtype_v, [steps, guidance, height, width])
    else:
        def on_submit(model_v, revision_v, dtype_v, steps, guidance, height, width):
            return submit(submitter, model_v, revision_v, dtype_v, [steps, guidance, height, width])
    return on_submit


def add_submit_tab(store: RequestStore, *, oauth: bool, submitter: Optional[str] = None, allow_demo: bool = False,
                   rate_limit: RateLimit = RateLimit(), hub_api: Any = None) -> gr.Tab:
    """Add the "Submit a model" tab (form and queue view) to the ``gr.Blocks`` being built.

    ``oauth``: the submitter is the logged-in Hugging Face user (a Space with ``hf_oauth``);
    otherwise ``submitter`` (default: the login name of the process). ``allow_demo``
    accepts ``builtin:tiny-sd`` (meaningless scores), for trying the queue locally.
    ``hub_api``: the ``HfApi`` used to check models (default: a new one).
    """
    if not oauth:
        submitter = submitter or getpass.getuser()
    with gr.Tab(TAB_TITLE, id="submit") as tab:
        gr.Markdown(INTRO)
        if oauth:
            gr.LoginButton()
        else:
            gr.Markdown(f"Submitting as **{md_escape(submitter)}** (configured for this server).",
                        elem_id="rq-submitter")
        with gr.Row():
            model = gr.Textbox(label="Model ID on the Hub (ORG/NAME)", placeholder="stabilityai/sdxl-turbo",
                               elem_id="rq-model", scale=3)
            revision = gr.Textbox(label="Revision (branch, tag or commit; resolved to a commit now)", value="main",
                                  elem_id="rq-revision", scale=2)
            dtype = gr.Dropdown(choices=[("default (per device)", "")] + [(d, d) for d in DTYPES], value="",
                                label="dtype", elem_id="rq-dtype", scale=1)
        with gr.Row():
            setting_fields = []
            for key in GENERATION_SETTINGS:
                kind, low, high, multiple = GENERATION_SETTINGS[key]
                step = f", multiple of {multiple}" if multiple else ""
                # Text, not gr.Number: a blank number field arrives as 0, a valid guidance_scale.
                setting_fields.append(gr.Textbox(value="", label=f"{key} ({low:g} to {high:g}{step})",
                                                 placeholder="blank: the model family's default",
                                                 elem_id=f"rq-{key}"))
        button = gr.Button("Submit for evaluation", variant="primary", elem_id="rq-submit")
        message = gr.Markdown("", elem_id="rq-message")

        gr.Markdown("### Queue")
        refresh = gr.Button("Refresh queue", size="sm", elem_id="rq-refresh")
        invalid = gr.Markdown("", elem_id="rq-invalid")
        headings, tables = [], []
        for status in STATUSES:
            headings.append(gr.Markdown(_heading(status, 0), elem_id=f"rq-heading-{status.lower()}"))
            tables.append(gr.Dataframe(value=pd.DataFrame(columns=QUEUE_COLUMNS), interactive=False, wrap=True,
                                       column_widths=QUEUE_WIDTHS, elem_id=f"rq-queue-{status.lower()}"))

    def queue_updates() -> list:
        try:
            snapshot = store.snapshot()
        except (HubError, ValueError, OSError) as exc:
            return [f"**Cannot read the queue**: {md_escape(exc)}"] + [gr.update()] * (2 * len(STATUSES))
        frames = queue_tables(snapshot)
        out: list = [invalid_markdown(snapshot)]
        out += [_heading(s, len(snapshot.by_status(s))) for s in STATUSES]
        out += [frames[s] for s in STATUSES]
        return out

    outputs = [invalid, *headings, *tables]

    on_submit = submit_handler(store, oauth=oauth, submitter=submitter, allow_demo=allow_demo,
                               rate_limit=rate_limit, hub_api=hub_api, after=queue_updates)
    button.click(on_submit, inputs=[model, revision, dtype, *setting_fields], outputs=[message, *outputs])
    refresh.click(queue_updates, inputs=None, outputs=outputs)
    tab.select(queue_updates, inputs=None, outputs=outputs)
    return tab


# --------------------------------------------------------------------------- the app's configuration


def open_requests(requests_dir: Any = None, requests_repo: Optional[str] = None) -> Optional[RequestStore]:
    """The requests store of the app (None when neither is given: no Submit tab)."""
    if requests_dir is None and requests_repo is None:
        return None
    return open_store(requests_dir, requests_repo)


def options_from_env(env: Callable[[str], Optional[str]] = os.environ.get) -> dict:
    """``add_submit_tab`` options: Hugging Face login on a Space (``SPACE_ID`` is set there),
    else the submitter ``REQUESTS_SUBMITTER``; ``REQUESTS_DEMO=1`` accepts built-in models;
    ``REQUESTS_MAX_OPEN`` / ``REQUESTS_MAX_PER_DAY`` set the rate limit."""
    def count(name: str, default: int) -> int:
        raw = env(name)
        try:
            return int(raw) if raw else default
        except ValueError:
            raise ValueError(f"{name} must be a whole number, got {raw!r}") from None

    return {
        "oauth": bool(env("SPACE_ID")),
        "submitter": env("REQUESTS_SUBMITTER") or None,
        "allow_demo": (env("REQUESTS_DEMO") or "").strip().lower() in ("1", "true", "yes"),
        "rate_limit": RateLimit(max_open=count("REQUESTS_MAX_OPEN", RateLimit.max_open),
                                max_per_day=count("REQUESTS_MAX_PER_DAY", RateLimit.max_per_day)),
    }


# Provenance lives in submissions.provenance (no Gradio there: the data layer uses it too).
from submissions.provenance import (  # noqa: E402
    PROVENANCE_CHOICES,
    PROVENANCE_SELF,
    PROVENANCE_WORKER,
    filter_by_provenance,
    finished_requests,
    provenance,
)


__all__ = [
    "PENDING", "RUNNING", "FINISHED", "FAILED", "PROVENANCE_CHOICES", "PROVENANCE_SELF", "PROVENANCE_WORKER",
    "add_submit_tab", "filter_by_provenance", "finished_requests", "open_requests",
    "options_from_env", "provenance", "queue_tables", "submit_from_form",
]
