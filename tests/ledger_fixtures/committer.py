"""Child process for the first-commit race: one lab window locking N predictions at once.

usage: python committer.py DIR STUDENT N ANSWER GO_FILE
Waits until GO_FILE exists (so two windows start together), then commits ANSWER for items
``race.item0`` .. ``race.item<N-1>`` and prints, per item, the value the lab then shows as
locked: ``<item> <locked value>``.
"""

import os
import sys
import time

from labs.core import quiz

directory, student, n, answer, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5]
lab = quiz.LabSession("race", None, settings={"student_id": student, "ledger_dir": directory})
while not os.path.exists(go):
    time.sleep(0.001)
for i in range(n):
    item = f"race.item{i}"
    locked = lab.commit(quiz.Prediction(item, answer, confidence=3, reason=f"window {answer}"))
    print(item, locked.value, flush=True)
