"""One ArtifactRenderer per export format, over the block model extraction produces."""
