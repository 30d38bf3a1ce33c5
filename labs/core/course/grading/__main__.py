"""``python -m labs.core.course.grading``: the ``labs-grade`` command."""

import sys

from labs.core.course.grading.cli import main

__all__ = []

if __name__ == "__main__":
    sys.exit(main())
