"""Maintainer tooling, outside the stages a user's command passes through: `tritonlock compat check` (compat/ against
the indexes and the wheels themselves), its `--new` drafts, and the ptxas facts read from Triton wheels."""
