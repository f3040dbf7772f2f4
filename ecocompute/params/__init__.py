"""params: the run parameters. One frozen dataclass (run_params.py) with its defaults,
filled from a YAML parameters file (parameters_file.py, yaml_loader.py) and/or flags,
every value made typed (coercion.py) and checked (validation.py, path_checks.py) the
same way, and the model's size read from its name (model_size.py).

May import: formats, published (arch classes), boundary (user paths), core, errors.
"""

from ecocompute.params.model_size import nominal_params_b, params_b_from_model_name
from ecocompute.params.parameters_file import read_parameters_file, resolve
from ecocompute.params.path_checks import check_http_url, check_output_dir, check_quality_text
from ecocompute.params.run_params import (
    DECODE_REGIMES,
    DEFAULTS,
    FIELDS,
    MAX_PARAMETERS_BYTES,
    PRECISIONS,
    SITE,
    YAML_KEYS,
    RunParams,
    help_for,
)

__all__ = [
    "DECODE_REGIMES",
    "DEFAULTS",
    "FIELDS",
    "MAX_PARAMETERS_BYTES",
    "PRECISIONS",
    "SITE",
    "YAML_KEYS",
    "RunParams",
    "check_http_url",
    "check_output_dir",
    "check_quality_text",
    "help_for",
    "nominal_params_b",
    "params_b_from_model_name",
    "read_parameters_file",
    "resolve",
]
