"""probebook's measure side: probes that time training steps on a GPU and write evidence.

Imports torch lazily (only inside probes and workloads); never imports ``render``.
"""

__version__ = "0.1.0"
