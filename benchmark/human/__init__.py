"""Human labels: the papers' questions (questions), the append-only answers file and the items
to label (labels), the annotation app (app, ``t2ibench annotate-ui``), and the agreement
statistics over the answers (``t2ibench agreement``)."""
