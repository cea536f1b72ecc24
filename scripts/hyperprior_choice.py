"""Which hyperprior of g (theta's prior sd over the noise sd) the default uses:
regret and coverage of candidate hyperpriors on the units study's instance (c = 1;
the learnt default is equivariant, so c does not matter), beside the oracle.

    python scripts/hyperprior_choice.py [--quick] [--w known,latent]
"""

from __future__ import annotations

import argparse

import numpyro.distributions as dist

from bayesrank.posteriors import GaussianLinear
from bayesrank.studies.units import _model, report, units_cells

CANDIDATES = {
    "HalfCauchy(1) (default)": lambda c, d: GaussianLinear(),
    "HalfNormal(1)": lambda c, d: GaussianLinear(prior_scale=dist.HalfNormal(1.0)),
    "HalfCauchy(0.1)": lambda c, d: GaussianLinear(prior_scale=dist.HalfCauchy(0.1)),
    "LogUniform(1e-3, 1e3)": lambda c, d: GaussianLinear(
        prior_scale=dist.LogUniform(1e-3, 1e3)),
    "oracle": lambda c, d: _model("oracle", c, d),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--w", default="known,latent")
    args = ap.parse_args()
    ds = units_cells("quick" if args.quick else "full", priors=CANDIDATES, cs=(1.0,),
                     ws=tuple(args.w.split(",")))
    print(report(ds))


if __name__ == "__main__":
    main()
