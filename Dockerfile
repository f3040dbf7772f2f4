# EcoCompute, GPU image: measures energy per generated token of FP16 vs NF4 / INT8
# (bitsandbytes) with NVML. Installs only from a wheelhouse in the build context, so the
# build needs no network:
#
#   scripts/build-wheelhouse.sh gpu          # on the host: ~2.7 GB of wheels, hash-checked
#   docker build -f Dockerfile -t ecocompute:gpu .
#   docker run --rm --gpus all -v "$PWD/out:/workspace/outputs" ecocompute:gpu \
#     energy_estimate --model ... --precision INT8 --gpu_arch auto --output_dir /workspace/outputs
#
# Base: a slim Python image, not a CUDA runtime image. torch's PyPI wheels carry their own
# CUDA 13.0 libraries (the nvidia-* wheels in the lock: cuBLAS, cuDNN, NCCL, ...), and the
# driver (libcuda, libnvidia-ml) comes from the host through the NVIDIA Container Toolkit,
# so a CUDA base would add a second, unused copy of the same libraries (gigabytes) whose
# version could disagree with torch's. BASE_IMAGE: any Debian-like image with CPython 3.11
# and its venv module (the lock is compiled for cp311 x86_64, glibc >= 2.28); where no
# registry is reachable, make one with scripts/make-base-image.sh and pass
# --build-arg BASE_IMAGE=ecocompute-base:bookworm.
ARG BASE_IMAGE=python:3.11-slim

# --- the locked dependencies, in a stage of their own so the wheel files (gigabytes)
# --- never reach the final image's layers.
FROM ${BASE_IMAGE} AS deps
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
# Requirements before code: this layer is rebuilt only when the lock changes.
COPY requirements.lock.txt /tmp/requirements.lock.txt
COPY .wheelhouse/gpu/ /tmp/wheelhouse/
# A venv rather than the system Python: bookworm's python3 is externally managed (PEP 668).
# --require-hashes: nothing installs that is not in the lock, byte for byte.
RUN python3 -m venv /opt/ecocompute \
 && /opt/ecocompute/bin/pip install --no-index --find-links /tmp/wheelhouse \
      --require-hashes -r /tmp/requirements.lock.txt

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="ecocompute (GPU)" \
      org.opencontainers.image.description="EcoCompute energy_estimate: NVML-measured energy per token, FP16 vs NF4/INT8 (bitsandbytes), INT4/FP8 (torchao)" \
      org.opencontainers.image.licenses="Apache-2.0"
# NVIDIA_*: ask the Container Toolkit for the CUDA driver (compute) and NVML (utility);
# CUDA base images set these, a plain Python base does not, and without `compute`
# torch would find no libcuda under `--gpus all`.
# HF_HOME / XDG_CACHE_HOME / TRITON_CACHE_DIR: the MLCube descriptors run the container
# as the calling user (-u uid:gid), who has no home here; /workspace is world-writable.
# Mount a Hugging Face cache or a checkpoint folder to run without a hub (air-gapped).
ENV PATH=/opt/ecocompute/bin:$PATH \
    VIRTUAL_ENV=/opt/ecocompute \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    HF_HOME=/workspace/.cache/huggingface \
    XDG_CACHE_HOME=/workspace/.cache \
    TRITON_CACHE_DIR=/workspace/.cache/triton \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
COPY --from=deps /opt/ecocompute /opt/ecocompute
# The package itself last (it changes most often), from the wheel built from this
# checkout; --no-deps because everything it needs is already installed from the lock.
COPY .wheelhouse/ecocompute/ /tmp/ecocompute-wheel/
RUN pip install --no-index --no-deps /tmp/ecocompute-wheel/ecocompute-*.whl \
 && rm -rf /tmp/ecocompute-wheel \
 && pip check \
 && ecocompute --version \
 && python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)" \
 && mkdir -p /workspace/outputs /workspace/.cache \
 && chmod 1777 /workspace /workspace/outputs /workspace/.cache
WORKDIR /workspace
# `docker run IMAGE energy_estimate --output_dir /workspace/outputs ...`; MLCube passes
# the task name first, then --key=value for each input and output.
ENTRYPOINT ["ecocompute"]
CMD ["energy_estimate", "--output_dir", "/workspace/outputs"]
