"""`python -m shared.cli`: the tests and benchmarks run `quire` so, with the interpreter they run under."""

import sys

from shared.cli.app import main

sys.exit(main())
