"""Studies: a paper reproduction as one file and one command (``gpulab study run|status|report``).

Modules, one job each:
  model        the study file (YAML): parsed and validated, one line naming the key on bad input
  plan         the order of the (arm, repeat) units: interleaved, or randomized with a seed
  state        the journal under the study's results directory (atomic writes, resumable)
  journal_check  every key of a journal checked before it is read (one line naming the key)
  lock         one command at a time on a study (flock on results/study-<name>.lock)
  unit_files   a unit's .part read, filed with the study's tags, earlier tries set aside
  local        one unit on the ``local`` topology: the runner natively or in a container
  lab          one unit on a lab stack: up / measure / rebuild / down through the Automation API
  driver       the whole run: build or reuse, measure, rebuild when asked, tear down, progress;
               what an earlier run left (a runner still alive, a complete .part) first
  fingerprint  the arms' environment fingerprints compared (paired arms)
  verdicts     the study report: arms done, failed, missing; verdicts per claim
"""
