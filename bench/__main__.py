"""``python -m bench``."""

from bench.run import main

main()
