"""Running out of GPU memory, translated once into an error that names what ran out."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ecocompute.errors import RunError
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.decoder import Decoder

log = logging.getLogger(__name__)


@contextlib.contextmanager
def out_of_memory_named(
    model_name: str, precision: str | None, stage: str, accelerator: Accelerator
) -> Iterator[None]:
    """Within the block, CUDA's out-of-memory error becomes a RunError saying which model,
    which format (None where no single format was at work), at what stage, free/total
    memory now, and what to try."""
    try:
        yield
    except RunError:
        raise
    except Exception as exc:
        torch = sys.modules.get("torch")  # torch only looked at if already imported
        if torch is None or not isinstance(exc, torch.cuda.OutOfMemoryError):
            raise
        try:  # free/total MiB after dropping cached blocks
            accelerator.release()
            memory = accelerator.memory_mib()
        except Exception:  # a broken CUDA context must not hide the out-of-memory message
            log.debug("memory query after out-of-memory failed", exc_info=True)
            memory = None
        where = (
            " (GPU memory unknown)"
            if memory is None
            else f" ({memory[0]:,} MiB free of {memory[1]:,} MiB)"
        )
        at = "" if precision is None else f" at {precision}"
        first_line = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise RunError(
            f"out of GPU memory {stage} {model_name}{at}{where}: {first_line}. "
            "Free the GPU (other processes: nvidia-smi), use a smaller model, a smaller "
            "--batch_size or fewer --tokens; no report was written."
        ) from None


@dataclass(frozen=True)
class OutOfMemoryNamed:
    """A decode whose out-of-memory error names its model and format. The context
    manager costs microseconds, inside a window of a decode of hundreds of tokens."""

    decode: Decoder
    model_name: str
    precision: str
    accelerator: Accelerator

    def run(self) -> Any:
        with out_of_memory_named(self.model_name, self.precision, "running", self.accelerator):
            return self.decode.run()

    def new_tokens(self, output: Any) -> int:
        return self.decode.new_tokens(output)

    def run_prefills(self, count: int) -> None:
        """The phases apart: `count` prefills (a decoder of the graphs regimes)."""
        with out_of_memory_named(self.model_name, self.precision, "prefilling", self.accelerator):
            self.decode.run_prefills(count)

    def run_decode(self) -> Any:
        with out_of_memory_named(self.model_name, self.precision, "running", self.accelerator):
            return self.decode.run_decode()

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of one prefill, over the batch."""
        return self.decode.prompt_len * self.decode.batch

    @property
    def batch(self) -> int:
        return self.decode.batch
