"""``python -m dpcore.jobs [--id ID] [--once]``: a background job worker process (:mod:`dpcore.jobs.workers`)."""

import sys

from dpcore.jobs.workers import main

sys.exit(main())
