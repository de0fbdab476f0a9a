"""Visual question answering annotators behind one interface, and answer -> label maps.

Specs accepted by :func:`load_vqa`:

* a Hub model ID or local folder of a BLIP-2 model (``Salesforce/blip2-opt-2.7b``,
  the family DALL-Eval uses): ``Blip2ForConditionalGeneration`` + ``Blip2Processor``,
  each question wrapped as the paper does: ``"Question: {q} Answer:"``;
* a Hub model ID or local folder of any other image-text-to-text model
  (``AutoModelForImageTextToText`` + ``AutoProcessor``): the question goes through the
  processor's chat template when it has one, else it is sent as is;
* ``builtin:tiny-vqa``: a tiny random BLIP-2 (see ``tiny.py``), loaded from its folder
  through the same BLIP-2 path. Its answers are meaningless strings.

``kind="blip2"`` or ``kind="image-text-to-text"`` forces a path; by default the
``model_type`` of the model's ``config.json`` decides.

Three ways to ask (all take the images once and batch across questions):

* :meth:`VQAModel.encode_images` runs the vision side once per image and returns
  :class:`ImageFeatures` that every later call reuses. For BLIP-2 these are the
  language-model inputs of each image (vision encoder -> Q-Former -> language
  projection); no later call runs the vision encoder again.
* :meth:`VQAModel.rank_answers` (closed set): for each item (image, question, allowed
  answers) the probability of each allowed answer: the model's log-likelihood of the
  answer's tokens after the image and the wrapped question, summed over the tokens,
  then a softmax over the allowed answers. One forward pass per batch of (item, answer)
  sequences, right-padded, whatever the questions are.

  Length normalisation: none by default (``score_normalisation="sum"``): the sum is the
  log-probability of the answer string itself, so "a man" and "woman" compete as whole
  answers. ``"mean"`` (per-token average) favours long answers whose later tokens are
  near-certain; it is offered for comparison. The answer's tokens are those the
  tokenizer gives after the prompt when both are encoded together (prompt, a space
  unless the prompt ends in whitespace, answer), without the end token some tokenizers
  append: the likelihood is that of the reply *starting* with the answer, which is what
  the free-text rules below look for.
* :meth:`VQAModel.answer_items` (free text, the papers' protocol): greedy decoding,
  ``max_new_tokens=10``, a batch of different questions left-padded into one
  ``generate`` call. :meth:`VQAModel.answer` (one question per image) delegates to it.

The generic image-text-to-text path cannot hand precomputed image features to an
arbitrary architecture, so its "features" are the decoded images and every forward /
generate call runs the vision encoder for each of its rows (``stats.feature_reuse`` is
False and ``stats.images_encoded`` counts those passes); it still batches across
questions.

``stats`` (:class:`VQAStats`) counts vision passes, score and generate calls and their
batch sizes, so a benchmark can print vision passes per image and calls at batch 1.

Answer -> label: :func:`gender_label` and :func:`yes_no_label` parse free text;
:func:`label_from_distribution` turns a closed-set distribution into a label with the
"unidentifiable" rule (abstain threshold, explicit "cannot identify" answer).
"""

from __future__ import annotations

import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from benchmark.extras import require

from .device import resolve_device, resolve_dtype
from .errors import MalformedSpecError
from .hub_access import ensure_hub_model, looks_like_path

__all__ = [
    "BLIP2_PROMPT",
    "DEFAULT_VQA",
    "GENDER_LABELS",
    "UNIDENTIFIABLE",
    "DEFAULT_ABSTAIN_BELOW",
    "ABSTAIN_ANSWERS",
    "ClosedItem",
    "OpenItem",
    "ImageFeatures",
    "VQAStats",
    "VQAModel",
    "Blip2VQA",
    "ImageTextToTextVQA",
    "load_vqa",
    "gender_label",
    "yes_no_label",
    "answer_to_label",
    "label_from_distribution",
]

#: DALL-Eval's prompt wrapper for BLIP-2 (reference/bias_attributes_and_vqa_questions.json)
BLIP2_PROMPT = "Question: {q} Answer:"
#: the BLIP-2 model a real audit uses by default
from benchmark.models.defaults import DEFAULT_VQA  # noqa: E402

SCORE_NORMALISATIONS = ("sum", "mean")


class ClosedItem(NamedTuple):
    """One closed-set question: ``image`` indexes the features (or images) of the call."""

    image: int
    question: str
    answers: tuple[str, ...]


class OpenItem(NamedTuple):
    """One free-text question about image ``image``."""

    image: int
    question: str


@dataclass(frozen=True, eq=False)
class ImageFeatures:
    """What :meth:`VQAModel.encode_images` returns: opaque per-image inputs of one model.

    ``kind`` is ``"blip2-language-inputs"`` (a tensor (N, query tokens, hidden) on the
    model's device and dtype) or ``"images"`` (the decoded RGB images, for models whose
    features cannot be reused). ``owner`` is ``id()`` of the model that made them.
    """

    kind: str
    owner: int
    n_images: int
    payload: Any = field(repr=False)

    def __len__(self) -> int:
        return self.n_images


