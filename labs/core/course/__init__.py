"""The course wing: the record of what each student predicted, saw and explained, in rooms.

Each room is a subpackage whose ``__init__`` is its public face (its docstring maps the room):

==============  ===================================================================  ==============
room            what it holds                                                        imports rooms
==============  ===================================================================  ==============
``answers``     what a prediction is and when it is right: ``Prediction``, which     (none)
                prediction counts, reasoned, the ratio rules and the exact
                boundary of a tolerance (a module, not a room; no marimo)
``ledger``      the ledger file: config, events (one reader), files, store           answers
``catalogue``   every lab's prediction items in order, read from the notebooks       (none)
``quiz``        the prediction lock and forms a lab shows; ``quiz.reveal``, the      answers, ledger
                instructor copy's reference answers
``grading``     grading a class's ledgers: sources, load, ids, instructor_csvs,      answers, ledger,
                config, checks, score, gradebook, canvas_csv, feedback, run,         catalogue
                merge, cli
``classroom``   the class dashboard's data and figures, and generated classes        answers, grading,
                (``synth``; ``canvas_class``: a class as Canvas hands it over)       ledger, catalogue
``export``      publishing the labs as a site (index, lab, inspection, offline,      catalogue
                wasm, site)
``lessons``     each lab's prose builders: text, derivations, cards and tables       (none)
                assembled from computed numbers (one module per lab; only the
                labs import them)
``install``     the commands that install the live extra (torch) for this machine    (none)
                (a module, not a room)
``launcher``    the ``roofline-labs`` command (a module, not a room)                 export, install,
                                                                                     ledger
==============  ===================================================================  ==============

Imports go down this table only: a room never imports one that imports it back
(``tests/test_layout.py`` checks it, lazy imports included). Notebooks use the short names
(``from labs.core import ledger, quiz, reveal, grading, catalogue, classroom, export``).

May import: ``labs.core.physics`` and ``labs.core.ui``; never ``labs.core.measure``.
"""

__all__ = []
