"""The run-folder and results contract: what a run folder holds and how it is written
(``run_folder``, ``run_folder_check``, ``withheld``, ``image_provenance``), results.json and its
schema (``results``, ``results_schema.json``, ``values``), and the safe readers and writers they
share (``atomic``, ``written_hashes``, ``bounded_json``)."""
