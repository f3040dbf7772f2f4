"""How long the compiled step's first call takes on this CPU, the whole step compiled
against each decoder layer compiled on its own (--compile_scope layer), each in a fresh
process with an empty inductor cache: tiny-test's shapes with 8 layers, batch 2, float32.

    python benchmarks/compile_scope_cpu.py            # both, one process each
    python benchmarks/compile_scope_cpu.py step|layer  # one (what the first runs)

A CPU figure of inductor's C++ backend, not of an H200 (whose compile autotunes its
matmuls on the GPU): it says what the layer scope saves in tracing and lowering."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time


def one(scope: str) -> None:
    import torch
    from torch._dynamo.utils import counters
    from transformers import AutoModelForCausalLM, StaticCache

    from ecocompute.llm.synthetic import PRESETS, build_config

    preset = dataclasses.replace(PRESETS["tiny-test"], num_hidden_layers=8)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        build_config(preset), dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    ids = torch.randint(3, 500, (2, 12))
    cache = StaticCache(config=model.config, max_cache_len=20)

    def step(token, position):
        return model(input_ids=token, position_ids=position, past_key_values=cache).logits

    with torch.no_grad():
        out = model(input_ids=ids, past_key_values=cache, use_cache=True)  # eager prefill
        token, position = out.logits[:, -1].argmax(-1, keepdim=True), torch.full((2, 1), 12)
        options = {"backend": "inductor", "fullgraph": True, "dynamic": False}
        if scope == "layer":
            for layer in model.model.layers:
                layer._compiled_call_impl = torch.compile(layer._call_impl, **options)
            first = step
        else:
            first = torch.compile(step, **options)
        started = time.monotonic()
        first(token, position)
        took = time.monotonic() - started
    inductor = counters["inductor"]
    print(
        f"{scope:<6} first call {took:5.1f} s  dynamo graphs {counters['stats']['unique_graphs']}"
        f"  FX-graph cache misses {inductor['fxgraph_cache_miss']} hits "
        f"{inductor['fxgraph_cache_hit']}"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        one(sys.argv[1])
    else:
        print(f"{os.cpu_count()} CPUs; each scope in a fresh process, an empty inductor cache")
        for scope in ("step", "layer"):
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": tempfile.mkdtemp()}
            done = subprocess.run(
                [sys.executable, __file__, scope], env=env, capture_output=True, text=True
            )
            print(done.stdout.strip() or done.stderr[-2000:])
