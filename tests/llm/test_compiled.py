"""The compiled decode regime on the CPU. Inductor compiles the static-cache step for the
CPU too, so with capture=False the compiled step runs compiled but not graph-captured:
its tokens against generate()'s, what the record says of the compile and of inductor's
cache, the one-line refusals and failures, and the regime through sessions and a sweep.

A real compile of the tiny model takes 10-30 s on a small CPU: every test that compiles
for real uses the same shapes (prompt 12, 16 new tokens, batch 1 or 2) and one inductor
cache folder, so dynamo and inductor reuse what an earlier test compiled. Tests of the
check and of failures put a stand-in behind torch.compile instead."""

from __future__ import annotations

import json
import os

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.errors import DecodeCaptureFailed
from ecocompute.jobs.session_job import SessionJob
from ecocompute.llm.decode import make_decoder
from ecocompute.llm.graphs import GraphDecoder
from ecocompute.params import resolve
from ecocompute.pooling.aggregate import group_reports
from ecocompute.report.read import energy_report_problems
from ecocompute.results.collect import read_reports
from ecocompute.sweeps.sweep import sweep

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, fake_machine
from .test_decode import PROMPT_LEN, prompt, tiny_model

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TOKENS = 16


@pytest.fixture(scope="module")
def inductor_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("inductor")


@pytest.fixture(autouse=True)
def _caches(inductor_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor_dir))
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def llama():
    return tiny_model()


def compiled(model, batch, *, label="FP16", **kwargs):
    ids, mask = prompt(batch)
    decoder = make_decoder(
        model, ids, mask, TOKENS, "compiled", capture=False, label=label, **kwargs
    )
    decoder.prepare()
    return decoder


def generated(model, batch):
    ids, mask = prompt(batch)
    decoder = make_decoder(model, ids, mask, TOKENS, "eager")
    decoder.prepare()
    return decoder.run()


# -- the compiled step gives generate()'s tokens ---------------------------------------
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_the_compiled_step_gives_generates_greedy_tokens(llama, batch):
    decoder = compiled(llama, batch)
    first, second = decoder.run(), decoder.run()  # the second needs the cache reset
    assert torch.equal(first, generated(llama, batch))
    assert torch.equal(second, first)
    assert first.shape == (batch, PROMPT_LEN + TOKENS)
    assert len(set(first[0, PROMPT_LEN:].tolist())) > TOKENS // 4  # not degenerate
    record = decoder.record()
    assert record["regime"] == "compiled" and record["graph_captured"] is False
    assert record["graph_replays_per_decode"] == TOKENS - 1
    compiler = record["compiler"]
    assert compiler["backend"] == "inductor" and compiler["dynamic"] is False
    assert compiler["mode"] == "max-autotune-no-cudagraphs"
    assert compiler["torch"] == torch.__version__
    assert compiler["inductor_cache_dir_from"].startswith("TORCHINDUCTOR_CACHE_DIR")
    assert record["fullgraph"] is True and record["graph_break"] is None
    assert record["compile_s"] >= 0
    cache = record["fx_graph_cache"]
    if record["dynamo_graphs"]:  # compiled here (not reused from an earlier test)
        assert record["inductor_cache"] in ("cold", "warm", "partly warm", "bypassed")
        assert cache["hits"] + cache["misses"] + cache["bypasses"] >= 1
    else:
        assert record["inductor_cache"].startswith("not consulted")
    assert record["token_check"] == {
        "tokens_checked": 8,
        "rows": batch,
        "near_tie_std": 0.05,
        "rows_parted_at_a_near_tie": 0,
        "first_near_tie": None,
    }
    assert json.loads(json.dumps(record)) == record


@pytest.mark.e2e  # a real compile, 20-30 s on a 2-core CPU: .ci/run's e2e step
def test_a_second_run_of_the_same_model_and_format_reuses_inductors_cache(
    llama, tmp_path, monkeypatch
):
    """A new process keeps inductor's cache on disk but none of dynamo's memory: reset
    stands in for it. Without TORCHINDUCTOR_CACHE_DIR the cache goes in the tool's."""
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "fresh"))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")  # put back after the test
    notes = []
    for _ in range(2):
        torch._dynamo.reset()
        decoder = compiled(llama, 1)
        notes.append(decoder.prepared_note())
        record = decoder.record()
        assert record["dynamo_graphs"] == 1 and record["compile_s"] > 0
        assert record["compiler"]["inductor_cache_dir"] == str(tmp_path / "fresh" / "inductor")
        assert record["compiler"]["inductor_cache_dir_from"].startswith("the tool's cache")
        if len(notes) == 1:
            assert record["inductor_cache"] == "cold" and record["fx_graph_cache"]["misses"] >= 1
            assert record["fx_graph_cache"]["hits"] == 0
    assert record["inductor_cache"] == "warm"
    assert record["fx_graph_cache"]["hits"] >= 1 and record["fx_graph_cache"]["misses"] == 0
    assert "inductor cache cold" in notes[0] and "inductor cache warm" in notes[1]
    assert all("FP16: step compiled in" in n and "not captured" in n for n in notes)
    assert any((tmp_path / "fresh" / "inductor").iterdir())


