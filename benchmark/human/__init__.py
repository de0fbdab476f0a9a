"""Human labels: the answer values of each question type and what a task says about its
questions (questions; the questions themselves are the tasks'), the append-only answers file
and the items to label (labels), the annotation app (app, ``t2ibench annotate-ui``), and the
agreement statistics over the answers (``t2ibench agreement``); the paper-specific parts are
each task's ``human_validation``."""
