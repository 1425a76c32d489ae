"""The optional C loop of the collapse (offconv/_speedups.c). Everything else is in
pyproject.toml. When no C compiler is present the build goes on without it and offconv
uses its Python loop, which gives the same output (tests/test_sum_blocks.py)."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("offconv._speedups", ["offconv/_speedups.c"], optional=True)])
