"""Embedding papers with any model, and the SCIDOCS embeddings file format."""
