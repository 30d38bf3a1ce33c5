"""``labs-profile``: profile your own PyTorch model on the roofline from the command line.

    labs-profile my_model.py:make                  # a file: make() returns (model, inputs)
    labs-profile mypackage.models:make --arg hidden=1024 --precision bf16 --backward
    labs-profile builtin:decoder-decode --arg batch=8 --arg context=2048
    labs-profile builtin:mlp-prefill --roofline h100-sxm      # what if: predicted only

The factory is called with the ``--arg name=value`` pairs as keyword arguments (values read
as Python literals where they parse, else strings) and returns ``(model, example_inputs)``
(inputs: a tensor, a tuple of arguments or a dict of keyword arguments). ``builtin:`` names
one of the built-in models, ``<decoder|mlp|attention>-<prefill|decode>``, built only after a
memory check. It prints the summary and the operators that lose the most time, and writes
``<out>/<name>.csv`` (every operator call and the overhead row) and ``<out>/<name>.html``
(the roofline with every operator, and time per operator type; plotly.js is embedded, so
the page works offline). ``--png`` also writes PNGs when the ``kaleido`` package is installed.

It answers questions Lab 7 asks students to predict (:data:`LAB_QUESTIONS`), so its help
says so and to lock them first.

The notebook face of the measure wing besides ``live``: it may import labs.core.ui.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Sequence

from labs.core import measure
from labs.core.measure.profile import profiler
from labs.core.measure.profile.report import markdown_summary
from labs.core.physics import tiny_models
from labs.core.physics import units

__all__ = ["FactoryError", "LAB_QUESTIONS", "main", "write_outputs"]

#: What the tool's output answers, said in its --help (and on its docs page): a student locks
#: these predictions in the lab before running it.
LAB_QUESTIONS = ("It answers Lab 7's Predictions 1, 2 and 5 (the built-in decoder's decode "
                 "step at batch 1 and 64, in fp32 and in bf16) and shows what Predictions 3 and "
                 "4 ask about: lock those predictions in the lab before you run it.")

_BUILTIN = re.compile(r"^builtin:(decoder|mlp|attention)-(prefill|decode)$")


class FactoryError(RuntimeError):
    """The user's factory raised while building (model, example_inputs)."""


def _parse_args(pairs: Sequence[str]) -> dict:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--arg must be name=value, got {pair!r}")
        k, v = pair.split("=", 1)
        try:
            out[k.strip()] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k.strip()] = v
    return out


