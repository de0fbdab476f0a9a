"""Generated Bias's registrations: its citation and its two scores, Diffusion Bias and Bias
Amplification. The paper has no task of its own: the MCAS task computes both scores from its
components (see this folder's ``__init__``), so this module declares no ``Task``.
"""

from __future__ import annotations

from benchmark.registries import Registrations
from benchmark.tasks.generated_bias import metadata
from benchmark.tasks.generated_bias.citation import GENERATED_BIAS_PAPER

__all__ = ["REGISTRATIONS"]

#: everything this folder adds to the registries (the loader registers it, in folder order)
REGISTRATIONS = Registrations(papers=(GENERATED_BIAS_PAPER,), scores=metadata.SCORES)
