"""`python -m tritonlock`."""

from tritonlock.cli import main

main()
