"""Parameters: YAML/flag precedence and every bad input the issue lists."""

from __future__ import annotations

import pytest

from ecocompute.errors import InputError
from ecocompute.params import (
    DEFAULTS,
    check_output_dir,
    params_b_from_model_name,
    read_parameters_file,
    resolve,
)

from .conftest import PARAMS_FILE


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
