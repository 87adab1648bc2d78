"""`python -m leaf_train.rl --config FILE [--out DIR]` (what `accelerate launch -m` runs on every rank)."""

import sys

from leaf_train.rl.cli import main

sys.exit(main(sys.argv[1:]))