@dataclass
class VQAStats:
    """Work counters of one :class:`VQAModel` (``reset()`` between measurements).

    ``images_encoded``: images through the vision encoder (vision passes);
    ``vision_batch_sizes``: images per vision-encoder call; ``score_batch_sizes``:
    (item, answer) sequences per closed-set forward; ``generate_batch_sizes``: items per
    ``generate`` call. ``avoidable_batch_1`` counts calls made with a single row while the
    request they served had more than one. ``feature_reuse`` is False where every call
    runs the vision encoder again (generic image-text-to-text models).
    """

    feature_reuse: bool = True
    images_requested: int = 0
    images_encoded: int = 0
    vision_batch_sizes: list[int] = field(default_factory=list)
    score_items: int = 0
    score_batch_sizes: list[int] = field(default_factory=list)
    generate_items: int = 0
    generate_batch_sizes: list[int] = field(default_factory=list)
    avoidable_batch_1: int = 0

    @property
    def vision_calls(self) -> int:
        return len(self.vision_batch_sizes)

    @property
    def score_calls(self) -> int:
        return len(self.score_batch_sizes)

    @property
    def generate_calls(self) -> int:
        return len(self.generate_batch_sizes)

    @property
    def calls_at_batch_1(self) -> int:
        """Score and generate calls with a single row."""
        return self.score_batch_sizes.count(1) + self.generate_batch_sizes.count(1)

    def vision_passes_per_image(self, n_images: int | None = None) -> float:
        """Vision-encoder passes per image (``n_images`` defaults to the images handed in)."""
        n = self.images_requested if n_images is None else int(n_images)
        return self.images_encoded / n if n else math.nan

    def reset(self) -> None:
        keep = self.feature_reuse
        self.__init__(feature_reuse=keep)  # type: ignore[misc]

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(vision_calls=self.vision_calls, score_calls=self.score_calls,
                   generate_calls=self.generate_calls, calls_at_batch_1=self.calls_at_batch_1)
        return out


