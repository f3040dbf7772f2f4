"""Parameters: YAML/flag precedence and every bad input the issue lists."""

from __future__ import annotations

import re

import pytest

from ecocompute.errors import InputError
from ecocompute.params import (
    DEFAULTS,
    check_output_dir,
    params_b_from_model_name,
    read_parameters_file,
    resolve,
)

from ..conftest import PARAMS_FILE


def test_defaults_are_the_published_protocol():
    assert (DEFAULTS.batch_size, DEFAULTS.tokens, DEFAULTS.iterations) == (1, 256, 10)
    assert (DEFAULTS.warmup, DEFAULTS.sample_rate_hz, DEFAULTS.context_length) == (2, 10.0, 2048)


def test_shipped_parameters_file_matches_defaults():
    p = resolve(str(PARAMS_FILE), {})
    assert p.model_name == "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    assert (p.params_b, p.precision) == (1.1, "NF4")
    for name in (
        "batch_size",
        "tokens",
        "iterations",
        "warmup",
        "sample_rate_hz",
        "context_length",
        "gpu_arch",
        "quality_probe",
        "quality_seq_len",
    ):
        assert getattr(p, name) == getattr(DEFAULTS, name), name


def test_flags_override_the_file(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("precision: INT8\ntokens: 64\ngpu_arch: turing\n")
    p = resolve(str(f), {"tokens": "32", "precision": None})
    assert p.tokens == 32  # flag wins
    assert p.precision == "INT8"  # file wins over default when no flag
    assert p.gpu_arch == "turing"
    assert p.iterations == DEFAULTS.iterations  # default where neither says


def test_max_gpu_memory_is_optional_and_read_from_flags_or_yaml(tmp_path):
    assert DEFAULTS.max_gpu_memory_gib is None
    assert resolve(None, {"max_gpu_memory_gib": "1.5"}).max_gpu_memory_gib == 1.5
    f = tmp_path / "p.yaml"
    f.write_text("max_gpu_memory_gib: 40\n")
    assert resolve(str(f), {}).max_gpu_memory_gib == 40.0


def test_precision_is_case_insensitive():
    assert resolve(None, {"precision": "nf4"}).precision == "NF4"


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        ({"precision": "FP4"}, "precision"),
        ({"precision": "NF4,NF4"}, "precision"),
        ({"precision": "FP16,NF4"}, "precision"),
        ({"precision": "NF4,,INT4"}, "precision"),
        ({"precision": "NF4", "backend": "torchao"}, "backend"),
        ({"precision": "INT4", "backend": "bitsandbytes"}, "backend"),
        ({"backend": "gptq"}, "backend"),
        ({"gpu_arch": "pascal"}, "gpu_arch"),
        ({"tokens": "0"}, "tokens"),
        ({"tokens": "-5"}, "tokens"),
        ({"iterations": "0"}, "iterations"),
        ({"batch_size": "0"}, "batch_size"),
        ({"params_b": "0"}, "params_b"),
        ({"params_b": "-1.5"}, "params_b"),
        ({"params_b": "big"}, "params_b"),
        ({"warmup": "-1"}, "warmup"),
        ({"sample_rate_hz": "0.5"}, "sample_rate_hz"),
        ({"sample_rate_hz": "101"}, "sample_rate_hz"),
        ({"sample_rate_hz": "nan"}, "sample_rate_hz"),
        ({"tokens": "2.5"}, "tokens"),
        ({"tokens": "4096"}, "tokens"),  # does not fit context_length 2048
        ({"quality_seq_len": "0"}, "quality_seq_len"),
        ({"max_gpu_memory_gib": "0"}, "max_gpu_memory_gib"),
        ({"max_gpu_memory_gib": "lots"}, "max_gpu_memory_gib"),
    ],
)
def test_bad_values_name_the_field(flags, field):
    with pytest.raises(InputError) as info:
        resolve(None, flags)
    assert info.value.field == field
    assert field in str(info.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("- a\n- b\n", "mapping"),
        ("just a string\n", "mapping"),
        ("tokens: [1, 2\n", "not valid YAML"),
        ("precison: NF4\n", "did you mean 'precision'"),
        ("tokens: true\n", "whole number"),
        ("tokens: abc\n", "whole number"),
        ("model_name: 7\n", "non-empty string"),
        ("quality_probe: maybe\n", "true or false"),
        ("output_dir: /tmp\n", "known keys"),
        ("# only a comment\n", "no parameters"),
    ],
)
def test_bad_parameter_files(tmp_path, text, needle):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as info:
        resolve(str(f), {})
    assert needle in str(info.value)


