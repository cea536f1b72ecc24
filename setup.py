"""Build of the optional C kernel (``bayesrank.decoding._prefix_scan``); everything else is in
pyproject.toml. Without a C compiler the install still succeeds (``optional=True``)
and bayesrank uses its compiled-JAX search instead (:mod:`bayesrank.decoding.native`)."""

import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O3", "-fno-math-errno", "-pthread", "-Wno-psabi"]
setup(
    ext_modules=[
        Extension(
            "bayesrank.decoding._prefix_scan",
            sources=["bayesrank/decoding/_prefix_scan.c"],
            depends=["bayesrank/decoding/_prefix_scan.h",
                     "bayesrank/decoding/_vendor/xla/ffi/api/c_api.h"],
            include_dirs=["bayesrank/decoding/_vendor"],
            extra_compile_args=flags,
            extra_link_args=[] if sys.platform == "win32" else ["-pthread"],
            optional=True,
        )
    ]
)
