"""telemetry: GPU device access. One small interface (base.GpuTelemetry), NVML behind it
(nvml.py, the only module that imports pynvml), and the CUDA-to-NVML device mapping.

May import: errors, units. Nothing else of ecocompute.
"""
