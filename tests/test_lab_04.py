"""Lab 4 "Fusion and Overhead": headless locked/unlocked runs, numbers equal labs.core,
failure states reached and recovered through widget values, ledger events, export."""

import re
from pathlib import Path
from types import SimpleNamespace as NS

import marimo as mo
import plotly.graph_objects as go
import pytest

from labs.core import fusion
from labs.core import formulas
from labs.core import hardware
from labs.core import quiz
from labs.core import roofline
from labs.core import units
from labs.core import style
from labs.lab_04_fusion import app
from notebook_support import cell_cpu_seconds, cells_that_only_show, export_page

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "labs" / "lab_04_fusion.py"
ITEMS = ("lab04.fusion_speedup", "lab04.tiny_tensor", "lab04.oom_seq_len", "lab04.largest_tile")
PREDICTIONS = {
    "speedup_prediction": quiz.Prediction("lab04.fusion_speedup", 4.0, "×", confidence=3,
                                          reason="four kernels"),
    "tiny_prediction": quiz.Prediction("lab04.tiny_tensor", "bytes", answer_type="choice",
                                       label="Helps: it cuts HBM bytes (memory-bound)"),
    "oom_prediction": quiz.Prediction("lab04.oom_seq_len", 20_000, "tokens"),
    "tile_prediction": quiz.Prediction("lab04.largest_tile", 256, answer_type="choice",
                                       label="256 × 256"),
}
INSTRUMENTS = ("fusion_metrics", "fusion_roofline", "fusion_bars", "speedup_explain",
               "overhead_metrics", "overhead_figure", "tiny_explain", "attention_metrics",
               "attention_figure", "attention_memory", "oom_explain", "tile_status",
               "hierarchy_figure", "tile_explain")
FIGURES = ("fusion_roofline", "fusion_bars", "overhead_figure", "attention_figure",
           "hierarchy_figure")


