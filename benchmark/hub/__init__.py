"""Hugging Face Hub access: ``access`` (one error-handling path, pushes and commits) and
``dataset_layout`` (the folder layout and cards of a Hub dataset)."""
