"""The one compiled part: fitting/_classcount.c, the character counter of the estimator rules. It is
optional: without a C compiler the build goes on and fitting/estimate.py counts in pure Python.
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "windowfit.fitting._classcount",
            sources=["fitting/_classcount.c"],
            optional=True,
        )
    ]
)
