"""The kinds of question the labelling app asks, in a module of their own: the command line
offers them as choices without loading the paper folders that word the questions."""

QUESTION_TYPES = ("attribute", "gender_paired", "gender_single", "skin_tone")
