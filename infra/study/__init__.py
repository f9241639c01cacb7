"""Studies: a paper reproduction as one file and one command (``gpulab study run|status|report``).

Modules, one job each:
  model        the study file (YAML): parsed and validated, one line naming the key on bad input
  plan         the order of the (arm, repeat) units: interleaved, or randomized with a seed
  state        the journal under the study's results directory (atomic writes, resumable)
  local        one unit on the ``local`` topology: the runner natively or in a container
  lab          one unit on a lab stack: up / measure / rebuild / down through the Automation API
  driver       the whole run: build or reuse, measure, rebuild when asked, tear down, progress
  fingerprint  the arms' environment fingerprints compared (paired arms)
  verdicts     the study report: arms done, failed, missing; verdicts per claim
"""
