"""``python -m solkit``."""

import sys

from .cli import main

sys.exit(main())
