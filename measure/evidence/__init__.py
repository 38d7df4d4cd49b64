"""The torch-free evidence layer: the envelope, the write-once store, `archive verify`'s pass, the importer and
the column contracts. The only part of measure that render reads (besides errors, constants and progress)."""
