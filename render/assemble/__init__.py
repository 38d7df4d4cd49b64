"""The build: stages (render.assemble.stages.build), incremental caches, dirty builds, forked workers, deferred work,
serve."""
