"""Command-line registration modules that ``t2ibench --help`` imports: options only, light
imports; each command's body imports the stage it runs when it runs."""