# -- failures and refusals: one line, naming the format ---------------------------------
def test_a_compile_failure_is_one_line_naming_the_format(llama, monkeypatch):
    def fails(*args, **kwargs):
        raise RuntimeError("inductor lowering failed for aten.foo\n  File x.py, line 12")

    monkeypatch.setattr(torch, "compile", fails)
    with pytest.raises(DecodeCaptureFailed) as caught:
        compiled(llama, 1, label="NF4")
    message = str(caught.value)
    assert message.startswith("the compiled decode regime cannot measure NF4: torch.compile")
    assert "RuntimeError: inductor lowering failed for aten.foo" in message
    assert "line 12" not in message and "\n" not in message
    assert "--decode graphs or --decode eager" in message
    assert caught.value.exit_status == 1 and caught.value.regime == "compiled"


def test_a_backend_failure_gives_its_own_reason_not_dynamos_wrapper(llama, monkeypatch):
    class BackendFailed(Exception):  # torch._dynamo.exc.BackendCompilerFailed's shape
        def __init__(self, inner):
            super().__init__(f"backend='inductor' raised:\n{inner}")
            self.inner_exception = inner

    def compile_(fn, **kwargs):
        def call():
            raise BackendFailed(ValueError("no lowering for bitsandbytes.gemv_4bit"))

        return call

    monkeypatch.setattr(torch, "compile", compile_)
    with pytest.raises(DecodeCaptureFailed, match=r"INT4: .*ValueError: no lowering for bitsan"):
        compiled(llama, 1, label="INT4")


def test_a_graph_break_compiles_with_graph_breaks_and_says_so(llama, monkeypatch):
    asked = []

    def compile_(fn, *, fullgraph, **kwargs):
        asked.append(fullgraph)
        if fullgraph:
            raise torch._dynamo.exc.Unsupported("data-dependent branch in Linear8bitLt\nmore")
        return fn  # stands in for the step compiled with its graph breaks

    monkeypatch.setattr(torch, "compile", compile_)
    decoder = compiled(llama, 1, label="INT8")
    record = decoder.record()
    assert asked == [True, False]
    assert record["fullgraph"] is False
    assert record["graph_break"] == "Unsupported: data-dependent branch in Linear8bitLt"
    assert "with graph breaks" in decoder.prepared_note()
    assert torch.equal(decoder.run(), generated(llama, 1))


