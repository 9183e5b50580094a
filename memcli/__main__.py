"""``python -m memcli``."""

from memcli.cli import main

main()
