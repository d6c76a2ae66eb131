"""The embedding space: t-SNE / UMAP projections and their DBSCAN homogeneity and completeness (Figure 2)."""
