"""``python -m validation report | fit`` (see validation.cli)."""
import sys

from .cli import main

sys.exit(main())
