"""Lock: the closure (uv), the package-index client, and the triton-env.lock reader/writer."""
