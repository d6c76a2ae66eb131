"""Triplet mining (SPECTER, SPECTROID) and the leakage audit of triplets against a benchmark."""
