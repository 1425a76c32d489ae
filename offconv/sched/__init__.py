"""Scheduling: SchedEvent streams into intervals (``intervals``: blocked, run queue,
preempted, on-CPU; ``probe``: is it a `perf record -p` recording; ``tail``: the second
part of an input read in two processes), the causes read from stacks and wakers
(``causes``), latency percentiles and histograms (``latency``, ``histograms``).
May import ``offconv.model`` and ``offconv.inputs``."""