def test_binary_and_missing_parameter_files(tmp_path):
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\x00\x01\xff\xfe binary")
    with pytest.raises(InputError, match="binary"):
        read_parameters_file(binary)
    with pytest.raises(InputError, match="does not exist"):
        read_parameters_file(tmp_path / "missing.yaml")
    with pytest.raises(InputError, match="folder"):
        read_parameters_file(tmp_path)


def test_output_dir_checks(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    with pytest.raises(InputError, match="is a file"):
        check_output_dir(str(a_file))
    with pytest.raises(InputError):
        check_output_dir(str(a_file / "below"))
    fresh = tmp_path / "new" / "deeper"
    assert check_output_dir(str(fresh)) == fresh
    assert not (tmp_path / "new").exists()  # checking writes nothing
    assert list(tmp_path.iterdir()) == [a_file]


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1.1),
        ("meta-llama/Llama-2-7b-hf", 7.0),
        ("Qwen/Qwen2.5-0.5B-Instruct", 0.5),
        ("synthetic:llama-2-13b", 13.0),
        ("mistralai/Mistral-7B-v0.1", 7.0),
        ("gpt2", None),
        ("/models/my-model", None),
    ],
)
def test_params_b_from_model_name(name, size):
    assert params_b_from_model_name(name) == size


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("Qwen/Qwen2.5-3B-Instruct", 3.0),
        ("meta-llama/Llama-2-7b-hf", 7.0),
        ("HuggingFaceTB/SmolLM2-135M", 1.1),  # no millions: the container's default
        ("gpt2", 1.1),
        ("gpt-0b", None),  # no model's size: the container could derive no figure at it
    ],
)
def test_the_size_the_published_container_took(name, size):
    from ecocompute.params.model_size import container_params_b

    assert container_params_b(name) == size


# --- the typed model (issue 28, item 2) -------------------------------------------------


def test_flags_are_read_as_their_fields_type_and_typed_values_must_be_of_it():
    from ecocompute.params import RunParams

    text = resolve(None, {"tokens": " 32 ", "quality_probe": "No", "params_b": "7"})
    assert (text.tokens, text.quality_probe, text.params_b) == (32, False, 7.0)
    assert RunParams(tokens=32, params_b=7).params_b == 7.0  # an int is a number of billions
    for name, value, says in [
        ("tokens", "32", "expected a whole number"),  # typed: no reading of text
        ("tokens", 32.0, "expected a whole number"),
        ("tokens", True, "expected a whole number, not true/false"),
        ("params_b", 10**400, "expected a finite number"),
        ("params_b", float("nan"), "expected a finite number"),
        ("quality_probe", "yes", "expected true or false"),
        ("gpu_arch", None, "expected a non-empty string"),
        ("model_name", None, "expected a non-empty string"),
        ("output_dir", b"out", "expected a non-empty string"),
        ("precision", None, "expected a non-empty string"),
        ("precision", 4, "expected a non-empty string"),
        ("decode", "fast", "allowed: eager, graphs, compiled"),
        ("batch_size", 0, "must be a positive whole number"),
        ("batch_size", [1, 2], "expected a whole number"),
        ("iterationz", 3, "not a run parameter"),
    ]:
        with pytest.raises(InputError) as info:
            RunParams(**{name: value})
        assert (info.value.field, info.value.allowed) == (name, says)
        assert str(info.value).startswith(f"invalid {name} ")


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ({"tokens": "1.0"}, "invalid tokens '1.0': expected a whole number"),
        ({"tokens": "nan"}, "invalid tokens 'nan': expected a whole number"),
        ({"idle_seconds": "inf"}, "invalid idle_seconds 'inf': expected a finite number"),
        ({"idle_seconds": "-1"}, "invalid idle_seconds -1.0: must be 0 or more seconds"),
        ({"warmup": "-1"}, "invalid warmup -1: must be 0 or more"),
        ({"sample_rate_hz": "101"}, "invalid sample_rate_hz 101: must be within 1..100 Hz"),
        ({"batch_size": "1" + "0" * 30}, f"invalid batch_size {10**30}: must be at most 1e+09"),
        ({"max_minutes": "0"}, "invalid max_minutes 0.0: must be a positive number of minutes"),
        ({"quiet": "maybe"}, "invalid quiet 'maybe': expected true or false"),
        ({"output_dir": ""}, "invalid output_dir '': expected a non-empty string"),
        ({"backend": "gptq"}, "invalid backend 'gptq': allowed: auto, bitsandbytes, torchao"),
    ],
)
def test_refusals_keep_their_one_line_wording(flags, says):
    with pytest.raises(InputError) as info:
        resolve(None, flags)
    assert str(info.value) == says


