"""MCAS (Mandal et al. 2023) and the Generated Bias scores computed from the same images: one
folder for the probes and the embeddings they share. ``inputs`` declares, light, what a run
takes from the command line (the ``mcas_embeddings`` annotator kind and its ``--mcas-encoders``,
the ``--mcas-reference`` input); ``probes`` builds ``mcas_attributes`` / ``mcas_targets`` from
``probes.yaml``; ``embeddings`` is the annotator of ``mcas_embeddings``; ``reference`` plans a
run audited against a reference's attribute images; ``task`` declares the task (II, ITP, ITA,
TT, MCAS, Diffusion Bias, Bias Amplification); ``figures`` draws MCAS Figs. 3-6;
``paper_checks`` recomputes the printed tables from ``data/``; ``reference_dataset`` builds the
reference-attributes dataset (``reference_configs`` declares its configs to the reader), the
dataset builder ``reference_attributes``. ``task.py``'s ``REGISTRATIONS`` lists everything the
folder registers.

This ``__init__`` stays light (``t2ibench --help`` imports it to read ``inputs``); the task
discovery imports ``task``, which imports the parts it registers.
"""

from benchmark.tasks.mcas import inputs

__all__ = ["inputs"]
