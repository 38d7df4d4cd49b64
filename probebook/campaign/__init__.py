"""Campaigns: many probe points (a batch sweep's presets x contexts x batches, or any probe's grid of options)
planned, run, resumed, collected and audited.

A campaign folder holds a frozen manifest (itself evidence), a receipt per point, the points'
evidence in the folder's own write-once store, and one submitit job folder per attempt. Jobs
go through submitit: its Slurm executor on a cluster, its local executor on one machine; no
scheduler of our own. Modules: ``spec`` (the YAML spec), ``grid`` (a grid's points and their
commands), ``plan`` (the manifest), ``receipts``,
``executors`` (submitit settings, job state), ``job`` (what runs in each job), ``runner``
(run and resume), ``report`` (status and collect), ``audit``.
"""