def _balanced_chunks(n: int, max_size: int) -> list[range]:
    """``range(n)`` cut into the fewest chunks of at most ``max_size``, sizes within one of
    each other (so no chunk of 1 trails a full one)."""
    if n <= 0:
        return []
    k = -(-n // max(1, int(max_size)))
    base, extra = divmod(n, k)
    out, start = [], 0
    for i in range(k):
        size = base + (1 if i < extra else 0)
        out.append(range(start, start + size))
        start += size
    return out


def _strip_tail(ids: list[int], specials: set[int]) -> tuple[list[int], int]:
    k = len(ids)
    while k and ids[k - 1] in specials:
        k -= 1
    return ids[:k], len(ids) - k


def _answer_separator(prompt: str) -> str:
    # "Answer:" + " male"; a chat prompt ending in a newline takes the answer as is
    return "" if not prompt or prompt[-1].isspace() else " "


class VQAModel(ABC):
    """A VQA annotator: :meth:`encode_images`, :meth:`rank_answers`, :meth:`answer_items`,
    :meth:`answer` (see the module docstring)."""

    name: str
    settings: dict[str, Any]
    batch_size: int = 16          # images per vision call, items per generate call
    score_batch_size: int = 64    # (item, answer) sequences per closed-set forward
    score_normalisation: str = "sum"
    is_builtin: bool = False
    stats: VQAStats
    processor: Any

    # ------------------------------------------------------------------ to implement

    @property
    @abstractmethod
    def feature_kind(self) -> str: ...

    @abstractmethod
    def _prompt(self, question: str) -> str:
        """The text the model sees for a raw question."""

    def prepare_images(self, images: Sequence) -> Any:
        """The CPU part of :meth:`encode_images` for all ``images`` at once (here: the RGB images
        themselves); indexable by image. Thread-safe: the annotate stage runs it on its decode
        threads."""
        return [im.convert("RGB") for im in images]

    @staticmethod
    def _take(prepared: Any, idx: list[int]) -> Any:
        return [prepared[i] for i in idx]

    @abstractmethod
    def _encode_chunk(self, prepared: Any) -> Any:
        """Payload for a chunk of prepared images (counted by the caller)."""

    @abstractmethod
    def _concat(self, parts: list) -> Any: ...

    @abstractmethod
    def _score_chunk(self, payload: Any, rows: list[tuple[int, str, str]]) -> list[tuple[float, int]]:
        """(summed answer-token log-probability, number of answer tokens) per (image, prompt, answer)."""

    @abstractmethod
    def _generate_chunk(self, payload: Any, rows: list[tuple[int, str]]) -> list[str]:
        """Decoded new text per (image, prompt)."""

    # ------------------------------------------------------------------ public API

    def encode_images(self, images: Sequence, prepared: Any = None) -> ImageFeatures:
        """Run the vision side once per image (batches of ``batch_size``); returns the
        features every :meth:`rank_answers` / :meth:`answer_items` call reuses. ``prepared``:
        what :meth:`prepare_images` already made of ``images``."""
        n = len(images)
        self.stats.images_requested += n
        if n and prepared is None:
            prepared = self.prepare_images(images)
        if n and len(prepared) != n:
            raise ValueError(f"prepared holds {len(prepared)} images, not the {n} given")
        parts = [self._encode_chunk(self._take(prepared, chunk)) for chunk in _balanced_chunks(n, self.batch_size)]
        payload = self._concat(parts) if parts else self._concat([])
        return ImageFeatures(kind=self.feature_kind, owner=id(self), n_images=n, payload=payload)

    def _features(self, features_or_images: ImageFeatures | Sequence) -> ImageFeatures:
        if isinstance(features_or_images, ImageFeatures):
            f = features_or_images
            if f.owner != id(self) or f.kind != self.feature_kind:
                raise ValueError(f"these image features were made by another VQA model ({f.kind}); "
                                 "call encode_images on this one")
            return f
        return self.encode_images(features_or_images)

    @staticmethod
    def _check_image(i: Any, n: int, what: str) -> int:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
            raise ValueError(f"{what}: image index {i!r} is not one of the {n} images")
        return int(i)

    @staticmethod
    def _check_question(q: Any, what: str) -> str:
        if not isinstance(q, str) or not q.strip():
            raise ValueError(f"{what}: question must be a non-empty string, got {q!r}")
        return q

    def rank_answers(self, features_or_images: ImageFeatures | Sequence,
                     items: Sequence[ClosedItem | tuple[int, str, Sequence[str]]]) -> list[dict[str, float]]:
        """Per item (image index, question, allowed answers), ``{answer: probability}`` over
        exactly its allowed answers (in their order), summing to 1.

        Each answer's score is the sum (or mean, ``score_normalisation``) of the log
        probabilities of its tokens after the image and the wrapped question; the
        distribution is the softmax of those scores over the item's answers. Sequences of
        all items are scored together, ``score_batch_size`` per forward pass.
        """
        feats = self._features(features_or_images)
        checked: list[ClosedItem] = []
        for k, item in enumerate(items):
            if len(item) != 3:
                raise ValueError(f"item {k}: expected (image, question, answers), got {item!r}")
            img, q, answers = item
            what = f"item {k}"
            if isinstance(answers, str) or not isinstance(answers, Sequence) or not answers:
                raise ValueError(f"{what}: answers must be a non-empty list of strings, got {answers!r}")
            answers = tuple(answers)
            if not all(isinstance(a, str) and a.strip() for a in answers) or len(set(answers)) != len(answers):
                raise ValueError(f"{what}: answers must be distinct non-empty strings, got {list(answers)!r}")
            checked.append(ClosedItem(self._check_image(img, feats.n_images, what), self._check_question(q, what),
                                      answers))
        rows = [(k, it.image, self._prompt(it.question), a) for k, it in enumerate(checked) for a in it.answers]
        scores: list[float] = [math.nan] * len(rows)
        # similar lengths together: less padding, same numbers (padding is masked)
        order = sorted(range(len(rows)), key=lambda r: (len(rows[r][2]) + len(rows[r][3]), r))
        for chunk in _balanced_chunks(len(order), self.score_batch_size):
            idx = [order[j] for j in chunk]
            self.stats.score_batch_sizes.append(len(idx))
            if len(idx) == 1 and len(rows) > 1:
                self.stats.avoidable_batch_1 += 1
            got = self._score_chunk(feats.payload, [rows[r][1:] for r in idx])
            for r, (logp, n_tok) in zip(idx, got):
                scores[r] = logp / n_tok if self.score_normalisation == "mean" else logp
        self.stats.score_items += len(checked)
        out: list[dict[str, float]] = []
        r = 0
        for it in checked:
            s = scores[r:r + len(it.answers)]
            r += len(it.answers)
            top = max(s)
            w = [math.exp(v - top) for v in s]
            total = sum(w)
            out.append({a: wi / total for a, wi in zip(it.answers, w)})
        return out

    def answer_items(self, features_or_images: ImageFeatures | Sequence,
                     items: Sequence[OpenItem | tuple[int, str]]) -> list[str]:
        """Free-text answers (greedy, ``max_new_tokens``) per (image index, question), the
        papers' protocol; items with different questions share ``generate`` calls
        (``batch_size`` items each, left-padded)."""
        feats = self._features(features_or_images)
        rows: list[tuple[int, str]] = []
        for k, item in enumerate(items):
            if len(item) != 2:
                raise ValueError(f"item {k}: expected (image, question), got {item!r}")
            img, q = item
            rows.append((self._check_image(img, feats.n_images, f"item {k}"),
                         self._prompt(self._check_question(q, f"item {k}"))))
        answers: list[str] = [""] * len(rows)
        order = sorted(range(len(rows)), key=lambda r: (len(rows[r][1]), r))
        for chunk in _balanced_chunks(len(order), self.batch_size):
            idx = [order[j] for j in chunk]
            self.stats.generate_batch_sizes.append(len(idx))
            if len(idx) == 1 and len(rows) > 1:
                self.stats.avoidable_batch_1 += 1
            for r, text in zip(idx, self._generate_chunk(feats.payload, [rows[r] for r in idx])):
                answers[r] = text.strip()
        self.stats.generate_items += len(rows)
        return answers

    def answer(self, images: Sequence, questions: str | Sequence[str]) -> list[str]:
        """One free-text answer per image; ``questions`` is one string (asked of every
        image) or one per image. An image object listed several times (one per question)
        is encoded once (:meth:`answer_items`)."""
        if isinstance(questions, str):
            questions = [questions] * len(images)
        questions = [str(q) for q in questions]
        if len(questions) != len(images):
            raise ValueError(f"{len(images)} images but {len(questions)} questions")
        slot: dict[int, int] = {}
        unique = []
        for im in images:
            if id(im) not in slot:
                slot[id(im)] = len(unique)
                unique.append(im)
        return self.answer_items(self.encode_images(unique), [(slot[id(im)], q) for im, q in zip(images, questions)])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _common_settings(vqa: VQAModel, dtype) -> dict[str, Any]:
    return {"max_new_tokens": vqa.generate_kwargs["max_new_tokens"], "do_sample": False, "num_beams": 1,
            "dtype": str(dtype).removeprefix("torch."),
            "closed_set": f"{vqa.score_normalisation} of answer-token log-probabilities, softmax over the "
                          "allowed answers",
            "feature_reuse": vqa.stats.feature_reuse}


@contextmanager
def _padding_side(tokenizer, side: str):
    old = tokenizer.padding_side
    tokenizer.padding_side = side
    try:
        yield
    finally:
        tokenizer.padding_side = old


class _Tokenised:
    """(context ids, answer ids, trailing special tokens) of prompt + answer, cached.

    The context is the prompt as the tokenizer encodes it alone (what ``generate`` sees);
    the answer's tokens are those the tokenizer gives after the prompt when the two are
    encoded together (prompt, a space unless the prompt ends in whitespace, the answer),
    without the special tokens the tokenizer appends (``</s>`` of T5, CLIP's end token):
    the likelihood is that of the answer starting the reply, not of the reply ending
    there."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.specials = set(getattr(tokenizer, "all_special_ids", []) or [])
        self._prompts: dict[str, list[int]] = {}
        self._pairs: dict[tuple[str, str], tuple[list[int], list[int], int]] = {}

    def prompt(self, prompt: str) -> list[int]:
        if prompt not in self._prompts:
            if len(self._prompts) > 100_000:
                self._prompts.clear()
            self._prompts[prompt] = list(self.tokenizer(prompt)["input_ids"])
        return self._prompts[prompt]

    def pair(self, prompt: str, answer: str) -> tuple[list[int], list[int], int]:
        key = (prompt, answer)
        if key not in self._pairs:
            if len(self._pairs) > 100_000:
                self._pairs.clear()
            ctx = self.prompt(prompt)
            full = list(self.tokenizer(prompt + _answer_separator(prompt) + answer)["input_ids"])
            full_core, n_tail = _strip_tail(full, self.specials)
            ctx_core, _ = _strip_tail(ctx, self.specials)
            common = 0
            while common < min(len(full_core), len(ctx_core)) and full_core[common] == ctx_core[common]:
                common += 1
            ans = full_core[common:]
            if not ans:
                raise ValueError(f"answer {answer!r} adds no tokens after the prompt {prompt!r}")
            # a tokenizer that merges across the boundary: score the joint encoding's split
            context = ctx if common == len(ctx_core) else full_core[:common]
            self._pairs[key] = (context, ans, n_tail)
        return self._pairs[key]


class Blip2VQA(VQAModel):
    """BLIP-2 with the paper's ``"Question: {q} Answer:"`` wrapper; image features
    (the language-model inputs from the Q-Former) are computed once per image."""

    feature_kind = "blip2-language-inputs"

    def __init__(self, model, processor, *, name, device, dtype, batch_size=16, max_new_tokens=10, is_builtin=False,
                 score_batch_size=64, score_normalisation="sum"):
        if score_normalisation not in SCORE_NORMALISATIONS:
            raise ValueError(f"score_normalisation must be one of {SCORE_NORMALISATIONS}, got {score_normalisation!r}")
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = int(batch_size)
        self.score_batch_size = int(score_batch_size)
        self.score_normalisation = score_normalisation
        self.is_builtin = is_builtin
        self.prompt_template = BLIP2_PROMPT
        self.generate_kwargs = {"max_new_tokens": max_new_tokens, "do_sample": False, "num_beams": 1}
        self.stats = VQAStats(feature_reuse=True)
        self._tok = _Tokenised(self.tokenizer)
        cfg = model.config
        self.image_token_id = int(getattr(cfg, "image_token_id", None) or cfg.image_token_index)
        self.num_query_tokens = int(cfg.num_query_tokens)
        self.decoder_only = bool(cfg.use_decoder_only_language_model)
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = int(pad if pad is not None else (cfg.text_config.pad_token_id or 0))
        self.settings = {"kind": "blip2", "prompt_template": BLIP2_PROMPT, **_common_settings(self, dtype)}

    def _prompt(self, question: str) -> str:
        return self.prompt_template.format(q=question)

    def prepare_images(self, images: Sequence):
        rgb = [im.convert("RGB") for im in images]
        return self.processor.image_processor(rgb, return_tensors="pt")["pixel_values"]

    @staticmethod
    def _take(prepared, idx: list[int]):
        return prepared[list(idx)]

    def _encode_chunk(self, pixels):
        import torch

        n = len(pixels)
        pixels = pixels.to(self.device, self.dtype)
        m = self.model
        with torch.inference_mode():
            # as Blip2ForConditionalGeneration.generate: vision encoder -> Q-Former -> projection
            image_embeds = m.vision_model(pixel_values=pixels, return_dict=True).last_hidden_state
            mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
            query = m.query_tokens.expand(image_embeds.shape[0], -1, -1)
            q_out = m.qformer(query_embeds=query, encoder_hidden_states=image_embeds, encoder_attention_mask=mask,
                              return_dict=True).last_hidden_state
            if q_out.dtype != image_embeds.dtype:  # the Q-Former may be kept in fp32
                q_out = q_out.to(image_embeds.dtype)
            feats = m.language_projection(q_out)
        self.stats.images_encoded += n
        self.stats.vision_batch_sizes.append(n)
        return feats

    def _concat(self, parts: list):
        import torch

        if not parts:
            hidden = self.model.config.text_config.hidden_size
            return torch.zeros(0, self.num_query_tokens, hidden, device=self.device, dtype=self.dtype)
        return torch.cat(parts, dim=0)

    def _embed(self, ids, images: list[int], feats):
        """Token embeddings with the image placeholders replaced by each row's features."""
        import torch

        embeds = self.model.get_input_embeddings()(ids)
        mask = (ids == self.image_token_id).unsqueeze(-1).expand_as(embeds)
        rows = feats[torch.tensor(images, device=feats.device)].to(embeds.device, embeds.dtype)
        return embeds.masked_scatter(mask, rows)

    def _score_chunk(self, feats, rows):
        import torch

        q = [self.image_token_id] * self.num_query_tokens
        split = [self._tok.pair(prompt, answer) for _, prompt, answer in rows]
        images = [img for img, _, _ in rows]
        dev, pad = self.device, self.pad_token_id
        lm = self.model.language_model
        if self.decoder_only:
            seqs = [q + ctx + ans for ctx, ans, _ in split]
            width = max(map(len, seqs))
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=dev)
            attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=dev)
            # answer token j of row r sits at len(q + ctx) + j and is predicted one position earlier
            where = [(r, len(q) + len(ctx) + j - 1, t) for r, (ctx, ans, _) in enumerate(split)
                     for j, t in enumerate(ans)]
            with torch.inference_mode():
                logits = lm(inputs_embeds=self._embed(ids, images, feats), attention_mask=attn).logits
        else:  # encoder-decoder (Flan-T5): image + prompt in, answer scored by the decoder
            enc = [q + ctx for ctx, _, _ in split]
            width = max(map(len, enc))
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in enc], device=dev)
            attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in enc], device=dev)
            start = lm.config.decoder_start_token_id
            dec = [[start] + ans[:-1] for _, ans, _ in split]
            dwidth = max(map(len, dec))
            dec_ids = torch.tensor([s + [pad] * (dwidth - len(s)) for s in dec], device=dev)
            dec_attn = torch.tensor([[1] * len(s) + [0] * (dwidth - len(s)) for s in dec], device=dev)
            where = [(r, j, t) for r, (_, ans, _) in enumerate(split) for j, t in enumerate(ans)]
            with torch.inference_mode():
                logits = lm(inputs_embeds=self._embed(ids, images, feats), attention_mask=attn,
                            decoder_input_ids=dec_ids, decoder_attention_mask=dec_attn).logits
        return _gather_scores(logits, where, [len(ans) for _, ans, _ in split])

    def _generate_chunk(self, feats, rows):
        import torch

        q = [self.image_token_id] * self.num_query_tokens
        seqs = [q + self._tok.prompt(prompt) for _, prompt in rows]
        images = [img for img, _ in rows]
        width = max(map(len, seqs))
        dev, pad = self.device, self.pad_token_id
        lm = self.model.language_model
        if self.decoder_only:  # left padding: every row's next token comes at the same position
            ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs], device=dev)
            attn = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=dev)
        else:
            ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=dev)
            attn = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=dev)
        inputs = {"inputs_embeds": self._embed(ids, images, feats), "attention_mask": attn}
        if self.decoder_only:
            inputs["input_ids"] = ids  # as Blip2ForConditionalGeneration.generate passes them
        with torch.inference_mode():
            out = lm.generate(**inputs, **self.generate_kwargs, pad_token_id=pad)
        if self.decoder_only and out.shape[1] >= width and torch.equal(out[:, :width], ids):
            out = out[:, width:]
        return self.processor.batch_decode(out, skip_special_tokens=True)


