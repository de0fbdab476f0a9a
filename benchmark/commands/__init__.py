"""The ``t2ibench`` commands: registration modules that ``t2ibench --help`` imports (options
only, light imports) and the modules holding the command bodies (``catalogue``, ``audit``,
``stages``), which ``benchmark.cli`` names as ``module:function`` and imports only when a
command runs, as an entry point is loaded."""
