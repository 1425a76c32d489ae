"""Scheduling: SchedEvent streams into intervals (blocked, run queue, preempted, on-CPU),
the causes read from stacks and wakers, latency percentiles and histograms.
May import ``offconv.model`` and ``offconv.inputs``."""
