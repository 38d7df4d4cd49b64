"""The archive as render loads it, the evidence pages and their index."""
