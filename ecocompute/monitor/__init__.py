"""monitor: measuring energy over time windows. The 10 Hz power sampler (a thread), the
energy meter (synchronized windows read from the NVML energy counter, cross-checked by
the sampler) and the counter's step-edge interpolation.

May import: telemetry, errors, units.
"""
