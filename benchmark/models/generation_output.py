"""What a text-to-image model returns for a batch of prompts (every backend: pipelines,
callables, image APIs)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["GenerationOutput"]


@dataclass
class GenerationOutput:
    """Images in prompt order, and per image the safety checker's flag.

    ``nsfw[i]`` is True when the model's safety checker flagged image ``i`` (diffusers
    then returns it blacked out: it must be excluded or marked, never scored as a normal
    image), False when it checked and passed it, None when the model has no checker.
    """

    images: list
    nsfw: list[bool | None] = field(default_factory=list)
    # probes whose image was withheld (placeholder flagged nsfw): {"probe_id", "reason", "message"}
    withheld: list[dict] = field(default_factory=list)

    def __post_init__(self):
        if not self.nsfw:
            self.nsfw = [None] * len(self.images)
        if len(self.nsfw) != len(self.images):
            raise ValueError(f"{len(self.images)} images but {len(self.nsfw)} nsfw flags")
