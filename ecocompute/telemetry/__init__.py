"""GPU telemetry: one small interface (base.py), NVML behind it (nvml.py), the power
sampler (sampler.py) and the CUDA-to-NVML device mapping (mapping.py)."""
