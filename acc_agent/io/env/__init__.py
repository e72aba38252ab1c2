"""Environment probes: npu-smi / nvidia-smi parsers, version files, env vars, the device probe."""