def test_paths_are_taken_as_given_and_other_text_is_stripped():
    p = resolve(
        None, {"output_dir": " o", "model_name": "synthetic:tiny-test ", "gpu_arch": " ada"}
    )
    assert (p.output_dir, p.model_name, p.gpu_arch) == (" o", "synthetic:tiny-test ", "ada")
    with pytest.raises(InputError, match="invalid model_name '   ': expected a non-empty string"):
        resolve(None, {"model_name": "   "})


def test_defaults_live_in_the_model_once():
    from ecocompute.formats.table import LLM_INT8_THRESHOLD
    from ecocompute.params import FIELDS, YAML_KEYS, RunParams

    assert RunParams() == DEFAULTS
    assert DEFAULTS.llm_int8_threshold == LLM_INT8_THRESHOLD  # the format's own default
    assert all(FIELDS[name].description for name in FIELDS)  # every field has its help
    assert "output_dir" not in YAML_KEYS and "formats" not in YAML_KEYS


def test_replace_validates_again():
    import dataclasses

    session = resolve(None, {"precision": "NF4,INT4", "gpu_arch": "ada"})
    one = dataclasses.replace(session, precision=session.formats[1], formats=())
    assert (one.precision, one.session_formats) == ("INT4", ("INT4",))
    with pytest.raises(InputError, match="invalid tokens 0: must be a positive whole number"):
        dataclasses.replace(session, tokens=0)
    with pytest.raises(InputError, match="invalid formats"):
        dataclasses.replace(session, precision=session.formats[1])  # not the session's first


def test_a_session_as_a_list_is_typed_only():
    from ecocompute.params import RunParams

    assert RunParams(precision=["nf4", "INT4"]).formats == ("NF4", "INT4")
    with pytest.raises(InputError, match="invalid precision 'FP16,NF4': FP16 is every"):
        RunParams(precision="FP16,NF4")
    with pytest.raises(InputError, match="lists a format twice"):
        RunParams(precision=["INT4", "int4"])
    with pytest.raises(InputError, match="invalid precision \\['NF4'\\]: expected a non-empty"):
        resolve(None, {"precision": ["NF4"]})  # a YAML list is not a precision


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"compiles": "2"}, "invalid compiles 2: needs --decode compiled"),
        ({"compiles": "2", "decode": "compiled", "precision": "FP16"}, "needs a quantized"),
        ({"compiles": "2", "decode": "compiled", "ci_target_pts": "1"}, "not --ci_target_pts"),
        ({"compiles": "2", "decode": "compiled", "iterations": "1"}, "--iterations 2 or more"),
        ({"compiles": "0", "decode": "compiled"}, "must be a whole number from 1 to 8"),
        ({"compiles": "9", "decode": "compiled"}, "must be a whole number from 1 to 8"),
    ],
)
def test_compiles_is_refused_where_only_one_compile_can_run(flags, message):
    with pytest.raises(InputError, match=re.escape(message)):
        resolve(None, flags)


def test_compiles_with_the_compiled_regime_is_taken():
    assert resolve(None, {"compiles": "3", "decode": "compiled"}).compiles == 3


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("0256", "tokens", 256),  # YAML 1.1: octal 174
        ("010", "batch_size", 10),  # octal 8
        ("1_000", "tokens", 1000),  # as int() and the flag read it
        ("2.5", "idle_seconds", 2.5),
    ],
)
def test_a_parameters_file_reads_a_number_as_the_flag_reads_it(tmp_path, text, field, value):
    f = tmp_path / "p.yaml"
    f.write_text(f"{field}: {text}\n")
    assert (
        getattr(resolve(str(f), {}), field) == value == getattr(resolve(None, {field: text}), field)
    )


