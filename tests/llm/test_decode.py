"""The decode regimes on the CPU: the static-cache step the graphs regime captures,
stepped eagerly (capture=False), against generate() on the same weights; the typed
refusals; the report's description of each regime."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import pytest

from ecocompute.errors import DecodeCaptureFailed, InputError
from ecocompute.llm.decode import REGIMES, make_decoder
from ecocompute.llm.decoder import regime_record
from ecocompute.llm.graphs import GraphDecoder
from ecocompute.llm.synthetic import PRESETS, build_config

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

PROMPT_LEN = 12
TOKENS = 40


def tiny_model(family="llama", *, sliding_window=None, attn="sdpa", dtype=None):
    """The tiny-test architecture in another family, seeded random weights, FP16."""
    from transformers import AutoModelForCausalLM

    preset = dataclasses.replace(PRESETS["tiny-test"], family=family, sliding_window=sliding_window)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        build_config(preset), dtype=dtype or torch.float16, attn_implementation=attn
    )
    return model.eval()


def prompt(batch, length=PROMPT_LEN):
    generator = torch.Generator().manual_seed(1234)
    ids = torch.randint(3, PRESETS["tiny-test"].vocab_size, (1, length), generator=generator)
    ids = ids.repeat(batch, 1)
    return ids, torch.ones_like(ids)


def decode(model, ids, mask, regime, tokens=TOKENS, **kwargs):
    decoder = make_decoder(model, ids, mask, tokens, regime, capture=False, **kwargs)
    decoder.prepare()
    return decoder.run()


@pytest.fixture(scope="module")
def llama():
    return tiny_model()


# -- the static-cache step gives generate()'s tokens -----------------------------------
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize(
    "family, sliding_window, attn",
    [
        ("llama", None, "sdpa"),
        ("llama", None, "eager"),
        ("qwen2", None, "sdpa"),
        ("mistral", 64, "sdpa"),  # every layer sliding; window >= prompt + tokens
    ],
)
def test_static_step_gives_generates_greedy_tokens(family, sliding_window, attn, batch):
    model = tiny_model(family, sliding_window=sliding_window, attn=attn)
    ids, mask = prompt(batch)
    eager = decode(model, ids, mask, "eager")
    graphs = decode(model, ids, mask, "graphs")
    assert eager.shape == graphs.shape == (batch, PROMPT_LEN + TOKENS)
    assert torch.equal(graphs, eager)
    new = graphs[:, PROMPT_LEN:]
    assert len(set(new[0].tolist())) > TOKENS // 4  # not a degenerate repetition


def test_eager_takes_nothing_from_the_checkpoints_generation_config():
    """A checkpoint's generation_config.json (Qwen2.5-Instruct ships a repetition
    penalty; TinyLlama-Chat a max_length): generate() filled what our config left unset
    from it, so eager was not greedy (its tokens parted from graphs') and logged
    "Both max_new_tokens and max_length" on every call, inside the measured window."""
    import logging

    model = tiny_model()
    shipped = model.generation_config
    shipped.repetition_penalty, shipped.no_repeat_ngram_size, shipped.max_length = 1.3, 3, 2048
    ids, mask = prompt(1)
    eager_decoder = make_decoder(model, ids, mask, TOKENS, "eager")
    logged: list[str] = []

    class Kept(logging.Handler):  # transformers' logger does not propagate to the root's
        def emit(self, record: logging.LogRecord) -> None:
            logged.append(record.getMessage())

    handler, library = Kept(level=logging.WARNING), logging.getLogger("transformers")
    library.addHandler(handler)
    try:
        eager = eager_decoder.run()
    finally:
        library.removeHandler(handler)
    assert logged == []
    assert torch.equal(decode(model, ids, mask, "graphs"), eager)


def test_left_padded_rows_give_generates_tokens(llama):
    ids, mask = prompt(2)
    mask[1, :3] = 0  # row 1: three pads on the left
    ids[1, :3] = 0
    eager = decode(llama, ids, mask, "eager")
    graphs = decode(llama, ids, mask, "graphs")
    assert torch.equal(graphs, eager)
    assert not torch.equal(graphs[0, PROMPT_LEN:], graphs[1, PROMPT_LEN:])


def test_end_of_sequence_is_suppressed_like_generate():
    model = tiny_model()
    eos = model.config.eos_token_id
    with torch.no_grad():  # make end-of-sequence every row's argmax, every step
        model.lm_head.weight[eos] = model.lm_head.weight.abs().max() * 50
    ids, mask = prompt(1)
    eager = decode(model, ids, mask, "eager")
    graphs = decode(model, ids, mask, "graphs")
    assert torch.equal(graphs, eager)
    assert eos not in graphs[:, PROMPT_LEN:].tolist()[0]
    assert graphs.shape[-1] == PROMPT_LEN + TOKENS


# -- repeated runs, shapes, counts ------------------------------------------------------
@pytest.mark.parametrize("regime", ["eager", "graphs"])  # compiled: test_compiled.py
@pytest.mark.parametrize("batch", [1, 2])
def test_consecutive_runs_repeat_and_count(llama, regime, batch):
    ids, mask = prompt(batch)
    decoder = make_decoder(llama, ids, mask, 16, regime, capture=False)
    decoder.prepare()
    first, second = decoder.run(), decoder.run()  # the second needs the cache reset
    assert first.shape == (batch, PROMPT_LEN + 16)
    assert torch.equal(first, second)
    assert torch.equal(first[:, :PROMPT_LEN], ids)
    assert decoder.new_tokens(first) == 16 * batch
    assert first.data_ptr() != second.data_ptr()  # outputs are not views of buffers


def test_one_new_token_is_the_prefills_argmax(llama):
    ids, mask = prompt(1)
    assert torch.equal(
        decode(llama, ids, mask, "graphs", tokens=1), decode(llama, ids, mask, "eager", tokens=1)
    )


def test_run_before_prepare_is_an_error(llama):
    ids, mask = prompt(1)
    with pytest.raises(RuntimeError, match="prepare"):
        make_decoder(llama, ids, mask, 8, "graphs", capture=False).run()


# -- refusals ---------------------------------------------------------------------------
@pytest.mark.parametrize("regime", ["compile", "", "Graphs"])
def test_unknown_regime_is_refused(llama, regime):
    ids, mask = prompt(1)
    with pytest.raises(InputError, match="eager or graphs or compiled"):
        make_decoder(llama, ids, mask, 8, regime)


def test_zero_tokens_are_refused(llama):
    ids, mask = prompt(1)
    with pytest.raises(InputError, match="tokens"):
        make_decoder(llama, ids, mask, 0, "graphs")


def test_capture_without_cuda_fails_typed_and_names_the_format(llama):
    ids, mask = prompt(1)
    decoder = make_decoder(llama, ids, mask, 8, "graphs", label="NF4")
    with pytest.raises(DecodeCaptureFailed) as caught:
        decoder.prepare()
    message = str(caught.value)
    assert "NF4" in message and "CUDA" in message and "--decode eager" in message
    assert "\n" not in message
    assert caught.value.exit_status == 1


def test_capture_exception_becomes_one_line_naming_the_format(llama, monkeypatch):
    def fails(self):
        raise RuntimeError("operation not permitted when stream is capturing\nat frame 12")

    monkeypatch.setattr(GraphDecoder, "_refuse_uncapturable_placement", lambda self: None)
    monkeypatch.setattr(GraphDecoder, "_capture", fails)
    ids, mask = prompt(1)
    with pytest.raises(DecodeCaptureFailed) as caught:
        make_decoder(llama, ids, mask, 8, "graphs", label="INT8").prepare()
    message = str(caught.value)
    assert "INT8" in message and "operation not permitted" in message
    assert "frame 12" not in message and "\n" not in message
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_replays_that_disagree_with_the_step_fail_the_check(llama, monkeypatch):
    def corrupting_advance(self):
        def advance():  # the step, then a wrong token recorded: what a bad graph would do
            self._step()
            self._chosen.index_copy_(1, self._step_index, (self._token + 1) % 512)

        return advance

    monkeypatch.setattr(GraphDecoder, "_advance", corrupting_advance)
    ids, mask = prompt(1)
    with pytest.raises(DecodeCaptureFailed, match=r"FP16.*from new token 2 of the 8"):
        make_decoder(llama, ids, mask, 32, "graphs", capture=False, label="FP16").prepare()


def test_the_check_can_be_skipped(llama, monkeypatch):
    monkeypatch.setattr(GraphDecoder, "_check", lambda self, n: pytest.fail("checked"))
    ids, mask = prompt(1)
    make_decoder(llama, ids, mask, 8, "graphs", capture=False, check_tokens=0).prepare()


class Linear8bitLt(torch.nn.Module):
    """Stands in for bitsandbytes' LLM.int8() layer: only its name and threshold matter."""

    def __init__(self, threshold):
        super().__init__()
        self.state = SimpleNamespace(threshold=threshold)


@pytest.mark.parametrize("threshold, refused", [(6.0, True), (0.0, False)])
def test_int8_with_outliers_is_refused_before_capture(threshold, refused):
    model = tiny_model()
    model.model.layers[0].mlp.down_proj = Linear8bitLt(threshold)
    ids, mask = prompt(1)
    with pytest.raises(DecodeCaptureFailed) as caught:
        make_decoder(model, ids, mask, 8, "graphs", label="INT8").prepare()
    message = str(caught.value)
    assert "INT8" in message
    # threshold 0.0 gets as far as the capture, which needs CUDA
    assert ("outlier threshold 6" in message) is refused
    assert ("needs a CUDA device" in message) is not refused


def test_sliding_window_shorter_than_the_decode_is_refused():
    model = tiny_model("mistral", sliding_window=16)
    ids, mask = prompt(1)
    with pytest.raises(
        DecodeCaptureFailed, match=r"\(20\) exceed the model's sliding window \(16\)"
    ):
        make_decoder(model, ids, mask, 8, "graphs", capture=False, label="FP16").prepare()


# -- what the report says -----------------------------------------------------------------
def test_regime_records(llama):
    eager, graphs = regime_record("eager", 256), regime_record("graphs", 256)
    assert eager["regime"] == "eager" and eager["cache"].startswith("dynamic")
    assert "min_new_tokens = max_new_tokens = 256" in eager["decode"]
    assert "do_sample False" in eager["decode"] and "num_beams 1" in eager["decode"]
    assert eager["graph_replays_per_decode"] == 0
    assert graphs["regime"] == "graphs"
    assert graphs["cache"].startswith("static, sized prompt + new tokens")
    assert "CUDA graph" in graphs["captured"]
    assert graphs["graph_replays_per_decode"] == 255
    assert json.loads(json.dumps([eager, graphs])) == [eager, graphs]
    compiled = regime_record("compiled", 256)
    assert compiled["regime"] == "compiled" and "torch.compile" in compiled["captured"]
    assert compiled["graph_replays_per_decode"] == 255
    assert {k: v for k, v in compiled.items() if k not in ("regime", "captured")} == {
        k: v for k, v in graphs.items() if k not in ("regime", "captured")
    }
    assert REGIMES == ("eager", "graphs", "compiled")
    ids, mask = prompt(1)
    for regime in ("eager", "graphs"):  # the compiled record: test_compiled.py
        decoder = make_decoder(llama, ids, mask, 16, regime, capture=False)
        assert decoder.regime == regime
        record = decoder.record()
        assert record.pop("graph_captured", False) is False  # nothing captured on the CPU
        fingerprint = record.pop("kernel_fingerprint", None)
        if regime == "graphs":  # not prepared: nothing checked yet
            assert record.pop("token_check") == {
                "tokens_checked": 0, "rows": 1, "near_tie_std": 0.05,
                "rows_parted_at_a_near_tie": 0,
                "first_near_tie": None,
            }  # fmt: skip
        if regime == "graphs":  # no graph, so no kernels to fingerprint, and it says why
            assert fingerprint["sha256"] is None and "CPU stand-in" in fingerprint["source"]
        assert record == regime_record(regime, 16)
    with pytest.raises(InputError):
        regime_record("compile", 16)
