"""A plain Python callable as a text-to-image model (:class:`CallableTextToImage`) and the
import of a ``python:module.path:function`` spec (``import_callable``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable


from .errors import MalformedSpecError
from .generation_output import GenerationOutput
from .text_to_image_base import TextToImageModel


class CallableTextToImage(TextToImageModel):
    """A plain callable ``(prompts, seeds) -> list[PIL.Image]`` (e.g. an API client).

    It may also return a :class:`GenerationOutput` (to report safety flags). Keyword
    ``overrides`` are passed to it on every call and recorded in ``settings``.
    """

    def __init__(self, fn: Callable, *, model_id: str, revision: str | None = None, overrides=None):
        self.fn = fn
        self.model_id = model_id
        self.revision = revision
        self.overrides = dict(overrides or {})
        extra = getattr(fn, "t2ibench_settings", None)
        self.settings = {"kind": "python-callable", "callable": model_id, **(extra or {}), **self.overrides}

    def _generate(self, prompts: list[str], seeds: list[int]) -> GenerationOutput:
        from PIL import Image

        out = self.fn(prompts, seeds, **self.overrides)
        if isinstance(out, GenerationOutput):
            return out
        images = list(out)
        bad = [type(im).__name__ for im in images if not isinstance(im, Image.Image)]
        if bad:
            raise TypeError(f"callable {self.model_id} must return PIL images, got {bad[0]}")
        return GenerationOutput(images=images)


def import_callable(spec: str) -> Callable:
    target = spec[len("python:") :]
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise MalformedSpecError(f"malformed spec {spec!r}: use python:module.path:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise MalformedSpecError(f"spec {spec!r}: cannot import module {module_name!r} ({err})") from None
    fn = module
    for part in attr.split("."):
        if not hasattr(fn, part):
            raise MalformedSpecError(f"spec {spec!r}: module {module_name!r} has no attribute {attr!r}")
        fn = getattr(fn, part)
    if not callable(fn):
        raise MalformedSpecError(f"spec {spec!r}: {attr!r} is not callable")
    return fn
