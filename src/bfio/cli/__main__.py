"""``python -m bfio.cli``: the ``bfio`` command."""

import sys

from bfio.cli import main

sys.exit(main())
