"""Roofline Labs: marimo notebooks (this folder) and their shared package (`labs.core`)."""
