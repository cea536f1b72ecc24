"""Build of the optional C kernel (``bayesrank._prefix_scan``); everything else is in
pyproject.toml. Without a C compiler the install still succeeds (``optional=True``)
and bayesrank uses its compiled-JAX search instead (:mod:`bayesrank.decode_native`)."""

import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O3", "-fno-math-errno", "-pthread", "-Wno-psabi"]
setup(
    ext_modules=[
        Extension(
            "bayesrank._prefix_scan",
            sources=["bayesrank/_prefix_scan.c"],
            depends=["bayesrank/_prefix_scan.h",
                     "bayesrank/_vendor/xla/ffi/api/c_api.h"],
            include_dirs=["bayesrank/_vendor"],
            extra_compile_args=flags,
            extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
            optional=True,
        )
    ]
)
