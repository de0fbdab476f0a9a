"""The leaderboard: results files -> one row per model (``data``), shown by a Gradio app (``app``),
started by ``t2ibench leaderboard`` (``cli``) or as a Hub Space (``README.md``, ``app.py``)."""
