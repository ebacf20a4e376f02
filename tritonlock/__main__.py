"""`python -m tritonlock`."""

from tritonlock._entry import main

main()
