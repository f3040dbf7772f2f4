"""--compile_scope layer on the CPU (regional compilation): each decoder layer compiled
on its own, the rest of the step eager. Its tokens against generate()'s, what the record
says (layers, graphs, inductor's cache), that the prefill and the check stay eager, and
the one-line refusal outside the compiled regime."""

from __future__ import annotations

import json

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.errors import InputError
from ecocompute.llm.decode import make_decoder
from ecocompute.params import RunParams
from ecocompute.report.read import energy_report_problems
from ecocompute.sweeps.sweep import sweep

from ..fakes import StandInQuantBackend, fake_machine
from .test_decode import prompt, tiny_model

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TOKENS = 16


@pytest.fixture(autouse=True)
def _caches(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))  # cold
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


def _decoder(model, batch, regime="compiled", **kwargs):
    ids, mask = prompt(batch)
    decoder = make_decoder(model, ids, mask, TOKENS, regime, capture=False, **kwargs)
    decoder.prepare()
    return decoder


@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_each_layer_compiled_gives_generates_tokens_and_says_so():
    torch._dynamo.reset()  # as a fresh process
    model = tiny_model()
    decoder = _decoder(model, 2, compile_scope="layer", label="NF4")
    layers = list(model.model.layers)
    assert all(layer._compiled_call_impl is None for layer in layers)  # only in the step
    first = decoder.run()
    assert torch.equal(first, _decoder(model, 2, regime="eager").run())
    assert torch.equal(decoder.run(), first)
    record = decoder.record()
    assert record["compiler"]["scope"] == "layer"
    assert record["compiler"]["layers_compiled"] == len(layers) == 2
    # a graph per layer (each reads its cache by index); the second layer's kernels
    # come from inductor's cache, the first's are compiled
    assert record["dynamo_graphs"] == len(layers)
    assert record["fx_graph_cache"] == {"hits": len(layers) - 1, "misses": 1, "bypasses": 0}
    assert record["token_check"]["tokens_checked"] == 8
    note = decoder.prepared_note()
    assert "2 layers compiled whole: 2 graphs, 1 loaded from inductor's cache" in note


def test_compile_scope_is_the_compiled_regimes_alone():
    with pytest.raises(InputError, match=r"^invalid compile_scope 'layer': needs --decode"):
        RunParams(compile_scope="layer", decode="graphs")
    assert RunParams(compile_scope="layer", decode="compiled").compile_scope == "layer"
    assert RunParams(decode="compiled").compile_scope == "step"


def test_a_model_without_decoder_layers_is_refused_in_one_line(monkeypatch):
    model = tiny_model()
    monkeypatch.setattr(model.model, "layers", None)
    from ecocompute.errors import DecodeCaptureFailed

    with pytest.raises(DecodeCaptureFailed, match=r"needs the model's decoder layers"):
        _decoder(model, 1, compile_scope="layer", label="FP16")


@pytest.mark.e2e
def test_a_sweep_with_layers_compiled_names_it_in_its_protocol(tmp_path):
    torch._dynamo.reset()
    flags = {"tokens": str(TOKENS), "iterations": "2", "warmup": "0", "idle_seconds": "0",
             "decode": "compiled", "compile_scope": "layer", "quality_probe": "false",
             "quiet": True}  # fmt: skip
    machine = fake_machine(backend=StandInQuantBackend)
    sweep(["synthetic:tiny-test"], ["NF4"], tmp_path / "sw", options=flags,
          progress=Progress(quiet=True), machine=machine)  # fmt: skip
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    (run,) = doc["runs"]
    report = json.loads((tmp_path / "sw" / run["report"]).read_text())
    assert energy_report_problems(report) == []
    assert report["measurement"]["decode"]["compiler"]["scope"] == "layer"
    assert "(layers compiled)" in doc["protocol"]
