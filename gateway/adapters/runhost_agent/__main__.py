"""``python -m gateway.adapters.runhost_agent``: answer the one JSON request on stdin (``main``)."""

import sys

from . import main

sys.exit(main())
