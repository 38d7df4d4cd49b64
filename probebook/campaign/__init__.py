"""Campaigns: many probe points (presets x contexts x batches) planned, run, resumed, collected and audited.

A campaign folder holds a frozen manifest (itself evidence), a receipt per point, the points'
evidence in the folder's own write-once store, and one submitit job folder per attempt. Jobs
go through submitit: its Slurm executor on a cluster, its local executor on one machine; no
scheduler of our own. Modules: ``spec`` (the YAML spec), ``plan`` (the manifest), ``receipts``,
``executors`` (submitit settings, job state), ``job`` (what runs in each job), ``runner``
(run and resume), ``report`` (status and collect), ``audit``.
"""
