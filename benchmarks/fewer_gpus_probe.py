"""Issue 22's probe of what only GPUs can show about a model built in memory (a minute on
2 x H200; no report): benchmarks/fewer_gpus_h200x2.sh runs it as its `probe` case.

1. Seeding across devices: the same tensor's values drawn on each GPU (and on the CPU)
   with the same seed. The builder promises equal values on devices of one kind.
2. A model that sits whole on the second GPU (the in-memory plan puts a quantized copy
   on the roomiest GPU): synthetic:tiny-in-memory at NF4 on GPU 1 only, decoded eagerly
   and in the graphs regime (captured on GPU 1; prepare() checks the replayed tokens
   against the eager step's), from a prompt made on GPU 0 as the measured path makes it.

    python3 benchmarks/fewer_gpus_probe.py            # on the GPU machine
    python3 benchmarks/fewer_gpus_probe.py --cpu      # the rehearsal: fake GPUs on the CPU
"""

from __future__ import annotations

import argparse
import time


def seeding(devices: list[str]) -> None:
    import torch

    from ecocompute.llm.in_memory import values

    drawn = {
        d: values("model.layers.0.mlp.up_proj.weight", (512, 256), torch.float16, d, 0.02, 0)
        for d in devices
    }
    first = drawn[devices[0]].cpu()
    for d, v in drawn.items():
        print(f"seeding: {d} vs {devices[0]}: equal={torch.equal(v.cpu(), first)}")
    other = values(
        "model.layers.0.mlp.up_proj.weight", (512, 256), torch.float16, devices[0], 0.02, 1
    )
    print(f"seeding: seed 1 vs seed 0 on {devices[0]}: equal={torch.equal(other.cpu(), first)}")


class SecondGpuOnly:
    """The real accelerator (or the CPU's fake GPUs), with no budget on GPU 0."""

    def __init__(self, inner) -> None:
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def budgets_bytes(self) -> dict[int, int]:
        budgets = self._inner.budgets_bytes()
        return {i: (0 if i == 0 else b) for i, b in budgets.items()}


def second_gpu(accelerator, capture: bool) -> None:
    from ecocompute.core.precision import Precision
    from ecocompute.formats.table import spec_for
    from ecocompute.llm.decode import make_decoder
    from ecocompute.llm.loading import load, prompt_ids, resolve_checkpoint

    model_name = "synthetic:tiny-in-memory"
    checkpoint = resolve_checkpoint(model_name, accelerator)
    loaded = load(checkpoint, spec_for(Precision.NF4), SecondGpuOnly(accelerator))
    plan = sorted(set(loaded.model.hf_device_map.values()))
    print(f"second GPU: NF4 on device(s) {loaded.devices}, plan {plan}")
    ids, mask = prompt_ids(checkpoint, 2, accelerator)  # on the input device, GPU 0
    outputs = {}
    for regime in ("eager", "graphs"):
        decoder = make_decoder(loaded.model, ids, mask, 16, regime, capture=capture, label="NF4")
        decoder.prepare()
        since = time.monotonic()
        out = decoder.run()
        accelerator.synchronize()
        outputs[regime] = out.cpu()
        record = decoder.record()
        print(
            f"second GPU: {regime} decode on {out.device}: {decoder.new_tokens(out)} new tokens "
            f"in {time.monotonic() - since:.3f} s, graph_captured={record.get('graph_captured')}"
        )
    same = bool((outputs["eager"] == outputs["graphs"]).all())
    print(f"second GPU: eager and graphs chose the same tokens: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="rehearse on fake GPUs (the CPU)")
    args = parser.parse_args()
    if args.cpu:
        from tests.fake_gpus import FakeGpus

        seeding(["cpu"])
        second_gpu(FakeGpus(), capture=False)
        return
    import torch

    from ecocompute.llm.cuda import CudaAccelerator

    count = torch.cuda.device_count()
    seeding([f"cuda:{i}" for i in range(count)] + ["cpu"])
    if count < 2:
        print("second GPU: skipped (one GPU visible)")
        return
    second_gpu(CudaAccelerator(), capture=True)


if __name__ == "__main__":
    main()