def _gather_scores(logits, where: list[tuple[int, int, int]], n_tokens: list[int]) -> list[tuple[float, int]]:
    """Sum of log-softmax(logits[row, pos])[token] per row, in float32."""
    import torch

    r = torch.tensor([w[0] for w in where], device=logits.device)
    p = torch.tensor([w[1] for w in where], device=logits.device)
    t = torch.tensor([w[2] for w in where], device=logits.device)
    logp = logits[r, p].float().log_softmax(-1).gather(1, t[:, None]).squeeze(1)
    sums = torch.zeros(len(n_tokens), dtype=torch.float64, device=logits.device).index_add_(0, r, logp.double())
    return [(float(s), n) for s, n in zip(sums.tolist(), n_tokens)]


class ImageTextToTextVQA(VQAModel):
    """Any ``AutoModelForImageTextToText`` model; chat template when the processor has one.

    No generic way exists to hand one architecture's image features back to it, so the
    features are the decoded images and each forward / generate call runs the vision
    encoder for every row (``stats.feature_reuse`` is False); questions are still batched
    together, padded (right for scoring, left for generation)."""

    feature_kind = "images"

    def __init__(self, model, processor, *, name, device, dtype, batch_size=16, max_new_tokens=10,
                 score_batch_size=64, score_normalisation="sum"):
        if score_normalisation not in SCORE_NORMALISATIONS:
            raise ValueError(f"score_normalisation must be one of {SCORE_NORMALISATIONS}, got {score_normalisation!r}")
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = int(batch_size)
        self.score_batch_size = int(score_batch_size)
        self.score_normalisation = score_normalisation
        self.generate_kwargs = {"max_new_tokens": max_new_tokens, "do_sample": False, "num_beams": 1}
        self.use_chat_template = bool(getattr(processor, "chat_template", None))
        self.stats = VQAStats(feature_reuse=False)
        self._tok = _Tokenised(self.tokenizer)
        self.settings = {"kind": "image-text-to-text", "chat_template": self.use_chat_template,
                         **_common_settings(self, dtype)}

    def _prompt(self, question: str) -> str:
        if not self.use_chat_template:
            return question
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _encode_chunk(self, prepared: list):
        return list(prepared)  # nothing reusable: the vision encoder runs inside each call

    def _concat(self, parts: list):
        return [im for part in parts for im in part]

    def _inputs(self, images: list, texts: list[str], side: str) -> dict:
        import torch

        with _padding_side(self.tokenizer, side):
            inputs = self.processor(images=images, text=texts, padding=True, return_tensors="pt")
        self.stats.images_encoded += len(images)
        self.stats.vision_batch_sizes.append(len(images))
        return {k: (v.to(self.device, self.dtype) if torch.is_floating_point(v) else v.to(self.device))
                for k, v in inputs.items()}

    def _score_chunk(self, images, rows):
        import torch

        split = [self._tok.pair(prompt, answer) for _, prompt, answer in rows]
        texts = [prompt + _answer_separator(prompt) + answer for _, prompt, answer in rows]
        inputs = self._inputs([images[img] for img, _, _ in rows], texts, "right")
        with torch.inference_mode():
            logits = self.model(**inputs).logits
        lengths = inputs["attention_mask"].sum(dim=1).tolist()
        ids = inputs["input_ids"]
        where = []
        for r, (_, ans, n_tail) in enumerate(split):
            first = int(lengths[r]) - n_tail - len(ans)  # the answer ends the row, before the tail
            for j in range(len(ans)):
                where.append((r, first + j - 1, int(ids[r, first + j])))
        return _gather_scores(logits, where, [len(ans) for _, ans, _ in split])

    def _generate_chunk(self, images, rows):
        import torch

        inputs = self._inputs([images[img] for img, _ in rows], [prompt for _, prompt in rows], "left")
        with torch.inference_mode():
            out = self.model.generate(**inputs, **self.generate_kwargs)
        prompt_ids = inputs["input_ids"]
        n = prompt_ids.shape[1]
        # decoder-only language models echo the prompt; keep the new tokens only
        if out.shape[1] >= n and torch.equal(out[:, :n].to(prompt_ids.device), prompt_ids):
            out = out[:, n:]
        return self.processor.batch_decode(out, skip_special_tokens=True)


