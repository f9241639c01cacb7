"""The GPU benchmark suite (issue 9): runner vs raw framework loops, MFU, seed claims on one host.

Entry point: ``python benchmarks/gpu/h100_suite.py`` (see benchmarks/RESULTS.md). Modules:
  graph       a Keras functional model as a framework-neutral op list (+ forward MACs)
  raw_torch   that op list as a plain PyTorch training loop (AMP bf16, channels_last)
  raw_jax     ... as a plain jax.jit training loop
  raw_tf      ... as a plain tf.function training loop
  peak        the peak of a large bf16 matrix product
  child       one measurement in its own process (runner arm, raw arm, peak, RNN kernels)
  parts       the seed claims one host can test (sharing, shared, bandwidth, GRU/LSTM, MNIST)
  plan        what runs, full size and --cpu-smoke
  table       the final table
"""
