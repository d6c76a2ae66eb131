"""A SCIDOCS-layout benchmark built from any citation corpus (``build``), and its leakage-safe splits.

Sits between ``data`` (readers, corpora) and ``triplets`` (mining, audit): it reads corpora and writes the
evaluation and training folders that everything later reads.
"""
