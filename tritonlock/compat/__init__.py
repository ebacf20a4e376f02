"""The curated facts of compat/ (the matrix: torch, CUDA, Triton, GPUs, ROCm and XPU builds, package builds), loaded
and asked: what every stage that names a GPU or a build reads, below the decision."""
