"""The one interface every text-to-image model has (:class:`TextToImageModel`): ``generate``
(prompts, seeds) -> :class:`GenerationOutput`, and the attributes the run manifest records."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any


from .generation_output import GenerationOutput


class TextToImageModel(ABC):
    """One interface for every text-to-image model.

    Attributes for the run manifest: ``model_id``, ``revision`` (None = the default
    branch; ``settings["commit"]`` holds the resolved commit when known), ``settings``
    (a JSON-serialisable dict of everything that determines the images) and
    ``is_builtin`` (True for random-weight built-in models: their outputs are meaningless).
    """

    model_id: str
    revision: str | None = None
    settings: dict[str, Any]
    is_builtin: bool = False
    #: text put before every prompt (a LoRA's trigger and its separator, lora_card.py; recorded in
    #: ``settings["lora_trigger"]``): the manifest keeps the probe's own prompt
    prompt_prefix: str = ""

    @abstractmethod
    def _generate(self, prompts: list[str], seeds: list[int]) -> GenerationOutput: ...

    def generate(self, prompts: Sequence[str], seeds: Sequence[int]) -> GenerationOutput:
        """One image per (prompt, seed) pair, in order."""
        prompts, seeds = [str(p) for p in prompts], [int(s) for s in seeds]
        if len(prompts) != len(seeds):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        if not prompts:
            return GenerationOutput(images=[], nsfw=[])
        out = self._generate([self.prompt_prefix + p for p in prompts] if self.prompt_prefix else prompts, seeds)
        if len(out.images) != len(prompts):
            raise RuntimeError(f"model {self.model_id} returned {len(out.images)} images for {len(prompts)} prompts")
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, revision={self.revision!r})"
