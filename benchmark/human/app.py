"""The annotation app: one image and one of the papers' questions at a time (Gradio 6 Blocks).

Every click is appended to ``RUN_DIR/human_labels/answers.jsonl`` on the server before the
next item is shown (:mod:`benchmark.human.answers_file`), and the page keeps no state of its own:
reloading the page, closing the browser or restarting the server resumes at the first
item the annotator has neither answered nor skipped.

Fit to be reachable by anyone:

* **Identity comes from a login**, never from the page. ``users``: Gradio's login page
  checks a users file of scrypt hashes (:mod:`benchmark.human.users`) and the annotator is
  ``gr.Request.username``; ``oauth``: "Sign in with Hugging Face" on a Space, the annotator
  is the ``gr.OAuthProfile`` username; ``local``: no login, a fixed name, and the server
  listens on the loopback address only. Every handler takes its annotator from the login,
  so one user can neither answer as nor undo for another.
* **Only the shown images are served**: an item's PNG is read (only if it resolves inside
  ``RUN_DIR/images/``) and handed to Gradio as a picture, which Gradio writes into a cache
  folder of this app alone; no run folder path is ever given to Gradio to serve, and the
  run folder is in ``blocked_paths``. Uploads are refused (``max_file_size=0``).
* **The API is the page's**: every event is ``api_visibility="private"`` (not listed, not
  callable by ``gradio_client``), and each handler checks what it is given: the item is
  the one the server showed this annotator, the answer one of that question's options.
"""

from __future__ import annotations

import atexit
import ipaddress
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from benchmark.extras import require_gradio

require_gradio(purpose="run the annotation app")

import gradio as gr  # noqa: E402
from PIL import Image  # noqa: E402

from benchmark.contract.run_folder import IMAGES_DIR
from benchmark.human import questions as Q
from benchmark.human.answers_file import ANSWERS_FILE, LABELS_DIR, append_event, read_events, skipped_text
from benchmark.human.events import check_annotator
from benchmark.human.items import Item, build_items, event_for, image_in_run
from benchmark.human.question_types import QUESTION_TYPES
from benchmark.human.qualification import (QualificationItems, load_qualification, qualification_items,
                                           qualification_status, save_qualification)
from benchmark.human.plan import plan_markdown, plan_rows, read_pilot
from benchmark.human.replay import done_item_ids, undo_last
from benchmark.human.sample import run_sample, sample_items

#: Answer buttons other than the swatches: value -> elem_id.
ANSWER_BUTTONS = {v: "ans-" + v.replace(" ", "-") for v in
                  (Q.YES, Q.NO, Q.FEMININE, Q.MASCULINE, Q.MALE, Q.FEMALE, Q.CANNOT_IDENTIFY)}
SWATCH_BUTTONS = {t: f"ans-{t}" for t in Q.MONK_TONES}
#: Keyboard shortcuts: key -> the elem_ids it clicks (the first one visible).
SHORTCUTS = {"y": ["ans-yes"], "n": ["ans-no"], "f": ["ans-feminine", "ans-female"],
             "m": ["ans-masculine", "ans-male"], "c": ["ans-cannot-identify"], "s": ["skip"], "u": ["undo"],
             **{t[-1]: [SWATCH_BUTTONS[t]] for t in Q.MONK_TONES}}  # 1..9, and 0 for 10
SHORTCUT_HELP = ("**Keyboard:** `y` / `n` yes / no; `f` / `m` feminine (female) / masculine (male); "
                 "`c` cannot identify; `1`-`9`, `0` Monk tone 1-10; `s` skip; `u` undo the last answer. "
                 "Keys do nothing while you type in a text box.")

#: How the annotator is known: a users file, Hugging Face OAuth, or no login (one local annotator).
AUTH_MODES = ("users", "oauth", "local")
LOCAL_ANNOTATOR = "local"
NO_LOGIN = ("annotate-ui needs a login: --users USERS_FILE (add users with `t2ibench annotate-user USERS_FILE "
            "NAME`), --oauth on a Hugging Face Space, or --no-auth for a single annotator on this machine "
            "(127.0.0.1 only)")

