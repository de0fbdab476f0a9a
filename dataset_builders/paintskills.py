"""Build the PaintSkills dataset (DALL-Eval, DALL-Eval Sec. 3) as a Hub-layout folder:
one config per skill, splits train / test, rendered images with COCO-style boxes.

    python -m dataset_builders.paintskills --help

The builder registered as ``paintskills`` (:data:`benchmark.registries.DATASET_BUILDERS`): its module,
:mod:`benchmark.tasks.paintskills.scene_dataset`, says what it builds, how to load it and its options.
"""

import sys

from dataset_builders import builder_command

main = builder_command(__file__)  # the builder registered under this module's name

if __name__ == "__main__":
    sys.exit(main())
