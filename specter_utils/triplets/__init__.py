"""Triplet mining (SPECTER, SPECTROID), leakage-safe splits and SCIDOCS-style benchmark building."""