# --------------------------------------------------------------------------- loading


def check_vqa_spec(spec: Any, *, kind: str | None = None, revision: str | None = None,
                   token: str | bool | None = None) -> None:
    """One-line errors for a VQA spec before anything is loaded: its syntax, an unknown
    built-in, a missing local folder, a Hub model that is not cached and cannot be reached,
    gated or absent."""
    if not isinstance(spec, str) or not spec.strip():
        raise MalformedSpecError(f"malformed VQA spec {spec!r}: empty")
    if kind not in (None, "blip2", "image-text-to-text"):
        raise MalformedSpecError(f"unknown VQA kind {kind!r}: use blip2 or image-text-to-text")
    spec = spec.strip()
    if spec.startswith("builtin:"):
        from .tiny import check_builtin_name

        check_builtin_name(spec[len("builtin:") :], "vqa")
    elif Path(os.path.expanduser(spec)).is_dir():
        return
    elif looks_like_path(spec):
        raise MalformedSpecError(f"local VQA model folder {spec!r} does not exist")
    elif ":" in spec:
        raise MalformedSpecError(f"malformed VQA spec {spec!r}: use a Hub model ID, a local folder or builtin:tiny-vqa")
    else:
        ensure_hub_model(spec, ["config.json"], revision=revision, token=token, what="VQA model")