@pytest.mark.parametrize(
    ("text", "field"),
    [("0x0a", "iterations"), ("4:16", "tokens"), ("1:30", "idle_seconds"), ("0o17", "tokens")],
)
def test_what_the_flag_refuses_a_parameters_file_refuses(tmp_path, text, field):
    """YAML 1.1 read these as hexadecimal or base 60 (10, 256, 90.0): the flag refuses them."""
    f = tmp_path / "p.yaml"
    f.write_text(f"{field}: {text}\n")
    with pytest.raises(InputError, match=field):
        resolve(None, {field: text})
    with pytest.raises(InputError, match=re.escape(f"invalid {field} '{text}'")):
        resolve(str(f), {})


@pytest.mark.parametrize(
    ("flags", "field", "says"),
    [
        ({"prefill_window_s": "5"}, "prefill_window_s", "needs --phases apart"),
        ({"max_rounds": "5"}, "max_rounds", "only with --ci_target_pts"),
        ({"max_minutes": "5"}, "max_minutes", "only with --ci_target_pts"),
        ({"max_rounds": "-5", "ci_target_pts": "1"}, "max_rounds", "positive"),
    ],
)  # fmt: skip
def test_a_setting_nothing_reads_is_refused(flags, field, says):
    """Each was accepted (exit 0) and the run measured without it, saying nothing."""
    with pytest.raises(InputError, match=rf"invalid {field} .*{says}"):
        resolve(None, flags)


def test_settings_where_they_are_read_are_taken(tmp_path, capsys):
    assert resolve(None, {"llm_int8_threshold": "0", "precision": "NF4,INT8"}).precision == "NF4"
    # a session's formats run from one-format copies of its parameters: INT8's threshold
    # rides along with NF4's copy (refusing it there discarded a measured session)
    from ecocompute.cli import main

    argv = ["energy_estimate", "--precision", "NF4,INT8", "--llm_int8_threshold", "0"]
    assert main([*argv, "--dry_run", "-q", "--output_dir", str(tmp_path / "s")]) == 0
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["INT8", "NF4"]
    f = tmp_path / "p.yaml"
    f.write_text("tokens: 10_\n")
    with pytest.raises(InputError, match=r"invalid tokens '10_': expected a whole number"):
        resolve(str(f), {})
    assert resolve(None, {"max_rounds": "80", "ci_target_pts": "1"}).max_rounds == 80
    params = resolve(None, {"prefill_window_s": "2", "phases": "apart", "decode": "graphs"})
    assert params.prefill_window_s == 2.0


def test_a_leading_tilde_no_shell_expanded_is_refused_not_taken_as_a_folder_named_tilde(
    tmp_path, monkeypatch
):
    """A review (2026-12-05): bash leaves --output_dir=~/out as it is; taken as given it
    made ./~/out, and the summary said `report ~/out/energy.json`, read as the home
    folder; --quality_text=~/t.txt was "not a file". ./~ still names a folder ~."""
    from pathlib import Path

    from ecocompute.params import check_output_dir, quality_text_problem

    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="begins with ~, which no shell expanded here"):
        check_output_dir("~/out")
    assert not (tmp_path / "~").exists()
    assert check_output_dir("./~/out") == Path("./~/out")
    assert "begins with ~" in (quality_text_problem("~/t.txt") or "")


def test_a_model_path_with_a_leading_tilde_is_refused_as_the_output_folder_is(tmp_path):
    """--model=~/ckpt was expanded to the home folder while --output_dir=~/out was
    refused (fourteenth session): paths are taken exactly as given, both alike;
    ./~/ckpt still names a folder ~."""
    with pytest.raises(InputError, match=r"model_name.*begins with ~, which no shell expanded"):
        resolve(None, {"model_name": "~/ckpt"})
    assert resolve(None, {"model_name": "./~/ckpt", "params_b": "1"}).model_name == "./~/ckpt"
