"""Build the probe sets as one Hub-layout dataset folder (a config per suite, split
``test``) with its dataset card, and optionally publish it.

    python -m dataset_builders.probes --out DIR [--suites gep_neutral ...]
        [--config gep=my_gep.yaml ...] [--push-to-hub ORG/NAME [--create-pr]]

``datasets.load_dataset(DIR, "gep_neutral", split="test")`` then loads it offline; ``t2ibench
run --probes DIR`` audits it. The builder itself is :mod:`benchmark.probes.dataset`.
"""

from __future__ import annotations

import sys

from benchmark.probes.dataset import add_arguments, run
from dataset_builders import builder_main


def main(argv: list[str] | None = None) -> int:
    return builder_main("python -m dataset_builders.probes", __doc__.split("\n\n")[0], add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