def test_capture_is_refused_on_the_cpu_before_anything_is_compiled(llama, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled"))
    ids, mask = prompt(1)
    with pytest.raises(DecodeCaptureFailed) as caught:
        make_decoder(llama, ids, mask, 8, "compiled", label="FP8").prepare()
    message = str(caught.value)
    assert "compiled decode regime cannot measure FP8" in message and "CUDA" in message
    assert "\n" not in message


def test_int8_with_outliers_is_refused_before_compiling(monkeypatch):
    from .test_decode import Linear8bitLt

    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiled"))
    model = tiny_model()
    model.model.layers[0].mlp.down_proj = Linear8bitLt(6.0)
    ids, mask = prompt(1)
    with pytest.raises(DecodeCaptureFailed, match=r"compiled .* INT8: LLM.int8\(\) with outlier"):
        make_decoder(model, ids, mask, 8, "compiled", label="INT8").prepare()


# -- the check: eager tokens, or a near tie -----------------------------------------------
def _swapping_step(monkeypatch, regime, swap):
    """The regime's step stands in with the eager step followed by swap(decoder): for
    compiled, torch.compile returns it; for graphs (not captured on the CPU), the step
    its check compares with the eager one."""

    def swapped(step):
        def stepped():
            step()
            swap(step.__self__)

        return stepped

    if regime == "compiled":
        monkeypatch.setattr(torch, "compile", lambda step, **kwargs: swapped(step))
    else:
        monkeypatch.setattr(
            GraphDecoder, "_build_step", lambda self: setattr(self, "_body", swapped(self._step))
        )


def _taking(twin, *, instead_of):
    """A swap for _swapping_step: where the eager step chose `instead_of`, the regime's
    step takes `twin` (and decodes on from it)."""

    def swap(decoder):
        if int(decoder._chosen[0, int(decoder._step_index)]) == instead_of:
            decoder._token.fill_(twin)
            decoder._chosen.index_fill_(1, decoder._step_index, twin)

    return swap


def checked(model, regime, *, label):
    ids, mask = prompt(1)
    decoder = make_decoder(model, ids, mask, TOKENS, regime, capture=False, label=label)
    decoder.prepare()
    return decoder


@pytest.mark.parametrize("regime", ["compiled", "graphs"])
def test_parting_at_a_near_tie_is_recorded_not_refused(monkeypatch, regime):
    model = tiny_model()
    tokens = generated(model, 1)[0, PROMPT_LEN:].tolist()
    k = next(i for i in range(2, 8) if tokens[i] not in tokens[:i])  # checked: 8
    tied, twin = tokens[k], 511  # argmax takes the first of equal logits: the tied token
    assert twin not in tokens and tied < twin
    with torch.no_grad():  # the twin's logit equals the tied token's: an exact tie
        model.lm_head.weight[twin] = model.lm_head.weight[tied]

    _swapping_step(monkeypatch, regime, _taking(twin, instead_of=tied))
    decoder = checked(model, regime, label="NF4")
    check = decoder.record()["token_check"]
    assert check["rows_parted_at_a_near_tie"] == 1
    tie = check["first_near_tie"]
    assert tie["row"] == 0 and tie["new_token"] == k + 1
    assert abs(tie["logits_apart"]) <= tie["tolerance"] and tie["tolerance"] > 0
    assert "1 row(s) parted at a near tie" in decoder.prepared_note()
    assert tie["rank"] == 1 and check["near_tie_std"] == 0.05  # an exact tie shares the top


def _runner_up(model, fraction):
    """A token the eager step ranks just below its own choice at new token k+1, its logit
    `fraction` of that step's logits' standard deviation below: (k, tied, twin). The twin's
    head row is the chosen token's, scaled (the tiny model's head has no bias), so the
    eager decode is unchanged."""
    tokens = generated(model, 1)[0, PROMPT_LEN:].tolist()
    k = next(i for i in range(2, 8) if tokens[i] not in tokens[:i])
    tied, twin = tokens[k], 511
    with torch.no_grad():
        prefix = generated(model, 1)[0, : PROMPT_LEN + k]
        logits = model(input_ids=prefix[None]).logits[0, -1].float()
        assert logits[tied] > 0
        scale = 1 - fraction * float(logits.std()) / float(logits[tied])
        model.lm_head.weight[twin] = model.lm_head.weight[tied] * scale
    assert generated(model, 1)[0, PROMPT_LEN:].tolist() == tokens
    return k, tied, twin


@pytest.mark.parametrize("regime", ["compiled", "graphs"])
def test_a_wider_near_tie_is_a_stated_choice_recorded_with_the_tokens_rank(monkeypatch, regime):
    """--near_tie_std: a parting 0.2 of the logits' spread wide is refused at the default
    0.05 (the message gives the flag and the regime's token's rank) and recorded as a near
    tie at 0.5, with the fraction and the rank in token_check (issue 32: compiled FP8 and
    INT8 part from their eager steps 0.1-0.25 of the spread wide at 7B)."""
    model = tiny_model()
    k, tied, twin = _runner_up(model, 0.2)

    _swapping_step(monkeypatch, regime, _taking(twin, instead_of=tied))
    ids, mask = prompt(1)
    with pytest.raises(DecodeCaptureFailed) as caught:
        make_decoder(model, ids, mask, TOKENS, regime, capture=False, label="FP8").prepare()
    message = str(caught.value)
    assert f"from new token {k + 1} of the 8" in message
    assert "(--near_tie_std 0.05); its token was the eager step's choice " in message
    wide = make_decoder(
        model, ids, mask, TOKENS, regime, capture=False, label="FP8", near_tie_std=0.5
    )
    wide.prepare()
    check = wide.record()["token_check"]
    tie = check["first_near_tie"]
    assert check["near_tie_std"] == 0.5 and check["rows_parted_at_a_near_tie"] == 1
    assert tie["new_token"] == k + 1 and tie["rank"] >= 2
    assert 0.05 * 4 * 0.9 < tie["logits_apart"] / (tie["tolerance"] / 0.5) < 0.2 * 1.1


def test_near_tie_std_is_the_replayed_regimes_alone_and_within_one_spread():
    from ecocompute.errors import InputError
    from ecocompute.params import RunParams

    with pytest.raises(InputError, match=r"^invalid near_tie_std 0.5: needs --decode graphs"):
        RunParams(near_tie_std=0.5, decode="eager")
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(InputError, match=r"^invalid near_tie_std"):
            RunParams(near_tie_std=bad, decode="compiled")
    assert RunParams(near_tie_std=0.5, decode="graphs").near_tie_std == 0.5
    assert RunParams().near_tie_std == 0.05


@pytest.mark.parametrize(
    ("regime", "parted"), [("compiled", "the compiled step"), ("graphs", "the replayed graph")]
)
def test_parting_from_the_eager_tokens_beyond_a_tie_is_refused(llama, monkeypatch, regime, parted):
    def swap(decoder):  # a wrong token recorded, as a bad compile would
        decoder._chosen.index_copy_(1, decoder._step_index, (decoder._token + 1) % 512)

    _swapping_step(monkeypatch, regime, swap)
    with pytest.raises(DecodeCaptureFailed) as caught:
        checked(llama, regime, label="FP16")
    message = str(caught.value)
    assert f"{regime} decode regime cannot measure FP16" in message
    assert (
        f"{parted} chose other tokens than the eager step (row 0, from new token 2 of the 8"
        in message
    )
    assert "beyond a near tie's" in message and "\n" not in message
    assert message.endswith(
        "instead, or state a wider near tie (--near_tie_std, at most 1); no report was written."
    )


# -- through the protocol: sessions, the sweep and its batch axis ----------------------
def _params(tmp_path, **flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "precision": "NF4,INT4",
        "tokens": str(TOKENS),
        "iterations": "2",
        "warmup": "1",
        "idle_seconds": "0.2",
        "decode": "compiled",
        "output_dir": str(tmp_path / "out"),
    }
    return resolve(None, {**base, **flags})


@pytest.mark.e2e  # a real compile of two formats and FP16, ~20 s on a 2-core CPU: e2e step
def test_a_session_of_several_formats_in_the_compiled_regime(tmp_path):
    backend = StandInQuantBackend()
    machine = fake_machine(lambda: FakeTelemetry(), CpuAccelerator(), lambda: backend)
    written = SessionJob(_params(tmp_path)).run(Progress(quiet=True), machine=machine)
    docs = [w.document for w in written.reports]
    assert [d["workload"]["precision"] for d in docs] == ["NF4", "INT4"]
    for doc, fmt in zip(docs, ["NF4", "INT4"], strict=True):
        assert energy_report_problems(doc) == []
        decode = doc["measurement"]["decode"]
        assert decode["regime"] == "compiled" and decode["graph_captured"] is False
        assert list(decode["per_format"]) == ["FP16", fmt]  # this report's formats only
        each = [decode["per_format"][f]["compile_s"] for f in ("FP16", fmt)]
        assert decode["compile_s"] == pytest.approx(sum(each), abs=2e-3)
        assert decode["compiler"]["mode"] == "max-autotune-no-cudagraphs"
        assert "compile_s" not in doc["results"]  # never beside the measured figures
    assert "compiled decode;" in written.summary and "widened" not in written.summary
    assert "compile    FP16 " in written.summary and "INT4 " in written.summary
    # one compile: the summary says its intervals are this compile's (docs/units.md)
    assert "one compile: the intervals hold for this compile's kernels" in written.summary


@pytest.mark.e2e  # a real compile, 20-30 s on a 2-core CPU: .ci/run's e2e step
def test_a_sweep_over_batch_sizes_in_the_compiled_regime(tmp_path):
    backend = StandInQuantBackend()
    flags = {
        "tokens": str(TOKENS),
        "iterations": "2",
        "warmup": "0",
        "idle_seconds": "0.2",
        "decode": "compiled",
        "quiet": True,
    }
    sweep(
        ["synthetic:tiny-test"],
        ["NF4"],
        tmp_path / "sw",
        options=flags,
        progress=Progress(quiet=True),
        machine=fake_machine(backend=lambda: backend),
        batch_sizes=[1, 2],
    )
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert backend.loads == ["FP16", "NF4"]  # loaded once for both batch sizes
    reports = [json.loads((tmp_path / "sw" / r["report"]).read_text()) for r in doc["runs"]]
    assert [r["measurement"]["decode"]["batch_size"] for r in reports] == [1, 2]
    for report in reports:
        assert energy_report_problems(report) == []
        assert report["measurement"]["decode"]["regime"] == "compiled"
        assert set(report["measurement"]["decode"]["per_format"]) == {"FP16", "NF4"}
    assert [p["batch_size"] for p in doc["batch_axis"][0]["points"]] == [1, 2]
    found, invalid = read_reports([tmp_path / "sw"])
    assert invalid == []
    protocols = {g.protocol for g in group_reports(found)}
    assert protocols == {f"{TOKENS} tok, batch 1, compiled", f"{TOKENS} tok, batch 2, compiled"}


# -- --compiles N: every format compiled afresh N times, the interval over compiles ------


def _two_compiles(tmp_path):
    backend = StandInQuantBackend()
    machine = fake_machine(lambda: FakeTelemetry(), CpuAccelerator(), lambda: backend)
    params = _params(tmp_path, precision="NF4", compiles="2")
    written = SessionJob(params).run(Progress(quiet=True), machine=machine)
    (report,) = [w.document for w in written.reports]
    assert energy_report_problems(report) == []
    res, meas = report["results"], report["measurement"]
    assert meas["compiles"] == 2 and meas["stopping"]["rounds"] == 4
    assert [(t["compile"], t["pair"]) for t in res["trials"] if t["format"] == "FP16"] == [
        (0, 0), (0, 1), (1, 2), (1, 3)
    ]  # fmt: skip
    blocks = meas["decode"]["compiles"]
    assert [b["compile"] for b in blocks] == [0, 1]
    folders = [b["inductor_cache_dir"] for b in blocks]
    assert len(set(folders)) == 2 and all(f.startswith(str(tmp_path / "cache")) for f in folders)
    between = res["between_compiles"]
    assert between["compiles"] == 2
    assert [c["n_pairs"] for c in between["per_compile"]] == [2, 2]
    assert res["vs_fp16_ci95_pct"] == between["ci95_pct"]
    assert res["vs_fp16_energy_pct_exact"] == between["delta_pct"]
    assert res["ci_method"] == meas["ci_method"] and "rounds within compiles" in res["ci_method"]
    assert "compiles   NF4 over 2 compiles, each from an empty cache" in written.summary
    assert "; one compile: " not in written.summary  # the interval spans compiles
    # warm-ups ran under each compile, and the compile line gives the first compile's
    assert "warm-ups per format under each of 2 compiles;" in res["note"]
    assert "  compile    the first of 2 compiles: FP16 " in written.summary
    return report, folders


def test_two_compiles_compile_every_format_into_its_compiles_empty_folder(tmp_path, monkeypatch):
    import ecocompute.llm.compiled as compiled_module

    resets, compiled_into = [], []

    def compile_(fn, **kwargs):  # stands in for torch.compile: where it would cache
        compiled_into.append(
            (os.environ["TORCHINDUCTOR_CACHE_DIR"], os.environ["TRITON_CACHE_DIR"])
        )
        return fn

    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(
        compiled_module, "reset_compiles", lambda: resets.append(len(compiled_into))
    )
    _report, folders = _two_compiles(tmp_path)
    assert resets == [0, 2]  # before each compile's formats, none compiled in between
    assert compiled_into == [(f, f"{f}/triton") for f in folders for _ in ("FP16", "NF4")]


@pytest.mark.e2e
def test_two_real_compiles_compile_every_format_afresh(tmp_path):
    """The same with inductor compiling for real: each compile of FP16 traced and
    compiled again, from its own empty folder (1-2 minutes on a 2-core CPU: e2e)."""
    report, _ = _two_compiles(tmp_path)
    for block in report["measurement"]["decode"]["compiles"]:
        assert block["per_format"]["FP16"]["dynamo_graphs"] > 0
        assert "not consulted" not in block["per_format"]["FP16"]["inductor_cache"]


def test_a_report_of_two_compiles_is_checked_by_deriving_it_again(tmp_path, monkeypatch):
    from ecocompute.core.meta import pool

    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: fn)
    report, _ = _two_compiles(tmp_path)
    between = report["results"]["between_compiles"]
    per = between["per_compile"]
    again = pool([c["delta_pct"] for c in per], [c["se_pct"] ** 2 for c in per])
    assert between["delta_pct"] == again.mu and between["ci95_pct"] == list(again.ci95)
    assert between["between_compile_sd_pts"] == again.tau
    assert between["interval_se"] == "max(hksj, classic)"  # floored at the classic SE
    forged = json.loads(json.dumps(report))
    del forged["results"]["between_compiles"]["interval_se"]  # claims the older, bare HKSJ
    assert energy_report_problems(forged)
    forged = json.loads(json.dumps(report))
    forged["results"]["trials"][-1]["compile"] = 0  # a round moved to the other compile
    assert any("compiles" in p for p in energy_report_problems(forged))
    forged = json.loads(json.dumps(report))
    forged["results"]["between_compiles"]["ci95_pct"] = report["results"]["vs_fp16_ci95_pct"][::-1]
    assert energy_report_problems(forged)
    forged = json.loads(json.dumps(report))
    for t in forged["results"]["trials"]:
        del t["compile"]  # one compile's interval claimed for a report of two
    assert energy_report_problems(forged)


