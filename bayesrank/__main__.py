import sys

from bayesrank.cli import main

sys.exit(main())
