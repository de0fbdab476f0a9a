"""MCAS (Mandal et al. 2023) and the Generated Bias scores computed from the same images: one
folder for the probes and the embeddings they share. ``probes`` builds ``mcas_attributes`` /
``mcas_targets`` from ``probes.yaml``; ``embeddings`` is the annotator kind ``mcas_embeddings``;
``task`` declares the task (II, ITP, ITA, TT, MCAS, Diffusion Bias, Bias Amplification);
``figures`` draws MCAS Figs. 3-6; ``paper_checks`` recomputes the printed tables from ``data/``.
"""

from benchmark.tasks.mcas import embeddings, probes, task

__all__ = ["embeddings", "probes", "task"]
