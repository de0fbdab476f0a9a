"""Publish a run's human labels as a Hub dataset: one row per item (an image and a
question) with every annotator's answer, the majority and the agreement, plus the raw
answers, and a card with the instructions the annotators saw.

    python -m dataset_builders.human_labels --help

The builder registered as ``human_labels`` (:data:`benchmark.registries.DATASET_BUILDERS`): its module,
:mod:`benchmark.human.label_dataset`, says what it builds, how to load it and its options.
"""

import sys

from dataset_builders import builder_command

main = builder_command(__file__)  # the builder registered under this module's name

if __name__ == "__main__":
    sys.exit(main())