# -- one compile for every batch size (--compile_batch dynamic) ---------------------------
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_dynamic_batch_is_compiled_once_for_every_batch_of_two_or_more(llama):
    """The compiled map on a budget: the batch dimension a symbol, so a sweep's later
    batch sizes reuse the graph the first compiled (dynamo compiles nothing new, inductor's
    cache is not even asked), and each still decodes generate()'s tokens."""
    torch._dynamo.reset()  # as a fresh process: nothing compiled yet
    records = []
    for batch in (2, 3, 5):
        decoder = compiled(llama, batch, compile_batch="dynamic")
        assert torch.equal(decoder.run(), generated(llama, batch))
        records.append(decoder.record())
    assert [r["compiler"]["batch_dim"] for r in records] == ["dynamic"] * 3
    assert records[0]["compiler"]["dynamic"] is True
    assert records[0]["dynamo_graphs"] == 1
    assert [r["dynamo_graphs"] for r in records[1:]] == [0, 0]
    assert all(r["inductor_cache"].startswith("not consulted") for r in records[1:])


@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_dynamic_batch_from_batch_1_compiles_twice_for_the_whole_map(llama):
    """The map in one sweep (docs/map.md): batch 1's graph is specialized to size 1, the
    next size compiles the one graph every later size reuses: two compiles, not one per
    size."""
    torch._dynamo.reset()
    records = []
    for batch in (1, 2, 3):
        decoder = compiled(llama, batch, compile_batch="dynamic")
        assert torch.equal(decoder.run(), generated(llama, batch))
        records.append(decoder.record())
    assert [r["dynamo_graphs"] for r in records] == [1, 1, 0]


