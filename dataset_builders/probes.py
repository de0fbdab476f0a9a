"""Build the probe sets as one Hub-layout dataset folder (a config per suite, split
``test``) with its dataset card, and optionally publish it.

    python -m dataset_builders.probes --out DIR [--suites gep_neutral ...]
        [--config gep=my_gep.yaml ...] [--push-to-hub ORG/NAME [--create-pr]]

``datasets.load_dataset(DIR, "gep_neutral", split="test")`` then loads it offline; ``t2ibench
run --probes DIR`` audits it.

The builder registered as ``probes`` (:data:`benchmark.registries.DATASET_BUILDERS`):
:mod:`benchmark.probes.dataset`.
"""

import sys

from dataset_builders import builder_command

main = builder_command(__file__)  # the builder registered under this module's name

if __name__ == "__main__":
    sys.exit(main())
