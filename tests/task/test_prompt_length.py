"""--prompt_tokens: the prompt as an axis. Seeded random ids for synthetic weights, the
corpus's first tokens for real ones, the static cache sized for it, and a length that
does not fit the context or the memory refused in one line."""

from __future__ import annotations

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.errors import InputError
from ecocompute.llm import prompt as prompt_mod
from ecocompute.llm.loading import Checkpoint, prompt_ids
from ecocompute.llm.synthetic import PRESETS
from ecocompute.params import RunParams, resolve
from ecocompute.report.read import validation_errors

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, estimate_report


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


def _params(**flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "tokens": "6",
        "iterations": "2",
        "warmup": "0",
        "idle_seconds": "0",
        "sample_rate_hz": "10",
    }
    return resolve(None, {**base, "quality_probe": "false", **flags})


def test_prompt_and_new_tokens_must_fit_context_length():
    with pytest.raises(InputError) as err:
        RunParams(prompt_tokens=2000, tokens=256, context_length=2048)
    text = str(err.value)
    assert text.startswith("invalid prompt_tokens 2000:") and "\n" not in text
    assert "2256" in text and "context_length 2048" in text
    assert RunParams(prompt_tokens=1792, tokens=256).prompt_tokens == 1792


def test_prompt_tokens_is_a_positive_whole_number_from_flags():
    assert resolve(None, {"prompt_tokens": "128"}).prompt_tokens == 128
    for bad in ("0", "-3", "1.5", "many"):
        with pytest.raises(InputError, match=r"^invalid prompt_tokens"):
            resolve(None, {"prompt_tokens": bad})


def test_synthetic_prompt_is_seeded_random_ids_of_the_length_asked():
    checkpoint = Checkpoint("synthetic:tiny-test", "x", "synthetic", None)
    ids, mask = prompt_ids(checkpoint, 3, CpuAccelerator(), 40)
    again, _ = prompt_ids(checkpoint, 3, CpuAccelerator(), 40)
    assert tuple(ids.shape) == (3, 40) and tuple(mask.shape) == (3, 40)
    assert (ids == again).all() and (ids[0] == ids[2]).all()  # every row the same prompt
    assert int(ids.min()) >= 3 and int(ids.max()) < PRESETS["tiny-test"].vocab_size
    default, _ = prompt_ids(checkpoint, 1, CpuAccelerator())
    assert default.shape[-1] == prompt_mod.SYNTHETIC_PROMPT_TOKENS


class _WordTokenizer:
    """One id per whitespace-separated word (a stand-in for a checkpoint's tokenizer)."""

    def __call__(self, text, add_special_tokens=True):
        assert add_special_tokens is False  # as the quality probe tokenizes the corpus
        return {"input_ids": [len(w) for w in text.split()]}


def test_real_weights_take_the_corpus_first_tokens_and_refuse_beyond_it():
    ids = prompt_mod.corpus_ids(_WordTokenizer(), 3, "a bb ccc dddd")
    assert ids.tolist() == [[1, 2, 3]]
    with pytest.raises(InputError) as err:
        prompt_mod.corpus_ids(_WordTokenizer(), 5, "a bb ccc dddd")
    assert "holds 4 tokens" in str(err.value) and "\n" not in str(err.value)


def test_the_published_corpus_holds_4096_tokens_for_a_word_tokenizer():
    from ecocompute.llm.quality_probe import corpus_text

    assert prompt_mod.corpus_ids(_WordTokenizer(), 4096, corpus_text()).shape[-1] == 4096


def test_a_prompt_beyond_the_models_context_is_refused_before_loading():
    backend = StandInQuantBackend()
    with pytest.raises(InputError) as err:
        estimate_report(
            _params(prompt_tokens="4000", tokens="200", context_length="8192", decode="graphs"),
            Progress(quiet=True),
            accelerator=CpuAccelerator(),
            backend=backend,
        )
    text = str(err.value)
    assert text.startswith("invalid prompt_tokens 4000:") and "\n" not in text
    assert "context of 4096 positions" in text and "at most 3896" in text
    assert backend.loads == []  # refused before any weights loaded


def test_caches_that_do_not_fit_the_free_memory_are_refused_in_one_line():
    cfg = PRESETS["tiny-test"]
    # 2 layers x 2 kv heads x 16 dims x 2 (K, V) x 2 bytes = 256 bytes per token and row
    assert prompt_mod.kv_cache_mib(cfg, 4, 1024) == pytest.approx(4 * 1024 * 256 / 2**20)
    with pytest.raises(InputError) as err:
        estimate_report(
            _params(prompt_tokens="1000", decode="graphs", batch_size="64"),
            Progress(quiet=True),
            accelerator=CpuAccelerator(free_mib=20),
            backend=StandInQuantBackend(),
        )
    text = str(err.value)
    assert text.startswith("invalid prompt_tokens 1000:") and "\n" not in text
    assert "20 MiB free" in text


def test_a_graphs_run_sizes_its_static_cache_for_the_prompt_and_says_so():
    report = estimate_report(
        _params(prompt_tokens="40", decode="graphs", precision="NF4"),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(power_w=lambda t: 100.0),
        accelerator=CpuAccelerator(),
        backend=StandInQuantBackend(),
    )
    assert validation_errors(report) == []
    assert report["workload"]["prompt_tokens"] == 40
    assert report["measurement"]["decode"]["prompt"] == "40 seeded random token ids"
    assert report["results"]["trials"][0]["tokens"] == 6


def test_a_batch_whose_prompts_do_not_fit_in_memory_says_so(monkeypatch):
    """A review (2026-12-05): --batch_size 1000000000 passed the input checks, then the
    host's allocator refused 96 GB of prompt ids and the run ended in "internal error ...
    a bug"; it is a batch too large, said as one (and an allocator's other errors stay)."""
    from types import SimpleNamespace

    from ecocompute.errors import RunError
    from ecocompute.llm import loading

    def ids_that_refuse(message: str) -> object:
        def repeat(*_: int) -> object:
            raise RuntimeError(message)

        return SimpleNamespace(shape=(1, 12), repeat=repeat)

    checkpoint = Checkpoint("synthetic:tiny-test", "x", "synthetic", None)
    refused = "[enforce fail at alloc_cpu.cpp:127] can't allocate 96000000000 bytes"
    monkeypatch.setattr(loading, "random_ids", lambda *a: ids_that_refuse(refused))
    with pytest.raises(RunError, match="the prompts of a batch of 1,000,000,000 do not fit"):
        prompt_ids(checkpoint, 1_000_000_000, CpuAccelerator())
    monkeypatch.setattr(loading, "random_ids", lambda *a: ids_that_refuse("another"))
    with pytest.raises(RuntimeError, match="another"):
        prompt_ids(checkpoint, 4, CpuAccelerator())