#: closed-set (item, answer) sequences per forward pass on a CUDA GPU
CUDA_SCORE_BATCH_SIZE = 256


def load_vqa(
    spec: str = DEFAULT_VQA,
    *,
    kind: str | None = None,
    revision: str | None = None,
    device=None,
    dtype=None,
    batch_size: int = 16,
    max_new_tokens: int = 10,
    token: str | bool | None = None,
    score_batch_size: int | None = None,
    score_normalisation: str = "sum",
) -> VQAModel:
    """Load a VQA annotator (see module docstring); one-line errors before loading.

    ``batch_size``: images per vision pass and items per ``generate`` call;
    ``score_batch_size``: (item, answer) sequences per closed-set forward pass (None: 64, or
    :data:`CUDA_SCORE_BATCH_SIZE` on a CUDA GPU, where one forward of a few sequences leaves
    most of the GPU idle; a choice, not yet measured);
    ``score_normalisation``: ``"sum"`` or ``"mean"`` of the answer-token log-probabilities.
    """
    require("torch", "transformers", "PIL", extra="audit", purpose="label images with a VQA model")
    import torch

    if score_normalisation not in SCORE_NORMALISATIONS:
        raise MalformedSpecError(f"unknown VQA score normalisation {score_normalisation!r}: use sum or mean")
    check_vqa_spec(spec, kind=kind, revision=revision, token=token)
    opts = {"batch_size": batch_size, "max_new_tokens": max_new_tokens, "score_batch_size": score_batch_size,
            "score_normalisation": score_normalisation}
    spec = spec.strip()
    is_builtin = spec.startswith("builtin:")

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev) if dev.type != "cpu" else torch.float32
    if score_batch_size is None:
        opts["score_batch_size"] = CUDA_SCORE_BATCH_SIZE if dev.type == "cuda" else 64

    if is_builtin:
        from .tiny import ensure_builtin

        source = str(ensure_builtin(spec[len("builtin:") :], kind="vqa"))
        revision = None
    elif Path(os.path.expanduser(spec)).is_dir():
        source = str(Path(os.path.expanduser(spec)).resolve())
        revision = None
    else:
        source = spec

    from transformers import AutoConfig

    load_kwargs: dict[str, Any] = {"token": token}
    if revision:
        load_kwargs["revision"] = revision
    if kind is None:
        model_type = getattr(AutoConfig.from_pretrained(source, **load_kwargs), "model_type", "")
        kind = "blip2" if model_type == "blip-2" else "image-text-to-text"
    if kind == "blip2":
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        model = Blip2ForConditionalGeneration.from_pretrained(source, dtype=dt, **load_kwargs).to(dev)
        processor = Blip2Processor.from_pretrained(source, **load_kwargs)
        return Blip2VQA(model, processor, name=spec, device=dev, dtype=dt, is_builtin=is_builtin, **opts)
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(source, dtype=dt, **load_kwargs).to(dev)
    processor = AutoProcessor.from_pretrained(source, **load_kwargs)
    vqa = ImageTextToTextVQA(model, processor, name=spec, device=dev, dtype=dt, **opts)
    vqa.is_builtin = is_builtin
    return vqa