@pytest.fixture(autouse=True)
def ledger_env(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_LEDGER_DIR", str(tmp_path / "ledger"))
    monkeypatch.setenv("ROOFLINE_STUDENT_ID", "tester")
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    return tmp_path


#: A widget cell's layout of its widgets (shown by a cell that names no widget): overridden
#: with a plain stand-in, never a widget.
LAYOUT = object()

#: Each widget cell's names with their opening values: overriding one widget of a cell means
#: providing all of that cell's definitions (marimo's rule for app.run(defs=...)).
WIDGET_CELLS = (
    {"device_picker": "h100-sxm"}, {"precision_picker": "fp16"},
    {"chain_slots": fusion.DEFAULT_CHAIN, "kernels_slider": 4, "size_slider": 100_000_000,
     "overhead_us": roofline.DEFAULT_LAUNCH_OVERHEAD_US, "chain_controls": LAYOUT,
     "size_control": LAYOUT},
    {"seq_slider": 4096, "attn_batch": 1, "attn_heads": 32, "head_dim_picker": 128,
     "attention_controls": LAYOUT},
    {"block_q_slider": 128, "block_kv_slider": 128, "tile_controls": LAYOUT},
)


def _set(**stand_ins):
    """``stand_ins`` (widgets or ``NS(value=...)``), plus the opening values of the other
    names defined in the same cells."""
    out = {}
    for cell in WIDGET_CELLS:
        if set(cell) & set(stand_ins):
            out.update({k: f"({k})" if v is LAYOUT else NS(value=v) for k, v in cell.items()})
    unknown = set(stand_ins) - set(out)
    assert not unknown, f"not a widget of the lab: {unknown}"
    return {**out, **stand_ins}


def run(**stand_ins):
    return app.run(defs={**PREDICTIONS, **_set(**stand_ins)})


def text(obj) -> str:
    """Visible text of a marimo output: tags stripped, entities decoded, and the content that
    nested components (callouts, accordions) keep in escaped ``data-*`` attributes included."""
    import html
    import json

    parts = []

    def pull(markup: str) -> None:
        for m in re.finditer(r"data-[\w-]+='([^']*)'", markup):
            inner = html.unescape(m.group(1))
            try:
                inner = json.loads(inner)
            except ValueError:
                pass
            if isinstance(inner, str):
                pull(inner)
            elif isinstance(inner, list):
                for item in inner:
                    pull(str(item))
        parts.append(html.unescape(re.sub(r"<[^>]+>", " ", markup)))

    pull(obj.text if isinstance(obj, mo.Html) else str(obj))
    return re.sub(r"\s+", " ", " ".join(parts))


def chain(*keys):
    """A real chain widget holding ``keys`` (its cell's other names: ``_set``)."""
    labels = {k: formulas.ELEMENTWISE[k].label for k in formulas.ELEMENTWISE}
    slots = [labels[k] for k in keys] + ["— (empty)"] * (6 - len(keys))
    return mo.ui.array([mo.ui.dropdown({"— (empty)": "", **{v: k for k, v in labels.items()}},
                                       value=s) for s in slots])


# --- locked and unlocked --------------------------------------------------------------------

def test_locked_run_hides_every_instrument_and_shows_the_gates():
    outputs, defs = app.run()
    for name in INSTRUMENTS:
        assert name not in defs, name
    for p in PREDICTIONS:
        assert defs[p] is None
    shown = " ".join(text(o) for o in outputs if o is not None)
    # the rule's notices: they name the predictions to lock, never a setting
    for notice in ("Lock Predictions 1 and 2 first", "Lock Prediction 3 first",
                   "Lock Prediction 4 first"):
        assert notice in shown, notice
    # nothing that gives an answer away before the lock: no equations, no takeaways
    assert "Math peek" not in shown and "Key takeaways" not in shown
    assert "appear once all 4 predictions of this lab are locked (0 so far)" in shown


def test_unlocked_run_shows_figures_and_core_numbers():
    outputs, defs = run(kernels_slider=NS(value=1))
    shown = " ".join(text(o) for o in outputs if o is not None)
    assert shown.count("Math peek") == 4 and "Key takeaways" in shown
    for name in INSTRUMENTS:
        assert name in defs, name
    for name in FIGURES:
        fig = defs[name]
        assert isinstance(fig, go.Figure)
        go.Figure(fig.to_dict())  # every figure is valid plotly when validated
    # Part 1: fully fused default chain at 100 M elements on the H100, fp16
    want = fusion.fusion_speedup(100_000_000, "h100-sxm", None, [[0, 1, 2, 3]])
    assert defs["chain_speedup"] == pytest.approx(want) == pytest.approx(19 / 7)
    assert f"{want:.2f}×" in text(defs["fusion_metrics"])
    assert "700 MB" in text(defs["fusion_metrics"])  # 7 B/element x 1e8, fused
    # Part 2: the time-vs-size curves are core's
    curve = defs["overhead_figure"].data[0]
    assert list(curve.y) == pytest.approx(list(fusion.chain_time_curve(
        curve.x, "h100-sxm", None) * 1e6))
    assert "2,392,857 elements" in text(defs["overhead_metrics"])
    assert "20 µs" in text(defs["overhead_metrics"]) and "4.00×" in text(defs["overhead_metrics"])
    # Part 3 and 4
    assert defs["attn_unfused"] == formulas.attention(1, 32, 4096, 4096, 128, fused=False)
    assert defs["flash_point"] == fusion.flash_roof_point(1, 32, 4096, 128, 128, 128, "h100-sxm")
    # K and V re-read by 32 query tiles: L2's traffic (AI 124), bound by the L2 roof
    assert "124 FLOP/B" in text(defs["tile_status"])
    assert "2,048 FLOP/B" in text(defs["tile_status"])  # HBM: Q, K, V, O once (S / 2)
    assert "L2 bandwidth" in text(defs["tile_status"])
    roofs = [t.name for t in defs["hierarchy_figure"].data]
    assert any(n.startswith("L2 · 6,650 GB/s (measured)") for n in roofs), roofs
    assert any(n.startswith("HBM · 3,350 GB/s") for n in roofs), roofs


def test_references_are_core_values():
    _, defs = app.run()
    assert defs["references"] == {
        "fusion_speedup": pytest.approx(19 / 7),
        "tiny_tensor": fusion.BENEFIT_LAUNCHES,
        "oom_seq_len": fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128),
        "largest_tile": 128,
    }


