"""The build: stages (render.build.stages.build), incremental caches, dirty builds, forked workers, deferred work,
serve."""
