"""SCIDOCS evaluation: classification, ranking, recommendation, the suite and its table."""
