"""t2i-bias-benchmark: audit text-to-image models for social bias and compositional skill.

Layers (data flows one way): ``probes`` (what to generate) -> ``models`` (how images
are made) -> ``annotate`` (images to labels) -> ``scores`` (pure functions over
labels) -> ``runner`` (joins them) -> results, report and leaderboard.
"""

__version__ = "0.1.0"
