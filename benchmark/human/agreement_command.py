"""``t2ibench agreement``: its options, kept apart from the statistics so that help and usage
errors load no table or statistics library (the work is :func:`agreement_cli.run_agreement`)."""

from __future__ import annotations

from benchmark.cli_types import output_file, seed


def register(subparsers) -> None:
    """Add ``agreement`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser(
        "agreement", help="agreement between human annotators, and automatic labels vs humans",
        description="Fleiss' kappa and Krippendorff's alpha per question type, disagreements, automatic labels "
                    "against the human majority (ROC-AUC, attribute-frequency vectors, Cohen's kappa, skin tone) "
                    "and the existence estimators on the artificial datasets; writes RUN_DIR/report/agreement.md and .json.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder with human labels (t2ibench annotate-ui)")
    p.add_argument("--include-flagged", action="store_true",
                   help="keep annotators who did not pass the qualification test")
    p.add_argument("--out", default=None, type=output_file, help="Markdown file outside every run folder (default "
                   "RUN_DIR/report/agreement.md, the stage's own; the JSON goes beside it)")
    p.add_argument("--no-artificial", action="store_true", help="skip the artificial datasets")
    p.add_argument("--seed", type=seed, default=0, help="random state of the artificial datasets (default 0)")
    p.set_defaults(func=f"{__package__}.agreement_cli:run_agreement")
