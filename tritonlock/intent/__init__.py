"""The intent: triton-env.toml (or [tool.tritonlock] in pyproject.toml) and its target files, read and validated."""
