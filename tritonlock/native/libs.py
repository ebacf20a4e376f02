"""The libraries the native-code rule knows by name: CUDA's user libraries (and the wheels that bring them), the
NVIDIA driver's own, ROCm's; which of a library's versions a lock brings instead of the one asked for."""

from __future__ import annotations

import re
from collections.abc import Iterable

# sonames whose number is the CUDA major (cuFFT, cuSOLVER, cuRAND, cuSPARSE, cuDNN and NCCL number their own)
CUDA_MAJOR_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|nvrtc|nvJitLink)\.so\.([0-9]+)\Z")
# CUDA user libraries: a lock must bring each one a locked extension names (a machine's own toolkit is no lock)
CUDA_LIB = re.compile(r"^lib(cudart|cublas|cublasLt|cufft|curand|cusolver|cusparse|nvrtc|nvJitLink|cudnn[A-Za-z_]*|"
                       r"nccl|nvshmem[A-Za-z_]*|cupti|nvToolsExt|cufile)\.so(\.[0-9]+)*\Z")
# which NVIDIA wheel brings a CUDA library, by CUDA major (CUDA 13's dropped the -cuNN suffix: compat/cudalibs.toml)
WHEEL_OF = {"cudart": "nvidia-cuda-runtime", "cublas": "nvidia-cublas", "cublasLt": "nvidia-cublas",
             "nvrtc": "nvidia-cuda-nvrtc", "nvJitLink": "nvidia-nvjitlink", "cufft": "nvidia-cufft",
             "curand": "nvidia-curand", "cusolver": "nvidia-cusolver", "cusparse": "nvidia-cusparse",
             "cudnn": "nvidia-cudnn", "nccl": "nvidia-nccl", "cupti": "nvidia-cuda-cupti"}


# The NVIDIA driver's own libraries (installed with the driver, not by any wheel)
DRIVER_LIBS = re.compile(r"^lib(?:cuda|nvidia-[A-Za-z0-9_-]+|nvcuvid|cudadebugger)\.so(?:\.[0-9]+)*\Z")
# ROCm's user libraries (a ROCm torch or the ROCm SDK wheels bring them)
ROCM_LIB = re.compile(r"^lib(?:amdhip64|hiprtc|rocblas|hipblas|hipblaslt|MIOpen|rccl|rocsolver|hipfft|rocfft|"
                      r"hipsparse|rocsparse|roctracer64|hsa-runtime64)\.so(?:\.[0-9]+)+\Z")
_LIB_WORDS = {"cudart": "the CUDA runtime", "cublas": "cuBLAS", "cublasLt": "cuBLASLt", "nvrtc": "NVRTC",
              "nvJitLink": "nvJitLink", "cufft": "cuFFT", "curand": "cuRAND", "cusolver": "cuSOLVER",
              "cusparse": "cuSPARSE", "cudnn": "cuDNN", "nccl": "NCCL", "cupti": "CUPTI", "cufile": "cuFile",
              "nvshmem_host": "NVSHMEM", "amdhip64": "HIP", "rocblas": "rocBLAS", "hipblas": "hipBLAS",
              "hipblaslt": "hipBLASLt", "MIOpen": "MIOpen", "rccl": "RCCL"}


def stem(lib: str) -> tuple[str, str] | None:
    """("cublas", "12") of "libcublas.so.12"."""
    m = re.match(r"^lib(.+?)\.so\.([0-9]+)", lib)
    return (m[1], m[2]) if m else None


def nearest(lib: str, provided: Iterable[str]) -> str | None:
    """What the lock brings of the same library in another version ("libcublas.so.13 (cuBLAS 13)" for a
    libcublas.so.12), the nearest version first; None where it brings none."""
    want = stem(lib)
    if want is None:
        return None
    same = sorted((int(s[1]), p) for p in provided if (s := stem(p)) and s[0] == want[0] and s[1] != want[1])
    if not same:
        return None
    n, soname = min(same, key=lambda x: (abs(x[0] - int(want[1])), -x[0]))
    return f"{soname} ({_LIB_WORDS.get(want[0], want[0])} {n})"


def sibling(name: str, major: int) -> str | None:
    """The same package's build for CUDA `major`, by the naming its publishers use: "-cu12" / "_cu12" beside
    "-cu13" (nixl-cu12, nixl-cu13), "cuda12x" beside "cuda13x" (cupy-cuda12x, cupy-cuda13x); None where the name
    carries no CUDA major, or carries this one."""
    m = re.fullmatch(r"(.+[-_])cu(1[0-9])", name) or re.fullmatch(r"(.+?)cuda(1[0-9])x", name)
    if m is None or int(m[2]) == major:
        return None
    return f"{m[1]}cu{major}" if name[m.end(1):].startswith("cu") and not name[m.end(1):].startswith("cuda") \
        else f"{m[1]}cuda{major}x"