def test_math_peeks_and_takeaways_state_core_values():
    # the graded values in the explanations are computed from core, not typed in
    # the lab's source (tests/test_lab_sources.py reads the source): here, what they show
    outputs, _ = run()
    shown = " ".join(text(o) for o in outputs if o is not None)
    unfused = formulas.elementwise_chain(1, fusion.DEFAULT_CHAIN, None, "fp16").total.bytes
    fused = formulas.elementwise_chain(1, fusion.DEFAULT_CHAIN, [[0, 1, 2, 3]], "fp16").total.bytes
    ratio = f"{unfused / fused:.2g}"
    assert ratio == f"{fusion.fusion_speedup(100_000_000, 'h100-sxm', None, [[0, 1, 2, 3]]):.2g}"
    assert rf"\frac{{{unfused:g}\,n\ \text{{B}}}}{{{fused:g}\,n" in shown
    assert rf"\approx {ratio}\times" in shown and f"(≈ {ratio}× for LayerNorm" in shown
    # the overhead crossover's worked example: 5 µs x 3,350 GB/s / 7 B = 2.39 M elements
    crossover = fusion.chain_overhead_crossover("h100-sxm", [[0, 1, 2, 3]])
    assert crossover == pytest.approx(5e-6 * 3350e9 / 7)
    peek = shown.split("the overhead crossover")[1].split("Part 3")[0]
    assert "3,350 GB/s" in peek and rf"\approx {crossover / 1e6:.1f}" in peek and "2.4" in peek
    s_max = fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128)
    assert rf"S \le {s_max:,} .".replace(",", "{,}") in shown
    tile = fusion.largest_square_tile(128, "h100-sxm")
    assert rf"{tile}\times{tile}||) needs 96 KiB and 128 KiB: both fit" in shown
    assert (rf"{2 * tile}\times{2 * tile}||) needs 192 KiB of shared memory (fits) and 384 KiB of "
            "registers (too much), so it does not fit") in shown


