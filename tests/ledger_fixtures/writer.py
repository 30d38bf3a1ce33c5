"""Child process for the ledger tests: append N events, printing each seq once it is durable.

usage: python writer.py DIR STUDENT N SESSION [PAYLOAD_BYTES] [--wait-for FILE]
N = 0 appends forever (until killed). With --wait-for, it starts only once FILE exists, so two
writers start together.
"""

import os
import sys
import time

from labs.core.course.ledger import Ledger

args = sys.argv[1:]
wait_for = None
if "--wait-for" in args:
    i = args.index("--wait-for")
    wait_for = args[i + 1]
    del args[i:i + 2]
directory, student, n, session = args[0], args[1], int(args[2]), args[3]
filler = "x" * int(args[4]) if len(args) > 4 else ""

ledger = Ledger(student, directory)
if wait_for:
    while not os.path.exists(wait_for):
        time.sleep(0.005)
i = 0
while n == 0 or i < n:
    i += 1
    event = ledger.append("result", lab_id="lab01", item_id="lab01.stress",
                          payload={"i": i, "writer": session, "filler": filler},
                          session=session)
    # one write per line: under PYTHONUNBUFFERED, print() issues a syscall per piece, and a
    # kill between them would leave half a line on the pipe
    sys.stdout.write(f"{event['seq']} {event['payload']['i']}\n")
    sys.stdout.flush()
