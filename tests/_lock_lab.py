"""A tiny lab used only by the ledger/quiz tests: one numeric and one choice prediction."""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    from labs.core import quiz

    LAB_ID = "locklab"
    return LAB_ID, mo, quiz


@app.cell
def _(quiz):
    get_ledger_settings, set_ledger_settings = quiz.ledger_settings()
    return get_ledger_settings, set_ledger_settings


@app.cell
def _(LAB_ID, get_ledger_settings, quiz, set_ledger_settings):
    lab = quiz.LabSession(LAB_ID, __file__, settings=get_ledger_settings(),
                          on_settings=set_ledger_settings)
    lab.status()
    return (lab,)


@app.cell
def _(lab, quiz):
    get_bw, set_bw = quiz.lock_state(lab, "locklab.bandwidth")
    return get_bw, set_bw


@app.cell
def _(get_bw, lab, quiz, set_bw):
    bw_form = quiz.numeric_form(
        lab, "locklab.bandwidth", question="How many GB/s does the copy kernel reach?",
        units="GB/s", lo=1, hi=10000, locked=get_bw(), on_lock=set_bw)
    quiz.prediction_panel(bw_form, get_bw())
    return (bw_form,)


@app.cell
def _(get_bw):
    bw_prediction = get_bw()
    return (bw_prediction,)


@app.cell
def _(bw_prediction, lab, mo, quiz):
    mo.stop(bw_prediction is None, quiz.gate_notice("Lock your prediction to reveal the instrument."))
    measured_bw = 2000.0
    instrument = mo.md(f"**Instrument:** the copy kernel moves {measured_bw:,.0f} GB/s.")
    mo.vstack([instrument, quiz.compare(bw_prediction, measured_bw, units="GB/s", lab=lab)])
    return (measured_bw,)


@app.cell
def _(lab, measured_bw, quiz):
    bw_explain = quiz.explain_form(lab, "locklab.bandwidth",
                                   observe_label=f"What does the instrument show? ({measured_bw:g})",
                                   explain_label="Why does it differ from your prediction?")
    bw_explain
    return (bw_explain,)


@app.cell
def _(lab, quiz):
    get_regime, set_regime = quiz.lock_state(lab, "locklab.regime")
    return get_regime, set_regime


@app.cell
def _(get_regime, lab, quiz, set_regime):
    regime_form = quiz.choice_form(
        lab, "locklab.regime", question="Which roof does the copy kernel hit?",
        options={"memory roof": "memory", "compute roof": "compute"},
        locked=get_regime(), on_lock=set_regime)
    quiz.prediction_panel(regime_form, get_regime())
    return (regime_form,)


@app.cell
def _(get_regime):
    regime_prediction = get_regime()
    return (regime_prediction,)


@app.cell
def _(mo, quiz, regime_prediction):
    mo.stop(regime_prediction is None, quiz.gate_notice("Lock your prediction to see the regime."))
    regime_reveal = quiz.compare(regime_prediction, "memory", actual_label="memory roof")
    regime_reveal
    return (regime_reveal,)


if __name__ == "__main__":
    app.run()
