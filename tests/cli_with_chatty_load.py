"""The real CLI in a process of its own, with a fake NVML device and a CPU accelerator on
which every model "spills" off the GPU, and a from_pretrained that first logs and warns
as accelerate and transformers do when they place layers on the disk. For
test_hostile_one_line_errors.py: only our own refusal may reach stderr.

    python -m tests.cli_with_chatty_load energy_estimate --model synthetic:tiny-test ...
"""

from __future__ import annotations

import logging
import sys
import warnings

from ecocompute.cli import entry

from .cli.test_faults import SpillingAccelerator
from .fakes import FakeTelemetry, install_fakes

DISK_WARNING = "Some parameters are on the meta device because they were offloaded to the disk."


def chatty(from_pretrained):
    def load(*args, **kwargs):
        logging.getLogger("accelerate.utils.modeling").warning(DISK_WARNING)
        logging.getLogger("transformers.modeling_utils").warning(DISK_WARNING)
        warnings.warn(DISK_WARNING, UserWarning, stacklevel=2)
        return from_pretrained(*args, **kwargs)

    return load


if __name__ == "__main__":
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained = chatty(AutoModelForCausalLM.from_pretrained)
    install_fakes(setattr, FakeTelemetry, SpillingAccelerator())
    sys.exit(entry.main(sys.argv[1:]))
