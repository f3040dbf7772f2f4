"""params: the run parameters as one typed model. A frozen pydantic dataclass
(run_params.py) holds the defaults, types, ranges and the rules that tie fields together;
flags and a YAML parameters file (parameters_file.py) come in as text (text_values.py),
keyword arguments typed; every refusal is one InputError line. What the values name on
this machine is checked apart (path_checks.py), and a model's size is read from its name
(model_size.py).

May import: formats, published (arch classes), boundary (user paths), core, errors.
"""

from ecocompute.params.model_size import nominal_params_b, params_b_from_model_name
from ecocompute.params.parameters_file import (
    MAX_PARAMETERS_BYTES,
    check_files,
    read_parameters_file,
    resolve,
)
from ecocompute.params.path_checks import (
    check_output_dir,
    quality_text_problem,
)
from ecocompute.params.run_params import (
    DEFAULTS,
    FIELDS,
    YAML_KEYS,
    RunParams,
    flag_for,
)

__all__ = [
    "DEFAULTS",
    "FIELDS",
    "MAX_PARAMETERS_BYTES",
    "YAML_KEYS",
    "RunParams",
    "check_files",
    "check_output_dir",
    "flag_for",
    "nominal_params_b",
    "params_b_from_model_name",
    "quality_text_problem",
    "read_parameters_file",
    "resolve",
]
