"""Contract suites: one set of tests per port, run against the in-memory fake (tests/unit/test_fake_contracts.py)
and the real adapter (tests/integration/test_adapter_contracts.py). A subclass provides the implementation as
the `store` fixture; the suites' classes are not named Test*, so only those subclasses are collected."""