def _load_factory(target: str):
    """``module:factory`` or ``path/to/file.py:factory`` -> the callable."""
    if ":" not in target:
        raise ValueError(f"target must be module:factory or file.py:factory, got {target!r}")
    where, name = target.rsplit(":", 1)
    if where.endswith(".py") or "/" in where or "\\" in where:
        path = Path(where)
        if not path.is_file():
            raise ValueError(f"no such file: {where}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent.resolve()))
        try:
            spec.loader.exec_module(module)
        finally:
            sys.path.pop(0)
    else:
        module = importlib.import_module(where)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ValueError(f"{where} has no callable {name!r}")
    return factory


def _case(target: str, kwargs: dict, device, precision):
    """(model, inputs, name) for a target."""
    m = _BUILTIN.match(target)
    if m:
        block, phase = m.groups()
        kw = {"precision": precision or "fp32", **kwargs}
        model, inputs = profiler.builtin_case(block, phase=phase, device=device, **kw)
        bits = [block, phase, kw["precision"]] + [f"{k}{v}" for k, v in sorted(kwargs.items())
                                                  if k != "precision"]
        return model, inputs, "-".join(str(b) for b in bits)
    factory = _load_factory(target)
    try:
        made = factory(**kwargs)
    except Exception as e:  # the factory is the user's code: say that it raised, and where
        raise FactoryError(f"{target}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}) "
                           f"raised {type(e).__name__}: {units.error_message(e)}. The model was "
                           "not built, so nothing was profiled.") from e
    if isinstance(made, dict) and {"model", "inputs"} <= set(made):
        made = (made["model"], made["inputs"])
    if not (isinstance(made, tuple) and len(made) == 2):
        raise ValueError(f"{target} must return (model, example_inputs), got "
                         f"{type(made).__name__}")
    name = target.split(":")[-1] + (f"-{precision}" if precision else "")
    return made[0], made[1], re.sub(r"[^A-Za-z0-9_.-]+", "-", name)


def _lost_table(prof, n: int) -> str:
    lines = ["| operator | module | shapes | measured | roofline bound | measured / bound | lost |",
             "|---|---|---|---|---|---|---|"]
    for r in prof.lost_time(n):
        ratio = f"{r['ratio']:.3g}×" if r["ratio"] else "—"
        bound = units.format_seconds(r["bound_s"]) if r["bound_s"] else "—"
        lines.append(f"| {r['name']} | {r['module'] or '—'} | {r['shapes'] or '—'} | "
                     f"{units.format_seconds(r['measured_s'])} | {bound} | {ratio} | "
                     f"{units.format_seconds(r['lost_s'])} |")
    return "\n".join(lines)


def write_outputs(prof, out_dir: Path, name: str, *, png: bool = False) -> list[Path]:
    """CSV of every row, and an HTML page with the operator roofline and time per type."""
    from labs.core.ui import figures

    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{name}.csv"
    csv_path.write_text(measure.to_csv(prof.all_rows()), encoding="utf-8")
    kind = "predicted" if prof.predicted_only else "measured"
    roof_fig = figures.operator_roofline_figure(
        prof.all_rows(), prof.roof, prof.main_precision, kind=kind,
        title=f"{name}: every operator on {prof.roofline} ({kind})")
    what = "roofline bounds" if kind == "predicted" else "measured"
    bars = figures.time_by_type_figure(prof.by_op_type(),
                                       title=f"{name}: time per operator type ({what})")
    html_path = out_dir / f"{name}.html"
    parts = [roof_fig.to_html(full_html=False, include_plotlyjs=True),
             bars.to_html(full_html=False, include_plotlyjs=False)]
    head = (f"<h1>{name}</h1><p>{prof.device} · roofline: {prof.roofline} "
            f"({prof.roofline_source}) · {prof.reps} profiled passes</p>")
    html_path.write_text("<!doctype html><meta charset='utf-8'><title>" + name + "</title>"
                         + head + "".join(parts), encoding="utf-8")
    written = [csv_path, html_path]
    if png:
        try:
            for fig, suffix in ((roof_fig, "roofline"), (bars, "types")):
                path = out_dir / f"{name}-{suffix}.png"
                fig.write_image(str(path), width=1100, height=600)
                written.append(path)
        except Exception as e:  # kaleido missing or broken: say so, keep the HTML
            print(f"PNG not written ({type(e).__name__}: {e}); install kaleido for PNGs. "
                  "The HTML page has the same figures.", file=sys.stderr)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="labs-profile", description=__doc__.split("\n\n")[0],
                                 epilog=LAB_QUESTIONS)
    ap.add_argument("target", help="module:factory, file.py:factory, or builtin:<model>-<phase> "
                    f"(models: {', '.join(tiny_models.BLOCKS)}; phases: {', '.join(tiny_models.PHASES)})")
    ap.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                    help="keyword argument for the factory (repeatable)")
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: a GPU if any)")
    ap.add_argument("--precision", default=None, choices=tiny_models.MODEL_PRECISIONS)
    ap.add_argument("--roofline", default=None,
                    help="a registry key for 'what if' (predicted only); default: this machine")
    ap.add_argument("--backward", action="store_true", help="profile forward and backward")
    ap.add_argument("--budget", type=float, default=4.0, help="seconds for the timed passes")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--top", type=int, default=10, help="rows of the lost-time table")
    ap.add_argument("--out", default="profiles", help="folder for the CSV and HTML")
    ap.add_argument("--png", action="store_true", help="also write PNGs (needs kaleido)")
    ap.add_argument("--traceback", action="store_true",
                    help="on an unexpected error, show the whole Python traceback")
    a = ap.parse_args(argv)
    try:
        model, inputs, name = _case(a.target, _parse_args(a.arg), a.device, a.precision)
        name += "-backward" if a.backward else ""  # one run's files never replace another's
        prof = profiler.profile_model(model, inputs, device=a.device, precision=a.precision,
                                      backward=a.backward, roofline=a.roofline,
                                      budget_s=a.budget, threads=a.threads, label=name)
    except (ValueError, KeyError, ImportError, FactoryError, measure.MeasureError) as e:
        print(f"labs-profile: {units.error_message(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # anything else: what happened, in one line, never a bare traceback
        if a.traceback:
            raise
        print(f"labs-profile: profiling {a.target} failed with {type(e).__name__}: "
              f"{units.error_message(e)}. Run again with --traceback to see where.",
              file=sys.stderr)
        return 1
    print(f"{prof.device} · threads {prof.threads} · timer {prof.timer} · roofline "
          f"{prof.roofline} ({prof.roofline_source})\n")
    print(markdown_summary([prof]))
    if not prof.predicted_only:
        print(f"\nMost time lost against the roofline (measured - bound):\n\n"
              f"{_lost_table(prof, a.top)}")
    for note in prof.notes + ((prof.op_time_caveat,) if prof.op_time_caveat else ()):
        print(f"\nNote: {note}")
    for path in write_outputs(prof, Path(a.out), name, png=a.png):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
