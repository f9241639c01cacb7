"""gpulab workload runner.

Runs alone on GPU hosts: never imports ``infra``, pulumi or ansible. Entry point:
``python -m workloads bench ...`` (the ``gpulab bench`` command calls the same code).
"""

__version__ = "0.1.0"
