"""Annotators: turning images into labels (CLIP estimators, VQA answers, skin tone, MCAS
embeddings, object detections).

Each annotator is a small class behind one interface (:mod:`benchmark.annotate.registry`):
which label file it writes (:mod:`benchmark.annotate.label_files`), which keys an image
needs (so a re-run does only what is missing), and how a batch of images (or of their CLIP
embeddings) becomes rows. Kinds are registered by name and chosen by the tasks of a run
(:mod:`benchmark.tasks`); the model of each comes from a run option (``--encoder``, ``--vqa``,
``--detector``...). Submodules are imported on demand (they pull in OpenCV / torch).
"""
