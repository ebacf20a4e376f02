"""Binary facts of shared objects (ELF links, GPU code), read from bytes: ground shared by the lock stage, verify
and doctor."""
