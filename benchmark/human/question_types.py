"""The kinds of question the labelling app asks, in a module of their own: the command line
offers them as choices without loading the paper folders that word the questions.

``attribute`` (is it there? yes / no), ``gender_paired`` / ``gender_single`` (perceived gender of
the person on the left / right, or of the one person), ``skin_tone`` (a Monk Skin Tone swatch) and
``prompt_match`` (does the image show this part of its prompt, e.g. the object, the number of
objects, their relation? yes / no)."""

QUESTION_TYPES = ("attribute", "gender_paired", "gender_single", "skin_tone", "prompt_match")
