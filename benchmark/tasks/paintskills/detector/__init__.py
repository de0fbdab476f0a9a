"""The detectors PaintSkills is scored with, checked against and trained into (DALL-Eval Sec.
4.1, Table 2): ``ground_truth`` (the scenes' own boxes as detections, the oracle),
``baselines`` (the oracle and shuffled-ground-truth rows of Table 2 on the rendered data) and
``training`` (fine-tuning a COCO DETR on the rendered train split, the paper's protocol).
Real detectors are loaded by :mod:`benchmark.models.detector`; this package imports none of
its modules, so each is loaded only where it is used.
"""