_KEY_SCRIPT = """
<script>
(() => {
  const shortcuts = %s;
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || e.repeat) return;
    const t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    const ids = shortcuts[e.key.toLowerCase()];
    if (!ids) return;
    for (const id of ids) {
      const el = document.getElementById(id);
      const button = el && (el.tagName === "BUTTON" ? el : el.querySelector("button"));
      if (button && button.offsetParent !== null && !button.disabled) {
        e.preventDefault();
        button.click();
        return;
      }
    }
  });
})();
</script>
"""


def _swatch_css() -> str:
    # Small generated images (the tiny demo model's are 64 px) are scaled up to the frame.
    rules = ["#item-image img { width: 100%; height: 100%; object-fit: contain; image-rendering: pixelated; }"]
    for tone, elem_id in SWATCH_BUTTONS.items():
        text = "#000" if int(tone) <= 5 else "#fff"
        rules.append(f"#{elem_id} {{ background: {Q.swatch_hex(tone)} !important; color: {text} !important; "
                     f"min-height: 3.2em; font-weight: bold; }}")
    return "\n".join(rules)


def _stderr(message: str) -> None:
    print(f"t2ibench: {message}", file=sys.stderr, flush=True)


class AnnotationApp:
    """The items of one run and the handlers of the page; :meth:`build` makes the Blocks."""

    def __init__(self, run_dir: str | Path, question_types: Sequence[str] | None = None,
                 qualification: str | Path | QualificationItems | None = None, *,
                 attributes: Sequence[str] | None = None, suites: Sequence[str] | None = None,
                 auth: str = "users", local_annotator: str = LOCAL_ANNOTATOR,
                 log: Callable[[str], None] = _stderr, sample: int | None = None, sample_seed: int = 0):
        if auth not in AUTH_MODES:
            raise ValueError(f"auth must be one of {list(AUTH_MODES)}, got {auth!r}")
        self.run_dir = Path(run_dir)
        self.auth = auth
        self.local_annotator = check_annotator(local_annotator)
        self.log = log
        self.qual = None
        if qualification is not None:
            self.qual = (qualification if isinstance(qualification, QualificationItems)
                         else load_qualification(qualification))
        # The qualification file's own images are the only files outside RUN_DIR/images/ shown:
        # the operator named them.
        self._qual_files = {Path(qi.image).resolve() for qi in (self.qual or []) if qi.image}
        qual_items = qualification_items(self.run_dir, self.qual) if self.qual else []
        run_items = build_items(self.run_dir, question_types, attributes=attributes, suites=suites)
        # A calibration sample: only its images, in its random order (benchmark.human.sample)
        self.sample = None if sample is None else run_sample(self.run_dir, sample, sample_seed, question_types, suites)
        if self.sample is not None:
            run_items = sample_items(run_items, self.sample)
        bad_qual = [it for it in qual_items if self._image_file(it) is None]
        if bad_qual:
            raise ValueError(f"qualification item {bad_qual[0].item_id} has an image outside "
                             f"{self.run_dir / IMAGES_DIR} or missing: {bad_qual[0].image_path}")
        self.items = list(qual_items)
        self.refused: list[Item] = []
        for it in run_items:
            (self.items if self._image_file(it) is not None else self.refused).append(it)
        if self.refused:
            first = self.refused[0]
            self.log(f"refused {len(self.refused)} item(s) whose image is not a file inside "
                     f"{self.run_dir / IMAGES_DIR} (first: {first.probe_id} -> {first.image_path})")
        if len(self.items) == len(qual_items):
            raise ValueError(f"{run_dir} has no images with the questions asked "
                             f"({', '.join(question_types or QUESTION_TYPES)})")
        self.by_id = {it.item_id: it for it in self.items}
        self.n_qual = len(qual_items)
        self._refused_ids: set[str] = set()  # items whose image became unreadable while serving
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        skipped = read_events(self.run_dir).attrs["skipped_lines"]
        if skipped:
            self.log(skipped_text(skipped))
        if self.qual:
            save_qualification(self.run_dir, self.qual)  # lets the statistics flag annotators later

    def header_markdown(self) -> str:
        """The sample being served and the labelling plan (from RUN_DIR/results.json, when scored)."""
        parts = []
        if self.sample is not None:
            n = sum(r["size"] for r in self.sample["suites"].values())
            parts.append(f"**Calibration sample**: {n} images drawn at random (seed {self.sample['seed']}, "
                         f"{self.sample['size_per_suite']} per suite), shown in random order; `t2ibench score` "
                         "corrects every score with your answers to them.")
        try:
            rows = plan_rows(read_pilot(self.run_dir))
        except ValueError:
            rows = []
        if rows:
            parts.append("**Labelling plan** (`t2ibench label-plan`): people-labelled images for a 95 % interval of "
                         "± 5 % of each headline score's range\n\n" + plan_markdown(rows))
        return "\n\n".join(parts)

    # ------------------------------------------------------------------ images

    def _image_file(self, item: Item) -> Path | None:
        """The item's image file, resolved, if it may be shown (inside RUN_DIR/images/, or a qualification file)."""
        if item.qualification and not item.probe_id:
            path = Path(item.image_path).resolve()
            return path if path in self._qual_files and path.is_file() else None
        return image_in_run(self.run_dir, item.image_path)

    def _picture(self, item: Item) -> Image.Image | None:
        """The item's image decoded (checked again now: the file may have changed since start), or None."""
        path = self._image_file(item)
        if path is not None:
            try:
                with Image.open(path) as im:
                    im.load()
                    return im.copy()
            except (OSError, ValueError, Image.DecompressionBombError):
                pass
        self._refused_ids.add(item.item_id)
        self.log(f"refused to show item {item.item_id}: its image {item.image_path} is not a readable image "
                 f"inside {self.run_dir / IMAGES_DIR}")
        return None

    # ------------------------------------------------------------------ server side

    def _view(self, who: str | None, session: str, message: str = ""):
        """Every output of the page for ``who``'s next item (or the signed-out / finished view)."""
        hidden = [gr.update(visible=False)] * (len(ANSWER_BUTTONS) + len(SWATCH_BUTTONS))
        state = {"annotator": who, "session": session, "item_id": None}
        if not who:
            prompt = ("**Sign in with Hugging Face** (the button above) to start." if self.auth == "oauth"
                      else "Not signed in: reload the page to log in.")
            return (state, prompt, "", None, "", "", *hidden, gr.update(visible=False), gr.update(visible=False))
        done = done_item_ids(self.run_dir, who)
        item = picture = None
        for it in self.items:
            if it.item_id not in done and it.item_id not in self._refused_ids:
                picture = self._picture(it)
                if picture is not None:
                    item = it
                    break
        n_done = sum(it.item_id in done for it in self.items)
        flag = self._flag(who)
        status = f"Annotator **{who}** · {n_done} of {len(self.items)} done"
        if message:
            status += f" · {message}"
        if item is None:
            return (state, status + " · **all items done, thank you!**", flag, None, "", "", *hidden,
                    gr.update(visible=False), gr.update(visible=True))
        state["item_id"] = item.item_id
        if item.qualification:
            position = self.items.index(item) + 1
            status += f" · qualification question {position} of {self.n_qual}"
        instructions = "\n\n".join(item.instructions or Q.DEFAULT_INSTRUCTIONS)
        offered = set(item.options)
        buttons = [gr.update(visible=v in offered) for v in ANSWER_BUTTONS]
        buttons += [gr.update(visible=t in offered) for t in SWATCH_BUTTONS]
        return (state, status, flag, picture, f"### {item.question}", instructions, *buttons,
                gr.update(visible=not item.qualification), gr.update(visible=True))

    def _flag(self, name: str) -> str:
        if not self.qual:
            return ""
        result = qualification_status(self.run_dir, name, self.qual)
        if result.status == "failed":
            return (f"**Qualification not passed** ({result.n_correct} of {result.n_items} correct, "
                    f"{result.min_correct} needed): your answers are still saved, but flagged and left out "
                    f"of the agreement statistics by default.")
        if result.status == "passed":
            return f"Qualification passed ({result.n_correct} of {result.n_items} correct)."
        return ""

    @staticmethod
    def _who(who) -> str | None:
        try:
            return check_annotator(who)
        except ValueError:
            return None

    @staticmethod
    def _session(state, who: str) -> str:
        """The page's session id if ``state`` is this annotator's, else a new one."""
        if isinstance(state, dict) and state.get("annotator") == who and state.get("session"):
            return state["session"]
        return uuid.uuid4().hex[:12]

    def _shown(self, state, who: str) -> Item | None:
        """The item the server last showed this annotator in this page (never one named by the client)."""
        if not isinstance(state, dict) or state.get("annotator") != who:
            return None
        return self.by_id.get(state.get("item_id") or "")

    def _lock(self, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(name, threading.Lock())

    # Handlers: ``who`` is the signed-in annotator (see :meth:`_from_login`), ``state`` the
    # server-side page state. Nothing the browser sends names the annotator.

    def on_load(self, state, who):
        who = self._who(who)
        return self._view(who, uuid.uuid4().hex[:12])

    def on_answer(self, value: str, state, who):
        who = self._who(who)
        if who is None:
            return self._view(None, "")
        session, item = self._session(state, who), self._shown(state, who)
        if item is None:
            return self._view(who, session)
        if value not in item.options:
            raise gr.Error(f"{value!r} is not an answer to this question")
        # A second click that arrives before the page shows the next item must not
        # overwrite the answer just given: only an item still open is answered. The
        # per-annotator lock makes check-then-append atomic for two tabs of one server.
        with self._lock(who):
            if item.item_id not in done_item_ids(self.run_dir, who):
                append_event(self.run_dir, event_for(item, "answer", who, value, session=session))
        return self._view(who, session)

    def on_skip(self, state, who):
        who = self._who(who)
        if who is None:
            return self._view(None, "")
        session, item = self._session(state, who), self._shown(state, who)
        if item is not None and not item.qualification:
            with self._lock(who):
                if item.item_id not in done_item_ids(self.run_dir, who):
                    append_event(self.run_dir, event_for(item, "skip", who, session=session))
        return self._view(who, session, "skipped" if item is not None else "")

    def on_undo(self, state, who):
        who = self._who(who)
        if who is None:
            return self._view(None, "")
        session = self._session(state, who)
        with self._lock(who):
            undone = undo_last(self.run_dir, who, session=session)  # this annotator's own events only
        message = "nothing to undo" if undone is None else f"undid your last {undone['event']}"
        return self._view(who, session, message)

    def _from_login(self, fn: Callable):
        """``fn(state, who)`` as a Gradio handler of ``state`` whose ``who`` comes from the login."""
        if self.auth == "oauth":
            def handler(state: dict, profile: gr.OAuthProfile | None):
                return fn(state, profile.username if profile is not None else None)
        elif self.auth == "users":
            def handler(state: dict, request: gr.Request):
                return fn(state, request.username)
        else:
            def handler(state: dict):
                return fn(state, self.local_annotator)
        return handler

    # ------------------------------------------------------------------ page

    def build(self) -> gr.Blocks:
        with gr.Blocks(title="t2i-bias-benchmark: label images", analytics_enabled=False) as demo:
            gr.Markdown(f"## Label images of `{self.run_dir.name}`\n"
                        f"Each answer is saved at once to `{LABELS_DIR}/{ANSWERS_FILE}`; you can close "
                        f"the page at any time and come back to where you stopped."
                        + (" [Log out](logout)" if self.auth == "users" else ""))
            header = self.header_markdown()
            if header:
                with gr.Accordion("Calibration sample and labelling plan", open=False):
                    gr.Markdown(header, elem_id="plan")
            if self.auth == "oauth":
                gr.LoginButton(elem_id="login")
            state = gr.State({"annotator": None, "session": "", "item_id": None})
            status = gr.Markdown(elem_id="status")
            flag = gr.Markdown(elem_id="qual-flag")
            with gr.Row():
                with gr.Column(scale=3):
                    image = gr.Image(type="pil", format="png", interactive=False, show_label=False, height=420,
                                     elem_id="item-image", buttons=[])
                with gr.Column(scale=2):
                    question = gr.Markdown(elem_id="question")
                    with gr.Row():
                        answer_buttons = [gr.Button(f"{Q.OPTION_LABELS[v]} ({self._key(v)})", elem_id=eid,
                                                    visible=False, variant="primary")
                                          for v, eid in ANSWER_BUTTONS.items()]
                    with gr.Row(elem_id="swatches"):
                        swatch_buttons = [gr.Button(t, elem_id=eid, visible=False, min_width=40)
                                          for t, eid in SWATCH_BUTTONS.items()]
                    with gr.Row():
                        skip = gr.Button("Skip (s)", elem_id="skip", visible=False)
                        undo = gr.Button("Undo last answer (u)", elem_id="undo", visible=False)
                    gr.Markdown(SHORTCUT_HELP, elem_id="shortcuts")
            with gr.Accordion("Instructions", open=True):
                instructions = gr.Markdown(elem_id="instructions")

            outputs = [state, status, flag, image, question, instructions, *answer_buttons, *swatch_buttons,
                       skip, undo]
            # Private events: the page calls them, gradio_client cannot, and the API page lists none.
            # No progress overlays: they would cover the question for a moment on every click.
            common = {"inputs": [state], "outputs": outputs, "show_progress": "hidden", "api_visibility": "private"}
            demo.load(self._from_login(self.on_load), **common)
            # trigger_mode "multiple": Gradio's default ("once") silently drops a click made while the
            # previous one is finishing; the server decides instead (on_answer ignores a stale item).
            for value, button in zip([*ANSWER_BUTTONS, *SWATCH_BUTTONS], answer_buttons + swatch_buttons):
                button.click(self._from_login(lambda st, who, _v=value: self.on_answer(_v, st, who)),
                             trigger_mode="multiple", **common)
            skip.click(self._from_login(self.on_skip), trigger_mode="multiple", **common)
            undo.click(self._from_login(self.on_undo), trigger_mode="multiple", **common)
        # Appends are locked and independent: annotators need not wait for each other.
        demo.queue(default_concurrency_limit=8, api_open=False)
        return demo

    @staticmethod
    def _key(value: str) -> str:
        return next(k for k, ids in SHORTCUTS.items() if ANSWER_BUTTONS.get(value) in ids or
                    SWATCH_BUTTONS.get(value) in ids)

    def launch_kwargs(self) -> dict:
        """What ``launch`` needs besides host, port and login: no file access beyond the shown images,
        no uploads, no extra routes, no route without a login; the key script and the swatch colours."""
        from benchmark.human.login_guard import middleware

        return {"blocked_paths": [str(self.run_dir.resolve())], "max_file_size": 0, "share": False,
                "app_kwargs": {"middleware": middleware()},  # the heartbeat route needs a login too
                "mcp_server": False, "ssr_mode": False, "enable_monitoring": False, "run_history": False,
                "footer_links": [], "head": _KEY_SCRIPT % _json(SHORTCUTS), "css": _swatch_css()}


def _json(obj) -> str:
    import json

    return json.dumps(obj)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def login_settings(*, users: str | Path | None = None, oauth: bool = False, no_auth: bool = False,
                   host: str = "127.0.0.1") -> tuple[str, Callable | None]:
    """The auth mode and Gradio ``auth`` callable for the options; a one-line ``ValueError`` if unsafe.

    Nothing chosen: OAuth on a Hugging Face Space (``SPACE_ID`` set), else refused.
    """
    if sum([users is not None, bool(oauth), bool(no_auth)]) > 1:
        raise ValueError("choose one login: --users USERS_FILE, --oauth or --no-auth")
    if users is not None:
        from benchmark.human.users import gradio_auth, read_users

        return "users", gradio_auth(read_users(users))
    if no_auth:
        if not is_loopback(host):
            raise ValueError(f"--no-auth serves on 127.0.0.1 only (got --host {host}); give annotators on other "
                             f"machines accounts with --users USERS_FILE")
        return "local", None
    if oauth or os.environ.get("SPACE_ID"):
        if not os.environ.get("SPACE_ID"):
            # Off a Space, Gradio's OAuth signs everyone in as the owner of the local Hugging Face token.
            raise ValueError("--oauth works only on a Hugging Face Space (SPACE_ID is not set); use --users "
                             "USERS_FILE elsewhere")
        import importlib.util

        missing = [m for m in ("authlib", "itsdangerous") if importlib.util.find_spec(m) is None]
        if missing:
            raise ValueError(f"Hugging Face sign-in needs gradio[oauth] ({', '.join(missing)} missing): "
                             f"add `gradio[oauth]` to the Space's requirements.txt")
        return "oauth", None
    raise ValueError(NO_LOGIN)


@contextmanager
def _gradio_cache(folder: Path) -> Iterator[None]:
    """Gradio's cache and upload folder set to ``folder`` while the Blocks are built and launched:
    the ``/gradio_api/file=`` route then serves this app's cached pictures and nothing else."""
    old = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("GRADIO_TEMP_DIR", None)
        else:
            os.environ["GRADIO_TEMP_DIR"] = old


def build_app(run_dir: str | Path, question_types: Sequence[str] | None = None,
              qualification: str | Path | QualificationItems | None = None, **kwargs) -> gr.Blocks:
    """The annotation app for RUN_DIR (serve it with :func:`launch_app`, which adds the login, the
    file restrictions, the key script and the CSS)."""
    app = AnnotationApp(run_dir, question_types, qualification, **kwargs)
    demo = app.build()
    demo.annotation_app = app  # so launch_app finds its launch settings
    return demo


def launch_app(run_dir: str | Path, question_types: Sequence[str] | None = None,
               qualification: str | Path | QualificationItems | None = None, *,
               users: str | Path | None = None, oauth: bool = False, no_auth: bool = False,
               local_annotator: str = LOCAL_ANNOTATOR, host: str = "127.0.0.1", port: int | None = None,
               prevent_thread_lock: bool = False, quiet: bool = False, **kwargs):
    """Build and serve the app behind a login; returns the Blocks (running in the background with
    ``prevent_thread_lock``). ``users`` (a users file), ``oauth`` (on a Space) or ``no_auth``
    (127.0.0.1 only, every answer by ``local_annotator``): see :func:`login_settings`."""
    mode, auth = login_settings(users=users, oauth=oauth, no_auth=no_auth, host=host)
    cache = Path(tempfile.mkdtemp(prefix="t2ibench-annotate-")).resolve()
    atexit.register(shutil.rmtree, cache, True)
    if cache.is_relative_to(Path(run_dir).resolve()):
        raise ValueError(f"the temporary folder {cache} is inside the run folder; set TMPDIR elsewhere")
    with _gradio_cache(cache):
        demo = build_app(run_dir, question_types, qualification, auth=mode, local_annotator=local_annotator,
                         **kwargs)
        demo.launch(server_name=host, server_port=port, prevent_thread_lock=prevent_thread_lock, quiet=quiet,
                    auth=auth, auth_message=f"Label images of {Path(run_dir).name}: log in with your annotator "
                    f"account." if auth else None, **demo.annotation_app.launch_kwargs())
    demo.annotation_cache = cache
    return demo
