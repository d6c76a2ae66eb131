"""What this machine can run on, known without importing torch where it cannot see a GPU (so that ``--help``
stays instant): installed package versions, whether a GPU is possible, and the training profile that fits."""

from __future__ import annotations

import glob
import sys
from importlib import metadata as importlib_metadata

GPU_DEVICE_FILES = ("/dev/nvidia*", "/dev/dxg", "/dev/kfd")  # NVIDIA, WSL and ROCm: where a GPU driver shows itself


def package_version(name: str) -> str | None:
    """An installed package's version from its metadata (the same string as its ``__version__``), without
    importing it; None when it is not installed."""
    try:
        return importlib_metadata.version(name.replace("_", "-"))
    except importlib_metadata.PackageNotFoundError:
        return None


def gpu_possible() -> bool:
    """False where torch cannot see a GPU, known without importing it: a CPU-only torch build, macOS, or Linux
    with no GPU driver's device file."""
    if "+cpu" in (package_version("torch") or "") or sys.platform == "darwin":
        return False
    if sys.platform.startswith("linux"):
        return any(glob.glob(pattern) for pattern in GPU_DEVICE_FILES)
    return True


def cuda_visible() -> bool:
    """Whether torch sees a CUDA GPU; torch is imported only where one is possible (:func:`gpu_possible`), so that
    ``train --help`` on a CPU machine stays instant and shows the defaults a bare ``train`` will use there."""
    if not gpu_possible():
        return False
    import torch

    return torch.cuda.is_available()


def device_profile() -> str:
    """The profile that fits this machine: ``gpu`` where torch sees CUDA, else ``cpu``."""
    return "gpu" if cuda_visible() else "cpu"
