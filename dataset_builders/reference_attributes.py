"""Publish reference attributes as a Hub dataset: the ten Monk Skin Tone swatches, the text
gender attributes of MCAS and Generated Bias, and (from an audited run) MCAS image
attributes one trusted model generated, so that audits of other models can score
against the same images.

    python -m dataset_builders.reference_attributes --help

The builder registered as ``reference_attributes`` (:data:`benchmark.registries.DATASET_BUILDERS`): its module,
:mod:`benchmark.tasks.mcas.reference_dataset`, says what it builds, how to load it and its options.
"""

import sys

from dataset_builders import builder_command

main = builder_command(__file__)  # the builder registered under this module's name

if __name__ == "__main__":
    sys.exit(main())
