"""Derivations: pure functions from evidence rows to the numbers a page publishes.

One module per kind of evidence: ``fit`` (step-time scaling), ``lossmem`` (loss-kernel
memory), ``batchsweep`` (batch sweeps to OOM), ``gemm`` (GEMM FLOP/s and same-session
ceilings), ``kernels`` (device kernel time by category), ``ablation`` (what an arm saves),
``project`` (training-time projections) and ``mfu`` (model FLOPs
utilisation); ``fit_numerics`` holds the fit's NNLS, term choice, outlier search and bootstrap.
Nothing here reads files, imports torch, or prints.
"""
