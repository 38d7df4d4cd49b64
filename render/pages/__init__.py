"""Hand-written pages: sources, lint, the template sandbox, layout, notices, provenance, methodology, history."""