@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_static_batch_compiles_again_for_each_batch_size(llama):
    torch._dynamo.reset()
    first, second = compiled(llama, 2), compiled(llama, 3)
    assert first.record()["compiler"]["batch_dim"] == "static"
    assert first.record()["dynamo_graphs"] == 1 and second.record()["dynamo_graphs"] == 1


def test_compile_batch_is_the_compiled_regimes_alone():
    from ecocompute.errors import InputError
    from ecocompute.params import RunParams

    with pytest.raises(InputError, match=r"^invalid compile_batch 'dynamic': needs --decode"):
        RunParams(compile_batch="dynamic", decode="graphs")
    assert RunParams(compile_batch="dynamic", decode="compiled").compile_batch == "dynamic"


@pytest.mark.e2e  # a real compile, 20-30 s on a 2-core CPU: .ci/run's e2e step
def test_a_compiled_sweep_with_a_dynamic_batch_compiles_at_its_first_size_only(tmp_path):
    """Through the sweep, as the H200 map runs it: the models stay loaded, the second
    batch size compiles nothing (each point's report says so per format), and the phases
    apart work in the compiled regime too (its prefill eager)."""
    torch._dynamo.reset()
    flags = {"tokens": str(TOKENS), "iterations": "2", "warmup": "0", "idle_seconds": "0",
             "decode": "compiled", "compile_batch": "dynamic", "phases": "apart",
             "prefill_window_s": "0.01", "quality_probe": "false", "quiet": True}  # fmt: skip
    sweep(
        ["synthetic:tiny-test"],
        ["NF4"],
        tmp_path / "sw",
        options=flags,
        progress=Progress(quiet=True),
        machine=fake_machine(backend=StandInQuantBackend),
        batch_sizes=[2, 3],
    )
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    reports = [json.loads((tmp_path / "sw" / r["report"]).read_text()) for r in doc["runs"]]
    first, second = (r["measurement"]["decode"] for r in reports)
    assert first["compiler"]["batch_dim"] == "dynamic"
    assert first["per_format"]["FP16"]["dynamo_graphs"] >= 1
    assert {f: d["dynamo_graphs"] for f, d in second["per_format"].items()} == {"FP16": 0, "NF4": 0}
    for report in reports:
        assert energy_report_problems(report) == []
        assert report["results"]["phases"]["workload"]["n_pairs"] == 2
    assert "dynamic batch" in doc["protocol"] and "phases apart" in doc["protocol"]


