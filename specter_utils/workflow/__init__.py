"""The stages of a run, one module each, shared by the notebooks and the command line.

``prepare`` (notebook 01), ``mine`` (02), ``train`` (03), ``embed`` (04), ``evaluate`` (05), ``analyse`` (06),
``ablations`` (07) and ``heads`` (08). Each stage takes the run specification (``spec.RunSpec``), whose sections
are the config classes of :mod:`specter_utils.config`, and the folders it reads and writes (``runs.RunPaths``).
"""
