"""The stages of a run, one module each: the one front door of each stage, for the notebooks and the command line.

``prepare`` (notebook 01; build-benchmark, data), ``mine`` (02; mine, data audit), ``train`` (03), ``embed`` (04;
embed), ``search`` (04's similar papers; index, search), ``evaluate`` (05; evaluate, compare), ``analyse`` (06),
``ablations`` (07, over ``sweep``), ``heads`` (08) and ``report`` (report, run --report). Each stage takes its section of the run specification (``spec.RunSpec``,
whose sections are the config classes of :mod:`specter_utils.config`), or plain arguments where no section
exists, and the folders it reads and writes (``runs.RunPaths``). A command parses its flags into these
arguments, calls the stage and prints.
"""
