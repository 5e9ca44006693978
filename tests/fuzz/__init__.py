"""A seeded, bounded mutation fuzzer over every hybridnet loader (issue 10).

``tests/test_fuzz_loaders.py`` runs it in CI with a few thousand inputs; for a long campaign
run ``python -m tests.fuzz --long`` (100,000+ inputs) or set ``HYBRIDNET_FUZZ_N`` (inputs per
loader) for the pytest run. See ``runner.is_clear`` for the errors that count as clear.
"""
