"""The compiled parts: fitting/_classcount.c, the character counter of the estimator rules, and
fitting/_ccline.c, the scanner of Claude Code lines for the fold of fitting/ccfold.py. Both are optional:
without a C compiler the build goes on, fitting/estimate.py counts in pure Python and the fold reads every
line with orjson. Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "windowfit.fitting._classcount",
            sources=["fitting/_classcount.c"],
            optional=True,
        ),
        Extension(
            "windowfit.fitting._ccline",
            sources=["fitting/_ccline.c"],
            optional=True,
        ),
    ]
)
