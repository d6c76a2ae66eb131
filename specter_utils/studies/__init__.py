"""The logic of the studies in ``experiments/``, whose scripts keep only their lists of settings and command lines.

``levers`` (the recipe-lever study: settings x seeds through the sweep runner ``workflow.sweep``, and its table),
``base_model_prior`` (what a base model already learned from citations) and ``negative_relatedness`` (how related
each mined paper of a triplet is to its query). A study builds on the stages of ``workflow`` and may stamp its rows
with the commit and machine (``pipeline``, ``executed``): it sits above them, and nothing in the package imports it.
"""
