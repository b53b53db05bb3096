"""Calibration on the machine it runs on: microbenchmarks -> accelerator profile -> decode check.

`microbench.run_microbenchmarks()` measures matmul FLOP/s by size and dtype, copy bandwidth, weight-
streaming (matrix-vector) bandwidth and per-operation dispatch overhead (PyTorch when installed, else
NumPy). `profile.accelerator_row()` turns them into a row in the format of catalog/data/accelerators.yaml
(loadable with `--accelerator-file`), `profile.calibrated_family()` into efficiency factors, and
`decode.decode_check()` times a real Llama-architecture decode and compares it with the prediction.
"""