# -- inductor's mode (--compile_mode) -----------------------------------------------------
@pytest.mark.e2e  # a real compile, 20-30 s on a 2-core CPU: .ci/run's e2e step
def test_a_compile_in_inductors_default_mode_decodes_generates_tokens_and_says_its_mode(
    llama, monkeypatch
):
    """--compile_mode default: the shorter compile the compiled map's budget may need
    (issue 32); torch.compile is given that mode, the step decodes generate()'s tokens,
    and the record names the mode, where the regime's own mode is the default."""
    seen = []
    real = torch.compile

    def spy(*args, **kwargs):
        seen.append(kwargs.get("mode"))
        return real(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", spy)
    torch._dynamo.reset()
    decoder = compiled(llama, 1, compile_mode="default")
    assert seen == ["default"]
    assert torch.equal(decoder.run(), generated(llama, 1))
    assert decoder.record()["compiler"]["mode"] == "default"
    assert compiled(llama, 1).record()["compiler"]["mode"] == "max-autotune-no-cudagraphs"
    assert seen[-1] == "max-autotune-no-cudagraphs"


def test_compile_mode_is_the_compiled_regimes_alone_and_one_of_two():
    from ecocompute.errors import InputError
    from ecocompute.params import RunParams

    with pytest.raises(InputError, match=r"^invalid compile_mode 'default': needs --decode"):
        RunParams(compile_mode="default", decode="graphs")
    with pytest.raises(InputError, match=r"^invalid compile_mode 'reduce-overhead'"):
        RunParams(compile_mode="reduce-overhead", decode="compiled")
    assert RunParams(compile_mode="default", decode="compiled").compile_mode == "default"
    assert RunParams(decode="compiled").compile_mode == "max-autotune-no-cudagraphs"


def test_reports_of_two_compile_modes_are_never_pooled(tmp_path):
    """The mode is part of a report's protocol, as the batch dimension and the scope are:
    aggregate and sweep keep points of the two modes apart."""
    backend = StandInQuantBackend()
    machine = fake_machine(lambda: FakeTelemetry(), CpuAccelerator(), lambda: backend)
    for mode in ("default", "max-autotune-no-cudagraphs"):
        params = _params(tmp_path / mode, precision="NF4", compile_mode=mode)
        SessionJob(params).run(Progress(quiet=True), machine=machine)
    found, invalid = read_reports([tmp_path])
    assert invalid == [] and len(found) == 2
    protocols = sorted(g.protocol for g in group_reports(found))
    assert protocols == [
        f"{TOKENS} tok, batch 1, compiled",
        f"{TOKENS} tok, batch 1, compiled (mode default)",
    ]


def test_a_widened_near_tie_is_in_every_report_and_in_the_summary(tmp_path):
    machine = fake_machine(lambda: FakeTelemetry(), CpuAccelerator(), StandInQuantBackend)
    params = _params(tmp_path, decode="graphs", near_tie_std="0.5")
    written = SessionJob(params).run(Progress(quiet=True), machine=machine)
    for w in written.reports:
        assert energy_report_problems(w.document) == []
        per_format = w.document["measurement"]["decode"]["per_format"]
        assert {f: d["token_check"]["near_tie_std"] for f, d in per_format.items()} == {
            "FP16": 0.5,
            w.document["workload"]["precision"]: 0.5,
        }
    assert (
        "graphs decode (token check's near tie widened to 0.5 of the logits' spread); "
        in written.summary
    )


def _refusing(monkeypatch, *labels):
    """The graphs step of these formats parts from its eager step beyond a near tie: the
    regime refuses them when it prepares them."""

    def swap(decoder):
        if decoder.label in labels:
            decoder._chosen.index_copy_(1, decoder._step_index, (decoder._token + 1) % 512)

    _swapping_step(monkeypatch, "graphs", swap)


_GRAPHS = {"tokens": str(TOKENS), "iterations": "2", "warmup": "0", "idle_seconds": "0.2",
           "decode": "graphs", "quiet": True}  # fmt: skip


def test_a_format_the_regime_refuses_leaves_the_session_and_the_others_are_measured(
    tmp_path, monkeypatch
):
    """The compiled map on an H200 lost whole sessions (FP16, NF4 and INT4 compiled, then
    INT8's token check refused it): a refusal while preparing, before any window, now
    leaves that format out; the sweep's row for it says why, the others answer."""
    _refusing(monkeypatch, "NF4")
    backend = StandInQuantBackend()
    sweep(["synthetic:tiny-test"], ["NF4", "INT4"], tmp_path / "sw", options=_GRAPHS,
          progress=Progress(quiet=True), machine=fake_machine(backend=lambda: backend))  # fmt: skip
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    runs = {r["precision"]: r for r in doc["runs"]}
    assert runs["NF4"]["report"] is None
    assert runs["NF4"]["error"].startswith(
        "not measured: the graphs decode regime cannot measure NF4: the replayed graph chose "
        "other tokens than the eager step"
    )
    assert runs["INT4"]["error"] is None and runs["INT4"]["report"]
    report = json.loads((tmp_path / "sw" / runs["INT4"]["report"]).read_text())
    assert energy_report_problems(report) == []
    session = report["measurement"]["session"]
    assert session["formats"] == ["INT4"] and session["siblings"] == {}
    assert list(session["refused"]) == ["NF4"]
    assert session["refused"]["NF4"].startswith("the graphs decode regime cannot measure NF4")
    assert {t["format"] for t in report["results"]["trials"]} == {"FP16", "INT4"}


@pytest.mark.parametrize("refused", [("FP16",), ("NF4", "INT4")])
def test_a_refused_fp16_or_every_format_still_stops_the_session(tmp_path, monkeypatch, refused):
    _refusing(monkeypatch, *refused)
    machine = fake_machine(backend=StandInQuantBackend)
    sweep(["synthetic:tiny-test"], ["NF4", "INT4"], tmp_path / "sw", options=_GRAPHS,
          progress=Progress(quiet=True), machine=machine)  # fmt: skip
    runs = json.loads((tmp_path / "sw" / "sweep.json").read_text())["runs"]
    assert [r["report"] for r in runs] == [None, None]
    first = refused[0]
    for r in runs:
        assert f"the graphs decode regime cannot measure {first}: " in r["error"]


def test_the_command_line_writes_the_measured_formats_and_exits_1_naming_the_refused(
    tmp_path, monkeypatch, capsys
):
    """energy_estimate --precision NF4,INT4,INT8: NF4 refused. INT4's and INT8's reports
    are written as one; an earlier NF4 report stays as it was; the summary has a
    refused line; the one error line names the refused format and what was written;
    exit 1 (the run did not do all it was asked)."""
    from ecocompute.cli import main

    from ..fakes import install_fakes

    _refusing(monkeypatch, "NF4")
    install_fakes(monkeypatch.setattr, FakeTelemetry, CpuAccelerator(), StandInQuantBackend)
    out = tmp_path / "out"
    (out / "NF4").mkdir(parents=True)
    (out / "NF4" / "energy.json").write_text("an earlier report")
    flags = [f"--{k}={v}" for k, v in _GRAPHS.items() if k != "quiet"]
    status = main(["energy_estimate", "--model", "synthetic:tiny-test", "--precision",
                   "NF4,INT4,INT8", *flags, "--output_dir", str(out), "-q"])  # fmt: skip
    captured = capsys.readouterr()
    assert status == 1
    assert (out / "NF4" / "energy.json").read_text() == "an earlier report"
    written = [out / f / "energy.json" for f in ("INT4", "INT8")]
    for path in written:
        doc = json.loads(path.read_text())
        assert energy_report_problems(doc) == []
        assert doc["measurement"]["session"]["formats"] == ["INT4", "INT8"]
        assert list(doc["measurement"]["session"]["refused"]) == ["NF4"]
    assert "  refused    NF4: not measured, no report: the graphs decode regime" in captured.out
    (line,) = [x for x in captured.err.splitlines() if x.startswith("ecocompute:")]
    assert "NF4 not measured (the graphs decode regime cannot measure NF4" in line
    assert all(str(p) in line for p in written)


def test_the_api_answers_for_the_measured_formats_and_names_the_refused(monkeypatch):
    import ecocompute

    _refusing(monkeypatch, "INT4")
    machine = fake_machine(backend=StandInQuantBackend)
    options = {"tokens": TOKENS, "iterations": 2, "warmup": 0, "idle_seconds": 0.2}
    answer = ecocompute.estimate("synthetic:tiny-test", "NF4,INT4", machine=machine,
                                 decode="graphs", **options)  # fmt: skip
    assert [f.format for f in answer.formats] == ["NF4"]
    assert list(answer.refused) == ["INT4"]
    assert answer.refused["INT4"].startswith("the graphs decode regime cannot measure INT4")
