"""A package's native code, in one place: the binary readers (ELF links and symbols, GPU code), the wheel reader and
its facts kept per sha256 (read, remotezip, uvcache: the lock's stage), the rule (rule: ground, shared by resolve,
verify and doctor), the rule on a closure (judge: the decision's stage) and the loop that decides again (loop)."""
