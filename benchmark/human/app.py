"""The annotation app: one image and one of the papers' questions at a time (Gradio 6 Blocks).

Every click is appended to ``RUN_DIR/human_labels/answers.jsonl`` on the server before the
next item is shown (:mod:`benchmark.human.labels`), and the page keeps no state of its own
beyond the annotator's name (in the browser's local storage): reloading the page,
closing the browser or restarting the server resumes at the first item this annotator
has neither answered nor skipped.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

from benchmark.extras import require

require("gradio", extra="app", purpose="run the annotation app")

import gradio as gr  # noqa: E402

from benchmark.human import labels as L
from benchmark.human import questions as Q

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
STORAGE_KEY = "t2ibench-annotator"

_KEY_SCRIPT = """
<script>
(() => {
  const shortcuts = %s;
  document.addEventListener("keydown", (e) => {
    const t0 = e.target;
    // Enter in the name box starts; leave the box so that the next keys are shortcuts.
    if (e.key === "Enter" && t0 && t0.closest && t0.closest("#annotator-name")) {
      setTimeout(() => t0.blur(), 0);
      return;
    }
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


class AnnotationApp:
    """The items of one run and the handlers of the page; :meth:`build` makes the Blocks."""

    def __init__(self, run_dir: str | Path, question_types: Sequence[str] | None = None,
                 qualification: str | Path | L.QualificationItems | None = None, *,
                 attributes: Sequence[str] | None = None, suites: Sequence[str] | None = None):
        self.run_dir = Path(run_dir)
        self.qual = None
        if qualification is not None:
            self.qual = (qualification if isinstance(qualification, L.QualificationItems)
                         else L.load_qualification(qualification))
        qual_items = L.qualification_items(self.run_dir, self.qual) if self.qual else []
        self.items = qual_items + L.build_items(self.run_dir, question_types, attributes=attributes, suites=suites)
        if not self.items:
            raise ValueError(f"{run_dir} has no images with the questions asked "
                             f"({', '.join(question_types or Q.QUESTION_TYPES)})")
        self.by_id = {it.item_id: it for it in self.items}
        self.n_qual = len(qual_items)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        if self.qual:
            L.save_qualification(self.run_dir, self.qual)  # lets the statistics flag annotators later

    # ------------------------------------------------------------------ server side

    def allowed_paths(self) -> list[str]:
        return sorted({str(self.run_dir.resolve())} | {str(Path(it.image_path).parent) for it in self.items})

    def _view(self, name: str | None, session: str, message: str = ""):
        """Every output of the page for ``name``'s next item (or the finished / not-started view)."""
        hidden = [gr.update(visible=False)] * (len(ANSWER_BUTTONS) + len(SWATCH_BUTTONS))
        state = {"annotator": name, "session": session, "item_id": None}
        if not name:
            return (state, "Enter your name and press **Start** (or Enter).", "", None, "", "",
                    *hidden, gr.update(visible=False), gr.update(visible=False))
        done = L.done_item_ids(self.run_dir, name)
        item = next((it for it in self.items if it.item_id not in done), None)
        n_done = sum(it.item_id in done for it in self.items)
        flag = self._flag(name)
        status = f"Annotator **{name}** · {n_done} of {len(self.items)} done"
        if message:
            status += f" · {message}"
        if item is None:
            return (state, status + " · **all items done, thank you!**", flag, None, "", "", *hidden,
                    gr.update(visible=False), gr.update(visible=True))
        state["item_id"] = item.item_id
        if item.qualification:
            position = self.items.index(item) + 1
            status += f" · qualification question {position} of {self.n_qual}"
        instructions = "\n\n".join(Q.instructions_for(item.question_type, item.suite))
        offered = set(item.options)
        buttons = [gr.update(visible=v in offered) for v in ANSWER_BUTTONS]
        buttons += [gr.update(visible=t in offered) for t in SWATCH_BUTTONS]
        return (state, status, flag, item.image_path, f"### {item.question}", instructions, *buttons,
                gr.update(visible=not item.qualification), gr.update(visible=True))

    def _flag(self, name: str) -> str:
        if not self.qual:
            return ""
        result = L.qualification_status(self.run_dir, name, self.qual)
        if result.status == "failed":
            return (f"**Qualification not passed** ({result.n_correct} of {result.n_items} correct, "
                    f"{result.min_correct} needed): your answers are still saved, but flagged and left out "
                    f"of the agreement statistics by default.")
        if result.status == "passed":
            return f"Qualification passed ({result.n_correct} of {result.n_items} correct)."
        return ""

    def on_load(self, saved: dict | None):
        name = (saved or {}).get("annotator") if isinstance(saved, dict) else None
        try:
            name = L.check_annotator(name) if name else None
        except ValueError:
            name = None
        # Without a saved name the box is left alone: the user may already be typing in it.
        return (*self._view(name, uuid.uuid4().hex[:12]), gr.update(value=name) if name else gr.update())

    def on_start(self, text: str, state: dict):
        try:
            name = L.check_annotator(text)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return (*self._view(name, state.get("session") or uuid.uuid4().hex[:12]), {"annotator": name})

    def _lock(self, name: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(name, threading.Lock())

    def on_answer(self, value: str, state: dict):
        name, item = state.get("annotator"), self.by_id.get(state.get("item_id") or "")
        if not name or item is None:
            return self._view(name, state.get("session", ""))
        if value not in item.options:
            raise gr.Error(f"{value!r} is not an answer to this question")
        # A second click that arrives before the page shows the next item must not
        # overwrite the answer just given: only an item still open is answered. The
        # per-annotator lock makes check-then-append atomic for two tabs of one server.
        with self._lock(name):
            if item.item_id not in L.done_item_ids(self.run_dir, name):
                L.append_event(self.run_dir, L.event_for(item, "answer", name, value, session=state["session"]))
        return self._view(name, state["session"])

    def on_skip(self, state: dict):
        name, item = state.get("annotator"), self.by_id.get(state.get("item_id") or "")
        if name and item is not None and not item.qualification:
            with self._lock(name):
                if item.item_id not in L.done_item_ids(self.run_dir, name):
                    L.append_event(self.run_dir, L.event_for(item, "skip", name, session=state["session"]))
        return self._view(name, state.get("session", ""), "skipped" if item is not None else "")

    def on_undo(self, state: dict):
        name = state.get("annotator")
        if not name:
            return self._view(None, state.get("session", ""))
        with self._lock(name):
            undone = L.undo_last(self.run_dir, name, session=state.get("session", ""))
        message = "nothing to undo" if undone is None else f"undid your last {undone['event']}"
        return self._view(name, state["session"], message)

    # ------------------------------------------------------------------ page

    def build(self) -> gr.Blocks:
        with gr.Blocks(title="t2i-bias-benchmark: label images") as demo:
            gr.Markdown(f"## Label images of `{self.run_dir.name}`\n"
                        f"Each answer is saved at once to `{L.LABELS_DIR}/{L.ANSWERS_FILE}`; you can close "
                        f"the page at any time and come back to where you stopped.")
            saved = gr.BrowserState({"annotator": None}, storage_key=STORAGE_KEY)
            state = gr.State({"annotator": None, "session": "", "item_id": None})
            with gr.Row():
                name = gr.Textbox(label="Your name (annotator)", placeholder="e.g. alice", elem_id="annotator-name",
                                  scale=4)
                start = gr.Button("Start", variant="primary", elem_id="start", scale=1)
            status = gr.Markdown(elem_id="status")
            flag = gr.Markdown(elem_id="qual-flag")
            with gr.Row():
                with gr.Column(scale=3):
                    image = gr.Image(type="filepath", interactive=False, show_label=False, height=420,
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
            # No progress overlays: they would cover the question for a moment on every click.
            demo.load(self.on_load, inputs=[saved], outputs=outputs + [name], show_progress="hidden")
            for trigger in (start.click, name.submit):
                trigger(self.on_start, inputs=[name, state], outputs=outputs + [saved], show_progress="hidden")
            # trigger_mode "multiple": Gradio's default ("once") silently drops a click made while the
            # previous one is finishing; the server decides instead (on_answer ignores a stale item).
            for value, button in zip([*ANSWER_BUTTONS, *SWATCH_BUTTONS], answer_buttons + swatch_buttons):
                button.click(lambda st, _v=value: self.on_answer(_v, st), inputs=[state], outputs=outputs,
                             trigger_mode="multiple", show_progress="hidden")
            skip.click(self.on_skip, inputs=[state], outputs=outputs, trigger_mode="multiple", show_progress="hidden")
            undo.click(self.on_undo, inputs=[state], outputs=outputs, trigger_mode="multiple", show_progress="hidden")
        # Appends are locked and independent: annotators need not wait for each other.
        demo.queue(default_concurrency_limit=8)
        return demo

    @staticmethod
    def _key(value: str) -> str:
        return next(k for k, ids in SHORTCUTS.items() if ANSWER_BUTTONS.get(value) in ids or
                    SWATCH_BUTTONS.get(value) in ids)

    def launch_kwargs(self) -> dict:
        """What ``launch`` needs besides host and port: the image folders, the key script, the swatch colours."""
        return {"allowed_paths": self.allowed_paths(), "head": _KEY_SCRIPT % _json(SHORTCUTS),
                "css": _swatch_css()}


def _json(obj) -> str:
    import json

    return json.dumps(obj)


def build_app(run_dir: str | Path, question_types: Sequence[str] | None = None,
              qualification: str | Path | L.QualificationItems | None = None, **kwargs) -> gr.Blocks:
    """The annotation app for RUN_DIR (launch it with :func:`launch_app`, which adds the key script and CSS)."""
    app = AnnotationApp(run_dir, question_types, qualification, **kwargs)
    demo = app.build()
    demo.annotation_app = app  # so launch_app finds its launch settings
    return demo


def launch_app(run_dir: str | Path, question_types: Sequence[str] | None = None,
               qualification: str | Path | L.QualificationItems | None = None, *, host: str = "127.0.0.1",
               port: int | None = None, prevent_thread_lock: bool = False, quiet: bool = False, **kwargs):
    """Build and serve the app; returns the Blocks (running in the background with ``prevent_thread_lock``)."""
    demo = build_app(run_dir, question_types, qualification, **kwargs)
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=prevent_thread_lock, quiet=quiet,
                footer_links=[], **demo.annotation_app.launch_kwargs())
    return demo