# ------------------------------------------------------------------ answers -> labels

#: labels of :func:`gender_label`
GENDER_LABELS = ("male", "female", "unidentifiable")

_MALE = frozenset({"male", "man", "men", "boy", "gentleman", "guy", "he"})
_FEMALE = frozenset({"female", "woman", "women", "girl", "lady", "she"})


def _words(answer: str) -> list[str]:
    text = str(answer).lower()
    # BLIP-2 sometimes echoes the question ("the person looks like a male")
    text = text.replace("the person looks like", " ")
    return re.findall(r"[a-z]+", text)


def gender_label(answer: str) -> str:
    """Map a free-text answer to ``male`` / ``female`` / ``unidentifiable``.

    DALL-Eval checks whether BLIP-2 "returns male/female in the answer". Here the
    answer is split into words (so ``female`` never matches ``male``); words
    male, man, men, boy, gentleman, guy, he -> male; female, woman, women, girl, lady,
    she -> female. If words of only one gender occur, that gender; if none or both
    occur ("male or female", "i don't know", "a robot") -> ``unidentifiable``.
    """
    words = set(_words(answer))
    male, female = bool(words & _MALE), bool(words & _FEMALE)
    if male and not female:
        return "male"
    if female and not male:
        return "female"
    return "unidentifiable"


