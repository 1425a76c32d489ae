"""Analysis, data in, data out, in the order it runs: a thread's sums (``totals``), what a
thread's end decides (``lifetimes``), the off-CPU accumulation (``threads``), the decision
(``rules``) apart from its wording (``verdict``), the reports of stack-only inputs
(``sample_report``, ``sample_threads``), the report data of any profile (``summary``) and
the comparison of two (``diff``). May import ``offconv.model``, ``offconv.inputs`` and
``offconv.sched``; within it, a module imports only those before it in that order
(tests/test_layering.py)."""
