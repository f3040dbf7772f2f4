"""task: the energy_estimate task. run.py is the one place that decides measured or
published; measured_path.py runs the protocol (protocol.py: phases with the sampler on;
trials.py: warm-ups and measured decodes) on a Machine (machine.py: NVML, CUDA and the
model stack as seams); published_path.py derives the published figure. Both paths
return typed outcomes (MeasuredRun, PublishedRun); report/ turns them into JSON.

May import: llm, monitor, telemetry, published, params, stats, precision, progress,
errors, units.
"""
