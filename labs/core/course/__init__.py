"""The course wing: the record of what each student predicted, saw and explained, in rooms.

Each room is a subpackage whose ``__init__`` is its public face (its docstring maps the room):

==============  ===================================================================  ==============
room            what it holds                                                        imports rooms
==============  ===================================================================  ==============
``ledger``      the ledger file: config, events (one reader), files, store           (none)
``catalogue``   every lab's prediction items in order, read from the notebooks       (none)
``quiz``        the prediction lock and forms a lab shows; ``quiz.reveal``, the      ledger
                instructor copy's reference answers
``grading``     grading a class's ledgers: sources, load, ids, inputs, config,       ledger, catalogue,
                checks, score, gradebook, lms, feedback, cli                         quiz
``classroom``   the class dashboard's data and figures, and generated classes        grading, ledger,
                (``synth``; ``lms``: a class as an LMS hands it over)                catalogue, quiz
``export``      publishing the labs as a site (index, lab, inspection, offline,      (none)
                wasm, site)
``launcher``    the ``roofline-labs`` command (a module, not a room)                 ledger, export
==============  ===================================================================  ==============

Imports go down this table only: a room never imports one that imports it back
(``tests/test_layout.py`` checks it, lazy imports included). Notebooks use the short names
(``from labs.core import ledger, quiz, reveal, grading, catalogue, classroom, export``).

May import: ``labs.core.physics`` and ``labs.core.ui``; never ``labs.core.measure``.
"""