def test_reveal_mode_opens_every_gate_with_the_reference(monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    assert defs["speedup_prediction"].value == pytest.approx(19 / 7)
    assert defs["tiny_prediction"].value == "launches"
    assert defs["oom_prediction"].value == 36_380  # 80 GiB, not 80e9 B
    assert defs["tile_prediction"].label == "128 × 128"
    for name in FIGURES:
        assert name in defs


# --- Predictions 1 and 2 are asked together before the instruments that answer both ---------

#: The instruments of Parts 1 and 2 and their comparisons (a closed gate leaves them undefined).
PARTS_1_2 = ("chain_now", "fusion_metrics", "fusion_roofline", "fusion_bars", "overhead_metrics",
             "overhead_figure", "speedup_explain", "tiny_explain")


def _with(*locked_vars, **stand_ins):
    return app.run(defs={**{k: (v if k in locked_vars else None)
                            for k, v in PREDICTIONS.items()}, **_set(**stand_ins)})


#: sizes that used to split Part 1 at a fixed floor (its neighbours), the question's, the
#: opening 100 M and both ends of the slider
SIZES = (100, 1_000, 3_000_000, 10_000_000, 30_000_000, 100_000_000, 1_000_000_000)


@pytest.mark.parametrize("alone", ["speedup_prediction", "tiny_prediction"])
def test_parts_1_and_2_wait_for_both_predictions_at_every_size(alone):
    # Part 1's explorer shows a chain's speedup and regime at any size, so it answers both
    # predictions: with either one alone locked nothing of Parts 1 and 2 opens, at any size,
    # and the notice names the prediction still open (never a size or a regime)
    other = 2 if alone == "speedup_prediction" else 1
    for size in SIZES:
        outputs, defs = _with(alone, "oom_prediction", "tile_prediction",
                              size_slider=NS(value=size))
        for name in PARTS_1_2:
            assert name not in defs, (alone, size, name)
        shown = " ".join(text(o) for o in outputs if o is not None)
        assert f"Lock Prediction {other} first" in shown
        assert "Speedup vs unfused" not in shown and "Chain time vs tensor size" not in shown
        assert "Tensor size (elements, log steps)" not in shown  # the controls wait with it
        assert "Math peek · fusing" not in shown and "Math peek · the overhead" not in shown
    _, both = _with("speedup_prediction", "tiny_prediction")
    for name in PARTS_1_2:
        assert name in both, name


def test_the_comparisons_wait_for_the_predictions_whose_answers_they_show():
    # Prediction 1's comparison shows a fusion speedup, which Prediction 2's answer follows
    # from too; Prediction 2's shows the chain's regime, which Prediction 1's does (a
    # memory-bound chain's time follows its bytes): each waits for both
    for alone in ("speedup_prediction", "tiny_prediction"):
        outputs, _ = _with(alone)
        shown = " ".join(text(o) for o in outputs if o is not None)
        assert "Prediction vs reality" not in shown, alone
    outputs, _ = _with("speedup_prediction", "tiny_prediction")
    shown = " ".join(text(o) for o in outputs if o is not None)
    assert "Prediction vs reality · the default 4-op chain, 100 M elements" in shown
    assert "Prediction vs reality · the default 4-op chain, 1,000 elements" in shown


def test_the_overhead_box_applies_to_part_1_as_soon_as_it_opens():
    # 50 M elements on the H100, unfused: launch-bound at 100 µs per kernel, memory-bound at 5
    _, slow = run(size_slider=NS(value=50_000_000), overhead_us=NS(value=100))
    _, stated = run(size_slider=NS(value=50_000_000))
    assert "overhead-bound" in text(slow["fusion_metrics"])
    assert "memory-bound" in text(stated["fusion_metrics"])
    outputs, _ = run(overhead_us=NS(value=100))
    assert "once Prediction 2 is locked" not in " ".join(
        text(o) for o in outputs if o is not None)


def test_after_prediction_2_part_1_reaches_the_overhead_regime():
    _, defs = run(size_slider=NS(value=1_000), kernels_slider=NS(value=1))
    shown = text(defs["fusion_metrics"])
    assert "overhead-bound" in shown and "4.00×" in shown


def test_the_questions_ask_for_the_models_number():
    # no published measurement times this chain or this attention's out-of-memory length, so
    # the questions ask for the roofline's ideal speedup and the upper bound on S, and give
    # what the byte count needs (the mask's byte, the skip: a tensor of its own, which a fused
    # kernel reads too; in a pre-LN reading it is the LayerNorm's input and costs nothing)
    _, defs = app.run()
    p1 = defs["speedup_form"].question
    assert "ideal speedup" in p1 and "1-byte mask" in p1
    assert "skip (residual) tensor" in p1 and "a tensor of its own, not the LayerNorm's input" in p1
    p3 = defs["oom_form"].question
    assert "at most" in p3 and "softmax in place" in p3


# --- failure states, reached and recovered through widget values -----------------------------

def test_tile_that_does_not_fit_is_an_error_and_recovers():
    _, bad = run(block_q_slider=NS(value=256), block_kv_slider=NS(value=256))
    # the S and O accumulators overflow the 256 KiB register file; shared memory has room
    assert "does NOT fit: it overflows the registers" in text(bad["tile_status"])
    assert "hierarchy_figure" not in bad
    _, good = run(block_q_slider=NS(value=128), block_kv_slider=NS(value=128))
    assert "It fits both" in text(good["tile_status"])
    assert "hierarchy_figure" in good


def test_long_sequence_overflows_unfused_attention_and_recovers():
    _, bad = run(seq_slider=NS(value=65_536))
    shown = text(bad["attention_memory"])
    assert "Out of memory" in shown and "score matrix" in shown
    assert shown.count("Fits") == 1  # the fused version still fits
    _, good = run(seq_slider=NS(value=32_768))
    assert "Out of memory" not in text(good["attention_memory"])


def test_device_without_onchip_figures_says_so():
    _, defs = run(device_picker=NS(value="tpu-v5e"), precision_picker=NS(value="bf16"))
    msg = text(defs["tile_status"])
    # a sentence for a student: the cause and the way out, no exception text
    assert "no on-chip figures" in msg and "Pick one of" in msg and "NVIDIA H100 SXM5" in msg
    assert "KeyError" not in msg and not msg.lstrip().startswith(("'", '"'))
    assert "hierarchy_figure" not in defs
    assert "fusion_roofline" in defs  # Parts 1-3 still work
    assert defs["references"]["largest_tile"] is None


def test_bad_widget_combinations_show_messages_not_tracebacks():
    _, defs = run(device_picker=NS(value="tpu-v5e"))  # fp16 tensors on a TPU
    # elementwise kernels run on the vector units whatever the storage: the chain works; the
    # attention matmuls need an fp16 rate, which the TPU lacks: a message, not a traceback
    assert "fusion_roofline" in defs
    assert "no hardware rate for fp16" in text(defs["attention_metrics"])
    assert "Set the storage precision of the tensors" in text(defs["attention_metrics"])
    _, defs = run(kernels_slider=NS(value=6))  # 6 kernels for 4 ops
    assert "runs as at most 4 kernels, not 6: move Kernels down to 4" in text(
        defs["fusion_metrics"])
    _, defs = run(chain_slots=chain())  # every slot empty
    assert "The chain is empty: pick at least one op in the slots" in text(defs["fusion_metrics"])


def test_editing_the_chain_changes_the_bytes():
    _, defs = run(chain_slots=chain("rmsnorm", "silu_mul"), kernels_slider=NS(value=1))
    # fused RMSNorm + SiLU*up: read x 2 + up 2 + write 2 = 6 B; unfused 4 + 6 = 10 B
    assert defs["chain_speedup"] == pytest.approx(10 / 6)


# --- what a widget step re-runs ---------------------------------------------------

def _cells_re_run_by(widget: str) -> list[set[str]]:
    """Each cell a step of ``widget`` re-runs (those that name it, other than its maker, and
    every cell below them), as the names it defines."""
    from marimo._runtime import dataflow

    app._maybe_initialize()
    graph = app._graph
    named = {cid for cid, c in graph.cells.items() if widget in c.refs}
    rerun = dataflow.transitive_closure(graph, named - set(graph.definitions[widget]))
    return [set(graph.cells[cid].defs) for cid in rerun]


def _re_run_by(widget: str) -> set[str]:
    """The names defined by every cell a step of ``widget`` re-runs."""
    return set().union(*_cells_re_run_by(widget))


@pytest.mark.parametrize("widget", ["chain_slots", "kernels_slider", "size_slider", "seq_slider",
                                    "attn_batch", "attn_heads", "head_dim_picker",
                                    "block_q_slider", "block_kv_slider"])
def test_a_step_re_runs_no_cell_that_only_shows_its_widget(widget):
    # Each panel is laid out where its widgets are made and shown by a cell that names none
    # (the fusion panel names the overhead box only, for the message under it).
    assert cells_that_only_show(app, widget) == [], widget


def test_every_panel_names_its_widgets():
    # laid out where they are made; the chain's slots (an array shown with .hstack(), which
    # drops the array's own label) carry their label above them
    outputs, _ = app.run(defs=PREDICTIONS)
    shown = " ".join(text(o) for o in outputs if o is not None)
    for label in ("Chain, in order (pick — to leave a slot empty)",
                  "Kernels (ops split into contiguous groups)", "Launch overhead per kernel",
                  "Tensor size (elements, log steps)", "Sequence length S", "Batch", "Heads",
                  "Head dim", "Query tile Bq", "KV tile Bkv"):
        assert label in shown, label


@pytest.mark.parametrize("widget, untouched", [
    ("kernels_slider", "overhead_metrics"), ("size_slider", "overhead_metrics"),
    ("attn_batch", "hierarchy_figure"), ("attn_heads", "hierarchy_figure"),
])
def test_a_step_leaves_the_outputs_it_cannot_change(widget, untouched):
    assert untouched not in _re_run_by(widget)


@pytest.mark.parametrize("widget", ["attn_batch", "attn_heads"])
def test_a_batch_or_heads_step_re_runs_one_cell_per_output_it_changes(widget):
    # Four outputs follow the batch and heads (the attention cards, the traffic figure, the
    # memory bars, Part 4's tile cards): a step re-runs those four cells and no cell without
    # an output (each re-run cell is one more round of marimo's messages).
    cells = _cells_re_run_by(widget)
    shows = {"attention_metrics", "attention_figure", "attention_memory", "tile_status"}
    assert len(cells) == len(shows)
    assert all(defs & shows for defs in cells)


def test_the_roofline_of_each_level_is_the_same_at_any_batch_and_heads():
    # The figure draws one head of one sequence: its intensities and attainable rate are those
    # of Part 3's whole shape, while the traffic on the cards grows with batch x heads.
    _, wide = run(attn_batch=NS(value=32), attn_heads=NS(value=64))
    full = fusion.flash_roof_point(32, 64, 4096, 128, 128, 128, "h100-sxm")
    assert wide["flash_point"] == full
    one = wide["flash_one_head"]
    assert [u.ai for u in one.uses] == pytest.approx([full.ai_onchip, full.ai_l2, full.ai_hbm])
    assert one.attainable_tflops == pytest.approx(full.attainable_tflops)
    _, narrow = run()
    assert wide["hierarchy_figure"].to_dict() == narrow["hierarchy_figure"].to_dict()
    assert units.format_bytes(full.hbm_bytes) in text(wide["tile_status"])


# --- the ledger -----------------------------------------------------------------------------

def test_ledger_events_use_the_stable_item_ids(ledger_env):
    _, defs = app.run()
    lab = defs["lab"]
    quiz.simulate_submit(defs["speedup_form"], answer=4, confidence=2, reason="four kernels")
    quiz.simulate_submit(defs["tiny_form"], answer="launches", confidence=4, reason="launches")
    quiz.simulate_submit(defs["oom_form"], answer="30k", confidence=3, reason="S squared")
    quiz.simulate_submit(defs["tile_form"], answer=128, confidence=3, reason="smem")
    kinds = {(e["item_id"], e["kind"]) for e in lab.events()}
    for item in ITEMS:
        assert (item, "predict") in kinds and (item, "unlock") in kinds
    # reopening restores every lock from the ledger: instruments shown, comparisons recorded
    _, again = app.run()
    assert again["speedup_prediction"].value == 4
    assert again["tile_prediction"].value == 128
    for name in FIGURES:
        assert name in again
    quiz.simulate_submit(again["tiny_explain"], observe="20 us vs 5 us",
                         explain="launch-bound: one launch instead of four")
    events = again["lab"].events()
    assert {e["item_id"] for e in events} == set(ITEMS)
    results = {e["item_id"]: e["payload"] for e in events if e["kind"] == "result"}
    assert results["lab04.fusion_speedup"]["actual"] == pytest.approx(19 / 7)
    assert results["lab04.tiny_tensor"]["correct"] is True
    assert results["lab04.oom_seq_len"]["actual"] == 36_380
    assert {e["kind"] for e in events if e["item_id"] == "lab04.tiny_tensor"} >= {
        "observe", "explain"}
    ledger_file = next((ledger_env / "ledger").glob("roofline-ledger-tester*.jsonl"))
    assert "lab04.largest_tile" in ledger_file.read_text()


# --- speed and export -----------------------------------------------------------------------

def test_instrument_cells_recompute_fast():
    """Each instrument cell re-run with a new widget value stays well under the budget."""
    _, defs = run()
    env = {**defs, **PREDICTIONS}
    slowest = {}
    for cd in app._cell_manager.cell_data():
        cell = cd.cell
        if not set(cell.defs) & set(INSTRUMENTS):
            continue
        kw = {r: env[r] for r in cell.refs if r in env}
        best = min(cell_cpu_seconds(cell, kw) for _ in range(3))
        slowest[tuple(sorted(cell.defs))] = best
    assert slowest and max(slowest.values()) < 0.05, slowest  # 50 ms of CPU: generous


@pytest.mark.slow
@pytest.mark.parametrize("reveal", [False, True])
def test_export_html(tmp_path_factory, reveal):
    page = export_page(LAB, tmp_path_factory, reveal=reveal)
    if reveal:
        assert page.count("marimo-plotly") >= len(FIGURES)
        assert "does NOT fit" not in page
    else:
        assert "marimo-plotly" not in page
        assert "Lock Predictions 1 and 2 first" in page


# --- moved from tests/test_physics_review_labs.py (filed by the module they test) ----
import labs  # noqa: E402
from notebook_support import choice, load_app, visible_text  # noqa: E402

LABS = Path(labs.__file__).parent


def _texts(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


def _plain(markup: str) -> str:
    import html
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


@pytest.fixture(scope="module")
def lab4():
    return load_app(LABS / "lab_04_fusion.py", "_review_lab04")


def test_scenario_names_no_tile_size_and_the_peek_names_the_pool_that_overflows(env, lab4):
    """Part 4's card poses the question without narrowing it: it names both pools and no tile
    size (a refused 256 × 256 would rule out half the options before Prediction 4). Once it is
    locked, the math peek names the pool the model says the next tile up overflows."""
    outputs, defs = lab4.run()
    card = next(t for o in outputs if "Lena Fischer" in (t := text(o)))
    assert "shared memory" in card and "register" in card
    for size in (16, 32, 64, 128, 256, 512):
        assert not re.search(rf"\b{size}\s*[×x]", card), (size, card)
    tile = fusion.largest_square_tile(128, "h100-sxm")
    assert fusion.flash_tile(2 * tile, 2 * tile, 128, "h100-sxm").overflows == ("registers",)
    outputs, _ = lab4.run(defs={"tile_prediction": choice("lab04.largest_tile", 128)})
    peek = next(t for o in outputs if "tiles and the roofline of each level" in (t := text(o)))
    assert "registers (too much)" in peek and "shared memory (fits)" in peek


def test_draws_the_vector_ceiling_and_says_several_ceilings_is_a_lesson(env, lab4):
    """(The physics review, in the labs: two ceilings in Lab 4's chain roofline,
    and it says why.)"""
    preds = {"speedup_prediction": quiz.Prediction("lab04.fusion_speedup", 2.0, "×"),
             "tiny_prediction": choice("lab04.tiny_tensor", "launches"),
             "oom_prediction": quiz.Prediction("lab04.oom_seq_len", 30_000, "tokens"),
             "tile_prediction": choice("lab04.largest_tile", 128)}
    outputs, defs = lab4.run(defs=preds)
    fig = defs["fusion_roofline"]
    names = [t.name for t in fig.data]
    assert "vector ceiling (non-tensor)" in names and "fp16 (dense)" in names
    vec = next(t for t in fig.data if t.name == "vector ceiling (non-tensor)")
    assert max(vec.y) == pytest.approx(67)  # the H100's FP32 CUDA-core rate
    shown = _texts(outputs)
    assert "Two compute ceilings" in shown and "lesson" in shown


def test_out_of_memory_names_the_score_matrix(env, lab4):
    """(Instruments open on the question's case, in the labs.)"""
    preds = {"oom_prediction": quiz.Prediction("lab04.oom_seq_len", 30_000, "tokens")}
    # the attention widgets share one cell: all its names are given (with its layout's)
    _, defs = lab4.run(defs={**preds, "seq_slider": NS(value=262_144),
                             "attn_batch": NS(value=32), "attn_heads": NS(value=64),
                             "head_dim_picker": NS(value=128),
                             "attention_controls": "(attention_controls)"})
    shown = visible_text(defs["attention_memory"])
    # the unfused budget names its S^2 term; the fused one (Q, K, V, O alone: 550 GB) its own
    assert "score matrix (B×H×S×S) is the term that crosses capacity" in shown
    assert shown.count("Q, K, V, O is the term that crosses capacity") == 1


def test_tpu_in_part_4_is_a_sentence_not_a_keyerror(env, lab4):
    """(Instruments open on the question's case, in the labs.)"""
    preds = {"tile_prediction": choice("lab04.largest_tile", 128)}
    _, defs = lab4.run(defs={**preds, "device_picker": NS(value="tpu-v5e"),
                             "precision_picker": NS(value="bf16")})
    msg = visible_text(defs["tile_status"])
    assert "Pick one of" in msg and "KeyError" not in msg
    assert "'The registry" not in msg and '"The registry' not in msg


# --- a fresh review's walk of Lab 4 ----------------------------------------------------------

from labs.core.physics import misconceptions  # noqa: E402


def _all_text(outputs) -> str:
    return " ".join(text(o) for o in outputs if o is not None)


def test_prediction_1_asks_two_figures_reads_a_fraction_and_grades_the_slips_wrong():
    """19/7 = 2.71: a student who writes "3" (one figure) lands on the forgot-the-mask answer
    (18/6 = 3), graded wrong by the 1.05x band; the question asks two significant figures, and
    takes the fraction itself. It says the backward pass recomputes everything but the mask (a
    student who also saved GELU's input, as eager autograd would, got 19/9)."""
    outputs, defs = app.run()
    question = _all_text(outputs).split("Prediction 1.")[1].split("Lock prediction")[0]
    assert "two significant figures" in question
    assert "recomputes everything else" in question
    handler = defs["speedup_form"].handler
    band = misconceptions.band("lab04.fusion_speedup")
    for typed, right in [("19/7", True), ("2.7", True), ("3", False), ("4", False)]:
        locked, error = handler.check({"answer": typed, "confidence": 3, "reason": "bytes"})
        assert error is None, (typed, error)
        kind = quiz.verdict_kind(locked.value, band.reference, tolerance=band.tolerance)
        assert (kind != "danger") is right, (typed, locked.value, kind)
    # a refusal's examples are numbers the box takes (0.1 to 100), never "300"
    _, error = handler.check({"answer": "about three", "confidence": 3, "reason": "x"})
    assert "300" not in error


def test_part_4_says_where_the_shape_comes_from_while_part_3_is_closed():
    only_p4 = {"tile_prediction": PREDICTIONS["tile_prediction"]}
    outputs, _ = app.run(defs=only_p4)
    shown = _all_text(outputs)
    assert "change them there" not in shown
    assert "Part 3's controls change them once Prediction 3 is locked" in shown
    outputs, _ = app.run(defs=PREDICTIONS)
    assert "(change them there)" in _all_text(outputs)


def test_the_device_list_names_every_device_with_on_chip_figures():
    outputs, _ = app.run()
    shown = _all_text(outputs)
    assert "TPUs, edge and laptop parts" not in shown
    for key in fusion.ONCHIP:  # the H100 PCIe among them
        assert hardware.get(key).name in shown.split("Part 1")[0], key
    # the comparison's warning on a device without them lists the same devices
    outputs, _ = run(device_picker=NS(value="b200"))
    warned = _all_text(outputs)
    assert "NVIDIA H100 PCIe" in warned.split("no reference answer here")[1]


def test_the_header_the_overhead_box_and_the_vector_ceiling_read_cleanly():
    outputs, _ = run()
    shown = _all_text(outputs)
    assert "Lab 4 · Fusion and Overhead" in shown
    assert "Edit it" not in shown  # Part 2's sentence ended there, dangling
    # fp16 elementwise work against the fp32 FMA ceiling: the note says so
    assert "packed 16-bit arithmetic" in shown
