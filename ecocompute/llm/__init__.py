"""llm: the model side. Loading a checkpoint at FP16 or in a quantized format (NF4 and
INT8 by bitsandbytes, INT4 and FP8 by torchao: quantizers/), the
CUDA accelerator, synthetic presets (public architectures, random weights; the largest
built in GPU memory, in_memory.py, over a placement plan, placement.py), decode regimes
(eager generate(), graph-captured static-cache decode, and the same decode with its step
compiled by torch.compile), out-of-memory naming, the perplexity probe with its corpus,
and the models a sweep keeps loaded across a model's points (resident.py). torch,
transformers and bitsandbytes are imported inside functions only.

May import: formats, telemetry (device records), precision, errors, units.
"""
