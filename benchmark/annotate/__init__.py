"""Annotators: turning images into labels (CLIP similarity, VQA answers, skin tone...).

Each annotator is a small class behind one interface, chosen by name or model ID.
Submodules are imported on demand (they pull in OpenCV / torch), e.g.
``from benchmark.annotate.skin_tone import SkinToneAnnotator``.
"""
