"""Lifecycle: dynamic resources, automation layer, gpulab run local, results summary."""
