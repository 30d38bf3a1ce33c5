"""What to install to measure on this machine: the commands that put PyTorch into the
Python the labs run in, and which to choose where (the launcher's start-up notice; the labs'
own notice, ``measure.device.torch_commands``, gives the same commands: measure may not import
course, so a test holds the two together)."""

from __future__ import annotations

import os
import sys

__all__ = ["torch_advice", "torch_commands", "torch_notice"]


def torch_commands(python: str | None = None) -> dict[str, str]:
    """The commands that install PyTorch into ``python`` (default: this one), by what they
    fetch: ``"cpu"``, PyTorch's CPU build (about 200 MB) from PyTorch's own package index
    through uv (``--torch-backend=cpu``); ``"index"``, ``pip install torch`` from the package
    index alone (the CPU build on macOS and Windows; on Linux the CUDA build, several GB with
    its NVIDIA libraries, which runs on a CPU too): the fallback where PyTorch's index cannot
    be reached; ``"gpu"``, uv's ``--torch-backend=auto`` (the CUDA build for the driver, from
    PyTorch's index: the package index's Windows build has no CUDA). The labs' own notice
    (``measure.device.torch_commands``) gives the same commands."""
    # Windows shells differ on a quoted program path (PowerShell refuses one): there the
    # activated environment's own `python`, as the install instructions have it.
    py = (python or "python") if os.name == "nt" else f'"{python or sys.executable}"'
    uv = f"{py} -m pip install uv && {py} -m uv pip install --python {py}"
    return {"cpu": f'{uv} --torch-backend=cpu "torch>=2.3"',
            "index": f'{py} -m pip install "torch>=2.3"',
            "gpu": f'{uv} --torch-backend=auto "torch>=2.3"'}


def torch_advice(platform: str | None = None, python: str | None = None) -> str:
    """Which command to run on ``platform`` (default: this one), one per line with when."""
    platform = platform or sys.platform
    c = torch_commands(python)
    if platform == "darwin":
        return ("To measure, install PyTorch into this Python (on macOS the package index's "
                f"build is the CPU one):\n    {c['index']}\n")
    if platform.startswith(("win", "cygwin")):
        return ("To measure, install PyTorch into this Python (on Windows the package index's "
                f"build is the CPU one):\n    {c['index']}\n"
                "With an NVIDIA GPU, take PyTorch's CUDA build for your driver from PyTorch's "
                f"own index instead:\n    {c['gpu']}\n")
    return ("To measure, install PyTorch's CPU build (about 200 MB) into this Python, from "
            f"PyTorch's own package index:\n    {c['cpu']}\n"
            "With an NVIDIA GPU, or if that command cannot reach PyTorch's index (a network "
            "that lets only the package index through), install from the package index "
            f"alone:\n    {c['index']}\n"
            "(on Linux that is the CUDA build: several GB with its NVIDIA libraries, which "
            "also runs on a CPU).\n")


def torch_notice() -> str | None:
    """What to say at start when torch is missing (None when it is installed)."""
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        return None
    return ("torch is not installed: every lab works, but nothing can be measured on this "
            "machine. " + torch_advice() + "Then restart: stop roofline-labs (Ctrl+C in this "
            "terminal) and run roofline-labs again; your links and your locked predictions "
            "stay as they are.")
