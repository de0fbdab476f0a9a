"""The VQA model interface every backend implements, and the records it hands back.

:class:`VQAModel` holds the logic shared by the backends (``vqa_blip2.py``,
``vqa_image_text.py``); they implement the vision side and one batch of scoring or
generation. Three ways to ask (all take the images once and batch across questions):

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
  the free-text rules of :mod:`benchmark.annotate.vqa_answers` look for.
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
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

__all__ = ["SCORE_NORMALISATIONS", "ClosedItem", "OpenItem", "ImageFeatures", "VQAStats", "VQAModel",
           "balanced_chunks"]

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


def balanced_chunks(n: int, max_size: int) -> list[range]:
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

    def _set_up(self, model, processor, tokenizer, *, name: str, device, dtype, batch_size: int,
                max_new_tokens: int, score_batch_size: int, score_normalisation: str, feature_reuse: bool) -> None:
        """The attributes every VQA model sets from its constructor's arguments (checked first)."""
        if score_normalisation not in SCORE_NORMALISATIONS:
            raise ValueError(f"score_normalisation must be one of {SCORE_NORMALISATIONS}, got {score_normalisation!r}")
        self.model = model.eval()
        self.processor = processor
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = int(batch_size)
        self.score_batch_size = int(score_batch_size)
        self.score_normalisation = score_normalisation
        self.generate_kwargs = {"max_new_tokens": max_new_tokens, "do_sample": False, "num_beams": 1}
        self.stats = VQAStats(feature_reuse=feature_reuse)

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
        parts = [self._encode_chunk(self._take(prepared, chunk)) for chunk in balanced_chunks(n, self.batch_size)]
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
        for chunk in balanced_chunks(len(order), self.score_batch_size):
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
        for chunk in balanced_chunks(len(order), self.batch_size):
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

    def common_settings(self, dtype) -> dict[str, Any]:
        """The generation and scoring settings every backend records in ``settings``."""
        return {"max_new_tokens": self.generate_kwargs["max_new_tokens"], "do_sample": False, "num_beams": 1,
                "dtype": str(dtype).removeprefix("torch."),
                "closed_set": f"{self.score_normalisation} of answer-token log-probabilities, softmax over the "
                              "allowed answers",
                "feature_reuse": self.stats.feature_reuse}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

