"""``python -m gpu_lessons ...`` is the ``gpu-lessons`` command."""

import sys

from .cli import main

sys.exit(main())
