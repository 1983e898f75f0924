"""``harness view``: a loopback-only web UI over the store (runs, arms, tasks, trials, with
transcripts and grader evidence), where people label trials. The run report it serves is
``harness.report.render.html``; the viewer only adds the web server and its own pages, and
writes nothing but labels (``labelling``).
"""

DEFAULT_PORT = 8765
DEFAULT_VIEWER_URL = f"http://127.0.0.1:{DEFAULT_PORT}"
