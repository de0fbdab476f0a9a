"""The PaintSkills oracle detector: the scenes' own boxes as detections.

:class:`GroundTruthDetector` gives the paper's Table 2 oracle (every query is a rendered
object with probability 1). Real detectors (DETR by Hub ID, folder or
``builtin:tiny-detr``) are models: :mod:`benchmark.models.detector`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchmark.models.detector import Detections, Detector

__all__ = ["GroundTruthDetector"]


def _object_box(obj: Mapping) -> Any:
    return obj.get("box") if obj.get("box") is not None else obj.get("bbox")


def _object_name(obj: Mapping) -> str | None:
    return obj.get("coco_name") or obj.get("category_name")


class GroundTruthDetector(Detector):
    """The scenes' own objects as detections: one query per object, probability 1 for its
    class, its rendered box. Queries follow the scene's object order (objA first), which
    breaks ties the way the rules expect (``ranked`` is a stable sort).

    ``scenes``: scene dicts with rendered boxes (``objects[i]["box"]`` or dataset rows'
    ``objects[i]["bbox"]`` = [x, y, w, h] in pixels) and the image size in ``width`` /
    ``height`` or given as ``image_size`` (one int or (width, height)).
    """

    name = "ground-truth"

    def __init__(self, scenes: Sequence[Mapping], image_size: int | tuple[int, int] | None = None):
        self.settings = {"kind": "ground-truth"}
        self._scenes: dict[str, Mapping] = {}
        for s in scenes:
            sid = str(s.get("id") or s.get("scene_id") or "")
            if not sid:
                raise ValueError(f"a scene has no id: {dict(s)!r}")
            self._scenes[sid] = s
        self._size = None if image_size is None else (
            (int(image_size), int(image_size)) if isinstance(image_size, (int, np.integer)) else
            (int(image_size[0]), int(image_size[1])))
        self._classes = tuple(dict.fromkeys(n for s in self._scenes.values() for o in s.get("objects") or []
                                            if (n := _object_name(o))))

    def _key(self, item: Any) -> str:
        if isinstance(item, Mapping):
            item = item.get("scene_id") or item.get("id")
        key = str(item)
        if key not in self._scenes:
            raise ValueError(f"the ground-truth detector knows no scene {key!r} (it reads scene ids, not pixels)")
        return key

    def detections_of(self, scene: Mapping) -> Detections:
        size = (scene.get("width"), scene.get("height"))
        w, h = (size if all(isinstance(v, (int, float, np.integer)) and v for v in size) else self._size or (0, 0))
        if not (w and h):
            raise ValueError(f"scene {scene.get('id')!r}: image size unknown (no width / height; give image_size)")
        objects = list(scene.get("objects") or [])
        names, boxes = [], []
        for o in objects:
            box, name = _object_box(o), _object_name(o)
            if box is None or name is None:
                raise ValueError(f"scene {scene.get('id')!r}: an object has no rendered box or class; render the "
                                 "scenes first (python -m dataset_builders.paintskills)")
            x, y, bw, bh = (float(v) for v in box)
            names.append(str(name))
            boxes.append([(x + bw / 2) / w, (y + bh / 2) / h, bw / w, bh / h])
        classes = tuple(dict.fromkeys(self._classes + tuple(names)))
        probs = np.zeros((len(objects), len(classes)), dtype=np.float32)
        for q, n in enumerate(names):
            probs[q, classes.index(n)] = 1.0
        return Detections(np.ones(len(objects), np.float32), tuple(names),
                          np.asarray(boxes, np.float32).reshape(-1, 4), probs, classes)

    def detect(self, images: Sequence) -> list[Detections]:
        return [self.detections_of(self._scenes[self._key(i)]) for i in images]
