"""Shared physics, style and tools for the Roofline Labs notebooks.

Physics modules (``hardware``, ``precision``, ``formulas``, ``roofline``, ``models``) are pure
Python + numpy and never import marimo.
"""

from labs.core import formulas, hardware, models, precision, roofline

__all__ = ["formulas", "hardware", "models", "precision", "roofline"]
