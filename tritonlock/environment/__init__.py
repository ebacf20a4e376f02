"""Environment: make a venv match the lock — plan, apply (uv, atomically), venv helpers."""