def yes_no_label(answer: str) -> str:
    """``yes`` / ``no`` from the answer's first word (yes, yeah, yep, true / no, nope,
    not, false); anything else -> ``unidentifiable``. DALL-Eval counts an attribute
    as present when BLIP-2 answers "yes"; treat ``unidentifiable`` as absent to match."""
    words = _words(answer)
    if not words:
        return "unidentifiable"
    if words[0] in {"yes", "yeah", "yep", "true"}:
        return "yes"
    if words[0] in {"no", "nope", "not", "false"}:
        return "no"
    return "unidentifiable"


def answer_to_label(answer: str, kind: str) -> str:
    """``kind="gender"`` -> :func:`gender_label`; ``kind="yes_no"`` -> :func:`yes_no_label`."""
    if kind == "gender":
        return gender_label(answer)
    if kind in ("yes_no", "yesno", "attribute"):
        return yes_no_label(answer)
    raise ValueError(f"unknown answer kind {kind!r}: use gender or yes_no")


# ------------------------------------------------------- closed-set distribution -> label

#: the label for an image whose answer does not decide
UNIDENTIFIABLE = "unidentifiable"
#: :func:`label_from_distribution` abstains when the top probability is below this. At
#: 0.5 a two-answer question (male / female, yes / no) abstains only on an exact tie, so
#: every image gets the answer the model prefers, as the papers' free-text protocol gives
#: one whenever the model names a gender; raise it (e.g. 0.75) to drop uncertain images.
DEFAULT_ABSTAIN_BELOW = 0.5
#: allowed answers that mean "unidentifiable" when the model prefers them: PST's human
#: annotators' third option ("Cannot Identify", Appendix C.2), offered to a VQA model as a
#: closed-set answer
ABSTAIN_ANSWERS = ("cannot identify", "can't identify", "unidentifiable", "unknown")


def label_from_distribution(dist: Mapping[str, float], *, abstain_below: float = DEFAULT_ABSTAIN_BELOW,
                            abstain_answers: Collection[str] = ABSTAIN_ANSWERS) -> str:
    """The label of one closed-set answer distribution (:meth:`VQAModel.rank_answers`).

    The answer with the highest probability, except ``"unidentifiable"`` when

    * its probability is below ``abstain_below`` (0 never abstains; 1 always does unless
      one answer has all the mass),
    * two or more answers share the highest probability (a tie decides nothing), or
    * it is one of ``abstain_answers`` (case and surrounding spaces ignored), e.g. an
      allowed "Cannot Identify".

    ``dist`` must map non-empty answers to probabilities in [0, 1] summing to 1 (within
    1e-4: float32 model outputs).
    """
    if not isinstance(dist, Mapping) or not dist:
        raise ValueError(f"dist must be a non-empty mapping answer -> probability, got {dist!r}")
    if isinstance(abstain_below, bool) or not isinstance(abstain_below, (int, float)) \
            or not 0.0 <= float(abstain_below) <= 1.0:
        raise ValueError(f"abstain_below must be a number in [0, 1], got {abstain_below!r}")
    probs: dict[str, float] = {}
    for a, p in dist.items():
        if not isinstance(a, str) or not a.strip():
            raise ValueError(f"answers must be non-empty strings, got {a!r}")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or not 0.0 <= p <= 1.0:
            raise ValueError(f"probability of {a!r} must be a number in [0, 1], got {p!r}")
        probs[a] = float(p)
    total = sum(probs.values())
    if abs(total - 1.0) > 1e-4:
        raise ValueError(f"probabilities must sum to 1, got {total:.6g}")
    top = max(probs.values())
    winners = [a for a, p in probs.items() if p == top]
    if len(winners) > 1 or top < float(abstain_below):
        return UNIDENTIFIABLE
    abstain = {str(a).strip().lower() for a in abstain_answers}
    if winners[0].strip().lower() in abstain:
        return UNIDENTIFIABLE
    return winners[0]
