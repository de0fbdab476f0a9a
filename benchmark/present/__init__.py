"""Presentation: ``text`` (escaping and number formatting), ``terminal`` (the printed tables),
``plotting`` (matplotlib helpers) and ``progress`` (progress bars and stage timers)."""
