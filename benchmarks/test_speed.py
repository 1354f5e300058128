"""Benchmarks: ``python -m pytest benchmarks --benchmark-only`` (see README.md).

The parametrization (workload x size x implementation) and the timed callable live in conftest.py.
"""


def test_deepcopy(run_copy):
    pass


def test_shallow(run_copy):
    pass
