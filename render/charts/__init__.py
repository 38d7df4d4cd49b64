"""Charts: one module per family of kinds, their marks and theme, the SVG drawing and the output files."""
