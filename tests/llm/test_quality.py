"""The quality probe on a local checkpoint with a real tokenizer (built here, offline)."""

from __future__ import annotations

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.llm.quality_probe import corpus_record, corpus_text
from ecocompute.params import resolve
from ecocompute.report.read import validation_errors

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, estimate_report

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_checkpoint(tmp_path_factory):
    """A tiny Llama with a word-level tokenizer trained on the probe's corpus, saved the
    way a downloaded checkpoint is laid out."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    from ecocompute.llm.synthetic import PRESETS, build_config

    folder = tmp_path_factory.mktemp("ckpt") / "tiny-local"
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        [corpus_text()], trainers.WordLevelTrainer(vocab_size=500, special_tokens=["[UNK]"])
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(build_config(PRESETS["tiny-test"]))
    model.save_pretrained(folder)
    return folder


def _run(folder, **flags):
    params = resolve(
        None,
        {
            "model_name": str(folder),
            "tokens": "8",
            "iterations": "2",
            "warmup": "0",
            "idle_seconds": "0.2",
            "quality_seq_len": "128",
            **flags,
        },
    )
    return estimate_report(
        params,
        Progress(quiet=True),
        open_telemetry=FakeTelemetry,
        accelerator=CpuAccelerator(),
        backend=StandInQuantBackend(),
    )


def test_perplexity_of_both_formats_on_the_published_corpus(local_checkpoint):
    report = _run(local_checkpoint, precision="NF4")
    assert validation_errors(report) == []
    q = report["quality"]
    assert q["basis"] == "measured" and q["metric"] == "perplexity"
    assert q["corpus"] == corpus_record()
    assert q["corpus"]["sha256"] == (  # the published corpus, byte for byte
        "22ac091a6383740d30f8e41ae144032c873c772db5e1c901112c1c330fdc5504"
    )
    assert q["corpus"]["bytes"] == 60600
    assert q["windows"] >= 2 and q["tokens_evaluated"] > 100
    assert q["fp16_value"] > 1.0 and q["mean_nll"] > 0
    # the stand-in "NF4" arm is the same FP16 weights: no quality difference
    assert q["delta_vs_fp16_pct"] == pytest.approx(0.0, abs=1e-6)
    assert report["workload"]["weights"] == "pretrained"


def test_a_failing_probe_leaves_the_energy_alone(local_checkpoint, monkeypatch):
    import ecocompute.task.quality as measured

    def broken(*args, **kwargs):
        raise RuntimeError("CUDA out of memory (scripted)")

    monkeypatch.setattr(measured, "score_models", broken)
    report = _run(local_checkpoint, precision="FP16")
    assert validation_errors(report) == []
    assert report["quality"]["basis"] == "unavailable"
    assert "out of memory" in report["quality"]["error"]
    assert report["results"]["basis"] == "measured"
    assert len(report["results"]["trials"]) == 2


def test_no_quality_probe_flag(local_checkpoint):
    report = _run(local_checkpoint, precision="FP16", quality_probe=False)
    q = report["quality"]
    assert (q["basis"], q["requested"], q["note"]) == ("unavailable", False, "--no_quality_probe")
    assert q["value"] is None and "error" not in q  # nothing to say: left out, not null
